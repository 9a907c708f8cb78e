package kmeans

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
)

// The "kmeans" suite: Lloyd iterations on Gaussian blobs, from the same
// k-means++ centers for every variant. Sizes are
// "blobs:n=N,d=D,k=K[,iters=I][,batch=B]"; batch > 0 streams X from pinned
// host memory. A record's time is the mean time of one iteration
// (assignment and update); bytes are one pass over X; flops are 2·N·D·K.
// Small sizes (N·D·K up to 2·10⁹) also run the CPU reference, which is then
// the baseline and the check; larger ones check every variant against the
// seed's block_per_point, which is then the baseline.
func init() {
	bench.Register(bench.Suite{
		Name: "kmeans",
		Doc:  "Lloyd's k-means on Gaussian blobs: CPU reference; CUDA assignment ladder (naive, chunked, block per point, GEMM+argmin) and updates (atomic, sorted, fused); ms per iteration",
		Sizes: func(dev engine.Info) []string {
			if dev.Kind == engine.CUDA {
				return []string{"blobs:n=1000000,d=1536,k=25,iters=10", "blobs:n=1000000,d=1536,k=25,iters=10,batch=131072"}
			}
			return []string{"blobs:n=20000,d=64,k=25,iters=10"}
		},
		Cases: cases,
	})
}

// Spec is a parsed size of the kmeans suite.
type Spec struct{ N, D, K, Iters, Batch int }

// ParseSpec reads "blobs:n=N,d=D,k=K[,iters=I][,batch=B]".
func ParseSpec(s string) (Spec, error) {
	sp := Spec{Iters: 10}
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "blobs:")
	if !ok {
		return sp, fmt.Errorf("kmeans: size %q: want blobs:n=N,d=D,k=K[,iters=I][,batch=B]", s)
	}
	fields := map[string]*int{"n": &sp.N, "d": &sp.D, "k": &sp.K, "iters": &sp.Iters, "batch": &sp.Batch}
	for kv := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		p, ok := fields[strings.TrimSpace(k)]
		if !ok {
			return sp, fmt.Errorf("kmeans: size %q: unknown field %q (have n, d, k, iters, batch)", s, k)
		}
		x, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || x < 0 {
			return sp, fmt.Errorf("kmeans: size %q: %s = %q is not a count", s, k, v)
		}
		*p = x
	}
	if sp.N <= 0 || sp.D <= 0 || sp.K <= 0 || sp.Iters <= 0 {
		return sp, fmt.Errorf("kmeans: size %q: n, d, k and iters must be positive", s)
	}
	return sp, nil
}

func cases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	sp, err := ParseSpec(size)
	if err != nil {
		return nil, nil, err
	}
	blobs := datasets.Blobs{N: sp.N, D: sp.D, K: sp.K, Seed: 1}
	if err := blobs.Validate(); err != nil {
		return nil, nil, err
	}
	x := &Matrix{N: sp.N, D: sp.D, X: make([]float32, sp.N*sp.D)}
	blobs.Rows(0, sp.N, x.X)
	init, err := initialCenters(x, Config{K: sp.K, Seed: 2})
	if err != nil {
		return nil, nil, err
	}
	cfg := Config{K: sp.K, MaxIters: sp.Iters, Centers: init}
	small := float64(sp.N)*float64(sp.D)*float64(sp.K) <= 2e9
	base := func(variant string) bench.Case {
		return bench.Case{Variant: variant, Tol: 1e-4, Bytes: 4 * float64(sp.N) * float64(sp.D), Flops: 2 * float64(sp.N) * float64(sp.D) * float64(sp.K),
			Params: bench.Params{"n": sp.N, "d": sp.D, "k": sp.K, "iters": sp.Iters, "batch": sp.Batch}}
	}
	var cases []bench.Case
	var ref *Result // the reference result: the CPU's, or the baseline's
	if small || dev.Kind == engine.CPU {
		c := base("cpu_reference")
		c.Baseline = true
		c.Run = func() (time.Duration, error) {
			start := time.Now()
			r, err := Fit(x, cfg)
			if err != nil {
				return 0, err
			}
			ref = r
			c.Params["inertia"] = r.Inertia
			return time.Since(start) / time.Duration(r.Iters+1), nil
		}
		c.Check = func() (bench.Checked, error) { return bench.Checked{Worst: -1}, nil }
		cases = append(cases, c)
	}
	if dev.Kind != engine.CUDA {
		return cases, nil, nil
	}
	var open *GPU // one variant's GPU at a time: each holds its own copy of X
	closeOpen := func() {
		if open != nil {
			open.Close()
			open = nil
		}
	}
	for _, v := range Variants {
		c := base(v)
		c.Baseline = !small && v == "block_per_point"
		var got *Result
		var g *GPU
		c.Run = func() (time.Duration, error) {
			if g == nil {
				closeOpen()
				var err error
				if g, err = NewGPU(dev.CUDA, x, sp.K, GPUOptions{Variant: v, Batch: sp.Batch}); err != nil {
					return 0, err
				}
				open = g
			}
			r, err := g.Fit(cfg)
			if err != nil {
				return 0, err
			}
			got = r
			st := g.Stats()
			c.Params["inertia"], c.Params["resident"] = r.Inertia, st.Resident
			if c.Baseline {
				ref = r
			}
			return st.MeanIter(), nil
		}
		c.Check = func() (bench.Checked, error) {
			if got == nil || ref == nil {
				return bench.Checked{}, fmt.Errorf("%s: no result or no reference to check against", v)
			}
			if mismatches(x, got, ref) > 0 {
				return bench.Checked{MaxRelErr: math.Inf(1), Worst: -1}, nil
			}
			return bench.Checked{MaxRelErr: math.Abs(got.Inertia-ref.Inertia) / ref.Inertia, Worst: -1}, nil
		}
		cases = append(cases, c)
	}
	return cases, closeOpen, nil
}

// mismatches counts the points whose labels differ between two runs by more
// than a tie: the distances to the two centers (of want) differ by more
// than the float32 rounding of the expanded distance, (|x|² + |c|²)·2⁻²¹.
func mismatches(x *Matrix, got, want *Result) int {
	d, bad := x.D, 0
	zero := make([]float32, d)
	for i, l := range got.Labels {
		w := want.Labels[i]
		if l == w {
			continue
		}
		row := x.X[i*d : (i+1)*d]
		cl, cw := want.Centers[int(l)*d:(int(l)+1)*d], want.Centers[int(w)*d:(int(w)+1)*d]
		if math.Abs(sqDist(row, cl)-sqDist(row, cw)) > (sqDist(row, zero)+sqDist(cl, zero))*math.Ldexp(1, -21)+1e-6 {
			bad++
		}
	}
	return bad
}
