// Not a step of the ladder: a probe of the floor under every CSR SpMV.
//
// Whatever its schedule, a CSR SpMV reads each column index and then the x it
// names: one 4-byte read of x per entry, at a place the matrix decides. When
// the columns of neighbouring entries are far apart (uniform random, R-MAT),
// each of those reads costs a whole 32-byte sector from L2, not 4 bytes. This
// kernel does only that part: it streams the column indices (coalesced, 4 per
// thread, as step 03 does) and sums the x values they name; one float per
// warp goes out, so the compiler cannot drop the reads. Its time is a floor
// for any kernel that reads x in CSR order, values and row pointers aside.
#define THREADS 256
#define PER_THREAD 4

extern "C" __global__ void __launch_bounds__(THREADS)
    spmv_gather_probe(int nnz, const int* __restrict__ colIdx, const float* __restrict__ x, float* __restrict__ out) {
    int base = blockIdx.x * THREADS * PER_THREAD + threadIdx.x;
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < PER_THREAD; k++) {
        int p = base + k * THREADS;
        if (p < nnz) sum += x[colIdx[p]];
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (threadIdx.x % 32 == 0) out[(blockIdx.x * THREADS + threadIdx.x) / 32] = sum;
}
