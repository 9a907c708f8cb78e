package gemm

// Step 01, naive ijk: the definition, C[i][j] = Σ_p A[i][p]·B[p][j], as a
// triple loop with the dot product innermost.
//
//	for i, for j: sum := 0; for p: sum += A[i][p]·B[p][j]; C[i][j] = sum
//
// The inner loop walks a row of A (unit stride, good) and a column of B:
// consecutive p are N floats apart, so every B load touches a different
// 64-byte cache line and uses 4 bytes of it. When N is a power of two, those
// lines all map to the same few L1 sets and evict each other, so even the
// reuse the next column j+1 could have (it needs the neighbouring 4 bytes of
// the very same lines) is lost: 1024³ is much slower than 1000³ here
// (measured: 0.6 against 1.4 GFLOP/s). The sum is one register, so every
// add waits for the previous one (about 3 cycles of latency per term).
//
// Traffic model: each of the M·N dot products reads K floats of A and K of B,
// nothing is reused, and C is written once: 4·(2·M·N·K + M·N) bytes, an
// arithmetic intensity of 2 flops per 8 bytes (and, with the strided B, the
// hardware moves 64 bytes for each 4 of B it uses).
//
// Cost: none; it is the starting point every later step improves on (the
// bench's baseline is gonum, step 00).

var naiveIJKVariant = cpuVariant("01_naive_ijk", "triple loop i, j, p: a dot product per C element, B walked down a column", func(s Shape) float64 {
	m, n, k := cpuDims(s)
	return 4 * (2*m*n*k + m*n)
})

// NaiveIJK is C = A·B by the naive ijk triple loop (step 01).
func NaiveIJK(s Shape, a, b, c []float32) error { return runChecked(naiveIJK, s, a, b, c) }

func naiveIJK(s Shape, a, b, c []float32) {
	M, N, K := s.M, s.N, s.K
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var sum float32
			for p := 0; p < K; p++ {
				sum += a[i*K+p] * b[p*N+j]
			}
			c[i*N+j] = sum
		}
	}
}
