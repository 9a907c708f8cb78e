// Package kmedoids is k-medoids clustering by alternating assignment and
// medoid update (the "Voronoi iteration"), for any distance: here the SQFD
// between image feature signatures (engine/sqfd), as in the seed's course
// solution.
//
// Unlike k-means, a cluster's center must be one of its members: the
// medoid, the member whose distances to the rest of its cluster sum least.
// So the data need no coordinates, only a distance, and the update costs
// |C|² distance evaluations per cluster instead of |C| additions: the
// "score" step that dominates the seed's solution.
package kmedoids

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"gpulab/engine/cpu"
)

// Metric is a distance between the items of a data set, numbered 0..Len()-1.
// Distance must be symmetric, zero on identical items and never negative.
type Metric interface {
	Len() int
	Distance(i, j int) float64
}

// Init chooses the initial medoids.
type Init int

const (
	PlusPlus Init = iota // k-medoids++: like k-means++, each next medoid drawn with probability ∝ its squared distance to the nearest medoid so far
	Random               // K distinct items, drawn with the seed
)

// String names the initialization: "k-medoids++" or "random".
func (i Init) String() string {
	switch i {
	case PlusPlus:
		return "k-medoids++"
	case Random:
		return "random"
	}
	return fmt.Sprintf("Init(%d)", int(i))
}

// Config is what Fit needs.
type Config struct {
	K        int
	MaxIters int // 0: 100
	Init     Init
	Seed     uint64
	Medoids  []int // if set, the initial medoids (K distinct items)
}

// Result is a finished run.
type Result struct {
	Medoids []int   // item index of each cluster's medoid
	Labels  []int32 // the cluster of each item
	Sizes   []int
	Cost    float64   // sum of the distances of the items to their medoids
	History []float64 // the cost after each iteration's assignment
	Iters   int
	// Evaluations counts the distances computed: N·K per assignment, the sum
	// of |C|² per update.
	Evaluations int64
}

func (c *Config) check(n int) error {
	switch {
	case c.K <= 0:
		return fmt.Errorf("kmedoids: K = %d: need at least one cluster", c.K)
	case c.K > n:
		return fmt.Errorf("kmedoids: K = %d exceeds the %d items", c.K, n)
	case c.MaxIters < 0:
		return fmt.Errorf("kmedoids: MaxIters = %d", c.MaxIters)
	case c.Medoids != nil && len(c.Medoids) != c.K:
		return fmt.Errorf("kmedoids: %d initial medoids for K = %d", len(c.Medoids), c.K)
	}
	seen := map[int]bool{}
	for _, m := range c.Medoids {
		if m < 0 || m >= n || seen[m] {
			return fmt.Errorf("kmedoids: initial medoid %d is out of range 0..%d or repeated", m, n-1)
		}
		seen[m] = true
	}
	return nil
}

// Passes are the two steps of an iteration on some device: CPU(m) is the
// parallel Go reference; engine/sqfd has the GPU ones. Run drives them.
type Passes interface {
	Len() int
	// Assign labels every item with its nearest medoid (the lowest cluster
	// index on ties) and stores the distance to it.
	Assign(medoids []int, labels []int32, dist []float64) error
	// Update returns each cluster's new medoid, the member whose distances
	// to the cluster's members sum least (the lowest item index on ties; the
	// old medoid if the cluster is empty), and the number of distances it
	// evaluated (the sum of |C|²).
	Update(labels []int32, medoids []int) ([]int, int64, error)
}

// CPU returns the passes of the parallel Go reference over m.
func CPU(m Metric) Passes { return cpuPasses{m} }

type cpuPasses struct{ m Metric }

func (c cpuPasses) Len() int { return c.m.Len() }

func (c cpuPasses) Assign(medoids []int, labels []int32, dist []float64) error {
	Assign(c.m, medoids, labels, dist)
	return nil
}

func (c cpuPasses) Update(labels []int32, medoids []int) ([]int, int64, error) {
	next, evals := Update(c.m, labels, medoids)
	return next, evals, nil
}

// InitialMedoids returns cfg.Medoids, or K medoids chosen by cfg.Init.
// k-medoids++ takes each next medoid's distances to every item from an
// assignment pass with that medoid alone, so it runs wherever p runs.
func InitialMedoids(p Passes, cfg Config) ([]int, error) {
	n := p.Len()
	if err := cfg.check(n); err != nil {
		return nil, err
	}
	if cfg.Medoids != nil {
		return slices.Clone(cfg.Medoids), nil
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6d65646f6964))
	if cfg.Init == Random {
		return rng.Perm(n)[:cfg.K], nil
	}
	medoids := []int{rng.IntN(n)}
	best, dist, labels := make([]float64, n), make([]float64, n), make([]int32, n)
	for i := range best {
		best[i] = math.Inf(1)
	}
	for len(medoids) < cfg.K {
		if err := p.Assign(medoids[len(medoids)-1:], labels, dist); err != nil {
			return nil, fmt.Errorf("kmedoids: k-medoids++, medoid %d: %w", len(medoids), err)
		}
		var total float64
		for i, d := range dist {
			best[i] = min(best[i], d)
			total += best[i] * best[i]
		}
		next := -1
		if total > 0 {
			r := rng.Float64() * total
			for i, b := range best {
				if r -= b * b; r < 0 {
					next = i
					break
				}
			}
		}
		if next < 0 || slices.Contains(medoids, next) { // all remaining items coincide with medoids
			for i := range n {
				if !slices.Contains(medoids, i) {
					next = i
					break
				}
			}
		}
		medoids = append(medoids, next)
	}
	return medoids, nil
}

