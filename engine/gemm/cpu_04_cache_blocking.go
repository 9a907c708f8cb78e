package gemm

// Step 04, cache blocking: step 03's dot products, done block by block so
// that what they read is still in cache when it is needed again.
//
// In step 03, every row i of A is multiplied by all of Bt: the whole K×N
// matrix streams through the core once per row of C, M times in all, from
// L3 or DRAM. Blocking cuts Bt into blocks of NC rows × KC columns (an
// NC-column, KC-deep block of B) and runs all M rows of A against one block
// before moving on, so that each block comes from memory once and is then
// reused M times from the core's own cache:
//
//	for jc (NC columns of C), for pc (KC of the K dimension):
//	    for i: a := A[i][pc:pc+KC]                                  // 1 KB, L1
//	           for j in jc..jc+NC: C[i][j] += dot(a, Bt[j][pc:pc+KC])  // block, L2
//
// Sizes, for this machine's caches (per core: 32 KB L1d, 1 MB L2; 32 MB
// L3 shared): KC = 256 floats, so the slice of a row of A (1 KB) and the
// slice of Bt it meets (1 KB) are a small part of L1 while the dot product
// runs, and the row of A is reused NC times from there. NC = 128 makes a
// block 128 × 256 × 4 B = 128 KB: an eighth of L2, leaving room for what
// streams past it (rows of A, rows of C). The transposed copy is laid out
// block by block (each block contiguous) rather than row by row: rows of Bt
// are K floats apart, and with K a power of two, slices of them all map to
// the same few cache sets and evict each other long before L2 is full.
//
// Traffic model: Bt is read once in all (each block once), A once per
// NC-column block, C read and written once per KC step, plus the clear and
// the transpose: 4·(M·K·⌈N/NC⌉ + K·N + 2·M·N·⌈K/KC⌉ + M·N + 2·K·N) bytes,
// against step 03's 4·(2·M·N·K + ...): the M·N·K term is gone.
//
// Cost: C is read and written once per KC step instead of once, and dot
// products are KC long instead of K (more calls, more partial sums). And,
// the honest part: on one core of this machine it is no faster than step 03
// (measured 1024³ and 2048³: within ±7%, in both directions). Step 03 was
// not waiting for memory: its 12 MB (1024³) or 48 MB (2048³) of operands
// sit in or stream well from L3, whose bandwidth keeps up with a scalar Go
// dot product, which is limited by its own loads (two per multiply-add).
// Blocking is what lets later steps go faster than memory: two cores
// sharing L3 and DRAM (step 05), matrices far larger than L3, and a kernel
// several times faster per core (step 06 reuses these blocks, packed).

var cacheBlockingVariant = cpuVariant("04_cache_blocking", "step 03 in KC×NC blocks of B reused from L2 by every row of A", func(s Shape) float64 {
	m, n, k := cpuDims(s)
	return 4 * (m*k*cpuBlocks(s.N, blockNC) + k*n + 2*m*n*cpuBlocks(s.K, blockKC) + m*n + 2*k*n)
})

const (
	blockNC = 128 // columns of C (rows of Bt) per block
	blockKC = 256 // depth of a block
)

// CacheBlocking is C = A·B by blocked dot products against a transposed B (step 04).
func CacheBlocking(s Shape, a, b, c []float32) error { return runChecked(cacheBlocking, s, a, b, c) }

func cacheBlocking(s Shape, a, b, c []float32) {
	blockedRows(s, a, transposeBlocked(s, b), c, 0, s.M)
}

// transposeBlocked returns Bt (N×K), laid out block by block: the block of
// rows [jc, jc+nc) and columns [pc, pc+kc) of Bt (nc = min(blockNC, N-jc),
// kc likewise) is contiguous, nc rows of kc floats, starting at jc·K + pc·nc.
func transposeBlocked(s Shape, b []float32) []float32 {
	N, K := s.N, s.K
	bt := make([]float32, N*K)
	for jc := 0; jc < N; jc += blockNC {
		nc := min(blockNC, N-jc)
		for pc := 0; pc < K; pc += blockKC {
			kc := min(blockKC, K-pc)
			blk := bt[jc*K+pc*nc : jc*K+pc*nc+nc*kc]
			for p := 0; p < kc; p++ {
				for j, v := range b[(pc+p)*N+jc : (pc+p)*N+jc+nc] {
					blk[j*kc+p] = v
				}
			}
		}
	}
	return bt
}

// blockedRows computes rows [lo, hi) of C from A and the blocked Bt.
func blockedRows(s Shape, a, bt, c []float32, lo, hi int) {
	N, K := s.N, s.K
	clear(c[lo*N : hi*N])
	for jc := 0; jc < N; jc += blockNC {
		nc := min(blockNC, N-jc)
		for pc := 0; pc < K; pc += blockKC {
			kc := min(blockKC, K-pc)
			blk := bt[jc*K+pc*nc : jc*K+pc*nc+nc*kc]
			for i := lo; i < hi; i++ {
				ai := a[i*K+pc : i*K+pc+kc]
				ci := c[i*N+jc : i*N+jc+nc]
				for j := range ci {
					ci[j] += dot4(ai, blk[j*kc:(j+1)*kc])
				}
			}
		}
	}
}
