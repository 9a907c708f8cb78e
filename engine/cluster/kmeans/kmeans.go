// Package kmeans is Lloyd's k-means: a parallel Go reference and a CUDA
// ladder of assignment and update kernels (kernels/cuda/kmeans), with
// streaming for data larger than the GPU buffer.
//
// Every implementation runs the same loop (lloyd): assign each point to its
// nearest center, add it to that cluster's sum, divide. Only the assignment
// pass differs, so results agree between them except on exact ties.
// Data is float32, row-major, N points of D dimensions.
package kmeans

import (
	"fmt"
	"gpulab/engine"
	"gpulab/engine/cpu"
	"math"
	"math/rand/v2"
	"slices"
)

// Data is N points of D float32 dimensions, read by rows: a matrix in
// memory, a generator, or a file too large to load.
type Data interface {
	Dims() (n, d int)
	// Rows copies rows [start, start+n) into dst[:n*D].
	Rows(start, n int, dst []float32) error
}

// Matrix is Data held in memory.
type Matrix struct {
	N, D int
	X    []float32 // N×D, row-major
}

// Dims returns N and D.
func (m *Matrix) Dims() (int, int) { return m.N, m.D }

// Rows copies rows [start, start+n).
func (m *Matrix) Rows(start, n int, dst []float32) error {
	if start < 0 || n < 0 || start+n > m.N {
		return fmt.Errorf("kmeans: rows [%d, %d) outside %d points", start, start+n, m.N)
	}
	copy(dst[:n*m.D], m.X[start*m.D:(start+n)*m.D])
	return nil
}

// Init chooses the initial centers.
type Init int

const (
	KMeansPlusPlus Init = iota // k-means++ (Arthur and Vassilvitskii) on a seeded sample of at most InitSample points
	Random                     // K distinct points drawn with the seed
)

// String names the initialization: "k-means++" or "random".
func (i Init) String() string {
	switch i {
	case KMeansPlusPlus:
		return "k-means++"
	case Random:
		return "random"
	}
	return fmt.Sprintf("Init(%d)", int(i))
}

// InitSample is the most points k-means++ looks at: enough for good seeds,
// and a 1M x 1536 data set does not need 25 passes before the first iteration.
const InitSample = 1 << 16

// Config is what Lloyd's algorithm needs.
type Config struct {
	K        int
	MaxIters int     // iterations at most (0: 100)
	Tol      float64 // stop when the inertia changes by less than Tol, relatively (0: run MaxIters)
	Init     Init
	Seed     uint64
	// Centers, if set (K×D), are the initial centers: the run is then exactly
	// Lloyd's iterations from them, comparable with scikit-learn's
	// KMeans(init=C, n_init=1, algorithm="lloyd").
	Centers []float32
}

// Result is a finished run.
type Result struct {
	K, D    int
	Centers []float32 // K×D
	Labels  []int32   // the nearest final center of each point
	Sizes   []int     // points per cluster, from Labels
	Inertia float64   // sum of squared distances to the final centers
	// History is the inertia of each iteration's assignment (against the
	// centers before that iteration's update).
	History []float64
	Iters   int
	Empty   int // empty clusters re-seeded along the way
}

func (c *Config) check(n, d int) error {
	switch {
	case c.K <= 0:
		return fmt.Errorf("kmeans: K = %d: need at least one cluster", c.K)
	case c.K > n:
		return fmt.Errorf("kmeans: K = %d exceeds the %d points", c.K, n)
	case d <= 0:
		return fmt.Errorf("kmeans: data has %d dimensions", d)
	case c.MaxIters < 0 || c.Tol < 0 || math.IsNaN(c.Tol):
		return fmt.Errorf("kmeans: MaxIters %d and Tol %g must not be negative", c.MaxIters, c.Tol)
	case c.Centers != nil && len(c.Centers) != c.K*d:
		return fmt.Errorf("kmeans: %d initial center values for K = %d centers of %d dimensions (want %d)", len(c.Centers), c.K, d, c.K*d)
	}
	if c.Centers != nil {
		if i := slices.IndexFunc(c.Centers, notFinite); i >= 0 {
			return fmt.Errorf("kmeans: initial center %d, dimension %d is %g", i/d, i%d, c.Centers[i])
		}
	}
	return nil
}

func notFinite(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }

// rowChunk is how many rows a pass over Data reads at a time on the CPU,
// and chunkFloats the most floats it holds at once (16 MiB; fewer rows
// when they are wide).
const (
	rowChunk    = 4096
	chunkFloats = 4 << 20
)

// chunkRows is how many of n rows of d floats a pass reads at a time: a
// buffer sized by it never outgrows the data, nor 16 MiB unless one row
// does.
func chunkRows(n, d int) int { return max(1, min(n, rowChunk, chunkFloats/max(d, 1))) }

// checkFinite reads every row once and names the first NaN or Inf.
func checkFinite(data Data) error {
	n, d := data.Dims()
	rows := chunkRows(n, d)
	buf := make([]float32, rows*d)
	for start := 0; start < n; start += rows {
		m := min(rows, n-start)
		if err := data.Rows(start, m, buf); err != nil {
			return err
		}
		if i := slices.IndexFunc(buf[:m*d], notFinite); i >= 0 {
			return fmt.Errorf("kmeans: point %d, dimension %d is %g", start+i/d, i%d, buf[i])
		}
	}
	return nil
}

