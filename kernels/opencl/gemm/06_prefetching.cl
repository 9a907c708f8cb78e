// Step 6: prefetching (double buffering). Step 5 with two copies of the
// __local A and B slices: while the work-group computes on slice t from one
// copy, the float4s of slice t+1 are already on their way from global
// memory into registers; after the FMAs of slice t they are stored into the
// other copy. The global-memory latency of slice t+1 hides behind the
// arithmetic of slice t instead of stalling the whole group at a barrier,
// and one barrier per slice suffices instead of two: a copy is rewritten
// only after the barrier that ends the computation which last read it.
//
// Global traffic: the same as step 5 for the same tiles,
// 4·(M·K·⌈N/TSN⌉ + K·N·⌈M/TSM⌉ + M·N) bytes; what changes is when it moves.
//
// Costs: twice the __local memory of step 5 (2·4·TSK·(TSM + PADA + TSN)
// bytes, 32.5 KiB at the defaults: under the 48 KiB a work-group may have
// on NVIDIA GPUs, and the __local memory of an H100/H200 SM still holds
// several groups), and LPTA + LPTB float4 registers (16 floats) per
// work-item to hold the next slice in flight, on top of the 8×8
// accumulators: about 128 registers, the most that lets two groups of 256
// work-items share an SM's 64K registers.
//
// Layout, bank conflicts, edges and alignment: as in step 5 (float4 loads
// when K % 4 == 0 for A and N % 4 == 0 for B and C, else bounds-checked
// scalar loads; zero-filled partial tiles; guarded stores; any M, N, K).
//
// Parameters (-D at build time): TSM, TSN, TSK, WPTM, WPTN, PADA as in
// step 5 (defaults 128, 128, 16, 8, 8, 4).

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

    __local float4 As[2][TSK][LDA];     // two copies of the A slice, transposed
    __local float4 Bs[2][TSK][TSN / 4]; // two copies of the B slice

    // The float4s this work-item moves: A's are row ra[l], columns
    // 4·qa[l]…, of the slice; B's row kb[l], columns 4·qb[l]….
    int ra[LPTA], qa[LPTA], kb[LPTB], qb[LPTB];
    #pragma unroll
    for (int l = 0; l < LPTA; l++) {
        const int idx = tid + l*THREADS;
        ra[l] = idx / (TSK / 4);
        qa[l] = idx % (TSK / 4);
    }
    #pragma unroll
    for (int l = 0; l < LPTB; l++) {
        const int idx = tid + l*THREADS;
        kb[l] = idx / (TSN / 4);
        qb[l] = idx % (TSN / 4);
    }
    float4 nextA[LPTA], nextB[LPTB]; // the next slice, in flight

    float acc[WPTM][WPTN];
    #pragma unroll
    for (int i = 0; i < WPTM; i++) {
        #pragma unroll
        for (int j = 0; j < WPTN; j++) {
            acc[i][j] = 0.0f;
        }
    }

    // Slice 0 into copy 0.
    #pragma unroll
    for (int l = 0; l < LPTA; l++) {
        nextA[l] = load4(A, M, K, m0 + ra[l], 4*qa[l], vecA);
    }
    #pragma unroll
    for (int l = 0; l < LPTB; l++) {
        nextB[l] = load4(B, K, N, kb[l], n0 + 4*qb[l], vecB);
    }
    {
        __local float* as = (__local float*)As[0];
        #pragma unroll
        for (int l = 0; l < LPTA; l++) {
            as[(4*qa[l] + 0)*(TSM + PADA) + ra[l]] = nextA[l].x;
            as[(4*qa[l] + 1)*(TSM + PADA) + ra[l]] = nextA[l].y;
            as[(4*qa[l] + 2)*(TSM + PADA) + ra[l]] = nextA[l].z;
            as[(4*qa[l] + 3)*(TSM + PADA) + ra[l]] = nextA[l].w;
        }
        #pragma unroll
        for (int l = 0; l < LPTB; l++) {
            Bs[0][kb[l]][qb[l]] = nextB[l];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int slices = (K + TSK - 1) / TSK;
    for (int t = 0; t < slices; t++) {
        const int cur = t & 1;
        const bool more = t + 1 < slices;

        // Start loading slice t+1: nothing waits for these loads until
        // after the FMAs below.
        if (more) {
            const int k0 = (t + 1)*TSK;
            #pragma unroll
            for (int l = 0; l < LPTA; l++) {
                nextA[l] = load4(A, M, K, m0 + ra[l], k0 + 4*qa[l], vecA);
            }
            #pragma unroll
            for (int l = 0; l < LPTB; l++) {
                nextB[l] = load4(B, K, N, k0 + kb[l], n0 + 4*qb[l], vecB);
            }
        }

        // Compute on slice t.
        #pragma unroll
        for (int k = 0; k < TSK; k++) {
            float a[WPTM], b[WPTN];
            #pragma unroll
            for (int i = 0; i < WPTM / 4; i++) {
                const float4 v = As[cur][k][i*RTSM + ly];
                a[4*i] = v.x, a[4*i + 1] = v.y, a[4*i + 2] = v.z, a[4*i + 3] = v.w;
            }
            #pragma unroll
            for (int j = 0; j < WPTN / 4; j++) {
                const float4 v = Bs[cur][k][j*RTSN + lx];
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

        // Store slice t+1 into the other copy. Its last readers computed
        // slice t-1 and have all passed the barrier that ended it.
        if (more) {
            __local float* as = (__local float*)As[cur ^ 1];
            #pragma unroll
            for (int l = 0; l < LPTA; l++) {
                as[(4*qa[l] + 0)*(TSM + PADA) + ra[l]] = nextA[l].x;
                as[(4*qa[l] + 1)*(TSM + PADA) + ra[l]] = nextA[l].y;
                as[(4*qa[l] + 2)*(TSM + PADA) + ra[l]] = nextA[l].z;
                as[(4*qa[l] + 3)*(TSM + PADA) + ra[l]] = nextA[l].w;
            }
            #pragma unroll
            for (int l = 0; l < LPTB; l++) {
                Bs[cur ^ 1][kb[l]][qb[l]] = nextB[l];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

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
