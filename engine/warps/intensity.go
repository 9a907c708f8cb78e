package warps

// Suite "intensity": an arithmetic-intensity sweep for the roofline. Every
// element is read once and written once (8 bytes) and gets F dependent FMAs
// (2F flops), F = 1, 2, 4, ..., 512, so the intensity is F/4 flop per byte;
// with Bytes = 8n and Flops = 2F*n per case, bench fills each record's
// Intensity, GB/s and GFLOP/s, and bench.RooflineOf places the points. While
// the kernel is memory bound, time is flat in F; past the ridge point it grows
// with F. Variants "f1" ... "f512"; the baseline is f1 (the plainest, most
// memory-bound kernel). Sizes are element counts ("1M" = 1<<20).

import (
	"fmt"
	"strconv"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// intensityFs are the FMA counts per element.
var intensityFs = []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}

// intensityLocal is the work-group size (lowered to the device's limit).
const intensityLocal = 256

func init() {
	bench.Register(bench.Suite{
		Name: "intensity",
		Doc: "arithmetic-intensity sweep for the roofline: read+write 8 bytes and F FMAs per element, " +
			"F = 1..512 (F/4 flop/byte; sizes: elements)",
		Sizes: sizes("1M", "16M"),
		Cases: gpuSuite(intensityBuild),
	})
}

func intensityBuild(g *gpu, dev *engine.Device, size string) (cases []bench.Case, err error) {
	n, err := elements(size)
	if err != nil {
		return nil, err
	}
	if err := checkArrays(dev, "intensity", size, uint64(4+len(intensityFs))*uint64(n), 2*uint64(n),
		fmt.Sprintf("the input, the running FMA chain, a reference for each of the %d intensities, the zeros that reset the output and the output read back", len(intensityFs)),
		"the input and the output"); err != nil {
		return nil, err
	}
	x := sweepInput(n)
	src, dst, devMax, err := sweepBuffers(g, x)
	if err != nil {
		return nil, err
	}
	// The references are built incrementally: f2's is f1's plus one more step.
	ref, done := append([]float32(nil), x...), 0
	for _, f := range intensityFs {
		fmaChain(ref, f-done)
		done = f
		want := append([]float32(nil), ref...)
		k, err := g.kernel("intensity", "intensity", "-DF="+strconv.Itoa(f))
		if err != nil {
			return nil, err
		}
		lim, err := kernelLimit(g, k)
		if err != nil {
			return nil, err
		}
		local := min(intensityLocal, devMax, lim)
		global := roundUp(n, local)
		cases = append(cases, bench.Case{
			Variant:  fmt.Sprintf("f%d", f),
			Params:   bench.Params{"f": f, "flops_per_byte": float64(f) / 4, "elements": n, "local": local},
			Baseline: f == 1,
			Flops:    2 * float64(f) * float64(n), Bytes: 8 * float64(n), Tol: fmaTol(f),
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
	return cases, nil
}
