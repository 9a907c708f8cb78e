package gemm

// Step 05: step 04 on every core. The rows of C are cut into one contiguous
// slab per goroutine (gpulab/engine/cpu.Parallel: GOMAXPROCS slabs, cut at
// multiples of 16 rows); each goroutine computes its slab with step 04's
// blocked loops, reading the shared, read-only A and blocked Bt and writing
// only its own rows of C, so no locks are needed, and no two cores write
// the same cache line (16 rows of C are 64·N bytes: whole lines).
//
//	Bt := transposeBlocked(B)                    // once, shared
//	Parallel(M): goroutine w runs step 04 on rows [lo_w, hi_w)
//
// Traffic model: each goroutine streams every block of Bt once for its own
// rows, so B is read once per goroutine (W of them, each core keeping its
// own copy of a block in its L2); A and C as in step 04:
// 4·(M·K·⌈N/NC⌉ + W·K·N + 2·M·N·⌈K/KC⌉ + M·N + 2·K·N) bytes.
//
// Cost: starting and joining the goroutines (microseconds, against the
// milliseconds even a 256³ product takes); the transpose still runs on one
// core; a short M (16 rows or fewer) makes one slab, so no speedup; and the
// split is fixed in advance: if another program keeps one core busy, the
// other core finishes its half and waits (step 06 hands out small blocks
// instead). The gain is at most the number of cores; here, with two cores
// sharing L3 and DRAM, it is about 1.9×.

import "gpulab/engine/cpu"

var parallelBlockingVariant = cpuVariant("05_parallel_blocking", "step 04 with the rows of C split across goroutines (cpu.Parallel)", func(s Shape) float64 {
	m, n, k := cpuDims(s)
	w := float64(min(cpu.Workers(), (s.M+15)/16))
	return 4 * (m*k*cpuBlocks(s.N, blockNC) + w*k*n + 2*m*n*cpuBlocks(s.K, blockKC) + m*n + 2*k*n)
})

// ParallelBlocking is C = A·B by step 04 on all cores (step 05).
func ParallelBlocking(s Shape, a, b, c []float32) error {
	return runChecked(parallelBlocking, s, a, b, c)
}

func parallelBlocking(s Shape, a, b, c []float32) {
	bt := transposeBlocked(s, b)
	cpu.Parallel(s.M, 16, func(lo, hi int) { blockedRows(s, a, bt, c, lo, hi) })
}
