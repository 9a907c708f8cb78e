// occupancy.cu: does occupancy (resident warps per SM) buy bandwidth?
//
// Claim (opencl-powervr-rogue-guide.txt, "residency slots"): a multiprocessor
// hides memory latency by switching to another resident warp while one waits
// on memory; the fewer arithmetic instructions per memory instruction, the
// more resident warps it needs (about 10 warps for a 500-cycle latency at an
// intensity of 50). Private memory (registers) and local memory (shared) per
// work-group limit how many warps can be resident.
//
// Measured: a memory-bound streaming kernel. Each of T = n/ACC threads loads
// ACC elements in[g], in[g+T], ..., in[g+(ACC-1)T] (coalesced across a warp,
// all ACC loads in flight before the first add), sums them in order and writes
// one float. ACC (-DACC=1..32) raises the registers per thread (ACC values
// live at once); the dynamic shared memory of each launch (SMEM bytes, never
// touched: allocating it is enough to take an SM's capacity) lowers the blocks
// that fit on an SM. The Go side records FuncNumRegs, the smem, the
// blocks per SM from cuOccupancyMaxActiveBlocksPerMultiprocessor and
// occupancy = blocks_per_sm * 256 / MaxThreadsPerSM; the notebook plots GB/s
// against it.
//
// Why: latency hiding needs bytes in flight = bandwidth x latency. They come
// either from many warps (occupancy) or from many independent loads per
// thread (ACC): a kernel with ACC=8 at 25% occupancy can match ACC=1 at 100%.
#ifndef ACC
#define ACC 1
#endif

extern "C" __global__ void stream_acc(const float* __restrict__ in, float* __restrict__ out, int threads)
{
    const size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float v[ACC];
#pragma unroll
    for (int j = 0; j < ACC; ++j)
        v[j] = in[g + (size_t)j * threads];
    float s = v[0];
#pragma unroll
    for (int j = 1; j < ACC; ++j)
        s += v[j];
    out[g] = s;
}
