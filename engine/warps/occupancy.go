package warps

import (
	"fmt"
	"math"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/opencl"
)

// The occupancy experiment: a memory-bound streaming kernel whose registers
// per thread (ACC loads in flight) and shared memory per block (SMEM) are
// raised to lower the number of resident warps. See
// kernels/cuda/warps/occupancy.cu for the claim and the design.

// occupancyAccs are the -DACC values: independent loads in flight per thread.
var occupancyAccs = []int{1, 2, 4, 8, 16, 32}

// occupancySmems are the shared (CUDA) or __local (OpenCL) bytes per block.
var occupancySmems = []int{0, 16 << 10, 32 << 10, 48 << 10, 96 << 10}

// occupancyBlock is the block (work-group) size of every variant.
const occupancyBlock = 256

func init() {
	bench.Register(bench.Suite{
		Name: "occupancy",
		Doc: "Occupancy vs bandwidth: a streaming kernel (each thread loads ACC strided elements, sums them, writes one) " +
			"with ACC = 1..32 loads in flight per thread (more registers) and 0..96 KiB of dynamic shared/__local memory " +
			"per 256-thread block (fewer resident blocks). CUDA records regs, smem, blocks_per_sm and occupancy = " +
			"blocks_per_sm*256/MaxThreadsPerSM; OpenCL records local_mem and the kernel's local/private memory (no occupancy query). " +
			"Plot GB/s against occupancy: bandwidth needs bytes in flight, from warps or from ACC. Variants that need more shared " +
			"memory than the device offers are skipped. Sizes are input elements: 64M on GPUs, 1M on CPU-type OpenCL devices. Baseline acc1_smem0.",
		Sizes: sizes("1M", "64M"),
		Cases: gpuSuite(occupancyBuild),
	})
}

func occupancyVariant(acc, smem int) string {
	return fmt.Sprintf("acc%d_smem%dK", acc, smem>>10)
}

// occupancySmemsFitting lists the shared-memory sizes of occupancySmems that
// fit in limit bytes per block.
func occupancySmemsFitting(limit int) []int {
	var out []int
	for _, s := range occupancySmems {
		if s <= limit {
			out = append(out, s)
		}
	}
	return out
}

// occupancyRef is the kernel's output: out[g] = in[g] + in[g+T] + ... in order.
func occupancyRef(in []float32, acc int) []float32 {
	t := len(in) / acc
	out := make([]float32, t)
	for g := range out {
		s := in[g]
		for j := 1; j < acc; j++ {
			s += in[g+j*t]
		}
		out[g] = s
	}
	return out
}

// occupancyCount reads an element count such as "16M" (binary units).
func occupancyCount(size string) (int, error) {
	n, err := bench.ParseBytes(size)
	if err != nil {
		return 0, fmt.Errorf("%w (here a count of elements)", err)
	}
	return n, nil
}

// occupancyWrite overwrites b with x (to reset outputs between cases).
func occupancyWrite(g *gpu, b buffer, x []float32) error {
	if g.cu != nil {
		return cuda.CopyHtoD(b.cu, x)
	}
	return opencl.WriteSlice(g.cl, b.cl, x)
}

// occupancyNaNs is n NaNs: a reset value that no correct kernel leaves behind.
func occupancyNaNs(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return x
}

