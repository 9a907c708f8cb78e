package kmeans

import (
	"fmt"
	"slices"
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
	if err := checkHostMemory(x.N, x.D, true); err != nil {
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
	// Each chunk of rows sums into its own partial; the partials are added
	// in row order afterwards, so a run is bit-for-bit reproducible.
	type partial struct {
		lo      int
		sums    []float64
		counts  []int64
		inertia float64
	}
	var parts []partial
	var mu sync.Mutex
	cpu.Parallel(n, 256, func(lo, hi int) {
		s := make([]float64, k*d)
		c := make([]int64, k)
		var in float64
		for i := lo; i < hi; i++ {
			row := p.x.X[i*d : (i+1)*d]
			best, bestD := 0, cpu.SquaredDistance(row, centers[:d])
			for j := 1; j < k; j++ {
				if dj := cpu.SquaredDistance(row, centers[j*d:(j+1)*d]); dj < bestD {
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
		parts = append(parts, partial{lo, s, c, in})
		mu.Unlock()
	})
	slices.SortFunc(parts, func(a, b partial) int { return a.lo - b.lo })
	sums := make([]float64, k*d)
	counts := make([]int64, k)
	var inertia float64
	for _, pt := range parts {
		for t := range sums {
			sums[t] += pt.sums[t]
		}
		for j := range counts {
			counts[j] += pt.counts[j]
		}
		inertia += pt.inertia
	}
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

// Assign labels every point of x with its nearest center (no update) and
// returns the labels and the inertia: one assignment pass of Fit.
func Assign(x *Matrix, centers []float32, k int) ([]int32, float64, error) {
	if len(centers) != k*x.D || k <= 0 {
		return nil, 0, fmt.Errorf("kmeans: %d center values for K = %d centers of %d dimensions", len(centers), k, x.D)
	}
	p := &cpuPass{x: x, k: k, lab: make([]int32, x.N), dist: make([]float64, x.N)}
	_, _, inertia, err := p.assign(centers)
	return p.lab, inertia, err
}
