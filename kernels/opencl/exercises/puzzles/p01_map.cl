// Puzzle 1 (puzzles/map), reference solution: out[i] = x[i] + 10, with
// exactly one work-item per element.
//
// Idea: a kernel runs once per work-item, and get_global_id(0) picks its
// element. The check launches n work-items in work-groups whose size
// divides n (7, 150, 256: not always 256), so no work-item is left over and
// none needs a guard.
// Traffic: x read once, out written once: 8 bytes per element.
// Cost: none to save: a map runs at the speed of memory.
//
// STORE(p, i, v) is the check's store, a -D define: p[i] = v, or, in the
// run that draws the thread map of a wrong result, the id of the work-item.

__kernel void add_ten(const __global float* restrict x, __global float* restrict out)
{
    const int i = get_global_id(0);
    STORE(out, i, x[i] + 10.0f);
}
