package warps

// Suite "wgsize": the guide says to use work-groups that are multiples of 32
// and to declare their size with reqd_work_group_size. This sweep launches a
// memory-bound copy and a compute-bound FMA chain with local sizes 8 ... 1024,
// each kernel built with the size hint (-DWG=<size>: OpenCL
// reqd_work_group_size, CUDA __launch_bounds__) and without it.
//
// Sizes (for wgsize, barrier and intensity) are element counts in binary
// units: "1M" is 1<<20 float32 elements (4 MiB per array), "16M" 1<<24.
//
// Baseline: copy_wg256 without the hint. 256 is the local size most code
// uses by default (8 warps of 32: enough to fill warps and, with several
// groups per compute unit, enough occupancy), it is within every device's
// limit, and the copy measures what the memory system gives regardless of
// arithmetic, so every other variant reads as "% of a plain, sensibly sized
// copy". The fma variants are best compared with each other (fma_wg256).

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda"
	"gpulab/engine/opencl"
)

// wgLocals are the local sizes the sweep tries.
var wgLocals = []int{8, 16, 32, 64, 128, 256, 512, 1024}

// wgIters is the length of wg_fma's dependent FMA chain (2*wgIters flops per
// 8 bytes: 64 flop/byte, above the ridge point of any current GPU).
const wgIters = 256

func init() {
	bench.Register(bench.Suite{
		Name: "wgsize",
		Doc: "work-group size 8..1024, with and without reqd_work_group_size/__launch_bounds__, " +
			"on a memory-bound copy and a compute-bound FMA chain (sizes: elements)",
		Sizes: sizes("1M", "16M"),
		Cases: gpuSuite(wgsizeBuild),
	})
}

// sweepInput makes n deterministic values in [0.5, 1.5).
func sweepInput(n int) []float32 {
	x := make([]float32, n)
	cpu.Parallel(n, 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			h := uint32(i)*2654435761 ^ 0x9e3779b9
			h ^= h >> 15
			x[i] = float32(h%1000003)/1000003 + 0.5
		}
	})
	return x
}

// fma32 is a correctly rounded float32 fused multiply-add, as OpenCL's fma
// and CUDA's fmaf (up to a rare double rounding, within the tolerances).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// fmaChain applies steps of a <- fma(a, 0.999, 0.001) to every element of x
// in place: the reference of wg_fma and intensity.
func fmaChain(x []float32, steps int) {
	cpu.Parallel(len(x), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a := x[i]
			for range steps {
				a = fma32(a, 0.999, 0.001)
			}
			x[i] = a
		}
	})
}

// fmaTol is the tolerance for a chain of f FMAs: each step rounds once
// (2^-24 relative) and the map shrinks errors by 0.999, so the error grows at
// most linearly with f.
func fmaTol(f int) float64 { return 1e-6 + 1.2e-7*float64(f) }

// deviceLimit is the largest work-group the device takes.
func deviceLimit(g *gpu) (int, error) {
	if g.cu != nil {
		return g.cu.Properties().MaxThreadsPerBlock, nil
	}
	info, err := g.cl.Device().Info()
	return info.MaxWorkGroupSize, err
}

// kernelLimit is the largest work-group k may be launched with (registers,
// local memory and a size hint can lower it below the device's).
func kernelLimit(g *gpu, k kernel) (int, error) {
	if k.cu != nil {
		return k.cu.Attribute(cuda.FuncMaxThreadsPerBlock)
	}
	m, _, _, _, err := k.cl.WorkGroupInfo()
	return m, err
}

// zeroBuffer clears b.
func zeroBuffer(g *gpu, b buffer) error {
	z := make([]float32, b.n)
	if g.cu != nil {
		return cuda.CopyHtoD(b.cu, z)
	}
	return opencl.WriteSlice(g.cl, b.cl, z)
}

// localsUpTo lists the sizes of locals that do not exceed limit.
func localsUpTo(locals []int, limit int) []int {
	var out []int
	for _, l := range locals {
		if l <= limit {
			out = append(out, l)
		}
	}
	return out
}

// sweepBuffers uploads the input x of a sweep, allocates an output of the
// same length, and returns the device's work-group size limit.
func sweepBuffers(g *gpu, x []float32) (src, dst buffer, devMax int, err error) {
	if src, err = upload(g, x); err != nil {
		return
	}
	if dst, err = g.alloc(len(x)); err != nil {
		return
	}
	devMax, err = deviceLimit(g)
	return
}

func wgsizeBuild(g *gpu, dev *engine.Device, size string) (cases []bench.Case, err error) {
	n, err := elements(size)
	if err != nil {
		return nil, err
	}
	if err := checkArrays(dev, "wgsize", size, 4*uint64(n), 2*uint64(n),
		"the input, the FMA reference, the zeros that reset the output and the output read back", "the input and the output"); err != nil {
		return nil, err
	}
	x := sweepInput(n)
	fmaWant := append([]float32(nil), x...)
	fmaChain(fmaWant, wgIters)
	src, dst, devMax, err := sweepBuffers(g, x)
	if err != nil {
		return nil, err
	}
	iters := "-DITERS=" + strconv.Itoa(wgIters)
	build := func(name string, hint bool, local int) (kernel, error) {
		if hint {
			return g.kernel("wgsize", name, iters, "-DWG="+strconv.Itoa(local))
		}
		return g.kernel("wgsize", name, iters)
	}
	for _, kind := range []string{"copy", "fma"} {
		want, flops, tol := x, 0.0, 0.0
		if kind == "fma" {
			want, flops, tol = fmaWant, 2*wgIters*float64(n), fmaTol(wgIters)
		}
		plain, err := build("wg_"+kind, false, 0)
		if err != nil {
			return nil, err
		}
		for _, local := range localsUpTo(wgLocals, devMax) {
			for _, hint := range []bool{false, true} {
				k := plain
				if hint {
					if k, err = build("wg_"+kind, true, local); err != nil {
						return nil, err
					}
				}
				lim, err := kernelLimit(g, k)
				if err != nil {
					return nil, err
				}
				if local > lim {
					continue // registers or the hint keep this kernel below the device's limit
				}
				variant := fmt.Sprintf("%s_wg%d", kind, local)
				if hint {
					variant += "_hint"
				}
				params := bench.Params{"kernel": kind, "local": local, "hint": hint, "elements": n}
				if kind == "fma" {
					params["iters"] = wgIters
				}
				global := roundUp(n, local)
				cases = append(cases, bench.Case{
					Variant: variant, Params: params,
					Baseline: kind == "copy" && local == 256 && !hint,
					Flops:    flops, Bytes: 8 * float64(n), Tol: tol,
					Reset: func() error { return zeroBuffer(g, dst) },
					Run: func() (time.Duration, error) {
						return g.launch(k, []int{global}, []int{local}, 0, n, src, dst)
					},
					Check: func() (bench.Checked, error) {
						got, err := g.read(dst, n)
						return bench.Compare(got, want), err
					},
				})
			}
		}
	}
	return cases, nil
}