// Fit runs k-medoids on the CPU, with goroutines over the items: Run with
// CPU(m).
func Fit(m Metric, cfg Config) (*Result, error) { return Run(CPU(m), cfg) }

// Run runs k-medoids with passes p: assign every item to its nearest medoid
// (lowest cluster index on ties), then make each cluster's medoid the member
// with the least sum of distances to the others (lowest item index on ties),
// until the medoids stop changing.
func Run(p Passes, cfg Config) (*Result, error) {
	medoids, err := InitialMedoids(p, cfg)
	if err != nil {
		return nil, err
	}
	maxIters := cfg.MaxIters
	if maxIters == 0 {
		maxIters = 100
	}
	n, k := p.Len(), cfg.K
	r := &Result{Labels: make([]int32, n)}
	dist := make([]float64, n)
	for {
		r.Evaluations += int64(n) * int64(k)
		if err := p.Assign(medoids, r.Labels, dist); err != nil {
			return nil, fmt.Errorf("kmedoids: iteration %d, assignment: %w", r.Iters, err)
		}
		var cost float64
		for _, d := range dist {
			cost += d
		}
		r.History = append(r.History, cost)
		r.Cost = cost
		if r.Iters == maxIters {
			break
		}
		r.Iters++
		next, evals, err := p.Update(r.Labels, medoids)
		if err != nil {
			return nil, fmt.Errorf("kmedoids: iteration %d, update: %w", r.Iters, err)
		}
		r.Evaluations += evals
		if slices.Equal(next, medoids) {
			break
		}
		medoids = next
	}
	r.Medoids = medoids
	r.Sizes = make([]int, k)
	for _, l := range r.Labels {
		r.Sizes[l]++
	}
	return r, nil
}

// Assign labels every item with its nearest medoid (lowest cluster index on
// ties) and stores the distance to it: N·K distance evaluations.
func Assign(m Metric, medoids []int, labels []int32, dist []float64) {
	cpu.Parallel(m.Len(), 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			best, bestD := Nearest(m, i, medoids)
			labels[i], dist[i] = int32(best), bestD
		}
	})
}

// Nearest is item i's nearest medoid (the first of equals) and its
// distance.
func Nearest(m Metric, i int, medoids []int) (int, float64) {
	best, bestD := 0, m.Distance(i, medoids[0])
	for c := 1; c < len(medoids); c++ {
		if d := m.Distance(i, medoids[c]); d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD
}

// Clusters lists the items of each cluster in item order (the seed's
// clusterList), with offsets (clusterListIndex, K+1 entries).
func Clusters(labels []int32, k int) (list []int32, offsets []int32) {
	offsets = make([]int32, k+1)
	for _, l := range labels {
		offsets[l+1]++
	}
	for c := range k {
		offsets[c+1] += offsets[c]
	}
	list = make([]int32, len(labels))
	next := slices.Clone(offsets[:k])
	for i, l := range labels {
		list[next[l]] = int32(i)
		next[l]++
	}
	return list, offsets
}

// Update returns each cluster's new medoid: the member whose distances to
// the cluster's other members sum least (the old medoid if the cluster is
// empty), and the number of distances it evaluated (the sum of |C|²).
func Update(m Metric, labels []int32, medoids []int) ([]int, int64) {
	k := len(medoids)
	list, offsets := Clusters(labels, k)
	score := make([]float64, len(list))
	var evals atomic.Int64
	cpu.Parallel(len(list), 16, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			i := int(list[p])
			c := labels[i]
			var s float64
			for q := offsets[c]; q < offsets[c+1]; q++ {
				s += m.Distance(i, int(list[q]))
			}
			score[p] = s
			evals.Add(int64(offsets[c+1] - offsets[c]))
		}
	})
	next := slices.Clone(medoids)
	for c := range k {
		best := math.Inf(1)
		for p := offsets[c]; p < offsets[c+1]; p++ {
			if score[p] < best { // list is in item order: the lowest index wins a tie
				best, next[c] = score[p], int(list[p])
			}
		}
	}
	return next, evals.Load()
}
