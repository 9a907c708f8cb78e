// Puzzle 4 (puzzles/stencil), reference solution: out[i] = x[i-1] / 4 +
// x[i] / 2 + x[i+1] / 4, with zeros outside x, through local memory.
//
// Idea: each input is needed by three work-items. The work-group loads its
// BLOCK elements once into a __local tile, with one more on each side (the
// halo, which belongs to the neighbouring groups; zero past the ends of
// x), waits at a barrier until the tile is whole, and then every
// work-item reads its three values from the tile.
// Traffic: x read once (plus two halo values per group), out written once:
// 8 bytes per element, where three loads per element read 16 through the
// cache.
// Cost: one barrier per group, and the halo's two extra loads.

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void stencil3(const __global float* restrict x, const int n, __global float* restrict out)
{
    __local float tile[BLOCK + 2];  // tile[t + 1] = x[first + t]
    const int t = get_local_id(0), first = get_group_id(0) * BLOCK, i = first + t;
    tile[t + 1] = i < n ? x[i] : 0.0f;
    if (t == 0) tile[0] = first > 0 ? x[first - 1] : 0.0f;
    if (t == BLOCK - 1) tile[BLOCK + 1] = i + 1 < n ? x[i + 1] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) STORE(out, i, 0.25f * tile[t] + 0.5f * tile[t + 1] + 0.25f * tile[t + 2]);
}
