package gemm

// Step 06, register blocking: a micro-kernel that keeps a 3×2 tile of C in
// six local variables (the compiler gives each its own register) for the
// whole walk along K, fed by A and B packed into the order it reads them.
//
// What was wrong with step 05. Its inner loop, a dot product, loads two
// floats for every multiply-add: one of A, one of B. A core can issue two
// multiplies and two adds per cycle but only three loads, and every
// instruction has to pass a front end that issues about six per cycle, so
// the loads, not the arithmetic, set the pace; and cache blocking cannot
// help, since those loads already hit L1. The fix is reuse in registers: the
// outer product of three values of A (a column of a 3-row strip) and two of
// B (a row of a 2-column strip) is six multiply-adds for five loads, where
// the dot product needed twelve loads for six:
//
//	for p: b0, b1 := B[p][j], B[p][j+1]
//	       a0 := A[i][p];   c00 += a0·b0; c01 += a0·b1
//	       a1 := A[i+1][p]; c10 += a1·b0; c11 += a1·b1
//	       a2 := A[i+2][p]; c20 += a2·b0; c21 += a2·b1     // 6 terms, 5 loads
//
// Why 3×2, not bigger. Without vector instructions, each term is a MULSS
// into a temporary and an ADDSS into its accumulator, and the x86 form of
// MULSS overwrites one operand, so a value still needed is copied first:
// about three instructions per term whatever the tile, so a bigger tile
// saves loads but not much else. And there are only 15 float registers (16
// XMM registers, X15 reserved as zero by Go's register ABI) for the
// accumulators, the values of A and B, and the products waiting to be
// added. Go's instruction scheduler makes that tight: within a basic block
// it issues first the values used later in the same block, so an
// accumulator's last add of the block, used only by the next iteration,
// goes last, after all the products it waits for have been computed and
// held in registers. With 6 accumulators that fits; with the 9 of a 3×3
// tile, or the 12 of 4×3, products and accumulators are spilled to the
// stack every iteration. Measured here (1024³, both cores, against gonum in
// the same run): 3×2 0.85 to 0.97× gonum, 2×4 0.76 to 0.95×, 4×2 0.76 to
// 0.97×, 3×3 0.68 to 0.72×, 5×2 0.73×. The loop over p is unrolled by hand
// four times (the rounds are 4 consecutive p's), so that only one round in
// four hits that scheduling rule, and the loop overhead is paid once per
// four rounds (2 rounds: 0.70×; 8: the same as 4).
//
// Packing. The micro-kernel wants a 3-row strip of A as [p][3] and a
// 2-column strip of B as [p][2], contiguous and walked once, so blocks of A
// and B are copied into that order first (the GotoBLAS/BLIS scheme), with
// zero padding at the edges so that the kernel never branches on the shape:
// the padding computes zeros into a scratch tile that is not copied out, and
// a NaN of A can only reach its own row of C. The loops around it are step
// 04's blocks, sized for its reads: a KC×2 strip of B (KC = 256: 2 KB) stays
// in L1 while the kernel sweeps the MC×KC block of A (MC = 120: 120 KB) in
// L2, strip by strip; the KC×NC panel of B (NC = 1024: 1 MB) sits in L2 and
// L3. The panel of B is packed once, by all cores, and shared; blocks of MC
// rows of C are handed out to the cores one at a time (parallelBlocks in
// cpu.go), each packing its own block of A: unlike step 05's fixed halves,
// a core slowed down by another program just takes fewer blocks.
//
// Traffic model: A is read (and packed) once per NC-wide panel of B, B once
// in all, and each KC step reads and writes the tiles of C:
// 4·(M·K·⌈N/NC⌉ + K·N + 2·M·N·⌈K/KC⌉) bytes. Inside the core, L1 loads per
// term drop from 2 to 5/6.
//
// Why not SIMD. gonum is faster than this on one core because its axpy is
// SSE assembly: 4 floats per instruction. Go 1.26 ships package
// simd/archsimd (Float32x8, Float32x16, MulAdd: AVX2 and AVX-512 with fused
// multiply-add), but every one of its files is behind
// `//go:build goexperiment.simd`: in the project's plain `go build`,
// `import "simd/archsimd"` fails with "build constraints exclude all Go
// files in /usr/local/go/src/simd/archsimd". The experiment can only be
// turned on from the environment (GOEXPERIMENT=simd, or `go env -w`), not
// from go.mod or a source file, so the default build, the one `make test`
// and the notebooks run, cannot use it. With the flag it works and is
// several times faster: that is step 07, cpu_07_archsimd.go, an opt-in
// step only such builds have. Without it the compiler never emits vector
// arithmetic, and with the default GOAMD64=v1 it does not fuse a·b+c into
// an FMA either. math.FMA does (float64 only) but behind a run-time check of
// the CPU per call, whose fallback is a function call that forces every
// accumulator to the stack: a float64 3×3 FMA kernel ran at a third of this
// one.
//
// Cost: two packing copies (O(M·K·⌈N/NC⌉ + K·N), small against M·N·K), the
// scratch buffers, the edge padding (up to 2 wasted rows and 1 column per
// block), and code that is much longer than the three loops of step 01.

