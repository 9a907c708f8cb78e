// Step 3: more work per work-item. The C tile stays TS×TS, but the
// work-group shrinks to TS×(TS/WPT) work-items and each computes WPT
// elements of one column of the tile, rows ly, ly+RTS, ly+2·RTS, … (RTS =
// TS/WPT). In the inner loop a work-item reads one B value from __local
// memory and uses it for WPT FMAs.
//
// Global traffic: unchanged from step 2 with the same TS,
// 4·(M·K·⌈N/TS⌉ + K·N·⌈M/TS⌉ + M·N) bytes. What it saves is __local
// traffic: (1+WPT) __local loads per WPT FMAs instead of 2 per FMA (1.1
// instead of 2 for WPT=8), and fewer work-items to schedule and index.
//
// Costs: WPT accumulator registers per work-item; each work-item loads WPT
// elements of each tile; TS must be a multiple of WPT.
// Bank conflicts: rows ly + w·RTS of Asub are one address per warp row
// (broadcast); Bsub[k][lx] is consecutive words.
//
// Edges: as in step 2, zero-filled loads outside A and B, every work-item
// reaches every barrier, guarded stores.
//
// Parameters (-D at build time):
//   TS   tile side (default 32)
//   WPT  C elements per work-item, a divisor of TS (default 8: 32×4 = 128
//        work-items per group)

#ifndef TS
#define TS 32
#endif
#ifndef WPT
#define WPT 8
#endif
#if TS % WPT != 0
#error "TS must be a multiple of WPT"
#endif
#define RTS (TS / WPT) // work-items along M

__kernel __attribute__((reqd_work_group_size(TS, RTS, 1)))
void gemm(const int M, const int N, const int K,
          const __global float* restrict A,
          const __global float* restrict B,
          __global float* restrict C)
{
    const int lx = get_local_id(0); // column within the tile, 0..TS-1
    const int ly = get_local_id(1); // first row within the tile, 0..RTS-1
    const int n = get_group_id(0)*TS + lx;
    const int m0 = get_group_id(1)*TS; // first row of the tile

    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];

    float acc[WPT];
    for (int w = 0; w < WPT; w++) {
        acc[w] = 0.0f;
    }

    for (int k0 = 0; k0 < K; k0 += TS) {
        #pragma unroll
        for (int w = 0; w < WPT; w++) {
            const int r = ly + w*RTS; // tile row loaded
            const int m = m0 + r;
            const int ka = k0 + lx;
            const int kb = k0 + r;
            Asub[r][lx] = (m < M && ka < K) ? A[m*K + ka] : 0.0f;
            Bsub[r][lx] = (kb < K && n < N) ? B[kb*N + n] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int k = 0; k < TS; k++) {
            const float b = Bsub[k][lx];
            #pragma unroll
            for (int w = 0; w < WPT; w++) {
                acc[w] = fma(Asub[ly + w*RTS][k], b, acc[w]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (n < N) {
        #pragma unroll
        for (int w = 0; w < WPT; w++) {
            const int m = m0 + ly + w*RTS;
            if (m < M) {
                C[m*N + n] = acc[w];
            }
        }
    }
}
