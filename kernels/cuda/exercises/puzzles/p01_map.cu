// Puzzle 1 (puzzles/map), reference solution: out[i] = x[i] + 10, with
// exactly one thread per element.
//
// Idea: a kernel runs once per thread, and a thread's global index,
// blockIdx.x * blockDim.x + threadIdx.x, picks its element. The check
// launches n threads in blocks whose size divides n (7 threads, 150, 256:
// not always 256), so no thread is left over and none needs a guard.
// Traffic: x read once, out written once: 8 bytes per element.
// Cost: none to save: a map runs at the speed of memory.
//
// STORE(p, i, v) is the check's store, a -D define: p[i] = v, or, in the
// run that draws the thread map of a wrong result, the id of the thread.

extern "C" __global__ void add_ten(const float* __restrict__ x, float* __restrict__ out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    STORE(out, i, x[i] + 10.f);
}
