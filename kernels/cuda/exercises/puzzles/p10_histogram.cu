// Puzzle 10 (puzzles/histogram), reference solution: block b counts the
// values of its chunk, values[b * CHUNK .. (b + 1) * CHUNK) below n, into
// hist[b][0 .. BINS), with atomics in shared memory.
//
// Idea: threads that see the same value must not lose each other's
// increments: atomicAdd makes each read-add-write one indivisible step.
// Counting into a shared histogram first (zeroed, then a barrier) keeps
// the contention within the block and in fast memory; after a second
// barrier the block stores its BINS counts, zeros included.
// Traffic: the values read once: 4 bytes each, and BINS counts per block.
// Cost: atomics serialize when many threads hit one bin (the check makes
// half the values fall into bin 7).

extern "C" __global__ void histogram(const int* __restrict__ values, int n, int* __restrict__ hist) {
    __shared__ int counts[BINS];
    const int t = threadIdx.x, first = blockIdx.x * CHUNK, end = min(first + CHUNK, n);
    for (int b = t; b < BINS; b += BLOCK) counts[b] = 0;
    __syncthreads();
    for (int i = first + t; i < end; i += BLOCK) atomicAdd(&counts[values[i]], 1);
    __syncthreads();
    for (int b = t; b < BINS; b += BLOCK) STORE(hist, blockIdx.x * BINS + b, counts[b]);
}