import (
	"gpulab/engine/cpu"
)

const (
	regMR = 3    // rows of the register tile (strip of A)
	regNR = 2    // columns of the register tile (strip of B)
	regKU = 4    // the p loop is unrolled this many times
	regKC = 256  // depth of a packed block: a KC×NR strip of B in L1 (2 KB)
	regMC = 120  // rows of a packed block of A at most: MC×KC in L2 (120 KB)
	regNC = 1024 // columns of a packed panel of B at most: KC×NC (1 MB)
)

// aStrip and bStrip are regKU consecutive p's of a packed strip of A and B:
// aStrip[u*regMR+r] = A[i+r][p+u], bStrip[u*regNR+c] = B[p+u][j+c].
type (
	aStrip [regKU * regMR]float32
	bStrip [regKU * regNR]float32
)

var registerKernelVariant = cpuVariant("06_register_kernel", "3×2 register tile over packed strips of A and B (5 loads per 6 terms), blocks handed out to all cores", func(s Shape) float64 {
	m, n, k := cpuDims(s)
	return 4 * (m*k*cpuBlocks(s.N, regNC) + k*n + 2*m*n*cpuBlocks(s.K, regKC))
})

// RegisterKernel is C = A·B by a 3×2 register-blocked micro-kernel over
// packed blocks, on all cores (step 06).
func RegisterKernel(s Shape, a, b, c []float32) error { return runChecked(registerKernel, s, a, b, c) }

func registerKernel(s Shape, a, b, c []float32) {
	M, N, K := s.M, s.N, s.K
	nc := evenBlock(N, regNC, regNR)
	kc := min(regKC, roundUp(K, regKU))
	// Row blocks of at most regMC rows, as many as a multiple of the workers
	// (so that on an idle machine every core gets the same share).
	mc := evenBlock(M, regMC*cpu.Workers(), cpu.Workers()*regMR) / cpu.Workers()
	bPanel := make([]bStrip, nc/regNR*kc/regKU)
	for jc := 0; jc < N; jc += nc {
		n := min(nc, N-jc)
		for pc := 0; pc < K; pc += kc {
			k := min(kc, K-pc)
			kq := roundUp(k, regKU) / regKU // packed depth, in regKU steps
			// Pack the K×N panel of B, strip by strip, on all cores.
			strips := (n + regNR - 1) / regNR
			cpu.Parallel(strips, 4, func(lo, hi int) {
				for st := lo; st < hi; st++ {
					packB(bPanel[st*kq:(st+1)*kq], b, N, pc, k, jc+st*regNR, min(regNR, n-st*regNR))
				}
			})
			// Hand the row blocks of C out to the cores; each packs its own A.
			parallelBlocks((M+mc-1)/mc, func() func(int) {
				aBlock := make([]aStrip, mc/regMR*kq)
				return func(blk int) {
					ic := blk * mc
					m := min(mc, M-ic)
					for st := 0; st*regMR < m; st++ {
						packA(aBlock[st*kq:(st+1)*kq], a, K, ic+st*regMR, min(regMR, m-st*regMR), pc, k)
					}
					blockProduct(aBlock, bPanel, kq, c[ic*N+jc:], N, m, n, pc == 0)
				}
			})
		}
	}
}

