//go:build goexperiment.simd && amd64

package gemm

// Step 07 (opt-in): step 06 with vector registers, through Go 1.26's
// experimental package simd/archsimd. It exists only in a build with
// GOEXPERIMENT=simd on amd64, e.g.
//
//	GOEXPERIMENT=simd go run ./lab bench gemm --device cpu --size 1024
//
// and the default build (plain go build / go test) leaves it out:
// cpu_07_archsimd_off.go then registers nothing, and the ladder ends at 06.
//
// What changes from step 06: the register tile is 4 rows × 32 columns, and
// each row of it is two Float32x16 values (AVX-512: 16 floats per register)
// instead of single floats; with AVX2 only, 4 × 16 as two Float32x8. Per p
// the kernel loads 32 (or 16) floats of B in two vector loads, broadcasts
// each of the 4 values of A to all lanes, and does 8 fused multiply-adds
// (VFMADD213PS), each 16 (or 8) multiply-adds: 256 flops for 2 loads and 4
// broadcasts, where step 06 did 12 flops for 5 loads. Eight accumulators, two
// B vectors and a broadcast value fit the 16 vector registers Go allocates.
//
// Packing, blocking and the split across cores are step 06's, with strips
// 4 rows tall (A) and 32 or 16 columns wide (B).
//
// Traffic model: as step 06, with its NC and KC.
//
// Cost: a build flag (the package is experimental and outside the Go 1
// compatibility promise), amd64 only, and code that checks for AVX-512 or
// AVX2+FMA at run time (without either, this step runs step 06).
//
// And a trap, measured with Go 1.26.8 on this AVX-512 machine: in a
// GOEXPERIMENT=simd build, the runtime's asynchronous preemption (every
// ~10 ms of a long loop) saves and restores all 32 ZMM registers, which
// leaves their upper halves dirty; Go's scalar float code uses legacy
// (non-VEX) SSE instructions, which then run 2 to 3 times slower until
// something executes VZEROUPPER. So in such builds, steps 01 to 06 (and
// the float64 reference) lose much of their speed: step 06 measured 3.4
// against 11 GFLOP/s on one core, 10 against 18 on two;
// GODEBUG=asyncpreemptoff=1 restores it. Compare the scalar steps in a
// default build. This step clears the upper halves itself
// (archsimd.ClearAVXUpperBits) after each kernel call.

import (
	"simd/archsimd"

	"gpulab/engine/cpu"
)

var optionalCPUSteps = []cpuStep{{
	cpuVariant("07_archsimd", "step 06 with a 4×32 tile of AVX-512 vectors (simd/archsimd, GOEXPERIMENT=simd builds only)", func(s Shape) float64 {
		m, n, k := cpuDims(s)
		return 4 * (m*k*cpuBlocks(s.N, regNC) + k*n + 2*m*n*cpuBlocks(s.K, regKC))
	}),
	archSIMD,
}}

const (
	simdMR = 4   // rows of the register tile
	simdMC = 128 // rows of a packed block of A (a multiple of simdMR)
)

func archSIMD(s Shape, a, b, c []float32) {
	switch {
	case archsimd.X86.AVX512():
		simdBlocked(s, a, b, c, 32, simdKernel4x32)
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		simdBlocked(s, a, b, c, 16, simdKernel4x16)
	default:
		registerKernel(s, a, b, c)
	}
}

