package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gpulab/engine/cpu"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/llm/lfm2"
	"gpulab/kernels"
)

// Two kernels of LFM2's forward pass (notebook 06), checked against the
// CPU reference's own functions (lfm2.RMSNorm and lfm2.Route, which Forward
// uses). Both are memory bound, so their speed is in GB/s: the bytes they
// must read and write.
//
// lfm2/rmsnorm: y = x / sqrt(mean(x²) + eps) · w for each row, a block
// (work-group) of 256 per row, at odd widths, with rows of very different
// scales and a row of zeros. Timed next to the Go CPU, the reference
// solution and, on a GPU, LFM2's step 02.
//
// lfm2/router: from gate logits [tokens, experts] and expert_bias, each
// token's k experts with the largest sigmoid + bias (ties to the lower
// index) and their weights, the unbiased sigmoids normalized over the k
// when norm_topk, times scaling; a thread per token, on random logits with
// deliberate ties. Timed next to the Go CPU and the reference solution.
func init() {
	register(Exercise{
		Name: "lfm2/rmsnorm",
		Doc:  "RMSNorm of each row: rmsnorm(x, w, width, eps, y), a block of 256 threads per row (notebook 06)",
		Unit: UnitGBps,
		Flavors: withShapes(rmsnormShape, bothFamilies(rmsnormFile, map[string]string{
			LangCUDA:   "// TODO: block row = blockIdx.x normalizes x[row*width ...]. Each thread",
			LangOpenCL: "// TODO: group row = get_group_id(0) normalizes x[row*width ...]. Each",
		}, func(s *session, lang string) Result {
			timing := [2]int{8192, 2048}
			if s.smallTiming() {
				timing = [2]int{256, 2048}
			}
			return s.judge(rmsnormDraws(lang, rmsnormShapes...), rmsnormDraws(lang, timing)[0], "reference solution", s.rmsnormLadder)
		})),
	})
	register(Exercise{
		Name: "lfm2/router",
		Doc:  "MoE router: route(logits, bias, tokens, experts, k, norm_topk, scaling, top_idx, top_w), a thread per token (notebook 06)",
		Unit: UnitGBps,
		Flavors: withShapes(routerHiddenShape, bothFamilies(routerFile, map[string]string{
			LangCUDA:   "// TODO: thread t = blockIdx.x * blockDim.x + threadIdx.x picks its k",
			LangOpenCL: "// TODO: work-item t = get_global_id(0) picks its k experts one round at a",
		}, func(s *session, lang string) Result {
			timing := routerShape{tokens: 1 << 18, experts: 32, k: 4, normTopK: true, scaling: 1, bias: true}
			if s.smallTiming() {
				timing.tokens = 1 << 15
			}
			return s.judge(routerDraws(lang, routerShapes...), routerDraws(lang, timing)[0], "reference solution", routerCPU)
		})),
	})
}

// ---- lfm2/rmsnorm ----

const (
	rmsnormFile    = "exercises/lfm2_rmsnorm" // the reference solution, in both families
	rmsnormThreads = 256                      // a block / work-group per row
	rmsnormEps     = 1e-5                     // LFM2's norm_eps
	rmsnormTol     = 1e-5                     // relative, as wrongValue takes it
)

var rmsnormEntry = entry{name: "rmsnorm", decl: map[string]string{
	LangCUDA:   `extern "C" __global__ void rmsnorm(const float* x, const float* w, int width, float eps, float* y)`,
	LangOpenCL: "__kernel void rmsnorm(const __global float* x, const __global float* w, int width, float eps, __global float* y)",
}}

// rmsnormShapes are the check's [rows, width]: one element, widths below,
// just over, and far over a block's 256 threads, and multiples of none.
var rmsnormShapes = [][2]int{{1, 1}, {3, 37}, {17, 255}, {100, 257}, {7, 2048}, {5, 4100}}

// rmsnormProblem is n rows of width floats and the weight, for a kernel
// in lang.
type rmsnormProblem struct {
	lang     string
	n, width int
	x, w     []float32
}

func (p rmsnormProblem) String() string { return fmt.Sprintf("rows=%d width=%d", p.n, p.width) }

