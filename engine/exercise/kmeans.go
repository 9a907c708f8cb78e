package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gpulab/engine/cluster/kmeans"
	"gpulab/engine/exercise/wire"
)

// kmeans/assign: the assignment step of k-means (notebook 04), a thread or
// work-item per point: labels[i] = the nearest center, dist[i] = the squared
// distance to it. The reference is step 01 of the k-means ladder (CUDA, or
// its OpenCL twin), and in a notebook the Go CPU assignment is timed next
// to it.
func init() {
	register(Exercise{
		Name: "kmeans/assign",
		Doc:  "k-means assignment: assign_naive(x, centers, n, d, k, labels, dist), a thread per point (step 01 of notebook 04)",
		Flavors: withShapes(assignShape, bothFamilies(assignStep, map[string]string{
			LangCUDA:   "// TODO: thread i = blockIdx.x * blockDim.x + threadIdx.x walks the k",
			LangOpenCL: "// TODO: work-item i = get_global_id(0) walks the k centers, sums the",
		}, func(s *session, lang string) Result {
			timing := [3]int{1 << 17, 128, 32}
			if s.smallTiming() {
				timing = [3]int{8192, 64, 16}
			}
			return s.judge(assignDraws(lang, assignShapes...), assignDraws(lang, timing)[0], "step "+assignStep, assignCPU)
		})),
	})
}

const (
	assignStep  = "kmeans/01_naive" // the reference kernel, in both families
	assignBlock = 256               // threads per block / work-items per group
)

var assignEntry = entry{name: "assign_naive", decl: map[string]string{
	LangCUDA:   `extern "C" __global__ void assign_naive(const float* x, const float* centers, int n, int d, int k, int* labels, float* dist)`,
	LangOpenCL: "__kernel void assign_naive(const __global float* x, const __global float* centers, int n, int d, int k, __global int* labels, __global float* dist)",
}}

// assignProblem is one assignment: n points and k centers of d dimensions,
// for a kernel in lang.
type assignProblem struct {
	lang       string
	n, d, k    int
	x, centers []float32
}

func (p assignProblem) String() string { return fmt.Sprintf("n=%d d=%d k=%d", p.n, p.d, p.k) }

func (p assignProblem) hint() string { return blockHint("n", p.n, assignBlock, "point") }
func (p assignProblem) rows() int    { return p.n }

// work counts a subtraction and a fused multiply-add per dimension, center
// and point, as the kmeans suite does.
func (p assignProblem) work() float64 { return 2 * float64(p.n) * float64(p.d) * float64(p.k) }

func (p assignProblem) task() wire.Task {
	return assignEntry.task(p.lang, p.n, assignBlock, p.x, p.centers, p.n, p.d, p.k, wire.Out(p.n), wire.Out(p.n))
}

// assignShapes are the check's problems: one point, more centers than
// points, one dimension, and counts that are multiples of no block size.
var assignShapes = [][3]int{{1, 1, 1}, {5, 3, 7}, {300, 1, 3}, {1000, 37, 5}, {777, 128, 25}}

// assignDraws draws points uniformly in [-1, 1)^d and takes the centers
// among them (so that some distances are exactly 0).
func assignDraws(lang string, shapes ...[3]int) []draw {
	var out []draw
	for _, s := range shapes {
		out = append(out, func(rng *rand.Rand) (problem, error) {
			n, d, k := s[0], s[1], s[2]
			p := assignProblem{lang: lang, n: n, d: d, k: k, x: randomMatrix(rng, n*d), centers: make([]float32, k*d)}
			for c := range k {
				i := rng.IntN(n)
				copy(p.centers[c*d:(c+1)*d], p.x[i*d:(i+1)*d])
			}
			return p, nil
		})
	}
	return out
}

// mismatch checks labels and distances in float64: each label must be a
// nearest center (any of equals) and its distance the squared distance to
// it.
func (p assignProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	labels, dist := ints(out[0]), floats(out[1])
	sq := func(i, c int) float64 {
		var s float64
		for j := range p.d {
			t := float64(p.x[i*p.d+j]) - float64(p.centers[c*p.d+j])
			s += t * t
		}
		return s
	}
	return each(p.n, rows, func(i int) string {
		l := int(labels[i])
		if l < 0 || l >= p.k {
			return fmt.Sprintf("labels[%d] is %d, not a center (0..%d)", i, l, p.k-1)
		}
		mine := sq(i, l)
		tol := 1e-5*mine + 1e-6*float64(p.d)
		for c := range p.k {
			if dc := sq(i, c); dc < mine-tol {
				return fmt.Sprintf("point %d: labels[%d] is %d (squared distance %.6g), but center %d is nearer (%.6g)", i, i, l, mine, c, dc)
			}
		}
		if g := float64(dist[i]); !(math.Abs(g-mine) <= tol) {
			return fmt.Sprintf("point %d: dist[%d] is %g, expected %.6g (the squared distance to center %d)", i, i, dist[i], mine, l)
		}
		return ""
	}), nil
}

// assignCPU times the Go CPU assignment on the timing problem.
func assignCPU(pr problem) []Rung {
	p := pr.(assignProblem)
	x := &kmeans.Matrix{N: p.n, D: p.d, X: p.x}
	return appendGoCPU(nil, p.work(), func() error {
		_, _, err := kmeans.Assign(x, p.centers, p.k)
		return err
	})
}

// appendGoCPU times the Go CPU version f at its best and, if it ran, adds
// its speed (work per second, in billions) to the ladder.
func appendGoCPU(ladder []Rung, work float64, f func() error) []Rung {
	t, err := best(func() (time.Duration, error) {
		start := time.Now()
		err := f()
		return time.Since(start), err
	})
	if err != nil {
		return ladder
	}
	return append(ladder, Rung{Name: "Go CPU (all cores)", GFLOPS: work / t.Seconds() / 1e9})
}