// evenBlock splits n into ⌈n/max⌉ blocks of nearly equal size, rounded up
// to a multiple of unit: the block size.
func evenBlock(n, max, unit int) int {
	blocks := (n + max - 1) / max
	return roundUp((n+blocks-1)/blocks, unit)
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// packA copies rows [i, i+rows) × columns [p, p+k) of A (row stride lda)
// into dst in strip order, padding rows past `rows` and columns past k with
// zeros.
func packA(dst []aStrip, a []float32, lda, i, rows, p, k int) {
	for q := range dst {
		var s aStrip
		for u := 0; u < regKU; u++ {
			if pu := regKU*q + u; pu < k {
				for r := 0; r < rows; r++ {
					s[u*regMR+r] = a[(i+r)*lda+p+pu]
				}
			}
		}
		dst[q] = s
	}
}

// packB copies rows [p, p+k) × columns [j, j+cols) of B (row stride ldb)
// into dst in strip order, zero-padded like packA.
func packB(dst []bStrip, b []float32, ldb, p, k, j, cols int) {
	for q := range dst {
		var s bStrip
		for u := 0; u < regKU; u++ {
			if pu := regKU*q + u; pu < k {
				row := b[(p+pu)*ldb+j : (p+pu)*ldb+j+cols]
				for c, v := range row {
					s[u*regNR+c] = v
				}
			}
		}
		dst[q] = s
	}
}

// blockProduct computes the m×n block of C at c (row stride ldc) from a
// packed block of A (strips of kq entries) and a packed panel of B: C = A·B
// when first (the first K block), C += A·B after.
func blockProduct(aBlock []aStrip, bPanel []bStrip, kq int, c []float32, ldc, m, n int, first bool) {
	var tile [regMR * regNR]float32
	for j := 0; j < n; j += regNR {
		bs := bPanel[j/regNR*kq : (j/regNR+1)*kq]
		cols := min(regNR, n-j)
		for i := 0; i < m; i += regMR {
			microKernel3x2(aBlock[i/regMR*kq:(i/regMR+1)*kq], bs, &tile)
			rows := min(regMR, m-i)
			for r := 0; r < rows; r++ {
				dst := c[(i+r)*ldc+j : (i+r)*ldc+j+cols]
				src := tile[r*regNR : r*regNR+cols]
				if first {
					copy(dst, src)
				} else {
					for t, v := range src {
						dst[t] += v
					}
				}
			}
		}
	}
}

// microKernel3x2 sets tile (3×2, row-major) to the product of a 3-row strip
// of A and a 2-column strip of B, packed to the same depth. The six sums
// stay in registers for the whole loop; each round (one p) loads three
// values of A and two of B and does six multiply-adds, four rounds per
// iteration.
func microKernel3x2(as []aStrip, bs []bStrip, tile *[regMR * regNR]float32) {
	bs = bs[:len(as)] // same length: no bounds checks on bs[q]
	var c00, c01, c10, c11, c20, c21 float32
	for q := range as {
		a, b := &as[q], &bs[q]
		{
			b0, b1 := b[0], b[1]
			a0 := a[0]
			c00 += a0 * b0
			c01 += a0 * b1
			a1 := a[1]
			c10 += a1 * b0
			c11 += a1 * b1
			a2 := a[2]
			c20 += a2 * b0
			c21 += a2 * b1
		}
		{
			b0, b1 := b[2], b[3]
			a0 := a[3]
			c00 += a0 * b0
			c01 += a0 * b1
			a1 := a[4]
			c10 += a1 * b0
			c11 += a1 * b1
			a2 := a[5]
			c20 += a2 * b0
			c21 += a2 * b1
		}
		{
			b0, b1 := b[4], b[5]
			a0 := a[6]
			c00 += a0 * b0
			c01 += a0 * b1
			a1 := a[7]
			c10 += a1 * b0
			c11 += a1 * b1
			a2 := a[8]
			c20 += a2 * b0
			c21 += a2 * b1
		}
		{
			b0, b1 := b[6], b[7]
			a0 := a[9]
			c00 += a0 * b0
			c01 += a0 * b1
			a1 := a[10]
			c10 += a1 * b0
			c11 += a1 * b1
			a2 := a[11]
			c20 += a2 * b0
			c21 += a2 * b1
		}
	}
	*tile = [regMR * regNR]float32{c00, c01, c10, c11, c20, c21}
}
