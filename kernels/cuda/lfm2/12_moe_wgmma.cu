// Step 12 — every expert's GEMM in one launch: grouped wgmma tiles, with the
// SwiGLU in the epilogue (sm_90a, bf16).
//
// Idea: the grouped path (step 07 + cuBLAS) runs two GEMMs per expert, sized
// by counts the host must read first: a device-to-host wait per MoE layer,
// and 2·E launches that run one after the other. When a pipeline cuts the
// batch into many micro-batches, an expert gets a few hundred rows, cuBLAS
// gives each GEMM a few dozen blocks, and most of the 132 SMs idle. Here one
// launch covers every expert. Block (x, y) takes the y-th 128-row tile of
// the list of all experts' tiles, found from step 07's offsets in device
// memory, so the host never waits and no SM waits for the next expert's
// launch. Each tile is gemm step 12's: a producer warpgroup copies the A
// tile (grouped rows) and the W tile (rows of expert e's weight, K-major,
// since C = A·Wᵀ) with TMA into a 4-stage ring; two consumer warpgroups
// multiply with wgmma, 64×256 accumulators each.
// moe_gate_up_wgmma loads 128 rows of w1 and the same 128 rows of w3 into
// one 256-row W tile, so each thread holds gate and up of the same outputs,
// and writes silu(gate)·up in bf16: the fp32 [rows, 2·IM] product that
// step 09's SwiGLU pass reads back never exists.
// Traffic: per expert as cuBLAS; minus the fp32 gate|up product, written
// and read once (4·2·IM bytes a row: 14 KiB). An expert's last tile reads
// rows of the next expert (not written); the grid is sized for the most
// tiles the pairs can make, and the blocks past the last tile exit at once.
// Cost: sm_90a and bf16 only (other GPUs and fp32 keep the cuBLAS path);
// an expert's partial last tile computes up to 127 rows for nothing: on
// average half a tile per expert, 6% of the rows of a micro-batch of 8192
// tokens, 25% of one of 2048.
// Tried: 64-row tiles (two consumers of 64 rows × 128 columns, m64n128) to
// halve that waste. Slower at every size measured (docs/lfm2.md has the
// figures): each W tile then serves half the rows, and the weights, not
// the wasted rows, are what these small GEMMs pay for.
#include "gemm/hopper.cuh"
#include "lfm2/common.cuh"  // silu_mul, put (compiled with LFM2_BF16=1: elem is bf16)

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define CONSUMERS 2
#define THREADS (128 * (CONSUMERS + 1))
#define OFFSETS(m, E) ((m) + (E))  // meta layout of 07_moe_group.cu

struct Smem {
    alignas(1024) bf16 a[STAGES][BM * BK];
    alignas(1024) bf16 w[STAGES][BN * BK];  // two boxes of 128 W rows
    unsigned long long full[STAGES], empty[STAGES];
    int e, row0, rows;  // the block's tile: expert, first grouped row, rows in it
};

// find_tile sets s.e (or -1) for tile number `tile` of the list of every
// expert's BM-row tiles, with one warp: lanes count the tiles of 32 experts
// at a time and a shuffle scan gives each expert its first tile.
__device__ __forceinline__ void find_tile(const int* __restrict__ meta, int E, int tile, int lane, Smem& s) {
    const int* offsets = OFFSETS(meta, E);
    int before = 0;  // tiles of the experts before this group of 32
    if (lane == 0) s.e = -1;
    __syncwarp();
    for (int base = 0; base < E; base += 32) {
        int e = base + lane;
        int n = e < E ? offsets[e + 1] - offsets[e] : 0, nt = (n + BM - 1) / BM, incl = nt;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            int v = __shfl_up_sync(0xffffffffu, incl, d);
            if (lane >= d) incl += v;
        }
        int first = before + incl - nt;
        if (tile >= first && tile < first + nt) {
            s.e = e;
            s.row0 = offsets[e] + (tile - first) * BM;
            s.rows = min(BM, offsets[e + 1] - s.row0);
        }
        before += __shfl_sync(0xffffffffu, incl, 31);
    }
}

