// The data movement that every k-medoids step shares (not a step of the
// ladder): cross terms of listed pairs, selections of rows, scans, tiles.
#include "kmedoids/common.cuh"

// cross_pairs: cross[p] = S(first[p], second[p]) of a signature set, a warp
// per pair: the lanes take the first signature's centroids, each walks the
// second's (the same address in every lane: one broadcast load), and a
// shuffle sums the lanes. It gives the self-similarities S(i, i) when a set
// is uploaded, and the distances of lab sqfd and the sqfd benchmark.
extern "C" __global__ void cross_pairs(const float4* __restrict__ data, const int* __restrict__ index,
                                       const int* __restrict__ first, const int* __restrict__ second, int pairs,
                                       float kparam, float* __restrict__ cross) {
    const int p = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (p >= pairs) return;  // the whole warp
    const int a1 = index[first[p] + 1], b0 = index[second[p]], b1 = index[second[p] + 1];
    float sum = 0.f;
    for (int a = index[first[p]] + lane; a < a1; a += 32) {
        const Centroid ca = load_centroid(data + (size_t)a * REC4);
        sum = fmaf(ca.w, centroid_term(ca, data, b0, b1, kparam), sum);
    }
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(FULL_MASK, sum, o);
    if (lane == 0) cross[p] = sum;
}

// select_rows starts a selection of rows ids[0..n) of a set (the medoids,
// or every signature in cluster order): sizes[p] = centroids of ids[p] and
// sizes[n] = 0, which scan_int turns into the selection's index, and
// out_self[p] = self[ids[p]].
extern "C" __global__ void select_rows(const int* __restrict__ ids, int n, const int* __restrict__ index,
                                       const float* __restrict__ self, int* __restrict__ sizes,
                                       float* __restrict__ out_self) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) {
        sizes[p] = index[ids[p] + 1] - index[ids[p]];
        out_self[p] = self[ids[p]];
    }
    if (p == n) sizes[n] = 0;
}

// gather_rows copies the centroids of ids[p] to out_data from out_index[p]
// on, a warp per row, a float4 per lane.
extern "C" __global__ void gather_rows(const int* __restrict__ ids, int n, const int* __restrict__ index,
                                       const float4* __restrict__ data, const int* __restrict__ out_index,
                                       float4* __restrict__ out_data) {
    const int p = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (p >= n) return;
    const size_t src = (size_t)index[ids[p]] * REC4, dst = (size_t)out_index[p] * REC4;
    const int vectors = (index[ids[p] + 1] - index[ids[p]]) * REC4;
    for (int q = lane; q < vectors; q += 32) out_data[dst + q] = data[src + q];
}

// block_exclusive_scan replaces data[0..len) by its exclusive prefix sums,
// in one block of 1024 threads: 1024 values per round, a shuffle scan in
// each warp, one over the warps' totals, and a carry between rounds.
template <class T>
__device__ __forceinline__ void block_exclusive_scan(T* data, int len) {
    __shared__ T warp_totals[32];
    __shared__ T carry;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) carry = 0;
    for (int base = 0; base < len; base += blockDim.x) {
        const int i = base + threadIdx.x;
        const T v = i < len ? data[i] : T(0);
        T x = v;
        for (int o = 1; o < 32; o *= 2) {
            const T y = __shfl_up_sync(FULL_MASK, x, o);
            if (lane >= o) x += y;
        }
        if (lane == 31) warp_totals[warp] = x;
        __syncthreads();
        if (warp == 0) {
            T w = lane < (int)blockDim.x / 32 ? warp_totals[lane] : T(0);
            for (int o = 1; o < 32; o *= 2) {
                const T y = __shfl_up_sync(FULL_MASK, w, o);
                if (lane >= o) w += y;
            }
            warp_totals[lane] = w;
        }
        __syncthreads();
        const T before = carry + (warp > 0 ? warp_totals[warp - 1] : T(0)) + x - v;
        if (i < len) data[i] = before;
        __syncthreads();  // every thread has read carry and warp_totals
        if (threadIdx.x == blockDim.x - 1) carry = before + v;
        __syncthreads();
    }
}

// scan_int and scan_long: exclusive prefix sums in place; one block of 1024.
extern "C" __global__ void scan_int(int* data, int len) { block_exclusive_scan(data, len); }
extern "C" __global__ void scan_long(long long* data, int len) { block_exclusive_scan(data, len); }

// bucket_tiles cuts the rows of a set into tiles without a serial packing
// pass: tile b holds the rows whose first centroid lies in [b·cap,
// (b+1)·cap), so tile_first[b] is the first row starting at or after b·cap
// (n if none), for b = 0..buckets. With cap = TPB − (the largest row) + 1 a
// tile never holds more than TPB centroids, and tiles hold cap on average.
extern "C" __global__ void bucket_tiles(const int* __restrict__ index, int n, int cap, int buckets,
                                        int* __restrict__ tile_first) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > buckets) return;
    const long long start = (long long)b * cap;
    int lo = 0, hi = n;  // the first row p < n with index[p] >= start, or n
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (index[mid] >= start)
            hi = mid;
        else
            lo = mid + 1;
    }
    tile_first[b] = lo;
}
