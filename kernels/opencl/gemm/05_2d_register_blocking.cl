// Step 5: 2D register blocking. A work-group computes a TSM×TSN tile of C
// (128×128 by default) with (TSM/WPTM)×(TSN/WPTN) work-items (16×16 = 256),
// and each work-item a WPTM×WPTN block (8×8) held in registers. K is walked
// in slices of TSK (16): the group loads a TSM×TSK slice of A and a TSK×TSN
// slice of B into __local memory with float4 loads, then for each k every
// work-item reads WPTM values of A and WPTN of B into registers and does
// WPTM·WPTN FMAs with them (an outer product).
//
// Global traffic: A is read ⌈N/TSN⌉ times and B ⌈M/TSM⌉ times:
// 4·(M·K·⌈N/TSN⌉ + K·N·⌈M/TSM⌉ + M·N) bytes, 4× less than the 32×32 tiles
// of steps 2 to 4 (64 FMAs per float loaded from global memory at the
// default tile, against 16). __local traffic: per k, (WPTM + WPTN)/4 float4
// loads feed WPTM·WPTN FMAs: 4 loads for 64 FMAs, against 2 loads for 4
// FMAs in step 4. The arithmetic units, not the memories, are now the limit.
//
// Layout: the A slice is stored transposed, As[k][m], so that the WPTM
// values of a column are float4 loads like the B values. A work-item's rows
// are not contiguous: they are WPTM/4 groups of 4, one group every
// 4·(TSM/WPTM) rows (columns likewise). Consecutive work-items thus read
// consecutive float4s of Bs (no bank conflicts), and the work-items of a
// warp, which span only 2 values of ly, read 2 As addresses (broadcasts).
// The transposing stores into As scatter by column; PADA floats of padding
// per As row make them 2-way instead of 4-way bank conflicts, and they are
// few: 4·LPTA = 8 scalar stores per work-item per slice, against
// TSK·(WPTM + WPTN)/4 = 64 float4 loads.
//
// Costs: WPTM·WPTN accumulators plus WPTM + WPTN operands per work-item (at
// 8×8 about 100 to 128 registers: with 256 work-items, two groups per NVIDIA
// SM); 4·TSK·(TSM + PADA + TSN) bytes of __local memory (16.25 KiB);
// constraints below.
//
// Edges and alignment: as in step 4, float4 loads of A when K % 4 == 0 and of
// B and C when N % 4 == 0 (uniform run-time tests; buffers start aligned and
// tile columns are multiples of 4), each wholly inside the matrix or
// replaced by zeros; otherwise four bounds-checked scalar loads. Partial
// tiles along M, N and K are zero-filled, every work-item reaches every
// barrier, and stores are guarded. Any M, N, K work.
//
// Parameters (-D at build time; defaults aim at NVIDIA H100/H200):
//   TSM, TSN    C tile per work-group (default 128×128)
//   TSK         K slice per __local tile, a multiple of 4 (default 16)
//   WPTM, WPTN  C block per work-item, multiples of 4 (default 8×8)
//   PADA        floats of padding per row of the transposed A slice, a
//               multiple of 4 (default 4)
// The float4 loads of a slice must divide evenly among the work-items:
// TSM·TSK/4 and TSK·TSN/4 must be multiples of (TSM/WPTM)·(TSN/WPTN).

#ifndef TSM
#define TSM 128
#endif
#ifndef TSN
#define TSN 128
#endif
#ifndef TSK
#define TSK 16
#endif
#ifndef WPTM
#define WPTM 8
#endif
#ifndef WPTN
#define WPTN 8
#endif
#ifndef PADA
#define PADA 4
#endif

#define RTSM (TSM / WPTM)               // work-items along M
#define RTSN (TSN / WPTN)               // work-items along N
#define THREADS (RTSM * RTSN)           // work-items per group
#define LDA ((TSM + PADA) / 4)          // float4s per row of As
#define LPTA (TSM * TSK / 4 / THREADS)  // float4 loads of A per work-item per slice
#define LPTB (TSK * TSN / 4 / THREADS)  // float4 loads of B per work-item per slice

#if TSM % WPTM != 0 || TSN % WPTN != 0
#error "TSM and TSN must be multiples of WPTM and WPTN"
#endif
#if WPTM % 4 != 0 || WPTN % 4 != 0 || TSK % 4 != 0 || PADA % 4 != 0
#error "WPTM, WPTN, TSK and PADA must be multiples of 4"
#endif
#if (TSM * TSK / 4) % THREADS != 0 || (TSK * TSN / 4) % THREADS != 0
#error "the float4 loads of a slice must divide evenly among the work-items"
#endif

