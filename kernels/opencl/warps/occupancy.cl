// occupancy.cl: does occupancy (resident warps per compute unit) buy bandwidth?
//
// Claim (opencl-powervr-rogue-guide.txt, "residency slots"): a multiprocessor
// hides memory latency by switching to another resident warp while one waits
// on memory; the fewer arithmetic instructions per memory instruction, the
// more resident warps it needs. Private memory (registers) and __local memory
// per work-group limit how many warps can be resident.
//
// Measured: a memory-bound streaming kernel. Each of T = n/ACC work-items
// loads ACC elements in[g], in[g+T], ..., in[g+(ACC-1)T] (all in flight
// before the first add), sums them in order and writes one float. ACC
// (-DACC=1..32) raises the private memory per work-item; the __local scratch
// argument (clSetKernelArg with a size and no pointer: opencl.Local) raises
// the local memory per work-group without being touched. OpenCL has no
// occupancy query, so the Go side records the kernel's local and private
// memory (clGetKernelWorkGroupInfo) but no occupancy.
//
// Why: latency hiding needs bytes in flight = bandwidth x latency, from many
// warps or from many independent loads per work-item. PoCL's CPU device has no
// residency slots: a work-group runs as a loop on one core and __local memory
// is ordinary cached memory, so there ACC only changes the access pattern
// (ACC streams per work-item) and the local size nothing but the allocation.
#ifndef ACC
#define ACC 1
#endif

__kernel void stream_acc(__global const float* restrict in, __global float* restrict out, int threads,
                         __local float* scratch)
{
    const size_t g = get_global_id(0);
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
