// banks.cl: __local-memory bank conflicts and the padding that removes them.
//
// Claim (seeds kmeans-gpu-progress-log.md, lfm2-8b-gpu-inference-devlog.md):
// local (shared) memory has 32 banks, each serving one 4-byte word per cycle;
// when the work-items of a warp read column k of a row-major tile whose row
// width is a multiple of 32 words, they all hit one bank and the access is
// replayed 32 times; padding each row breaks the conflict.
//
// Measured: each 32-work-item group owns a tile of 32 rows of ROW = S + P
// floats. Lane i reads word i*ROW + k (row i, column k = r mod S), R times,
// through a volatile pointer so that every read happens, and writes the sum.
// Word w lives in bank w mod 32, so one group's read is a gcd(ROW, 32)-way
// conflict ("ways", computed in Go): S=32 P=0 is 32-way, S=32 P=1 (ROW=33)
// is conflict-free, S=32 P=4 (ROW=36) 4-way, S=16 P=4 (ROW=20) 4-way.
//
// Why: a bank delivers one word per cycle, so an n-way conflict takes n cycles
// per read on a GPU. PoCL's CPU device has no banks: __local memory is cached
// host memory, so there the stride only changes cache behaviour (how many
// cache lines one group's reads touch, and whether the loop vectorizes), and
// "ways" should not predict the time.
#ifndef S
#define S 1
#endif
#ifndef P
#define P 0
#endif
#define ROW (S + P)
#define WARPS 8 /* 32-work-item groups per work-group: 256 work-items */

__kernel __attribute__((reqd_work_group_size(WARPS * 32, 1, 1)))
void banks(__global const float* restrict tile_in, __global float* restrict out, int reps)
{
    __local float tile[WARPS * 32 * ROW];
    const int l = get_local_id(0), lane = l & 31, w = l >> 5;
    for (int i = l; i < WARPS * 32 * ROW; i += WARPS * 32)
        tile[i] = tile_in[i % (32 * ROW)];
    barrier(CLK_LOCAL_MEM_FENCE);
    volatile __local const float* t = tile + w * 32 * ROW + lane * ROW;
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r)
        acc += t[r & (S - 1)];
    out[get_global_id(0)] = acc;
}
