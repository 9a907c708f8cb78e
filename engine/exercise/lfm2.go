package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gpulab/engine"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda"
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
		Flavors: bothFamilies(rmsnormFile, func(dev *engine.Device, run launcher, solution, src string) Result {
			timing := [2]int{8192, 2048}
			if isPoCL(dev.Info) {
				timing = [2]int{256, 2048}
			}
			var step func(p rmsnormProblem) (float64, error)
			if dev.CUDA != nil {
				step = rmsnormStep02(dev.CUDA)
			}
			return checkRMSNorm(run, solution, src, timing, step)
		}),
	})
	register(Exercise{
		Name: "lfm2/router",
		Doc:  "MoE router: route(logits, bias, tokens, experts, k, norm_topk, scaling, top_idx, top_w), a thread per token (notebook 06)",
		Unit: UnitGBps,
		Flavors: bothFamilies(routerFile, func(dev *engine.Device, run launcher, solution, src string) Result {
			timing := routerShape{tokens: 1 << 18, experts: 32, k: 4, normTopK: true, scaling: 1, bias: true}
			if isPoCL(dev.Info) {
				timing.tokens = 1 << 15
			}
			return checkRouter(run, solution, src, timing)
		}),
	})
}

// ---- lfm2/rmsnorm ----

const (
	rmsnormFile    = "exercises/lfm2_rmsnorm" // the reference solution, in both families
	rmsnormThreads = 256                      // a block / work-group per row
	rmsnormEps     = 1e-5                     // LFM2's norm_eps
)

var rmsnormEntry = entry{name: "rmsnorm", decl: map[string]string{
	LangCUDA:   `extern "C" __global__ void rmsnorm(const float* x, const float* w, int width, float eps, float* y)`,
	LangOpenCL: "__kernel void rmsnorm(const __global float* x, const __global float* w, int width, float eps, __global float* y)",
}}

// rmsnormShapes are the check's [rows, width]: one element, widths below,
// just over, and far over a block's 256 threads, and multiples of none.
var rmsnormShapes = [][2]int{{1, 1}, {3, 37}, {17, 255}, {100, 257}, {7, 2048}, {5, 4100}}

// rmsnormProblem is rows rows of width floats and the weight.
type rmsnormProblem struct {
	rows, width int
	x, w        []float32
}

func (p rmsnormProblem) String() string { return fmt.Sprintf("rows=%d width=%d", p.rows, p.width) }

// bytes is what the kernel must move: x read and y written once, and w.
func (p rmsnormProblem) bytes() float64 { return 4 * float64(2*p.rows*p.width+p.width) }

// newRMSNormProblem scales row r by 10^(r mod 7 − 3), so that eps matters
// in some rows and not in others, and makes row 1 all zeros (whose norm is
// 0, not NaN).
func newRMSNormProblem(rng *rand.Rand, rows, width int) rmsnormProblem {
	p := rmsnormProblem{rows: rows, width: width, x: randomMatrix(rng, rows*width), w: randomMatrix(rng, width)}
	for r := range rows {
		scale := float32(math.Pow(10, float64(r%7-3)))
		if r == 1 {
			scale = 0
		}
		for i := range width {
			p.x[r*width+i] *= scale
		}
	}
	return p
}

func (p rmsnormProblem) call(src string) call {
	return call{source: src, entry: rmsnormEntry, groups: p.rows, local: rmsnormThreads,
		args: []any{p.x, p.w, p.width, float32(rmsnormEps), output(p.rows * p.width)}}
}

// reference is the CPU's RMSNorm of every row, in parallel.
func (p rmsnormProblem) reference() ([]float32, error) {
	y := make([]float32, len(p.x))
	err := parallelRows(p.rows, func(r int) error {
		return lfm2.RMSNorm(y[r*p.width:(r+1)*p.width], p.x[r*p.width:(r+1)*p.width], p.w, rmsnormEps)
	})
	return y, err
}

// throughput times src's kernel, launched by call, at its best and returns
// the GB/s of moving bytes.
func throughput(run launcher, call func(src string) call, bytes float64, src string) (float64, error) {
	t, err := best(func() (time.Duration, error) {
		_, t, err := run(call(src))
		return t, err
	})
	return bytes / t.Seconds() / 1e9, err
}

