package kmeans

import (
	"fmt"

	"gpulab/engine/cuda"
)

// The CUDA ladder's variants, one row each. A variant is an assignment
// kernel file and an update; each step is one numbered kernel file of
// kernels/cuda/kmeans that opens with its idea, traffic and cost. A new
// assignment step is a new file and a new row (with one of the updates
// below); a new update step is a new file, a centerUpdate and a row that
// uses it. TestGPUVariants runs every row against the CPU reference, and
// TestVariantsMatchKernelFiles checks the rows against the files.
//
// naive, chunked, block_per_point and gemm_sorted compare assignments under
// one update; gemm_atomic, gemm_sorted and fused compare updates under one
// assignment; the last two pair the fastest update with the GEMM on FP32
// lanes and on tensor cores.

// gpuVariant is one CUDA variant of the ladder.
type gpuVariant struct {
	Name   string // the kmeans suite's variant, as docs/results records it
	assign string // the assignment's kernel file under kernels/cuda/kmeans (it also has common.cuh's kernels)
	kernel string // the assignment's entry point
	update centerUpdate
	// launch is the assignment's grid and arguments for one batch of rows.
	launch func(p *gpuPass, b batch) (cuda.LaunchConfig, []any)
	// norms: the assignment takes |x|² of its rows, computed by row_norms
	// (once when X is resident, per batch when it streams).
	norms   bool
	options func(p *gpuPass) []string // NVRTC options of the assignment file; nil: none
	check   func(p *gpuPass) error    // what the variant cannot do with these sizes; nil: anything
}

var gpuVariants = []gpuVariant{
	{Name: "naive", assign: "01_naive", kernel: "assign_naive", update: sortedUpdate,
		launch: func(p *gpuPass, b batch) (cuda.LaunchConfig, []any) {
			return b.grid(ceilDiv(b.m, p.opt.TPB), p.opt.TPB, 0), []any{b.x, p.centers, b.m, p.d, p.k, b.lab, b.dist}
		}},
	{Name: "chunked", assign: "02_chunked", kernel: "assign_chunked", update: sortedUpdate,
		launch: func(p *gpuPass, b batch) (cuda.LaunchConfig, []any) {
			return b.grid(ceilDiv(b.m, p.opt.TPB), p.opt.TPB, 4*p.kc()*p.d), []any{b.x, p.centers, b.m, p.d, p.k, p.kc(), b.lab, b.dist}
		}},
	{Name: "block_per_point", assign: "03_block_per_point", kernel: "assign_block", update: sortedUpdate,
		launch: func(p *gpuPass, b batch) (cuda.LaunchConfig, []any) {
			return b.grid(b.m, p.opt.TPB, 4*p.kc()*p.d), []any{b.x, p.centers, b.m, p.d, p.k, p.kc(), b.lab, b.dist}
		},
		check: func(p *gpuPass) error {
			if p.d > 48*p.opt.TPB {
				return fmt.Errorf("kmeans: block_per_point keeps at most 48 dimensions per thread: D = %d needs TPB >= %d", p.d, (p.d+47)/48)
			}
			return nil
		}},
	{Name: "gemm_atomic", assign: "04_gemm_argmin", kernel: "assign_gemm", update: atomicUpdate, launch: gemmLaunch},
	{Name: "gemm_sorted", assign: "04_gemm_argmin", kernel: "assign_gemm", update: sortedUpdate, launch: gemmLaunch},
	{Name: "fused", assign: "07_fused", kernel: "assign_fused", update: fusedUpdate,
		launch: func(p *gpuPass, b batch) (cuda.LaunchConfig, []any) {
			return b.grid(min(p.blocks, ceilDiv(b.m, 256)), 256, 4*p.k), []any{b.x, p.centers, p.cn, b.m, p.d, p.k, b.lab, b.dist, p.partial[b.si]}
		}},
	pipelined("gemm_pipelined", "08_gemm_pipelined", "assign_pipelined", 4, "KT"),
	pipelined("tensor_3xtf32", "10_tensor_3xtf32", "assign_3xtf32", 8, "NT"),
}

// Variants are the names of the GPU variants, in ladder order.
var Variants = variantNames()

func variantNames() []string {
	names := make([]string, len(gpuVariants))
	for i, v := range gpuVariants {
		names[i] = v.Name
	}
	return names
}

