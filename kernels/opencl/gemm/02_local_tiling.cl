// Step 2: tiling in __local memory. A work-group of TS×TS work-items
// computes a TS×TS tile of C. It walks K in steps of TS: each work-item
// loads one element of the A tile (TS rows × TS columns of A) and one of the
// B tile into __local memory, the group synchronises, and every work-item
// then reads its row of the A tile and its column of the B tile from
// __local memory, which is on chip.
//
// Global traffic (ignoring caches): each row of TS C elements shares one
// read of A and each column one read of B, so A is read ⌈N/TS⌉ times and B
// ⌈M/TS⌉ times: 4·(M·K·⌈N/TS⌉ + K·N·⌈M/TS⌉ + M·N) bytes, about TS times
// (32×) less than step 1.
//
// Costs: 2·TS·TS floats of __local memory (8 KiB for TS=32), two barriers
// per tile, and still two __local loads per FMA: the arithmetic now waits on
// __local memory instead of global memory (step 3 fixes that).
// Bank conflicts: Asub[ly][k] is one address for the whole row of
// work-items (a broadcast) and Bsub[k][lx] is consecutive words.
//
// Edges: loads outside A or B fill the tile with zeros, which add nothing
// to the sums, so partial tiles need no special inner loop; work-items
// outside C still load and reach every barrier, and only the store is
// guarded. Any M, N, K work.
//
// Parameters (-D at build time):
//   TS  tile side; work-groups are TS×TS work-items (default 32, 1024
//       work-items: the most a work-group may have on NVIDIA GPUs).

#ifndef TS
#define TS 32
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void gemm(const int M, const int N, const int K,
          const __global float* restrict A,
          const __global float* restrict B,
          __global float* restrict C)
{
    const int lx = get_local_id(0); // column within the tile
    const int ly = get_local_id(1); // row within the tile
    const int n = get_group_id(0)*TS + lx;
    const int m = get_group_id(1)*TS + ly;

    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        const int ka = k0 + lx; // column of A this work-item loads
        const int kb = k0 + ly; // row of B this work-item loads
        Asub[ly][lx] = (m < M && ka < K) ? A[m*K + ka] : 0.0f;
        Bsub[ly][lx] = (kb < K && n < N) ? B[kb*N + n] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int k = 0; k < TS; k++) {
            acc = fma(Asub[ly][k], Bsub[k][lx], acc);
        }
        barrier(CLK_LOCAL_MEM_FENCE); // the tile is not overwritten while others read it
    }
    if (m < M && n < N) {
        C[m*N + n] = acc;
    }
}
