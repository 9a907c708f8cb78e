package gemm

// Step 00, the baseline: gonum's Sgemm (gonum.org/v1/gonum/blas/gonum), the
// pure-Go BLAS most Go programs would call.
//
// What it does: it cuts C into 64×64 blocks and hands them to GOMAXPROCS
// goroutines; each block is the sum over K of 64×64×64 block products,
// computed row by row as axpy calls (c_row += a_ip · b_row), and the axpy is
// hand-written SSE assembly on amd64 (4 floats per instruction). So it is
// what step 05 is, plus vector instructions the Go compiler does not emit.
//
// Traffic model: with 64-blocks, A is read once per column of blocks of C,
// B once per row of blocks, and each C block is written once and stays in
// cache while its K loop runs (gonum clears C first for beta = 0: one more
// write):
//
//	4·(M·K·⌈N/64⌉ + K·N·⌈M/64⌉ + 2·M·N) bytes.

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

var gonumSgemmVariant = func() Variant {
	v := cpuVariant("gonum_sgemm", "gonum's pure-Go Sgemm: 64×64 blocks over goroutines, SSE assembly axpy", func(s Shape) float64 {
		m, n, k := cpuDims(s)
		return 4 * (m*k*cpuBlocks(s.N, 64) + k*n*cpuBlocks(s.M, 64) + 2*m*n)
	})
	v.Baseline = true
	return v
}()

// GonumSgemm is C = A·B by gonum's Sgemm (alpha 1, beta 0), the baseline.
func GonumSgemm(s Shape, a, b, c []float32) error { return runChecked(gonumSgemm, s, a, b, c) }

func gonumSgemm(s Shape, a, b, c []float32) {
	gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, s.M, s.N, s.K, 1, a, s.K, b, s.N, 0, c, s.N)
}