// variantNamed returns the variant called name.
func variantNamed(name string) (gpuVariant, bool) {
	for _, v := range gpuVariants {
		if v.Name == name {
			return v, true
		}
	}
	return gpuVariant{}, false
}

// gemmLaunch is step 04's: 256 points per block.
func gemmLaunch(p *gpuPass, b batch) (cuda.LaunchConfig, []any) {
	return b.grid(ceilDiv(b.m, 256), 256, 0), []any{b.x, p.centers, p.cn, b.m, p.d, p.k, b.lab, b.dist}
}

// pipelined is a row of steps 08 and 10: the tile pipeline of
// pipeline.cuh, with center tiles of a multiple of unit centers (passed to
// the file as define: tiles of unit centers each), and the shared-memory
// update.
func pipelined(name, file, kernel string, unit int, define string) gpuVariant {
	return gpuVariant{Name: name, assign: file, kernel: kernel, update: sharedUpdate, norms: true,
		options: func(p *gpuPass) []string {
			return []string{fmt.Sprintf("-D%s=%d", define, p.centerTile(unit)/unit), fmt.Sprintf("-DVEC=%d", boolInt(p.d%4 == 0)),
				fmt.Sprintf("-DBK=%d", pipelineBK), fmt.Sprintf("-DSTAGES=%d", pipelineStages)}
		},
		launch: func(p *gpuPass, b batch) (cuda.LaunchConfig, []any) {
			smem := pipelineStages * (pipelineBM + p.centerTile(unit)) * (pipelineBK + 4) * 4
			return b.grid(ceilDiv(b.m, pipelineBM), 256, smem), []any{b.x, at(p.xn, 4*b.start), p.centers, p.cn, b.m, p.d, p.k, b.lab, b.dist}
		}}
}

// The tile pipeline of steps 08 and 10 (kernels/cuda/kmeans/pipeline.cuh):
// 512 points per block, and stages of BK dimensions, each holding a row of
// BK+4 floats for each point and center of the tile.
const pipelineBM, pipelineBK, pipelineStages = 512, 32, 2

// centerTile is the center tile of steps 08 and 10: a multiple of unit, at
// most 32, such that the fewest tiles cover K with the least padding. K = 25:
// 28 centers for step 08 (unit 4), 32 for step 10 (unit 8).
func (p *gpuPass) centerTile(unit int) int {
	tiles := (p.k + 31) / 32
	return unit * ((p.k + unit*tiles - 1) / (unit * tiles))
}

// kc is how many whole centers fit in the shared memory of a block.
func (p *gpuPass) kc() int {
	return max(1, min(p.k, 32, p.ctx.Properties().SharedPerBlockOptin/(4*p.d)-1))
}

// centerUpdate is how an iteration turns the labels into cluster sums and
// counts, after the assignment and inertia_and_counts.
type centerUpdate struct {
	file    string                          // its kernel file under kernels/cuda/kmeans
	prepare func(p *gpuPass) error          // checks and allocations, once per GPU; nil: none
	batch   func(p *gpuPass, b batch) error // after each batch's assignment; nil: none
	finish  func(p *gpuPass) error          // after the last batch; nil: none
	sorted  bool                            // counts per batch (bcounts) for the sort's offsets
	inertia bool                            // it measures the inertia itself, exactly
}

var (
	// Step 05: every element adds itself to its cluster's sum.
	atomicUpdate = centerUpdate{file: "05_update_atomic", batch: (*gpuPass).updateAtomic}
	// Step 06: a counting sort by label, then a segmented reduction.
	sortedUpdate = centerUpdate{file: "06_update_sorted", prepare: (*gpuPass).prepareSorted, batch: (*gpuPass).updateSorted, sorted: true}
	// Step 07: the assignment adds each tile to its block's partial sums;
	// the partials are added at the end.
	fusedUpdate = centerUpdate{file: "07_fused", prepare: (*gpuPass).prepareFused, finish: (*gpuPass).reducePartials}
	// Step 09: one streaming pass with per-block sums in shared memory.
	sharedUpdate = centerUpdate{file: "09_update_shared", prepare: (*gpuPass).prepareShared, batch: (*gpuPass).updateShared, inertia: true}
)

