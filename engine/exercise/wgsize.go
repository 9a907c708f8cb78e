package exercise

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"gpulab/engine"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// opencl/wgsize: the work-group-size experiment of notebook 02. The student
// writes wg_fma (ITERS dependent FMAs per element, compute bound), declaring
// reqd_work_group_size(WG, 1, 1) when WG is defined; the check verifies it
// at every local size from 8 to 1024 that the device and kernel allow, with
// and without the hint, on a length that is a multiple of none of them, then
// charts the GFLOP/s of each launch next to the lab's own kernel at 256.
func init() {
	register(Exercise{
		Name: "opencl/wgsize",
		Doc:  "wg_fma(n, src, dst) with reqd_work_group_size(WG, 1, 1) under -DWG: swept over local sizes 8..1024 (notebook 02)",
		Flavors: []Flavor{{
			Lang:     LangOpenCL,
			Solution: func() (string, error) { return kernels.OpenCL(wgsizeFile) },
			devices:  openCLDevices,
			check:    checkWGSize,
		}},
	})
}

const (
	wgsizeFile   = "warps/wgsize" // the lab's kernel, the reference solution
	wgsizeKernel = "wg_fma"
	wgsizeIters  = 256 // FMAs per element: 64 flop per byte moved
)

// wgLaunch builds src with the given options and runs wg_fma once over n
// elements of x in groups of local: dst and the kernel's device time.
func wgLaunch(ctx *opencl.Context, src, options string, x []float32, local int) ([]float32, time.Duration, error) {
	prog, err := ctx.Build(src, options)
	if err != nil {
		return nil, 0, err
	}
	k, err := prog.Kernel(wgsizeKernel)
	if err != nil {
		return nil, 0, fmt.Errorf("%w (the kernel must be __kernel void %s(int n, __global const float* src, __global float* dst))", err, wgsizeKernel)
	}
	n := len(x)
	in, err := ctx.Alloc(4 * n)
	if err != nil {
		return nil, 0, err
	}
	defer in.Release()
	out, err := ctx.Alloc(4 * n)
	if err != nil {
		return nil, 0, err
	}
	defer out.Release()
	if err := opencl.WriteSlice(ctx, in, x); err != nil {
		return nil, 0, err
	}
	nan := make([]uint32, n) // an element the kernel skips cannot pass
	for i := range nan {
		nan[i] = 0x7fc00000
	}
	if err := opencl.WriteSlice(ctx, out, nan); err != nil {
		return nil, 0, err
	}
	ev, err := ctx.Launch(k, []int{(n + local - 1) / local * local}, []int{local}, int32(n), in, out)
	if err != nil {
		return nil, 0, err
	}
	defer ev.Release()
	t, err := ev.Duration()
	if err != nil {
		return nil, 0, err
	}
	got := make([]float32, n)
	return got, t, opencl.ReadSlice(ctx, out, got)
}

// fmaChainReference applies a <- fma(a, 0.999, 0.001) wgsizeIters times to
// every element, with float32 rounding after each correctly rounded FMA.
func fmaChainReference(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, a := range x {
		for range wgsizeIters {
			a = float32(math.FMA(float64(a), 0.999, 0.001))
		}
		out[i] = a
	}
	return out
}

func checkWGSize(dev *engine.Device, src string) Result {
	r := Result{}
	ctx := dev.OpenCL
	info, err := ctx.Device().Info()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	n := 1<<20 + 3 // a multiple of no local size
	if isPoCL(dev.Info) {
		n = 1<<15 + 3
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = 0.5 + float32(i%1000)/1000
	}
	want := fmaChainReference(x)
	iters := "-DITERS=" + strconv.Itoa(wgsizeIters)
	r.Size = fmt.Sprintf("n=%d, %d FMAs", n, wgsizeIters)
	flops := 2 * float64(wgsizeIters) * float64(n)
	at := func(i int) string { return fmt.Sprintf("dst[%d]", i) }
	tol := 1e-6 + 1.2e-7*wgsizeIters // one rounding per FMA, shrunk by 0.999 each step
	for _, local := range []int{8, 16, 32, 64, 128, 256, 512, 1024} {
		if local > info.MaxWorkGroupSize {
			break
		}
		for _, hint := range []bool{false, true} {
			opts, name := iters, fmt.Sprintf("yours, local %d", local)
			if hint {
				opts, name = opts+" -DWG="+strconv.Itoa(local), name+" + hint"
			}
			var got []float32
			t, err := best(func() (time.Duration, error) {
				var d time.Duration
				var err error
				got, d, err = wgLaunch(ctx, src, opts, x, local)
				return d, err
			})
			if err != nil {
				if local > 64 && r.Compiled { // the kernel's registers may allow fewer work-items than the device
					continue
				}
				r.Compiled, r.Error = runError(fmt.Errorf("%s, %s: %w", opts, name, err))
				return r
			}
			r.Compiled = true
			if d := firstMismatch(got, want, tol, at); d != "" {
				r.Error, r.Detail = fmt.Sprintf("wrong result with %s at local size %d", opts, local), d
				return r
			}
			g := flops / t.Seconds() / 1e9
			r.Ladder = append(r.Ladder, Rung{Name: name, GFLOPS: g})
			r.GFLOPS = max(r.GFLOPS, g)
		}
	}
	// The hint must be declared: a kernel built for groups of 64 has to
	// refuse groups of 32 (CL_INVALID_WORK_GROUP_SIZE).
	if _, _, err := wgLaunch(ctx, src, iters+" -DWG=64", x, 32); err == nil {
		r.Error = "built with -DWG=64, your kernel ran with work-groups of 32: declare __attribute__((reqd_work_group_size(WG, 1, 1))) when WG is defined"
		return r
	}
	r.Correct = true
	lab, err := kernels.OpenCL(wgsizeFile)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if t, err := best(func() (time.Duration, error) {
		_, d, err := wgLaunch(ctx, lab, iters, x, 256)
		return d, err
	}); err == nil {
		ref := flops / t.Seconds() / 1e9
		r.Ladder = append(r.Ladder, Rung{Name: "the lab's, local 256", GFLOPS: ref})
		r.PctOfRef = 100 * r.GFLOPS / ref
	}
	return r
}
