// Puzzle 4's contrast: the same stencil without local memory.
//
// Idea: each work-item loads its three inputs from global memory; the
// cache catches most of the repeats, which is what the tile makes sure of.
// Traffic: three loads per element through the cache, out written once.
// Cost: the repeated loads; on a GPU, the notebook times it next to yours.

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void stencil3(const __global float* restrict x, const int n, __global float* restrict out)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float left = i > 0 ? x[i - 1] : 0.0f, right = i + 1 < n ? x[i + 1] : 0.0f;
    STORE(out, i, 0.25f * left + 0.5f * x[i] + 0.25f * right);
}
