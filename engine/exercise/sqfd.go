package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gpulab/datasets"
	"gpulab/engine/cluster/kmedoids"
	"gpulab/engine/cuda"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/sqfd"
)

// sqfd/assign: the assignment step of k-medoids under SQFD (notebook 05),
// a thread or work-item per signature: labels[i] = the nearest medoid (the
// lowest index on ties), dist[i] = the SQFD to it, with the Gaussian
// similarity. The signatures are synthetic (datasets.SyntheticSignatures),
// the reference is the Go CPU assignment (kmedoids.Assign over sqfd.Metric,
// in float64), and the solution is timed next to it, the reference
// solution and, on a GPU, k-medoids steps 01 and 02.
func init() {
	register(Exercise{
		Name: "sqfd/assign",
		Doc:  "SQFD k-medoids assignment: sqfd_assign(index, features, weights, self, n, dim, medoids, k, alpha, labels, dist), a thread per signature (notebook 05)",
		Flavors: withShapes(sqfdHiddenShape, bothFamilies(sqfdAssignFile, map[string]string{
			LangCUDA:   "// TODO: thread i = blockIdx.x * blockDim.x + threadIdx.x walks the k",
			LangOpenCL: "// TODO: work-item i = get_global_id(0) walks the k medoids m = medoids[c].",
		}, func(s *session, lang string) Result {
			timing := sqfdShape{1 << 14, 32, 10, 40, 7}
			if s.smallTiming() {
				timing = sqfdShape{2000, 16, 10, 40, 7}
			}
			return s.judge(sqfdDraws(lang, sqfdShapes...), sqfdDraws(lang, timing)[0], "reference solution", s.sqfdLadder)
		})),
	})
}

const (
	sqfdAssignFile = "exercises/sqfd_assign" // the reference solution, in both families
	sqfdBlock      = 256                     // threads per block / work-items per group
	sqfdAlpha      = 1.0                     // the Gaussian's exp(−α·d²), as lab sqfd's default
)

var sqfdAssignEntry = entry{name: "sqfd_assign", decl: map[string]string{
	LangCUDA: `extern "C" __global__ void sqfd_assign(const int* index, const float* features, const float* weights, const float* self, int n, int dim, const int* medoids, int k, float alpha, int* labels, float* dist)`,
	LangOpenCL: "__kernel void sqfd_assign(const __global int* index, const __global float* features, const __global float* weights, " +
		"const __global float* self, int n, int dim, const __global int* medoids, int k, float alpha, __global int* labels, __global float* dist)",
}}

// sqfdShape is a problem's size: n signatures of minC to maxC centroids of
// dim features, and k medoids.
type sqfdShape struct{ n, k, minC, maxC, dim int }

func (s sqfdShape) String() string {
	return fmt.Sprintf("n=%d k=%d, %d..%d centroids of %d features", s.n, s.k, s.minC, s.maxC, s.dim)
}

// sqfdShapes are the check's problems: one signature, a repeated medoid
// (medoids 0 and k−1 are the same signature, so ties must go to the lower
// index), one feature, single-centroid signatures, and counts that are
// multiples of no block size.
var sqfdShapes = []sqfdShape{{1, 1, 1, 1, 1}, {5, 3, 1, 4, 2}, {300, 7, 10, 40, 7}, {777, 25, 1, 20, 3}, {1000, 5, 20, 60, 7}}

// sqfdProblem is one assignment: the metric (the CPU reference) and the
// kernel's inputs, the signatures split into flat arrays.
type sqfdProblem struct {
	lang              string
	shape             sqfdShape
	metric            *sqfd.Metric
	medoids           []int
	index, medoidIDs  []int32
	features, weights []float32 // dim per centroid, one per centroid
	self              []float32 // S(i, i) of each signature
}

// sqfdDraws draws synthetic signatures (weights summing to 1) and k
// distinct medoids, then repeats medoid 0 as medoid k−1 when k > 2.
func sqfdDraws(lang string, shapes ...sqfdShape) []draw {
	var out []draw
	for _, s := range shapes {
		out = append(out, func(rng *rand.Rand) (problem, error) { return newSQFDProblem(rng, lang, s) })
	}
	return out
}

func newSQFDProblem(rng *rand.Rand, lang string, s sqfdShape) (sqfdProblem, error) {
	sigs, err := datasets.SyntheticSignatures(s.n, s.minC, s.maxC, s.dim, rng.Uint64())
	if err != nil {
		return sqfdProblem{}, err
	}
	kernel := sqfd.Kernel{Sim: sqfd.Gaussian, Alpha: sqfdAlpha}
	m, err := sqfd.NewMetric(sigs, kernel)
	if err != nil {
		return sqfdProblem{}, err
	}
	p := sqfdProblem{lang: lang, shape: s, metric: m, medoids: rng.Perm(s.n)[:s.k], index: m.Sigs.Index, self: make([]float32, s.n)}
	if s.k > 2 {
		p.medoids[s.k-1] = p.medoids[0]
	}
	for _, c := range p.medoids {
		p.medoidIDs = append(p.medoidIDs, int32(c))
	}
	rec := s.dim + 1
	for c := 0; c < len(m.Sigs.Data); c += rec {
		p.features = append(p.features, m.Sigs.Data[c:c+s.dim]...)
		p.weights = append(p.weights, m.Sigs.Data[c+s.dim])
	}
	for i := range s.n {
		p.self[i] = float32(sqfd.SelfSimilarity(m.Sigs.Centroids(i), s.dim, kernel))
	}
	return p, nil
}

