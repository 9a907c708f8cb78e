// Step 12 — Hopper: wgmma fed by TMA, with a producer warpgroup (sm_90a).
//
// Idea: step 11's mma.sync makes every warp load its fragments from shared
// memory into registers before each multiply. Hopper's wgmma.mma_async lets a
// warpgroup (4 warps, 128 threads) multiply operands that stay in shared
// memory, asynchronously, 64×256×16 per instruction. The tensor memory
// accelerator (TMA) fills shared memory with whole tiles from one thread's
// instruction, and an mbarrier tells the consumers when the bytes landed.
// So the block splits into roles (warp specialization):
// - warpgroup 0, the producer: one thread issues TMA copies of the A and B
//   tiles of k-step t into a ring of STAGES buffers;
// - warpgroups 1 and 2, the consumers: each computes 64 rows × 256 columns of
//   the block's 128×256 tile of C, 128 FP32 accumulators per thread, waiting
//   on each buffer's "full" barrier and releasing it through its "empty" one
//   as soon as the wgmmas that read it have finished (one k-step in flight).
// A is K-major (row-major M×K); B is row-major K×N, so N-major, which BF16
// wgmma reads directly with its B-transpose bit: TMA loads B in 64-column
// boxes. TMA needs 16-byte aligned rows, so when K (or N) is not a multiple
// of 8, A (or B) is first copied into a zero-padded buffer by pad_cols, in
// the timed run.
// Tiles are stored with TMA's 128-byte swizzle, which the shared-memory
// descriptors given to wgmma describe, so reads are bank-conflict free.
// Traffic: global as step 11 at 2 bytes per element (plus the padding copies
// for unaligned shapes). Shared: none through registers for A and B.
// Cost: sm_90a only; 193 KiB of shared memory per block (4 stages), so one
// block per SM; every piece (tensor maps, swizzle, descriptors, barrier
// phases) must agree exactly, or the result is silently wrong.
// The pieces themselves (mbarriers, TMA copies, descriptors, the wgmma) are in
// gemm/hopper.cuh, shared with the LFM2 experts' grouped GEMM.
#include "gemm/hopper.cuh"

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define CONSUMERS 2
#define THREADS (128 * (CONSUMERS + 1))

struct Smem {
    alignas(1024) bf16 a[STAGES][BM * BK];
    alignas(1024) bf16 b[STAGES][BN * BK];
    unsigned long long full[STAGES], empty[STAGES];
};

extern "C" __global__ void __launch_bounds__(THREADS, 1)
wgmma_bf16(int M, int N, int K, const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB, float* __restrict__ C) {
    Smem& s = aligned_smem<Smem>();
    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int tiles = (K + BK - 1) / BK;
    if (threadIdx.x == 0) ring_init<STAGES>(s.full, s.empty, CONSUMERS * 128);
    __syncthreads();

    if (wg == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (t == 0)
            ring_produce<STAGES>(s.full, s.empty, tiles, (BM + BN) * BK * sizeof(bf16), [&](int st, int kt) {
                tma_load(s.a[st], &tmA, kt * BK, m0, &s.full[st]);
#pragma unroll
                for (int j = 0; j < BN / 64; ++j)  // B: four 64-column boxes of 64 k-rows
                    tma_load(&s.b[st][j * 64 * BK], &tmB, n0 + 64 * j, kt * BK, &s.full[st]);
            });
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    const int rowOff = (wg - 1) * 64;
    ring_consume<STAGES>(s.full, s.empty, tiles, [&](int st) {
#pragma unroll
        for (int k = 0; k < BK / 16; ++k)
            wgmma_64x256<1>(d, desc(&s.a[st][rowOff * BK + k * 16]), desc_mn(&s.b[st][k * 16 * 64]));
    });
    // Accumulator layout of m64nNk16: thread t of the warpgroup holds, for each
    // 8-column chunk c, rows 16·warp + lane/4 (+8) and columns 8c + 2·(lane%4) (+1).
    const int w = t / 32, l = t % 32;
    const int r0 = m0 + rowOff + 16 * w + l / 4;
#pragma unroll
    for (int c = 0; c < BN / 8; ++c) {
        int col = n0 + 8 * c + 2 * (l % 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int row = r0 + 8 * h;
            if (row < M) {
                if (col < N) C[(size_t)row * N + col] = d[4 * c + 2 * h];
                if (col + 1 < N) C[(size_t)row * N + col + 1] = d[4 * c + 2 * h + 1];
            }
        }
    }
}

// pad_cols copies in (rows × cols) into out (rows × ldOut) with zeros in the extra columns.
extern "C" __global__ void pad_cols(int rows, int cols, int ldOut, const bf16* __restrict__ in, bf16* __restrict__ out) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
    if (r < rows && c < ldOut) out[(size_t)r * ldOut + c] = c < cols ? in[(size_t)r * cols + c] : __float2bfloat16(0.f);
}
