// Puzzle 10 (puzzles/histogram), reference solution: work-group b counts
// the values of its chunk, values[b * CHUNK .. (b + 1) * CHUNK) below n,
// into hist[b][0 .. BINS), with atomics in local memory.
//
// Idea: work-items that see the same value must not lose each other's
// increments: atomic_inc makes each read-add-write one indivisible step.
// Counting into a __local histogram first (zeroed, then a barrier) keeps
// the contention within the group and in fast memory; after a second
// barrier the group stores its BINS counts, zeros included.
// Traffic: the values read once: 4 bytes each, and BINS counts per group.
// Cost: atomics serialize when many work-items hit one bin (the check
// makes half the values fall into bin 7).

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void histogram(const __global int* restrict values, const int n, __global int* restrict hist)
{
    __local int counts[BINS];
    const int t = get_local_id(0), b0 = get_group_id(0), first = b0 * CHUNK, end = min(first + CHUNK, n);
    for (int b = t; b < BINS; b += BLOCK) counts[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = first + t; i < end; i += BLOCK) atomic_inc(&counts[values[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = t; b < BINS; b += BLOCK) STORE(hist, b0 * BINS + b, counts[b]);
}