func occupancyBuild(g *gpu, dev *engine.Device, size string) ([]bench.Case, error) {
	n, err := occupancyCount(size)
	if err != nil {
		return nil, err
	}
	maxAcc := occupancyAccs[len(occupancyAccs)-1]
	n = roundUp(n, occupancyBlock*maxAcc)
	refs := uint64(0) // one output's worth, n/acc, for each ACC
	for _, acc := range occupancyAccs {
		refs += uint64(n / acc)
	}
	if err := checkArrays(dev, "occupancy", size, 3*uint64(n)+refs, 2*uint64(n),
		fmt.Sprintf("the input, the NaNs that reset the output, the output read back and the references of the %d ACC values", len(occupancyAccs)),
		"the input and the output"); err != nil {
		return nil, err
	}
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(i%1000) * 0.25 // exact sums in any order of 32 terms
	}
	in, err := upload(g, host)
	if err != nil {
		return nil, err
	}
	out, err := g.alloc(n) // big enough for ACC=1
	if err != nil {
		return nil, err
	}
	// Shared memory available per block, and per SM for the occupancy.
	var props cuda.Properties
	limit := 0
	if g.cu != nil {
		props = g.cu.Properties()
		limit = max(props.SharedPerBlockOptin, props.SharedPerBlock)
	} else {
		info, err := g.cl.Device().Info()
		if err != nil {
			return nil, err
		}
		limit = int(info.LocalMemBytes)
	}
	nans := occupancyNaNs(n) // the reset value of out, shared by every case
	var cases []bench.Case
	for _, acc := range occupancyAccs {
		k, err := g.kernel("occupancy", "stream_acc", fmt.Sprintf("-DACC=%d", acc))
		if err != nil {
			return nil, fmt.Errorf("occupancy ACC=%d: %w", acc, err)
		}
		threads := n / acc
		var want []float32 // computed on the first check of this ACC
		ref := func() []float32 {
			if want == nil {
				want = occupancyRef(host, acc)
			}
			return want
		}
		for _, smem := range occupancySmemsFitting(limit) {
			p := bench.Params{"acc": acc, "smem": smem, "block": occupancyBlock, "elements": n, "threads": threads,
				"bytes": 4 * (n + threads)}
			var run func() (time.Duration, error)
			if g.cu != nil {
				regs, err := k.cu.Attribute(cuda.FuncNumRegs)
				if err != nil {
					return nil, err
				}
				if smem > props.SharedPerBlock {
					// The occupancy query answers 0 above 48 KiB until the kernel
					// has opted in to more, which Launch does: launch one block.
					if _, err := g.launch(k, []int{occupancyBlock}, []int{occupancyBlock}, smem, in, out, threads); err != nil {
						continue // more than the device allows: skipped, not failed
					}
				}
				blocks, err := k.cu.MaxActiveBlocksPerSM(occupancyBlock, smem)
				if err != nil || blocks == 0 {
					continue // does not fit on an SM: skipped, not failed
				}
				p["regs"], p["blocks_per_sm"] = regs, blocks
				if props.MaxThreadsPerSM > 0 {
					p["occupancy"] = float64(blocks*occupancyBlock) / float64(props.MaxThreadsPerSM)
				}
				run = func() (time.Duration, error) {
					return g.launch(k, []int{threads}, []int{occupancyBlock}, smem, in, out, threads)
				}
			} else {
				_, _, klocal, kprivate, err := k.cl.WorkGroupInfo()
				if err != nil {
					return nil, err
				}
				if smem+int(klocal) > limit {
					continue
				}
				p["local_mem"], p["kernel_local_mem"], p["kernel_private_mem"] = smem, klocal, kprivate
				local := opencl.Local(max(smem, 4)) // a __local argument cannot be empty
				run = func() (time.Duration, error) {
					return g.launch(k, []int{threads}, []int{occupancyBlock}, 0, in, out, threads, local)
				}
			}
			cases = append(cases, bench.Case{
				Variant: occupancyVariant(acc, smem), Params: p, Baseline: acc == 1 && smem == 0,
				Bytes: float64(4 * (n + threads)), Flops: float64(n - threads),
				Reset: func() error { return occupancyWrite(g, out, nans[:threads]) },
				Run:   run,
				Check: func() (bench.Checked, error) {
					got, err := g.read(out, threads)
					if err != nil {
						return bench.Checked{}, err
					}
					return bench.Compare(got, ref()), nil
				},
				Tol: 1e-6,
			})
		}
	}
	return cases, nil
}