// simdBlocked is step 06's loop nest for a 4×nr kernel over packed strips:
// A strips are [p][4], B strips [p][nr], each kc deep, zero-padded.
func simdBlocked(s Shape, a, b, c []float32, nr int, kernel func(kc int, a, b, tile []float32)) {
	M, N, K := s.M, s.N, s.K
	np := (N + regNC - 1) / regNC
	nc := roundUp((N+np-1)/np, nr)
	kc := min(regKC, K)
	bPanel := make([]float32, nc*kc)
	for jc := 0; jc < N; jc += nc {
		n := min(nc, N-jc)
		for pc := 0; pc < K; pc += kc {
			k := min(kc, K-pc)
			strips := (n + nr - 1) / nr
			cpu.Parallel(strips, 1, func(lo, hi int) {
				for st := lo; st < hi; st++ {
					dst := bPanel[st*k*nr : (st+1)*k*nr]
					j, cols := jc+st*nr, min(nr, n-st*nr)
					for p := 0; p < k; p++ {
						d := dst[p*nr : (p+1)*nr]
						copy(d, b[(pc+p)*N+j:(pc+p)*N+j+cols])
						clear(d[cols:])
					}
				}
			})
			parallelBlocks((M+simdMC-1)/simdMC, func() func(int) {
				aBlock := make([]float32, simdMC*k)
				tile := make([]float32, simdMR*nr)
				return func(blk int) {
					ic := blk * simdMC
					m := min(simdMC, M-ic)
					for st := 0; st*simdMR < m; st++ {
						dst := aBlock[st*k*simdMR : (st+1)*k*simdMR]
						i, rows := ic+st*simdMR, min(simdMR, m-st*simdMR)
						for p := 0; p < k; p++ {
							d := dst[p*simdMR : (p+1)*simdMR]
							for r := range d {
								d[r] = 0
								if r < rows {
									d[r] = a[(i+r)*K+pc+p]
								}
							}
						}
					}
					for j := 0; j < n; j += nr {
						bs := bPanel[j/nr*k*nr : (j/nr+1)*k*nr]
						cols := min(nr, n-j)
						for i := 0; i < m; i += simdMR {
							kernel(k, aBlock[i/simdMR*k*simdMR:(i/simdMR+1)*k*simdMR], bs, tile)
							// VZEROUPPER before the scalar code that copies the tile
							// out: legacy SSE instructions run with the upper halves
							// of the vector registers dirty are slow (see above).
							archsimd.ClearAVXUpperBits()
							for r := 0; r < min(simdMR, m-i); r++ {
								dst := c[(ic+i+r)*N+jc+j : (ic+i+r)*N+jc+j+cols]
								src := tile[r*nr : r*nr+cols]
								if pc == 0 {
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
			})
		}
	}
}

// simdKernel4x32 sets tile (4×32, row-major) to a 4-row strip of A times a
// 32-column strip of B, both packed kc deep: 8 AVX-512 accumulators.
func simdKernel4x32(kc int, a, b, tile []float32) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	a, b = a[:kc*4], b[:kc*32]
	for p := 0; p < kc; p++ {
		b0 := archsimd.LoadFloat32x16Slice(b[p*32:])
		b1 := archsimd.LoadFloat32x16Slice(b[p*32+16:])
		ap := a[p*4 : p*4+4]
		x := archsimd.BroadcastFloat32x16(ap[0])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x16(ap[1])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x16(ap[2])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x16(ap[3])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
	}
	tile = tile[:128]
	c00.StoreSlice(tile[0:])
	c01.StoreSlice(tile[16:])
	c10.StoreSlice(tile[32:])
	c11.StoreSlice(tile[48:])
	c20.StoreSlice(tile[64:])
	c21.StoreSlice(tile[80:])
	c30.StoreSlice(tile[96:])
	c31.StoreSlice(tile[112:])
}

// simdKernel4x16 is simdKernel4x32 for AVX2 + FMA: 8 accumulators of 8 floats.
func simdKernel4x16(kc int, a, b, tile []float32) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	a, b = a[:kc*4], b[:kc*16]
	for p := 0; p < kc; p++ {
		b0 := archsimd.LoadFloat32x8Slice(b[p*16:])
		b1 := archsimd.LoadFloat32x8Slice(b[p*16+8:])
		ap := a[p*4 : p*4+4]
		x := archsimd.BroadcastFloat32x8(ap[0])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x8(ap[1])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x8(ap[2])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x8(ap[3])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
	}
	tile = tile[:64]
	c00.StoreSlice(tile[0:])
	c01.StoreSlice(tile[8:])
	c10.StoreSlice(tile[16:])
	c11.StoreSlice(tile[24:])
	c20.StoreSlice(tile[32:])
	c21.StoreSlice(tile[40:])
	c30.StoreSlice(tile[48:])
	c31.StoreSlice(tile[56:])
}
