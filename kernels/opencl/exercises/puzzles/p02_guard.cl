// Puzzle 2 (puzzles/guard), reference solution: out[i] = a[i] + b[i] with
// more work-items than elements.
//
// Idea: work-groups have BLOCK (256) work-items, a -D define, and the
// NDRange has ceil(n / BLOCK) of them, so the last group's work-items past
// n have no element: they must neither read nor write. One comparison,
// i < n, is the guard; for n = 0 one group still runs, and none of its
// work-items stores.
// Traffic: a and b read once, out written once: 12 bytes per element.
// Cost: the idle work-items of the last group, nothing at any real n.

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void vector_add(const __global float* restrict a, const __global float* restrict b, const int n,
                __global float* restrict out)
{
    const int i = get_global_id(0);
    if (i < n) STORE(out, i, a[i] + b[i]);
}