func (p rmsnormProblem) hint() string {
	h := fmt.Sprintf("width=%d: each of the block's %d threads sums the elements i = tid, tid + %d, ... below width, and the reduction adds all %d partial sums", p.width, rmsnormThreads, rmsnormThreads, rmsnormThreads)
	if p.width < rmsnormThreads {
		h = fmt.Sprintf("width=%d is less than the block's %d threads: most threads have no element, and their partial sums must be 0", p.width, rmsnormThreads)
	}
	if p.n > 1 {
		h += "; row 1 is all zeros: its norm is 0, and eps keeps 1/sqrt(mean + eps) finite"
	}
	return h
}
func (p rmsnormProblem) rows() int { return p.n }

// work is what the kernel must move: x read and y written once, and w.
func (p rmsnormProblem) work() float64 { return 4 * float64(2*p.n*p.width+p.width) }

// rmsnormDraws draws rows in [-1, 1) scaled by 10^(r mod 7 − 3), so that
// eps matters in some rows and not in others, and makes row 1 all zeros
// (whose norm is 0, not NaN).
func rmsnormDraws(lang string, shapes ...[2]int) []draw {
	var out []draw
	for _, s := range shapes {
		out = append(out, func(rng *rand.Rand) (problem, error) {
			rows, width := s[0], s[1]
			p := rmsnormProblem{lang: lang, n: rows, width: width, x: randomMatrix(rng, rows*width), w: randomMatrix(rng, width)}
			for r := range rows {
				scale := float32(math.Pow(10, float64(r%7-3)))
				if r == 1 {
					scale = 0
				}
				for i := range width {
					p.x[r*width+i] *= scale
				}
			}
			return p, nil
		})
	}
	return out
}

func (p rmsnormProblem) task() wire.Task {
	return rmsnormEntry.task(p.lang, p.n*rmsnormThreads, rmsnormThreads, p.x, p.w, p.width, float32(rmsnormEps), wire.Out(p.n*p.width))
}

// rowLength lays x and y out as rows of width.
func (p rmsnormProblem) rowLength(arg int) int {
	return map[int]int{0: p.width, 4: p.width}[arg]
}

// mismatch compares each row with lfm2.RMSNorm's.
func (p rmsnormProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	y, want := floats(out[0]), make([]float32, p.width)
	var err error
	d := each(p.n, rows, func(r int) string {
		if err = lfm2.RMSNorm(want, p.x[r*p.width:(r+1)*p.width], p.w, rmsnormEps); err != nil {
			return "" // reported below
		}
		at := func(i int) string { return fmt.Sprintf("y[%d][%d] (index %d)", r, i, r*p.width+i) }
		return firstMismatch(y[r*p.width:(r+1)*p.width], want, rmsnormTol, at)
	})
	return d, err
}

