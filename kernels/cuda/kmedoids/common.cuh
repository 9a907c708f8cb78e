// Shared pieces of the k-medoids kernels: SQFD between feature signatures.
//
// Layout. A signature set is an index of N+1 centroid offsets (int) and the
// centroids, REC4 float4s each: SQFD_DIM features, zero padding, and the
// weight in the very last float. With the lab's 7 features a centroid is
// exactly two float4s (x, y, L, a | b, contrast, coarseness, weight), read
// with two 16-byte loads. Weights are normalized once on the host (Metric)
// and each signature's self-similarity S(i, i) is computed once when the set
// is uploaded (rows.cu's cross_pairs), so a distance costs only its cross term:
//
//   SQFD(i, j)² = S(i, i) + S(j, j) − 2·S(i, j),  S(x, y) = Σ_a Σ_b w_a w_b f(a, b).
//
// This is the seed's "halved" quadratic form: the full form over the
// concatenated weights (w, −v) has two self blocks and two cross blocks that
// are transposes of each other; the self blocks are precomputed and one cross
// block is evaluated and doubled.
//
// Compile-time options (the host passes them): SQFD_DIM, SQFD_HEURISTIC (0:
// Gaussian, 1: heuristic), TPB (threads per tile block, and so the most
// centroids a tile, or one signature, may have), GROUP (targets reduced
// together). The similarity's parameter is a run-time argument, kparam.
#pragma once

#ifndef SQFD_DIM
#error "compile with -DSQFD_DIM=<features per centroid>"
#endif
#ifndef SQFD_HEURISTIC
#define SQFD_HEURISTIC 0
#endif
#ifndef TPB
#define TPB 512
#endif
#ifndef GROUP
#define GROUP 8
#endif

#define REC4 ((SQFD_DIM + 4) / 4)  // float4s per centroid
#define FULL_MASK 0xffffffffu
#define INF_FLOAT __int_as_float(0x7f800000)

struct Centroid {
    float f[SQFD_DIM];
    float w;
};

// load_centroid reads the centroid at rec (global or shared memory) with
// float4 loads.
__device__ __forceinline__ Centroid load_centroid(const float4* rec) {
    float v[4 * REC4];
#pragma unroll
    for (int q = 0; q < REC4; ++q) {
        const float4 x = rec[q];
        v[4 * q] = x.x, v[4 * q + 1] = x.y, v[4 * q + 2] = x.z, v[4 * q + 3] = x.w;
    }
    Centroid c;
#pragma unroll
    for (int k = 0; k < SQFD_DIM; ++k) c.f[k] = v[k];
    c.w = v[4 * REC4 - 1];
    return c;
}

// similarity is f at squared distance d2. kparam is −α·log2(e) for the
// Gaussian exp(−α·d²) = 2^(kparam·d²), and α for the heuristic 1/(α + d).
// Both use the special-function unit's approximations (relative error about
// 2⁻²²): one MUFU instruction for the Gaussian, two for the heuristic, and
// no division in the inner loop.
__device__ __forceinline__ float similarity(float d2, float kparam) {
    float r;
#if SQFD_HEURISTIC
    float d;
    asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(d2));
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(kparam + d));
#else
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(kparam * d2));
#endif
    return r;
}

// accumulate adds w_b·f(a, b), one centroid pair of a cross term: SQFD_DIM
// differences and multiply-adds, the similarity and one multiply-add, the
// 3·D + 4 useful flops that the benchmarks count.
__device__ __forceinline__ float accumulate(float acc, const Centroid& a, const Centroid& b, float kparam) {
    float d2 = 0.f;
#pragma unroll
    for (int k = 0; k < SQFD_DIM; ++k) {
        const float t = a.f[k] - b.f[k];
        d2 = fmaf(t, t, d2);
    }
    return fmaf(b.w, similarity(d2, kparam), acc);
}

// centroid_term is Σ_b w_b·f(a, b) over centroids [b0, b1) of data, read
// from global memory.
__device__ __forceinline__ float centroid_term(const Centroid& a, const float4* __restrict__ data, int b0, int b1,
                                               float kparam) {
    float acc = 0.f;
    for (int b = b0; b < b1; ++b) acc = accumulate(acc, a, load_centroid(data + (size_t)b * REC4), kparam);
    return acc;
}

// cross_range is S over centroids [a0, a1) and [b0, b1) of data: one thread,
// everything from global memory (the naive steps).
__device__ __forceinline__ float cross_range(const float4* __restrict__ data, int a0, int a1, int b0, int b1,
                                             float kparam) {
    float sum = 0.f;
    for (int a = a0; a < a1; ++a) {
        const Centroid ca = load_centroid(data + (size_t)a * REC4);
        sum = fmaf(ca.w, centroid_term(ca, data, b0, b1, kparam), sum);
    }
    return sum;
}

// Scores are sums of distances in 32.32 fixed point. Integer additions are
// associative, so a score has the same bits whatever the order of the
// atomics and however its terms are split between blocks and GPUs: the
// multi-GPU run picks exactly the single-GPU run's medoids. (The host checks
// that no score can reach 2³²; d·2³² is exact in float, so every term is
// the float distance rounded to 2⁻³².)
__device__ __forceinline__ unsigned long long to_fixed(float d) { return __float2ull_rn(d * 4294967296.0f); }