// appendGoCPU times the Go CPU version f at its best and, if it ran, adds
// its GB/s of moving bytes to the ladder.
func appendGoCPU(ladder []Rung, bytes float64, f func() error) []Rung {
	t, err := best(func() (time.Duration, error) {
		start := time.Now()
		err := f()
		return time.Since(start), err
	})
	if err != nil {
		return ladder
	}
	return append(ladder, Rung{Name: "Go CPU (all cores)", GFLOPS: bytes / t.Seconds() / 1e9})
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

// checkRMSNorm checks src on rmsnormShapes, then times it, the Go CPU, the
// reference solution and the ladder's step (if any) at timing [rows, width].
func checkRMSNorm(run launcher, solution, src string, timing [2]int, step func(p rmsnormProblem) (float64, error)) Result {
	r := Result{}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range rmsnormShapes {
		p := newRMSNormProblem(rng, s[0], s[1])
		out, _, err := run(p.call(src))
		if err != nil {
			r.Compiled, r.Error = runError(err)
			return r
		}
		r.Compiled = true
		want, err := p.reference()
		if err != nil {
			r.Error = err.Error()
			return r
		}
		at := func(i int) string { return fmt.Sprintf("y[%d][%d] (index %d)", i/p.width, i%p.width, i) }
		if d := firstMismatch(floats(out[0]), want, 1e-5, at); d != "" {
			r.Error, r.Detail = "wrong result for "+p.String(), d
			return r
		}
	}
	r.Correct = true
	p := newRMSNormProblem(rng, timing[0], timing[1])
	r.Size = p.String()
	gbps := func(src string) (float64, error) { return throughput(run, p.call, p.bytes(), src) }
	var err error
	if r.GFLOPS, err = gbps(src); err != nil {
		r.Correct, r.Error = false, fmt.Sprintf("correct on the small problems, but it failed at %s: %v", p, err)
		return r
	}
	r.Ladder = appendGoCPU(r.Ladder, p.bytes(), func() error {
		_, err := p.reference()
		return err
	})
	if g, err := gbps(solution); err == nil {
		r.Ladder = append(r.Ladder, Rung{Name: "reference solution", GFLOPS: g})
		r.PctOfRef = 100 * r.GFLOPS / g
	}
	if step != nil {
		if g, err := step(p); err == nil {
			r.Ladder = append(r.Ladder, Rung{Name: "step lfm2/02_rmsnorm", GFLOPS: g})
		}
	}
	return r
}

// rmsnormStep02 times LFM2's own RMSNorm (step 02, compiled for fp32) on a
// problem, with the engine's launch: a block of 256 threads per row.
func rmsnormStep02(ctx *cuda.Context) func(p rmsnormProblem) (float64, error) {
	return func(p rmsnormProblem) (float64, error) {
		const name = "lfm2/02_rmsnorm"
		src, err := kernels.CUDA(name)
		if err != nil {
			return 0, err
		}
		c := call{name: name + ".cu", source: src, options: []string{"-DLFM2_BF16=0"}, entry: entry{name: "rmsnorm"},
			groups: p.rows, local: rmsnormThreads,
			args: []any{p.x, 0, 1, p.width, p.w, float32(rmsnormEps), output(p.rows * p.width)}}
		run := cudaLauncher(ctx)
		t, err := best(func() (time.Duration, error) {
			_, t, err := run(c)
			return t, err
		})
		return p.bytes() / t.Seconds() / 1e9, err
	}
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
	logits, bias []float32
}

// bytes is what the kernel must move: the logits and the biases read, k
// indices and weights written per token.
func (p routerProblem) bytes() float64 {
	return 4 * float64(p.tokens*p.experts+p.experts+2*p.tokens*p.k)
}

// newRouterProblem draws biases on a grid of 1/1024 in [−1/8, 1/8] (two
// different ones are far apart), expert e of the second half sharing the
// bias of e − experts/2 when e is even, and logits from N(0, 2²), redrawn
// until every score is routerGap away from the others. Tokens t ≡ 1 (mod 4)
// copy those experts' logits too, so that they tie; tokens t ≡ 3 (mod 4)
// have one logit for every expert, so that experts of equal bias tie.
func newRouterProblem(rng *rand.Rand, s routerShape) routerProblem {
	p := routerProblem{routerShape: s, logits: make([]float32, s.tokens*s.experts), bias: make([]float32, s.experts)}
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
				row[e] = row[e-half]
				continue
			}
		draw:
			for {
				row[e] = float32(2 * rng.NormFloat64())
				se := score(row[e], p.bias[e])
				for j := range e {
					if d := math.Abs(float64(score(row[j], p.bias[j]) - se)); d < routerGap && (row[j] != row[e] || p.bias[j] != p.bias[e]) {
						continue draw
					}
				}
				break
			}
		}
	}
	return p
}

