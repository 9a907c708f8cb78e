// banks.cu: shared-memory bank conflicts and the padding that removes them.
//
// Claim (seeds kmeans-gpu-progress-log.md, lfm2-8b-gpu-inference-devlog.md):
// shared memory has 32 banks, each serving one 4-byte word per cycle; when
// the threads of a warp read column k of a row-major tile (As[threadIdx.x][k])
// whose row width is a multiple of 32 words, every thread hits the same bank
// and the access is replayed 32 times; padding each row breaks the conflict
// (the devlog settled on +4 for rows of 16 floats).
//
// Measured: each warp owns a tile of 32 rows of ROW = S + P floats. Lane i reads
// word i*ROW + k (row i, column k = r mod S), R times (the loop count), through
// a volatile pointer so that every read happens, and writes the sum so that
// the compiler cannot drop it. Word w lives in bank w mod 32, so one warp's
// read is an n-way conflict with n = gcd(ROW, 32) (the Go side computes it
// from the bank formula: "ways"):
//   S=32 P=0: ROW=32, all 32 lanes in bank k: 32-way, 32 replays;
//   S=32 P=1: ROW=33, lane i in bank (i+k) mod 32: 1-way, no conflict;
//   S=32 P=4: ROW=36, gcd 4: 4-way. +1 (any odd row) is the padding that
//   removes the conflict completely; +4 only helps rows of 28 mod 32 words.
//   S=16 P=4 (the devlog's case) is ROW=20: 4-way, not conflict-free.
// Shared traffic dominates: the tile is filled once per block and read R times.
//
// Why: a bank delivers one 4-byte word per cycle, so an n-way conflict takes n
// cycles per warp-wide read; the time per variant should follow "ways".
#ifndef S
#define S 1
#endif
#ifndef P
#define P 0
#endif
#define ROW (S + P)
#define WARPS 8 /* 32-lane groups per block: the block is 256 threads */

extern "C" __global__ void __launch_bounds__(WARPS * 32)
banks(const float* __restrict__ tile_in, float* __restrict__ out, int reps)
{
    __shared__ float tile[WARPS * 32 * ROW];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int i = threadIdx.x; i < WARPS * 32 * ROW; i += blockDim.x)
        tile[i] = tile_in[i % (32 * ROW)];
    __syncthreads();
    volatile const float* t = tile + w * 32 * ROW + lane * ROW;
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r)
        acc += t[r & (S - 1)];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