// load4 returns the 4 floats of row r of the rows×cols row-major matrix X
// from column c (a multiple of 4), with zeros for elements outside X. vec
// says that cols is a multiple of 4: the float4 is aligned and wholly inside
// or outside X.
static inline float4 load4(const __global float* restrict X, const int rows, const int cols,
                           const int r, const int c, const bool vec)
{
    if (r >= rows || c >= cols) {
        return (float4)(0.0f);
    }
    const __global float* row = X + r*cols;
    if (vec) {
        return *(const __global float4*)(row + c);
    }
    return (float4)(row[c],
                    c + 1 < cols ? row[c + 1] : 0.0f,
                    c + 2 < cols ? row[c + 2] : 0.0f,
                    c + 3 < cols ? row[c + 3] : 0.0f);
}

// store4 writes the elements of v inside X to row r of X from column c.
static inline void store4(__global float* restrict X, const int rows, const int cols,
                          const int r, const int c, const bool vec, const float4 v)
{
    if (r >= rows || c >= cols) {
        return;
    }
    __global float* row = X + r*cols;
    if (vec) {
        *(__global float4*)(row + c) = v;
        return;
    }
    row[c] = v.x;
    if (c + 1 < cols) row[c + 1] = v.y;
    if (c + 2 < cols) row[c + 2] = v.z;
    if (c + 3 < cols) row[c + 3] = v.w;
}

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void gemm(const int M, const int N, const int K,
          const __global float* restrict A,
          const __global float* restrict B,
          __global float* restrict C)
{
    const int lx = get_local_id(0); // along N, 0..RTSN-1
    const int ly = get_local_id(1); // along M, 0..RTSM-1
    const int tid = ly*RTSN + lx;
    const int m0 = get_group_id(1)*TSM; // first row of the C tile
    const int n0 = get_group_id(0)*TSN; // first column of the C tile
    const bool vecA = K % 4 == 0;
    const bool vecB = N % 4 == 0;

    __local float4 As[TSK][LDA];     // A slice, transposed: As[k][m/4]
    __local float4 Bs[TSK][TSN / 4]; // B slice: Bs[k][n/4]
    __local float* as = (__local float*)As; // scalar view, for the transposing stores

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        #pragma unroll
        for (int j = 0; j < WPTN; j++) {
            acc[i][j] = 0.0f;
        }
    }

    for (int k0 = 0; k0 < K; k0 += TSK) {
        // A slice: float4 l of this work-item is row r, columns 4·q…4·q+3;
        // a warp reads whole 64-byte pieces of rows.
        #pragma unroll
        for (int l = 0; l < LPTA; l++) {
            const int idx = tid + l*THREADS;
            const int r = idx / (TSK / 4);
            const int q = idx % (TSK / 4);
            const float4 v = load4(A, M, K, m0 + r, k0 + 4*q, vecA);
            as[(4*q + 0)*(TSM + PADA) + r] = v.x;
            as[(4*q + 1)*(TSM + PADA) + r] = v.y;
            as[(4*q + 2)*(TSM + PADA) + r] = v.z;
            as[(4*q + 3)*(TSM + PADA) + r] = v.w;
        }
        // B slice: float4 l is row k, columns 4·q…; a warp reads 512 bytes of one row.
        #pragma unroll
        for (int l = 0; l < LPTB; l++) {
            const int idx = tid + l*THREADS;
            const int k = idx / (TSN / 4);
            const int q = idx % (TSN / 4);
            Bs[k][q] = load4(B, K, N, k0 + k, n0 + 4*q, vecB);
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            float a[WPTM], b[WPTN];
            #pragma unroll
            for (int i = 0; i < WPTM / 4; i++) {
                const float4 v = As[k][i*RTSM + ly];
                a[4*i] = v.x, a[4*i + 1] = v.y, a[4*i + 2] = v.z, a[4*i + 3] = v.w;
            }
            #pragma unroll
            for (int j = 0; j < WPTN / 4; j++) {
                const float4 v = Bs[k][j*RTSN + lx];
                b[4*j] = v.x, b[4*j + 1] = v.y, b[4*j + 2] = v.z, b[4*j + 3] = v.w;
            }
            #pragma unroll
            for (int i = 0; i < WPTM; i++) {
                #pragma unroll
                for (int j = 0; j < WPTN; j++) {
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    // Row i of the block is tile row (i/4)·4·RTSM + 4·ly + i%4; columns
    // likewise, in float4s.
    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        const int m = m0 + (i / 4)*4*RTSM + 4*ly + i % 4;
        #pragma unroll
        for (int j = 0; j < WPTN / 4; j++) {
            const int n = n0 + j*4*RTSN + 4*lx;
            store4(C, M, N, m, n, vecB, (float4)(acc[i][4*j], acc[i][4*j + 1], acc[i][4*j + 2], acc[i][4*j + 3]));
        }
    }
}
