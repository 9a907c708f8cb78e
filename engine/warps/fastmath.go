package warps

import (
	"fmt"
	"math"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
)

// The fastmath suite: one compute-bound kernel of exp and sin, built three
// ways (precise, fast flags, native/intrinsic functions), each checked against
// a float64 Go reference. The record's max_rel_err is the measured precision
// (|got-want| / max(|want|, 1)), the speedup over precise the gain. Size is a
// number of elements, as in divergence ("1M" is 1<<20).
//
// Tolerances are safety nets that catch a broken kernel, not precision
// requirements: 1e-5 for precise (float32 functions of a few ulp plus a
// float32 sum of fastIters terms), 1e-2 for fast flags and native, whose
// precision the OpenCL spec leaves to the implementation (on NVIDIA __sinf's
// absolute error grows with the argument, here up to ~33).
//
// Flops count 7 operations per term (fma, mul, exp, sin, add, mul, add), each
// exp and sin as one.

const (
	fastIters = 32 // terms per element, the kernels' ITERS
	fastLocal = 256
)

// fastVariant is one build of the kernel.
type fastVariant struct {
	name      string
	cuOpts    []string
	clOpts    []string
	functions map[engine.Kind]string // what the kernel calls, for the record
	tol       float64
}

var fastVariants = []fastVariant{
	{name: "precise", tol: 1e-5,
		functions: map[engine.Kind]string{engine.CUDA: "expf, sinf", engine.OpenCL: "exp, sin"}},
	{name: "fast_flags", cuOpts: []string{"--use_fast_math"}, clOpts: []string{"-cl-fast-relaxed-math"}, tol: 1e-2,
		functions: map[engine.Kind]string{engine.CUDA: "expf, sinf with --use_fast_math", engine.OpenCL: "exp, sin with -cl-fast-relaxed-math"}},
	{name: "native", cuOpts: []string{"-DUSE_NATIVE"}, clOpts: []string{"-DUSE_NATIVE"}, tol: 1e-2,
		functions: map[engine.Kind]string{engine.CUDA: "__expf, __sinf", engine.OpenCL: "native_exp, native_sin"}},
}

func init() {
	bench.Register(bench.Suite{
		Name: "fastmath",
		Doc: "precise vs fast-math flags vs native/intrinsic exp and sin: speedup and measured max relative error; " +
			"size = elements",
		Sizes: sizes("256K", "16M"),
		Cases: gpuSuite(fastmathBuild),
	})
}

// fastStep is the kernels' STEP, 32.0f / ITERS in float32.
const fastStep = float32(32.0) / fastIters

// fastRef is the float64 reference of one element: the same float32 arguments
// t and u as the kernel, then exp, sin and the sum in float64.
func fastRef(x float32) float32 {
	acc := 0.0
	for k := range fastIters {
		t := float32(math.FMA(float64(k), float64(fastStep), float64(x)))
		u := float32(0.1) * t
		acc += math.Exp(float64(u)) * (1 + math.Sin(float64(t)))
	}
	return float32(acc)
}

func fastmathBuild(g *gpu, dev *engine.Device, size string) (cases []bench.Case, err error) {
	n, err := elements(size)
	if err != nil {
		return nil, err
	}
	if err := checkArrays(dev, "fastmath", size, 4*uint64(n), 2*uint64(n),
		"the input, the zeros that reset the output, the reference and the output read back", "the input and the output"); err != nil {
		return nil, err
	}
	x := make([]float32, n)
	cpu.Parallel(n, 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x[i] = float32(divHash(i, 3)) // [0, 1)
		}
	})
	xb, err := upload(g, x)
	if err != nil {
		return nil, err
	}
	out, err := g.alloc(n)
	if err != nil {
		return nil, err
	}
	var want []float32 // computed on the first check
	global, local := []int{roundUp(n, fastLocal)}, []int{fastLocal}
	zeros := make([]float32, n)
	for _, v := range fastVariants {
		opts := []string{fmt.Sprintf("-DITERS=%d", fastIters)}
		if g.cu != nil {
			opts = append(opts, v.cuOpts...)
		} else {
			opts = append(opts, v.clOpts...)
		}
		k, err := g.kernel("fastmath", "fastmath", opts...)
		if err != nil {
			return nil, fmt.Errorf("fastmath %s: %w", v.name, err)
		}
		cases = append(cases, bench.Case{
			Variant:  v.name,
			Params:   bench.Params{"elements": n, "iters": fastIters, "functions": v.functions[g.kind], "tol": v.tol},
			Baseline: v.name == "precise",
			Flops:    7 * fastIters * float64(n),
			Bytes:    8 * float64(n),
			Tol:      v.tol,
			Reset:    func() error { return write(g, out, zeros) },
			Run: func() (time.Duration, error) {
				return g.launch(k, global, local, 0, n, xb, out)
			},
			Check: func() (bench.Checked, error) {
				got, err := g.read(out, n)
				if err != nil {
					return bench.Checked{}, err
				}
				if want == nil {
					w := make([]float32, n)
					cpu.Parallel(n, 1<<10, func(lo, hi int) {
						for i := lo; i < hi; i++ {
							w[i] = fastRef(x[i])
						}
					})
					want = w
				}
				return bench.Compare(got, want), nil
			},
		})
	}
	return cases, nil
}