// parallelRows runs f on rows 0..n−1 on all cores (cpu.Parallel) and
// returns the error of the first row that failed.
func parallelRows(n int, f func(r int) error) error {
	errs := make([]error, n)
	cpu.Parallel(n, 16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			errs[r] = f(r)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// rmsnormLadder times, in a notebook, the Go CPU and, on a GPU, LFM2's own
// RMSNorm (step 02, compiled for fp32, with the engine's launch: a block
// of 256 threads per row) on the timing problem.
func (s *session) rmsnormLadder(pr problem) []Rung {
	p := pr.(rmsnormProblem)
	y := make([]float32, len(p.x))
	rungs := appendGoCPU(nil, p.work(), func() error {
		return parallelRows(p.n, func(r int) error {
			return lfm2.RMSNorm(y[r*p.width:(r+1)*p.width], p.x[r*p.width:(r+1)*p.width], p.w, rmsnormEps)
		})
	})
	if s.dev.CUDA == nil {
		return rungs
	}
	const name = "lfm2/02_rmsnorm"
	src, err := kernels.CUDA(name)
	if err != nil {
		return rungs
	}
	t := wire.Task{Entry: "rmsnorm", Options: []string{"-DLFM2_BF16=0"}, Grid: [3]int{p.n}, Block: [3]int{rmsnormThreads},
		Args: []any{p.x, 0, 1, p.width, p.w, float32(rmsnormEps), wire.Out(p.n * p.width)}}
	run := newKernelRunner(s.dev, name+".cu", src)
	d, err := best(func() (time.Duration, error) {
		_, d, err := run.Run([]wire.Task{t})
		return d, err
	})
	if err == nil {
		rungs = append(rungs, Rung{Name: "step " + name, GFLOPS: p.work() / d.Seconds() / 1e9})
	}
	return rungs
}

// ---- lfm2/router ----

const (
	routerFile  = "exercises/lfm2_router" // the reference solution, in both families
	routerBlock = 256                     // threads per block / work-items per group
	// routerGap is the least difference between two experts' scores that
	// the problems allow, unless the two have the very same logit and bias
	// (a tie): far above a float sigmoid's rounding (a few 10⁻⁸), so that
	// a correct kernel chooses exactly the reference's experts.
	routerGap = 1e-5
)

var routerEntry = entry{name: "route", decl: map[string]string{
	LangCUDA: `extern "C" __global__ void route(const float* logits, const float* bias, int tokens, int experts, int k, int norm_topk, float scaling, int* top_idx, float* top_w)`,
	LangOpenCL: "__kernel void route(const __global float* logits, const __global float* bias, int tokens, int experts, int k, int norm_topk, " +
		"float scaling, __global int* top_idx, __global float* top_w)",
}}

// routerShape is a router problem's size and settings; without bias, the
// biases are zeros (a model without use_expert_bias).
type routerShape struct {
	tokens, experts, k int
	normTopK           bool
	scaling            float64
	bias               bool
}

func (s routerShape) String() string {
	return fmt.Sprintf("tokens=%d experts=%d k=%d norm_topk=%v scaling=%g bias=%v", s.tokens, s.experts, s.k, s.normTopK, s.scaling, s.bias)
}

// routerShapes are the check's problems: one expert, k = experts, no
// bias (every score of a constant row ties), no normalization with a
// scaling, and token counts that are multiples of no block size.
var routerShapes = []routerShape{
	{tokens: 1, experts: 1, k: 1, normTopK: true, scaling: 1, bias: true},
	{tokens: 5, experts: 4, k: 2, normTopK: true, scaling: 1, bias: true},
	{tokens: 77, experts: 8, k: 3, normTopK: true, scaling: 1, bias: false},
	{tokens: 300, experts: 32, k: 4, normTopK: true, scaling: 1, bias: true},
	{tokens: 257, experts: 64, k: 8, normTopK: false, scaling: 2.5, bias: true},
	{tokens: 1000, experts: 32, k: 32, normTopK: true, scaling: 1, bias: true},
}

type routerProblem struct {
	routerShape
	lang         string
	logits, bias []float32
}

func (p routerProblem) rows() int { return p.tokens }

func (p routerProblem) hint() string {
	h := blockHint("tokens", p.tokens, routerBlock, "token")
	if p.k == p.experts {
		h += fmt.Sprintf("; k = experts = %d: every expert is picked, in order of score", p.k)
	}
	if !p.routerShape.bias {
		h += "; no bias: in the rows of equal logits every score ties, and ties go to the lower index"
	}
	return h
}

// work is what the kernel must move: the logits and the biases read, k
// indices and weights written per token.
func (p routerProblem) work() float64 {
	return 4 * float64(p.tokens*p.experts+p.experts+2*p.tokens*p.k)
}

// newRouterProblem draws biases on a grid of 1/1024 in [−1/8, 1/8] (two
// different ones are far apart), expert e of the second half sharing the
// bias of e − experts/2 when e is even, and logits from N(0, 2²), redrawn
// until every score is routerGap away from the others. Tokens t ≡ 1 (mod 4)
// copy those experts' logits too, so that they tie; tokens t ≡ 3 (mod 4)
// have one logit for every expert, so that experts of equal bias tie.
func newRouterProblem(rng *rand.Rand, lang string, s routerShape) routerProblem {
	p := routerProblem{routerShape: s, lang: lang, logits: make([]float32, s.tokens*s.experts), bias: make([]float32, s.experts)}
	half := s.experts / 2
	if s.bias {
		for e := range p.bias {
			if e >= half && e%2 == 0 && half > 0 {
				p.bias[e] = p.bias[e-half]
			} else {
				p.bias[e] = float32(rng.IntN(257)-128) / 1024
			}
		}
	}
	score := func(z, b float32) float32 { return float32(1/(1+math.Exp(-float64(z)))) + b }
	scores := make([]float32, s.experts) // of the row's experts drawn so far
	for t := range s.tokens {
		row := p.logits[t*s.experts : (t+1)*s.experts]
		if t%4 == 3 {
			z := float32(2 * rng.NormFloat64())
			for e := range row {
				row[e] = z
			}
			continue
		}
		for e := range row {
			if t%4 == 1 && e >= half && half > 0 && p.bias[e] == p.bias[e-half] {
				row[e], scores[e] = row[e-half], scores[e-half]
				continue
			}
		draw:
			for {
				row[e] = float32(2 * rng.NormFloat64())
				scores[e] = score(row[e], p.bias[e])
				for j := range e {
					if d := math.Abs(float64(scores[j] - scores[e])); d < routerGap && (row[j] != row[e] || p.bias[j] != p.bias[e]) {
						continue draw
					}
				}
				break
			}
		}
	}
	return p
}

// routerDraws draws a problem of each shape (newRouterProblem).
func routerDraws(lang string, shapes ...routerShape) []draw {
	var out []draw
	for _, s := range shapes {
		out = append(out, func(rng *rand.Rand) (problem, error) { return newRouterProblem(rng, lang, s), nil })
	}
	return out
}

func (p routerProblem) task() wire.Task {
	norm := 0
	if p.normTopK {
		norm = 1
	}
	return routerEntry.task(p.lang, p.tokens, routerBlock, p.logits, p.bias, p.tokens, p.experts, p.k, norm, float32(p.scaling),
		wire.Out(p.tokens*p.k), wire.Out(p.tokens*p.k))
}

// config is the part of an LFM2 config that the router reads.
func (p routerProblem) config() *lfm2.Config {
	return &lfm2.Config{ExpertsPerToken: p.k, NormTopK: p.normTopK, RoutedScaling: p.scaling}
}

// mismatch compares each token's choices and weights with lfm2.Route's.
func (p routerProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	idx, wts := ints(out[0]), floats(out[1])
	c := p.config()
	var err error
	d := each(p.tokens, rows, func(t int) string {
		row := p.logits[t*p.experts : (t+1)*p.experts]
		var want []int
		var wantW []float32
		if want, wantW, err = lfm2.Route(c, row, p.bias); err != nil {
			return "" // reported below
		}
		for j, r := range want { // the choices first: a wrong one changes every weight
			g := int(idx[t*p.k+j])
			switch {
			case g < 0 || g >= p.experts:
				return fmt.Sprintf("token %d: top_idx[%d][%d] is %d, not an expert (0..%d)", t, t, j, g, p.experts-1)
			case g != r && row[g] == row[r] && p.bias[g] == p.bias[r]:
				return fmt.Sprintf("token %d: experts %d and %d tie (same logit %g and bias %g): ties go to the lower index, so top_idx[%d][%d] is %d, not %d",
					t, min(g, r), max(g, r), row[r], p.bias[r], t, j, r, g)
			case g != r:
				return fmt.Sprintf("token %d: top_idx[%d][%d] is expert %d (sigmoid + bias %.6g), expected expert %d (%.6g): the k largest sigmoid(logit) + bias, largest first",
					t, t, j, g, sigmoidPlus(row[g], p.bias[g]), r, sigmoidPlus(row[r], p.bias[r]))
			}
		}
		for j, r := range want {
			i := t*p.k + j
			if w := float64(wantW[j]); !(math.Abs(float64(wts[i])-w) <= 1e-5*max(math.Abs(w), 1)) {
				return fmt.Sprintf("token %d: top_w[%d][%d] (expert %d) is %g, expected %g (its sigmoid %.6g, without the bias%s)",
					t, t, j, r, wts[i], wantW[j], sigmoidPlus(row[r], 0), p.weighting())
			}
		}
		return ""
	})
	return d, err
}

// weighting says how the reference turns sigmoids into weights.
func (p routerProblem) weighting() string {
	s := ""
	if p.normTopK {
		s = ", divided by the sum of the k chosen sigmoids + 1e-6"
	}
	if p.scaling != 1 {
		s += fmt.Sprintf(", times scaling %g", p.scaling)
	}
	return s
}

// sigmoidPlus is an expert's score, sigmoid(z) + b, for the messages.
func sigmoidPlus(z, b float32) float64 { return 1/(1+math.Exp(-float64(z))) + float64(b) }

// routerCPU times, in a notebook, the Go CPU router on the timing problem.
func routerCPU(pr problem) []Rung {
	p := pr.(routerProblem)
	c := p.config()
	return appendGoCPU(nil, p.work(), func() error {
		return parallelRows(p.tokens, func(t int) error {
			_, _, err := lfm2.Route(c, p.logits[t*p.experts:(t+1)*p.experts], p.bias)
			return err
		})
	})
}
