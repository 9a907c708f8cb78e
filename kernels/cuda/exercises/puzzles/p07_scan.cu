// Puzzle 7 (puzzles/scan), reference solution: out[i] = x[0] + ... + x[i]
// (ints), one block of BLOCK threads walking x in chunks of BLOCK.
//
// Idea: a chunk is scanned in shared memory by Hillis and Steele's steps:
// at step d = 1, 2, 4, ... every item adds the value d places to its left.
// Each step reads before it writes, so a barrier separates the read from
// the write and the write from the next read. The chunk's scan plus the
// running total of the chunks before it (carry) is the prefix sum; the
// last item then adds the chunk's total to carry.
// Traffic: x read once, out written once: 8 bytes per element.
// Cost: log2(BLOCK) steps of two barriers per chunk, and one block for the
// whole array: a full GPU scan scans blocks in parallel, then adds each
// block's carry in a second pass.

extern "C" __global__ void prefix_sum(const int* __restrict__ x, int n, int* __restrict__ out) {
    __shared__ int buf[BLOCK];
    __shared__ int carry;  // the sum of the chunks before this one
    const int t = threadIdx.x;
    if (t == 0) carry = 0;
    for (int base = 0; base < n; base += BLOCK) {
        const int i = base + t;
        buf[t] = i < n ? x[i] : 0;
        __syncthreads();
        for (int offset = 1; offset < BLOCK; offset <<= 1) {
            const int left = t >= offset ? buf[t - offset] : 0;
            __syncthreads();
            buf[t] += left;
            __syncthreads();
        }
        if (i < n) STORE(out, i, carry + buf[t]);
        __syncthreads();  // every thread has read carry
        if (t == BLOCK - 1) carry += buf[t];
        __syncthreads();
    }
}
