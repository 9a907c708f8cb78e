package gemm

// Step 02, loop order ikj: the same three loops, with p moved outside j.
//
//	for i: C[i][:] = 0; for p: a := A[i][p]; for j: C[i][j] += a·B[p][j]
//
// The inner loop is now an axpy: it scales row p of B by the scalar A[i][p]
// and adds it to row i of C. Both rows are walked with unit stride, so every
// 64-byte line brought in serves 16 consecutive iterations, the hardware
// prefetcher sees a plain stream, and there is no column walk to alias in
// the cache. The iterations are independent (each j has its own C[i][j]), so
// the CPU overlaps them instead of waiting on one running sum.
//
// Traffic model: A[i][p] is loaded once and held in a register; every term
// streams one float of B and reads and writes one of C: 4·(3·M·N·K + M·K)
// bytes. That is more bytes per flop than step 01 (12 against 8) — counted
// this way nothing was saved; what changed is that every byte moved is used
// (no 64-byte line for 4 useful bytes) and that row i of C (4·N bytes) is so
// short that it stays in L1 for the whole p loop, so its read and write
// never leave the core. Step 04 makes that kind of reuse explicit.
//
// Cost: a store per term (C[i][j] is read, updated and written back every
// iteration, where step 01 kept its sum in a register), and C must be
// cleared first.

var loopOrderIKJVariant = cpuVariant("02_loop_order_ikj", "loops i, p, j: an axpy of a B row into a C row, unit stride throughout", func(s Shape) float64 {
	m, n, k := cpuDims(s)
	return 4 * (3*m*n*k + m*k)
})

// LoopOrderIKJ is C = A·B with the loops in i, p, j order (step 02).
func LoopOrderIKJ(s Shape, a, b, c []float32) error { return runChecked(loopOrderIKJ, s, a, b, c) }

func loopOrderIKJ(s Shape, a, b, c []float32) {
	M, N, K := s.M, s.N, s.K
	for i := 0; i < M; i++ {
		ci := c[i*N : (i+1)*N]
		clear(ci)
		for p := 0; p < K; p++ {
			aip := a[i*K+p]
			bp := b[p*N : (p+1)*N]
			bp = bp[:len(ci)] // same length: lets the compiler drop the bounds check on bp[j]
			for j := range ci {
				ci[j] += aip * bp[j]
			}
		}
	}
}
