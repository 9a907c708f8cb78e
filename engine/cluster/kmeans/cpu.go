package kmeans

import (
	"fmt"
	"sync"

	"gpulab/engine/cpu"
)

// Fit runs Lloyd's algorithm on the CPU, with goroutines over the points.
// Distances and sums are accumulated in float64: this is the reference the
// GPU variants are checked against.
func Fit(x *Matrix, cfg Config) (*Result, error) {
	if len(x.X) != x.N*x.D {
		return nil, fmt.Errorf("kmeans: %d values for %d points of %d dimensions", len(x.X), x.N, x.D)
	}
	if err := cfg.check(x.N, x.D); err != nil {
		return nil, err
	}
	if err := checkFinite(x); err != nil {
		return nil, err
	}
	centers, err := initialCenters(x, cfg)
	if err != nil {
		return nil, err
	}
	p := &cpuPass{x: x, k: cfg.K, lab: make([]int32, x.N), dist: make([]float64, x.N)}
	return lloyd(p, cfg.K, x.D, centers, cfg)
}

type cpuPass struct {
	x    *Matrix
	k    int
	lab  []int32
	dist []float64 // squared distance of each point to its center
}

func (p *cpuPass) assign(centers []float32) ([]float64, []int64, float64, error) {
	n, d, k := p.x.N, p.x.D, p.k
	sums := make([]float64, k*d)
	counts := make([]int64, k)
	var inertia float64
	var mu sync.Mutex
	cpu.Parallel(n, 256, func(lo, hi int) {
		s := make([]float64, k*d)
		c := make([]int64, k)
		var in float64
		for i := lo; i < hi; i++ {
			row := p.x.X[i*d : (i+1)*d]
			best, bestD := 0, sqDist(row, centers[:d])
			for j := 1; j < k; j++ {
				if dj := sqDist(row, centers[j*d:(j+1)*d]); dj < bestD {
					best, bestD = j, dj
				}
			}
			p.lab[i], p.dist[i] = int32(best), bestD
			in += bestD
			c[best]++
			for t, v := range row {
				s[best*d+t] += float64(v)
			}
		}
		mu.Lock()
		for t := range s {
			sums[t] += s[t]
		}
		for j := range c {
			counts[j] += c[j]
		}
		inertia += in
		mu.Unlock()
	})
	return sums, counts, inertia, nil
}

func (p *cpuPass) farthest(taken map[int]bool) (int, []float32, error) {
	best := -1
	for i, dv := range p.dist {
		if !taken[i] && (best < 0 || dv > p.dist[best]) {
			best = i
		}
	}
	d := p.x.D
	return best, p.x.X[best*d : (best+1)*d], nil
}

func (p *cpuPass) labels() ([]int32, error) { return append([]int32(nil), p.lab...), nil }