// HostBytes is the host memory a run on n points of d dimensions takes
// besides X, figured in float64 (engine.BytesOf): k-means++'s candidates
// (initBytes), the labels (4 bytes a point) and, on the CPU, each point's
// label and distance during the passes (12 bytes).
func HostBytes(n, d int, cpu bool) float64 {
	nf := float64(n)
	b := initBytes(nf, float64(d)) + 4*nf
	if cpu {
		b += 12 * nf
	}
	return b
}

// initBytes is the host memory of k-means++'s candidates for n points of d
// dimensions: 8 bytes of index a point (a permutation of them, or all of
// them) and the rows of at most InitSample points.
func initBytes(n, d float64) float64 { return 8*n + 4*min(n, InitSample)*d }

// checkHostMemory refuses a run that HostBytes says the host cannot hold.
func checkHostMemory(n, d int, cpu bool) error {
	return engine.CheckHostMemory(fmt.Sprintf("k-means of %d×%d points", n, d), "its labels, distances and k-means++'s candidates", engine.BytesOf(HostBytes(n, d, cpu)))
}

// initialCenters returns cfg.Centers, or K centers chosen by cfg.Init.
func initialCenters(data Data, cfg Config) ([]float32, error) {
	n, d := data.Dims()
	if cfg.Centers != nil {
		return slices.Clone(cfg.Centers), nil
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6d65616e73))
	// The candidate points: all of them, or a seeded sample.
	idx := make([]int, 0, min(n, InitSample))
	if n <= InitSample {
		for i := range n {
			idx = append(idx, i)
		}
	} else {
		idx = append(idx, rng.Perm(n)[:InitSample]...)
		slices.Sort(idx)
	}
	pts := make([]float32, len(idx)*d)
	for j, i := range idx {
		if err := data.Rows(i, 1, pts[j*d:(j+1)*d]); err != nil {
			return nil, err
		}
	}
	m := len(idx)
	centers := make([]float32, 0, cfg.K*d)
	if cfg.Init == Random {
		for _, j := range rng.Perm(m)[:cfg.K] {
			centers = append(centers, pts[j*d:(j+1)*d]...)
		}
		return centers, nil
	}
	// k-means++: each next center is a point drawn with probability
	// proportional to its squared distance to the nearest center so far.
	best := make([]float64, m)
	for j := range best {
		best[j] = math.Inf(1)
	}
	next := rng.IntN(m)
	for len(centers) < cfg.K*d {
		c := pts[next*d : (next+1)*d]
		centers = append(centers, c...)
		var total float64
		for j := range m {
			best[j] = min(best[j], cpu.SquaredDistance(pts[j*d:(j+1)*d], c))
			total += best[j]
		}
		if total == 0 { // fewer distinct points than K: take any not yet taken
			next = (next + 1) % m
			continue
		}
		r := rng.Float64() * total
		next = m - 1
		for j, b := range best {
			if r -= b; r < 0 {
				next = j
				break
			}
		}
	}
	return centers, nil
}

// pass is what differs between implementations: one assignment of every
// point to its nearest center.
type pass interface {
	// assign labels every point with its nearest center, and returns each
	// cluster's coordinate sum (K×D) and size, and the inertia.
	assign(centers []float32) (sums []float64, counts []int64, inertia float64, err error)
	// farthest returns the point farthest from its center in the last
	// assignment, skipping the points in taken.
	farthest(taken map[int]bool) (int, []float32, error)
	// labels returns the last assignment's labels.
	labels() ([]int32, error)
}

// lloyd runs Lloyd's iterations on p from centers.
func lloyd(p pass, k, d int, centers []float32, cfg Config) (*Result, error) {
	maxIters := cfg.MaxIters
	if maxIters == 0 {
		maxIters = 100
	}
	r := &Result{K: k, D: d}
	for r.Iters < maxIters {
		sums, counts, inertia, err := p.assign(centers)
		if err != nil {
			return nil, err
		}
		r.History = append(r.History, inertia)
		r.Iters++
		taken := map[int]bool{}
		for c := range k {
			if counts[c] == 0 {
				// An empty cluster restarts at the point worst served by its center.
				i, x, err := p.farthest(taken)
				if err != nil {
					return nil, err
				}
				taken[i] = true
				copy(centers[c*d:(c+1)*d], x)
				r.Empty++
				continue
			}
			for j := range d {
				centers[c*d+j] = float32(sums[c*d+j] / float64(counts[c]))
			}
		}
		if n := len(r.History); cfg.Tol > 0 && n > 1 && math.Abs(r.History[n-2]-inertia) <= cfg.Tol*inertia {
			break
		}
	}
	// A last assignment against the final centers gives labels and inertia
	// that belong to them.
	_, counts, inertia, err := p.assign(centers)
	if err != nil {
		return nil, err
	}
	if r.Labels, err = p.labels(); err != nil {
		return nil, err
	}
	r.Centers, r.Inertia = centers, inertia
	for _, c := range counts {
		r.Sizes = append(r.Sizes, int(c))
	}
	return r, nil
}