// updateAtomic launches step 05 on a batch.
func (p *gpuPass) updateAtomic(b batch) error {
	cfg := b.grid(min(65535*4, ceilDiv(b.m*p.d, 256)), 256, 0)
	return p.launch(p.v.update.file, "update_atomic", cfg, b.x, b.lab, b.m, p.d, p.sums)
}

// prepareSorted allocates step 06's point order and its per-stream offsets
// and batch counts.
func (p *gpuPass) prepareSorted() (err error) {
	if p.order, err = p.alloc(4 * p.n); err != nil {
		return err
	}
	for s := range 2 {
		if p.cursor[s], err = p.alloc(4 * p.k); err != nil {
			return err
		}
		if p.bcounts[s], err = p.alloc(4 * p.k); err != nil {
			return err
		}
	}
	return nil
}

// updateSorted launches step 06 on a batch: offsets from the batch counts
// (added to the totals), the batch's point indices scattered by label, and
// the segments reduced.
func (p *gpuPass) updateSorted(b batch) error {
	file := p.v.update.file
	if err := p.launch(file, "batch_offsets", b.grid(1, 32, 0), p.bcounts[b.si], p.k, p.cursor[b.si], p.counts); err != nil {
		return err
	}
	order := at(p.order, 4*b.start)
	if err := p.launch(file, "order_by_label", b.grid(ceilDiv(b.m, 256), 256, 0), b.lab, b.m, p.cursor[b.si], order); err != nil {
		return err
	}
	cfg := b.grid(ceilDiv(p.d, 256), 256, 0)
	cfg.Grid.Y = ceilDiv(b.m, 1024)
	return p.launch(file, "segment_sums", cfg, b.x, order, b.lab, b.m, p.d, p.sums)
}

// prepareFused sizes step 07's persistent grid (as many blocks as the GPU
// holds at once) and allocates each stream's partial sums, K×D per block.
func (p *gpuPass) prepareFused() error {
	f, err := p.function(p.v.assign, p.v.kernel)
	if err != nil {
		return err
	}
	perSM, err := f.MaxActiveBlocksPerSM(256, 4*p.k)
	if err != nil {
		return err
	}
	p.blocks = max(1, perSM) * p.ctx.Properties().SMs
	for s := range 2 {
		if p.partial[s], err = p.alloc(4 * p.blocks * p.k * p.d); err != nil {
			return err
		}
	}
	return nil
}

// reducePartials adds the blocks' partial sums of step 07 (those of each
// stream that ran) into the sums.
func (p *gpuPass) reducePartials() error {
	kd := p.k * p.d
	for s := range 2 {
		if err := p.launch(p.v.update.file, "reduce_partials", cuda.Grid1D(kd, 256), p.partial[s], p.blocks, kd, p.sums); err != nil {
			return err
		}
		if p.stats.Resident {
			break
		}
	}
	return nil
}

// prepareShared checks that step 09's two K-row tables fit in shared memory
// at its narrowest (32 dimensions a block).
func (p *gpuPass) prepareShared() error {
	if 2*4*32*p.k > p.ctx.Properties().SharedPerBlockOptin {
		return fmt.Errorf("kmeans: %s keeps 2×K×32 floats in shared memory; K = %d is too large for %s (use gemm_sorted)", p.v.Name, p.k, p.ctx.ID())
	}
	return nil
}

// updateShared launches step 09: blocks of up to 256 dimensions (fewer
// when K is large, so that the two K-row tables fit in 96 KiB; at least 32),
// and rows split so that the grid is one wave of as many blocks per SM as
// fit (at most 8).
func (p *gpuPass) updateShared(b batch) error {
	d, k := p.d, p.k
	threads := 256
	for threads > 32 && 2*k*threads*4 > 96<<10 {
		threads /= 2
	}
	smem := 2 * k * threads * 4 // the sums and the centers, K × threads each
	gx := ceilDiv(d, threads)
	perSM := min(8, p.ctx.Properties().SharedPerSM/(smem+1024))
	gy := max(1, perSM*p.ctx.Properties().SMs/gx)
	rows := (ceilDiv(b.m, gy) + 7) / 8 * 8
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: ceilDiv(b.m, rows)}, Block: cuda.Dim3{X: threads}, SharedMem: smem, Stream: b.s}
	return p.launch(p.v.update.file, "update_shared", cfg, b.x, b.lab, p.centers, b.m, d, k, rows, p.sums, p.inertia)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
