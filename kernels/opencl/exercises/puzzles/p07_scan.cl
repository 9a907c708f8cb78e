// Puzzle 7 (puzzles/scan), reference solution: out[i] = x[0] + ... + x[i]
// (ints), one work-group of BLOCK walking x in chunks of BLOCK.
//
// Idea: a chunk is scanned in local memory by Hillis and Steele's steps:
// at step d = 1, 2, 4, ... every item adds the value d places to its left.
// Each step reads before it writes, so a barrier separates the read from
// the write and the write from the next read. The chunk's scan plus the
// running total of the chunks before it (carry) is the prefix sum; the
// last item then adds the chunk's total to carry.
// Traffic: x read once, out written once: 8 bytes per element.
// Cost: log2(BLOCK) steps of two barriers per chunk, and one work-group
// for the whole array: a full GPU scan scans groups in parallel, then adds
// each group's carry in a second pass.

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void prefix_sum(const __global int* restrict x, const int n, __global int* restrict out)
{
    __local int buf[BLOCK];
    __local int carry;  // the sum of the chunks before this one
    const int t = get_local_id(0);
    if (t == 0) carry = 0;
    for (int base = 0; base < n; base += BLOCK) {
        const int i = base + t;
        buf[t] = i < n ? x[i] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int offset = 1; offset < BLOCK; offset <<= 1) {
            const int left = t >= offset ? buf[t - offset] : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            buf[t] += left;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (i < n) STORE(out, i, carry + buf[t]);
        barrier(CLK_LOCAL_MEM_FENCE);  // every work-item has read carry
        if (t == BLOCK - 1) carry += buf[t];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