func (p sqfdProblem) String() string { return p.shape.String() }

func (p sqfdProblem) hint() string {
	h := blockHint("n", p.shape.n, sqfdBlock, "signature")
	if p.shape.k > 2 {
		h += fmt.Sprintf("; medoids 0 and %d are the same signature, so every signature is exactly as near to both: the lower index wins", p.shape.k-1)
	}
	return h
}
func (p sqfdProblem) rows() int { return p.shape.n }

// flops counts the useful work: the cross term of every (signature,
// medoid) pair, sqfd.FlopsPerPair per pair of centroids.
func (p sqfdProblem) work() float64 {
	var medoidCentroids int
	for _, c := range p.medoids {
		medoidCentroids += int(p.index[c+1] - p.index[c])
	}
	return float64(p.index[p.shape.n]) * float64(medoidCentroids) * float64(sqfd.FlopsPerPair(p.shape.dim))
}

func (p sqfdProblem) task() wire.Task {
	return sqfdAssignEntry.task(p.lang, p.shape.n, sqfdBlock, p.index, p.features, p.weights, p.self, p.shape.n, p.shape.dim,
		p.medoidIDs, p.shape.k, float32(sqfdAlpha), wire.Out(p.shape.n), wire.Out(p.shape.n))
}

// mismatch checks labels and distances against the CPU assignment. A
// label may differ from the CPU's only where the two medoids are equally
// near within rounding: the bound of engine/sqfd's own GPU checks,
// 10⁻⁴·(S(i,i) + S(m,m)) on SQFD²; where they are exactly as near (the
// same signature), the lower index.
func (p sqfdProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	labels, dist := ints(out[0]), floats(out[1])
	k := p.shape.k
	roundoff2 := func(i, m int) float64 { return 1e-4 * float64(p.self[i]+p.self[m]) }
	return each(p.shape.n, rows, func(i int) string {
		l := int(labels[i])
		if l < 0 || l >= k {
			return fmt.Sprintf("labels[%d] is %d, not a medoid (0..%d)", i, l, k-1)
		}
		w, wantDist := kmedoids.Nearest(p.metric, i, p.medoids)
		m := p.medoids[l]
		d := p.metric.Distance(i, m)
		switch {
		case l != w && d == wantDist:
			return fmt.Sprintf("signature %d is exactly as near to medoid %d as to medoid %d (SQFD %.6g): ties go to the lower index, so labels[%d] is %d, not %d",
				i, w, l, d, i, w, l)
		case l != w && d*d > wantDist*wantDist+roundoff2(i, m)+roundoff2(i, p.medoids[w]):
			return fmt.Sprintf("signature %d: labels[%d] is %d (SQFD %.6g), but medoid %d is nearer (%.6g)", i, i, l, d, w, wantDist)
		}
		if g := float64(dist[i]); !(math.Abs(g*g-d*d) <= roundoff2(i, m)) {
			return fmt.Sprintf("signature %d: dist[%d] is %g, expected %.6g (the SQFD to medoid %d, signature %d)", i, i, dist[i], d, l, m)
		}
		return ""
	}), nil
}

// sqfdLadder times, in a notebook, the Go CPU assignment and, on a GPU,
// k-medoids steps 01 and 02 on the timing problem.
func (s *session) sqfdLadder(pr problem) []Rung {
	p := pr.(sqfdProblem)
	labels, dist := make([]int32, p.shape.n), make([]float64, p.shape.n)
	rungs := appendGoCPU(nil, p.work(), func() error {
		kmedoids.Assign(p.metric, p.medoids, labels, dist)
		return nil
	})
	if s.dev.CUDA != nil {
		rungs = append(rungs, kmedoidsSteps(s.dev.CUDA, p)...)
	}
	return rungs
}

// kmedoidsSteps times k-medoids assignment steps 01 and 02 (engine/sqfd on
// one GPU) on a problem; a step that fails is left out.
func kmedoidsSteps(ctx *cuda.Context, p sqfdProblem) []Rung {
	var rungs []Rung
	for _, step := range []struct{ name, variant string }{
		{"step kmedoids/01_assign_naive", sqfd.Naive}, {"step kmedoids/02_assign_shared", sqfd.Shared},
	} {
		g, err := sqfd.NewKMedoidsGPU([]*cuda.Context{ctx}, p.metric, sqfd.GPUOptions{Assign: step.variant})
		if err != nil {
			continue
		}
		labels, dist := make([]int32, p.shape.n), make([]float64, p.shape.n)
		t, err := best(func() (time.Duration, error) {
			if err := g.Assign(p.medoids, labels, dist); err != nil {
				return 0, err
			}
			return g.Stats()[0].Assign, nil
		})
		g.Close()
		if err == nil {
			rungs = append(rungs, Rung{Name: step.name, GFLOPS: p.work() / t.Seconds() / 1e9})
		}
	}
	return rungs
}
