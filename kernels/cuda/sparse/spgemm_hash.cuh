// Hash-table accumulators in shared memory, one table per row of C.
//
// A table of T slots (T a power of two, at least twice the row's bound so
// probes stay short) lives in dynamic shared memory: keys (column, or
// EMPTY_KEY) and, for the numeric pass, values. Products are inserted with
// atomicCAS on the key and atomicAdd on the value, with linear probing. The
// numeric pass then compacts the occupied slots to the front, sorts them by
// column with a bitonic network in shared memory, and writes the row.
// Against the dense accumulator: the workspace is O(row) instead of
// O(columns), on chip instead of in global memory, and nothing scans the
// column range. The price is probing and the sort.
#pragma once
#include "sparse/spgemm_common.cuh"

// hashSlot returns the slot that holds column c, claiming an empty one if c
// is new (then *fresh is true). The table must have room.
template <int T>
__device__ __forceinline__ int hashSlot(int* keys, int c, bool* fresh) {
    unsigned h = (unsigned(c) * 107u) & (T - 1);
    for (;;) {
        int k = keys[h];
        if (k == c) break;
        if (k == EMPTY_KEY) {
            int old = atomicCAS(&keys[h], EMPTY_KEY, c);
            if (old == EMPTY_KEY) {
                *fresh = true;
                return h;
            }
            if (old == c) break;
        }
        h = (h + 1) & (T - 1);
    }
    *fresh = false;
    return h;
}

template <int T, int THREADS, class Source>
__device__ void hashSymbolicRow(const Source& src, int row, int* keys, int* nnz) {
    for (int s = threadIdx.x; s < T; s += THREADS) keys[s] = EMPTY_KEY;
    __syncthreads();
    int fresh = 0;
    src.forEach(row, [&](int c, float) {
        bool f;
        hashSlot<T>(keys, c, &f);
        fresh += f;
    });
    int total;
    blockExclusiveScan(fresh, &total);
    if (threadIdx.x == 0) nnz[row] = total;
}

// bitonicSort sorts keys[0, n) ascending (n a power of two), carrying vals.
template <int THREADS>
__device__ void bitonicSort(int* keys, float* vals, int n) {
    for (int k = 2; k <= n; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < n; i += THREADS) {
                int partner = i ^ j;
                if (partner > i) {
                    int ki = keys[i], kp = keys[partner];
                    if ((ki > kp) == ((i & k) == 0)) {
                        keys[i] = kp, keys[partner] = ki;
                        float v = vals[i];
                        vals[i] = vals[partner], vals[partner] = v;
                    }
                }
            }
            __syncthreads();
        }
}

template <int T, int THREADS, class Source>
__device__ void hashNumericRow(const Source& src, int row, int* keys, float* vals, const int* outPtr, int* outCol,
                               float* outVal, int* count) {
    if (blockDim.x != THREADS) __trap();  // the compaction below counts on exactly THREADS threads
    for (int s = threadIdx.x; s < T; s += THREADS) keys[s] = EMPTY_KEY, vals[s] = 0.f;
    __syncthreads();
    src.forEach(row, [&](int c, float v) {
        bool f;
        atomicAdd(&vals[hashSlot<T>(keys, c, &f)], v);
    });
    __syncthreads();
    // Compact: every thread reads its slots into registers, the scan (which
    // synchronizes) hands out positions, and only then does anyone write.
    constexpr int PER = T / THREADS;
    int k[PER];
    float v[PER];
    int mine = 0;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        k[j] = keys[threadIdx.x + j * THREADS];
        v[j] = vals[threadIdx.x + j * THREADS];
        mine += k[j] != EMPTY_KEY;
    }
    int n;
    int at = blockExclusiveScan(mine, &n);
#pragma unroll
    for (int j = 0; j < PER; j++)
        if (k[j] != EMPTY_KEY) keys[at] = k[j], vals[at] = v[j], at++;
    int n2 = 1;
    while (n2 < n) n2 <<= 1;
    for (int s = n + threadIdx.x; s < n2; s += THREADS) keys[s] = MAX_KEY;
    __syncthreads();
    bitonicSort<THREADS>(keys, vals, n2);
    int pos0 = outPtr[row];
    for (int s = threadIdx.x; s < n; s += THREADS) outCol[pos0 + s] = keys[s], outVal[pos0 + s] = vals[s];
    if (count && threadIdx.x == 0) count[row] = n;
}

// One kernel per table size: a block of THREADS per row, rows taken from a
// bin's list. Dynamic shared memory: 4·T bytes (symbolic), 8·T (numeric).
#define HASH_SYMBOLIC_KERNEL(T, THREADS, SRC_PARAMS, SRC_INIT)                                                    \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                          \
        hash_symbolic_##T(const int* rowList, SRC_PARAMS, int* nnz) {                                             \
        extern __shared__ int table[];                                                                             \
        SRC_INIT;                                                                                                  \
        hashSymbolicRow<T, THREADS>(src, rowList[blockIdx.x], table, nnz);                                         \
    }
#define HASH_NUMERIC_KERNEL(T, THREADS, SRC_PARAMS, SRC_INIT)                                                     \
    extern "C" __global__ void __launch_bounds__(THREADS) hash_numeric_##T(                                        \
        const int* rowList, SRC_PARAMS, const int* outPtr, int* outCol, float* outVal, int* count) {               \
        extern __shared__ int table[];                                                                             \
        SRC_INIT;                                                                                                  \
        hashNumericRow<T, THREADS>(src, rowList[blockIdx.x], table, (float*)(table + T), outPtr, outCol, outVal,   \
                                   count);                                                                         \
    }