func (p routerProblem) call(src string) call {
	norm := 0
	if p.normTopK {
		norm = 1
	}
	return call{source: src, entry: routerEntry, groups: groupsOf(p.tokens, routerBlock), local: routerBlock,
		args: []any{p.logits, p.bias, p.tokens, p.experts, p.k, norm, float32(p.scaling), output(p.tokens * p.k), output(p.tokens * p.k)}}
}

// config is the part of an LFM2 config that the router reads.
func (p routerProblem) config() *lfm2.Config {
	return &lfm2.Config{ExpertsPerToken: p.k, NormTopK: p.normTopK, RoutedScaling: p.scaling}
}

// routerMismatch compares each token's choices and weights with
// lfm2.Route's and describes the first difference.
func routerMismatch(p routerProblem, idx []int32, wts []float32) (string, error) {
	c := p.config()
	for t := range p.tokens {
		row := p.logits[t*p.experts : (t+1)*p.experts]
		want, wantW, err := lfm2.Route(c, row, p.bias)
		if err != nil {
			return "", err
		}
		for j, r := range want { // the choices first: a wrong one changes every weight
			g := int(idx[t*p.k+j])
			switch {
			case g < 0 || g >= p.experts:
				return fmt.Sprintf("token %d: top_idx[%d][%d] is %d, not an expert (0..%d)", t, t, j, g, p.experts-1), nil
			case g != r && row[g] == row[r] && p.bias[g] == p.bias[r]:
				return fmt.Sprintf("token %d: experts %d and %d tie (same logit %g and bias %g): ties go to the lower index, so top_idx[%d][%d] is %d, not %d",
					t, min(g, r), max(g, r), row[r], p.bias[r], t, j, r, g), nil
			case g != r:
				return fmt.Sprintf("token %d: top_idx[%d][%d] is expert %d (sigmoid + bias %.6g), expected expert %d (%.6g): the k largest sigmoid(logit) + bias, largest first",
					t, t, j, g, sigmoidPlus(row[g], p.bias[g]), r, sigmoidPlus(row[r], p.bias[r])), nil
			}
		}
		for j, r := range want {
			i := t*p.k + j
			if w := float64(wantW[j]); !(math.Abs(float64(wts[i])-w) <= 1e-5*max(math.Abs(w), 1)) {
				return fmt.Sprintf("token %d: top_w[%d][%d] (expert %d) is %g, expected %g (its sigmoid %.6g, without the bias%s)",
					t, t, j, r, wts[i], wantW[j], sigmoidPlus(row[r], 0), p.weighting()), nil
			}
		}
	}
	return "", nil
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

// checkRouter checks src on routerShapes, then times it, the Go CPU and the
// reference solution on the timing problem.
func checkRouter(run launcher, solution, src string, timing routerShape) Result {
	r := Result{}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range routerShapes {
		p := newRouterProblem(rng, s)
		out, _, err := run(p.call(src))
		if err != nil {
			r.Compiled, r.Error = runError(err)
			return r
		}
		r.Compiled = true
		d, err := routerMismatch(p, ints(out[0]), floats(out[1]))
		if err != nil {
			r.Error = err.Error()
			return r
		}
		if d != "" {
			r.Error, r.Detail = "wrong result for "+s.String(), d
			return r
		}
	}
	r.Correct = true
	p := newRouterProblem(rng, timing)
	r.Size = timing.String()
	gbps := func(src string) (float64, error) { return throughput(run, p.call, p.bytes(), src) }
	var err error
	if r.GFLOPS, err = gbps(src); err != nil {
		r.Correct, r.Error = false, fmt.Sprintf("correct on the small problems, but it failed at %s: %v", timing, err)
		return r
	}
	c := p.config()
	r.Ladder = appendGoCPU(r.Ladder, p.bytes(), func() error {
		return parallelRows(p.tokens, func(t int) error {
			_, _, err := lfm2.Route(c, p.logits[t*p.experts:(t+1)*p.experts], p.bias)
			return err
		})
	})
	if g, err := gbps(solution); err == nil {
		r.Ladder = append(r.Ladder, Rung{Name: "reference solution", GFLOPS: g})
		r.PctOfRef = 100 * r.GFLOPS / g
	}
	return r
}
