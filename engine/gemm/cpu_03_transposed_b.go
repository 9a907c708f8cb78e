package gemm

// Step 03: transpose B first, so that the dot product of step 01 streams
// both of its operands.
//
//	Bt := transpose(B)            // N×K: row j of Bt is column j of B
//	for i, for j: C[i][j] = dot(A[i][:], Bt[j][:])
//
// The dot product of step 01 was the right inner loop for one reason: its sum
// lives in a register, so the inner loop only loads (step 02 loads two floats
// and stores one per term). Its problem was the column walk of B. With B
// transposed once up front, row i of A and row j of Bt are both contiguous:
// unit stride, whole cache lines used, prefetchable.
//
// The dot product keeps four partial sums (terms p, p+1, p+2, p+3 go to
// four registers, added at the end): with one sum every add waits about 3
// cycles for the previous one, with four independent chains the adds
// overlap. That matters more than the transpose: with a single sum this
// step ran at about 2.2 GFLOP/s at 1024³ here, slower than step 02 (3 to
// 6, depending on the run), and with four at about 6. Summing in a different order changes the rounding, not the
// accuracy class (the test tolerance covers it).
//
// Traffic model: each of the M·N dot products reads K floats of A and K of
// Bt, C is written once, and the transpose reads and writes B once:
// 4·(2·M·N·K + M·N + 2·K·N) bytes: the same count as step 01, but every byte
// of every line is used and no store sits in the inner loop.
//
// Cost: a K×N scratch copy of B (4·K·N bytes allocated per call) and the
// transpose itself, O(K·N) against the O(M·N·K) product.

var transposedBVariant = cpuVariant("03_transposed_b", "B transposed first: dot products of two contiguous rows, 4 partial sums", func(s Shape) float64 {
	m, n, k := cpuDims(s)
	return 4 * (2*m*n*k + m*n + 2*k*n)
})

// TransposedB is C = A·B as dot products against a transposed copy of B (step 03).
func TransposedB(s Shape, a, b, c []float32) error { return runChecked(transposedB, s, a, b, c) }

func transposedB(s Shape, a, b, c []float32) {
	M, N, K := s.M, s.N, s.K
	bt := make([]float32, N*K)
	for p := 0; p < K; p++ {
		for j, v := range b[p*N : (p+1)*N] {
			bt[j*K+p] = v
		}
	}
	for i := 0; i < M; i++ {
		ai := a[i*K : (i+1)*K]
		ci := c[i*N : (i+1)*N]
		for j := range ci {
			ci[j] = dot4(ai, bt[j*K:(j+1)*K])
		}
	}
}

// dot4 is Σ x[p]·y[p] (len(y) ≥ len(x)) with four independent partial sums.
func dot4(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	p := 0
	for ; p+4 <= len(x); p += 4 {
		x4, y4 := x[p:p+4:p+4], y[p:p+4:p+4]
		s0 += x4[0] * y4[0]
		s1 += x4[1] * y4[1]
		s2 += x4[2] * y4[2]
		s3 += x4[3] * y4[3]
	}
	for ; p < len(x); p++ {
		s0 += x[p] * y[p]
	}
	return (s0 + s1) + (s2 + s3)
}