// tile_product computes the block's 128×256 tile: A rows s.row0.., against
// W rows w0.. (first 128 of the W tile) and w1.. (last 128), over K. The
// producer returns false; each consumer thread returns true with its 64×256
// share in d (the m64n256 accumulator layout, see the epilogues).
__device__ __forceinline__ bool tile_product(Smem& s, const TensorMap* tmA, const TensorMap* tmW, int w0, int w1, int K,
                                             float* d) {
    const int wg = threadIdx.x / 128, t = threadIdx.x % 128, tiles = (K + BK - 1) / BK;
    if (wg == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (t == 0)
            ring_produce<STAGES>(s.full, s.empty, tiles, (BM + BN) * BK * sizeof(bf16), [&](int st, int kt) {
                tma_load(s.a[st], tmA, kt * BK, s.row0, &s.full[st]);
                tma_load(s.w[st], tmW, kt * BK, w0, &s.full[st]);
                tma_load(&s.w[st][128 * BK], tmW, kt * BK, w1, &s.full[st]);
            });
        return false;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    const int rowOff = (wg - 1) * 64;
    ring_consume<STAGES>(s.full, s.empty, tiles, [&](int st) {
#pragma unroll
        for (int k = 0; k < BK / 16; ++k) wgmma_64x256<0>(d, desc(&s.a[st][rowOff * BK + k * 16]), desc(&s.w[st][k * 16]));
    });
    return true;
}

// setup initializes the barriers and finds the block's tile; false: the
// block is past the last tile.
__device__ __forceinline__ bool setup(Smem& s, const int* meta, int E) {
    if (threadIdx.x == 0) ring_init<STAGES>(s.full, s.empty, CONSUMERS * 128);
    if (threadIdx.x < 32) find_tile(meta, E, blockIdx.y, threadIdx.x, s);
    __syncthreads();
    return s.e >= 0;
}

// The accumulator layout of m64nNk16: thread t of a consumer warpgroup holds,
// for each 8-column chunk c, rows 16·warp + lane/4 (+8) and columns
// 8c + 2·(lane%4) (+1): d[4c + 2h + j] is row +8h, column +j.
#define ACC_ROW(t) (16 * ((t) / 32) + ((t) % 32) / 4)
#define ACC_COL(t) (2 * ((t) % 4))

// moe_gate_up_wgmma: act[r, i] = silu(A[r]·w1_e[i]) · (A[r]·w3_e[i]) for the
// rows r of every expert e, i in the block's 128 outputs. A = xg [pairs, H]
// (tmA, boxes 128×64), w13 = [E][2·IM][H] (tmW, boxes 128×64).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
moe_gate_up_wgmma(int H, int IM, const int* __restrict__ meta, int E, const __grid_constant__ TensorMap tmA,
                  const __grid_constant__ TensorMap tmW, bf16* __restrict__ act) {
    Smem& s = aligned_smem<Smem>();
    if (!setup(s, meta, E)) return;
    const int i0 = blockIdx.x * (BN / 2), gate = s.e * 2 * IM + i0;
    float d[128];
    if (!tile_product(s, &tmA, &tmW, gate, gate + IM, H, d)) return;
    const int t = threadIdx.x % 128, r0 = (threadIdx.x / 128 - 1) * 64 + ACC_ROW(t);
#pragma unroll
    for (int c = 0; c < BN / 16; ++c) {  // chunk c is gate, chunk c + 16 its up
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int r = r0 + 8 * h, i = i0 + 8 * c + ACC_COL(t);
            if (r >= s.rows) continue;
            bf16* out = act + (size_t)(s.row0 + r) * IM + i;
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                float g = d[4 * c + 2 * h + j], up = d[4 * (c + BN / 16) + 2 * h + j];
                if (i + j < IM) put(out + j, silu_mul(g, up));
            }
        }
    }
}

// moe_down_wgmma: y[r, n] = act[r]·w2_e[n] for the rows r of every expert e,
// n in the block's 256 outputs. act [pairs, IM] (tmA), w2 = [E][H][IM] (tmW).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
moe_down_wgmma(int H, int IM, const int* __restrict__ meta, int E, const __grid_constant__ TensorMap tmA,
               const __grid_constant__ TensorMap tmW, float* __restrict__ y) {
    Smem& s = aligned_smem<Smem>();
    if (!setup(s, meta, E)) return;
    const int n0 = blockIdx.x * BN, w0 = s.e * H + n0;
    float d[128];
    if (!tile_product(s, &tmA, &tmW, w0, w0 + 128, IM, d)) return;
    const int t = threadIdx.x % 128, r0 = (threadIdx.x / 128 - 1) * 64 + ACC_ROW(t);
#pragma unroll
    for (int c = 0; c < BN / 8; ++c) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int r = r0 + 8 * h, n = n0 + 8 * c + ACC_COL(t);
            if (r >= s.rows) continue;
            float* out = y + (size_t)(s.row0 + r) * H + n;
            if (n + 1 < H && (H & 1) == 0) {
                *reinterpret_cast<float2*>(out) = make_float2(d[4 * c + 2 * h], d[4 * c + 2 * h + 1]);
            } else {
                if (n < H) out[0] = d[4 * c + 2 * h];
                if (n + 1 < H) out[1] = d[4 * c + 2 * h + 1];
            }
        }
    }
}