// A tile is a block's source signatures: rows [r0, r1) of a set whose
// centroids (at most TPB of them) lie one per thread, in registers.
struct Tile {
    int first[TPB + 1];         // centroid offsets of the rows, from the tile's first centroid
    int target_first[TPB + 1];  // centroid offsets of the staged targets, from the chunk's first
    float part[GROUP][TPB];     // w_a·Σ_b w_b f(a, b) of the thread's centroid a and each target of the group
    float value[GROUP * TPB];   // the result of each (row, target) pair of the group
};
// The host sizes the dynamic shared memory of a tile kernel with this
// formula: the Tile (36,872 bytes at TPB 512, GROUP 8, rounded up to 16),
// then the stage. Static shared memory would cap both at 48 KB together.
static_assert(sizeof(Tile) == 4 * (2 * (TPB + 1) + 2 * GROUP * TPB), "Tile is not laid out as the host sizes it");
#define STAGE_OFFSET ((sizeof(Tile) + 15) / 16)  // float4s before the stage

// TILE_SHARED declares a tile kernel's Tile and stage in dynamic shared memory.
#define TILE_SHARED                                    \
    extern __shared__ float4 dynamic_shared[];         \
    Tile& tile = *reinterpret_cast<Tile*>(dynamic_shared); \
    float4* stage = dynamic_shared + STAGE_OFFSET

// load_tile fills tile.first for rows [r0, r1) of (index, data) and returns
// this thread's centroid: a zero-weight dummy past the tile's end, which
// adds nothing. Every thread must call it; it ends with a barrier.
__device__ __forceinline__ Centroid load_tile(Tile& tile, const int* __restrict__ index,
                                              const float4* __restrict__ data, int r0, int r1) {
    const int c0 = index[r0];
    for (int s = threadIdx.x; s <= r1 - r0; s += TPB) tile.first[s] = index[r0 + s] - c0;
    Centroid a = {};
    if ((int)threadIdx.x < index[r1] - c0) a = load_centroid(data + (size_t)(c0 + threadIdx.x) * REC4);
    __syncthreads();
    return a;
}

// walk_targets runs a tile against targets [t0, t1) of (tindex, tdata).
// Chunks of at most trows targets are staged in shared memory (stage holds
// trows × the largest signature); then, GROUP targets at a time, each thread
// sums its centroid's terms against each target of the group in registers
// (where counts(t) allows: the small-cluster kernel skips other clusters),
// the block reduces them to the cross term of every (row, target) pair,
// value(s, t, cross) turns a cross term into the pair's result on the
// reducing thread, and the row's own thread s < rows then sees
// consume(t, result) for its targets in increasing t: the order that the
// tie rules need. Every thread must call it with the same arguments.
//
// Each cross term is summed in one fixed order (targets' centroids in order
// in one thread, then the row's centroids in order), whatever the tile or the
// chunk it falls in, so equal inputs give equal bits on every GPU.
template <class Counts, class Value, class Consume>
__device__ __forceinline__ void walk_targets(Tile& tile, float4* stage, const Centroid& a, int rows,
                                             const int* __restrict__ tindex, const float4* __restrict__ tdata, int t0,
                                             int t1, int trows, float kparam, Counts counts, Value value,
                                             Consume consume) {
    for (int c0 = t0; c0 < t1; c0 += trows) {
        const int c1 = min(t1, c0 + trows);
        const int base = tindex[c0];
        // No barrier needed before overwriting the stage: the last group's
        // second barrier comes after every thread's last read of it.
        const int vectors = (tindex[c1] - base) * REC4;
        for (int q = threadIdx.x; q < vectors; q += TPB) stage[q] = tdata[(size_t)base * REC4 + q];
        for (int q = threadIdx.x; q <= c1 - c0; q += TPB) tile.target_first[q] = tindex[c0 + q] - base;
        __syncthreads();
        for (int g0 = c0; g0 < c1; g0 += GROUP) {
            const int ng = min(GROUP, c1 - g0);
            float acc[GROUP];
#pragma unroll
            for (int g = 0; g < GROUP; ++g) {
                acc[g] = 0.f;
                if (g < ng && counts(g0 + g)) {
                    const int b1 = tile.target_first[g0 - c0 + g + 1];
                    for (int b = tile.target_first[g0 - c0 + g]; b < b1; ++b)
                        acc[g] = accumulate(acc[g], a, load_centroid(stage + b * REC4), kparam);
                }
            }
#pragma unroll
            for (int g = 0; g < GROUP; ++g) tile.part[g][threadIdx.x] = a.w * acc[g];
            __syncthreads();
            for (int j = threadIdx.x; j < rows * ng; j += TPB) {
                const int s = j / ng, g = j - s * ng;
                float cross = 0.f;
                for (int c = tile.first[s]; c < tile.first[s + 1]; ++c) cross += tile.part[g][c];
                tile.value[j] = value(s, g0 + g, cross);
            }
            __syncthreads();
            if ((int)threadIdx.x < rows)
                for (int g = 0; g < ng; ++g) consume(g0 + g, tile.value[threadIdx.x * ng + g]);
        }
    }
}
