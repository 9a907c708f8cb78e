package kmeans

import "math"

// Project2D returns the points of x on their two principal axes (N×2,
// row-major), to draw the clusters of D-dimensional data. The axes come from
// power iteration on the covariance, applied without forming it.
func Project2D(x *Matrix) []float32 {
	n, d := x.N, x.D
	mean := make([]float64, d)
	for i := range n {
		for j, v := range x.X[i*d : (i+1)*d] {
			mean[j] += float64(v) / float64(n)
		}
	}
	// cov applies the covariance to v: the sum over points of (x-μ)·((x-μ)·v).
	cov := func(v []float64) []float64 {
		out := make([]float64, d)
		for i := range n {
			row := x.X[i*d : (i+1)*d]
			var dot float64
			for j, xv := range row {
				dot += (float64(xv) - mean[j]) * v[j]
			}
			for j, xv := range row {
				out[j] += (float64(xv) - mean[j]) * dot
			}
		}
		return out
	}
	normalize := func(v []float64) {
		var s float64
		for _, t := range v {
			s += t * t
		}
		if s = math.Sqrt(s); s > 0 {
			for j := range v {
				v[j] /= s
			}
		}
	}
	var axes [][]float64
	for a := range 2 {
		v := make([]float64, d)
		for j := range v {
			v[j] = 1 / float64(j+a+1) // any start not orthogonal to the answer
		}
		for range 100 {
			v = cov(v)
			for _, u := range axes { // deflate: stay orthogonal to the first axis
				var dot float64
				for j := range v {
					dot += v[j] * u[j]
				}
				for j := range v {
					v[j] -= dot * u[j]
				}
			}
			normalize(v)
		}
		axes = append(axes, v)
	}
	out := make([]float32, 2*n)
	for i := range n {
		row := x.X[i*d : (i+1)*d]
		for a, u := range axes {
			var dot float64
			for j, xv := range row {
				dot += (float64(xv) - mean[j]) * u[j]
			}
			out[2*i+a] = float32(dot)
		}
	}
	return out
}
