// Step 12 — Hopper: wgmma fed by TMA, with a producer warpgroup (sm_90a).
//
// Idea: step 11's mma.sync makes every warp load its fragments from shared
// memory into registers before each multiply. Hopper's wgmma.mma_async lets a
// warpgroup (4 warps, 128 threads) multiply operands that stay in shared
// memory, asynchronously, 64×256×16 per instruction. The tensor memory
// accelerator (TMA) fills shared memory with whole tiles from one thread's
// instruction, and an mbarrier tells the consumers when the bytes landed.
// So the block splits into roles (warp specialization):
// - warpgroup 0, the producer: one thread issues TMA copies of the A and B
//   tiles of k-step t into a ring of STAGES buffers;
// - warpgroups 1 and 2, the consumers: each computes 64 rows × 256 columns of
//   the block's 128×256 tile of C, 128 FP32 accumulators per thread, waiting
//   on each buffer's "full" barrier and releasing it through its "empty" one
//   as soon as the wgmmas that read it have finished (one k-step in flight).
// A is K-major (row-major M×K); B is row-major K×N, so N-major, which BF16
// wgmma reads directly with its B-transpose bit: TMA loads B in 64-column
// boxes. TMA needs 16-byte aligned rows, so when K (or N) is not a multiple
// of 8, A (or B) is first copied into a zero-padded buffer by pad_cols, in
// the timed run.
// Tiles are stored with TMA's 128-byte swizzle, which the shared-memory
// descriptors given to wgmma describe, so reads are bank-conflict free.
// Traffic: global as step 11 at 2 bytes per element (plus the padding copies
// for unaligned shapes). Shared: none through registers for A and B.
// Cost: sm_90a only; 193 KiB of shared memory per block (4 stages), so one
// block per SM; every piece (tensor maps, swizzle, descriptors, barrier
// phases) must agree exactly, or the result is silently wrong.
#include <cuda_bf16.h>
typedef __nv_bfloat16 bf16;

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define CONSUMERS 2
#define THREADS (128 * (CONSUMERS + 1))

struct alignas(64) TensorMap { unsigned long long raw[16]; };

struct Smem {
    alignas(1024) bf16 a[STAGES][BM * BK];
    alignas(1024) bf16 b[STAGES][BN * BK];
    unsigned long long full[STAGES], empty[STAGES];
};

__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// A wgmma shared-memory descriptor for a K-major tile with 128-byte swizzle:
// start address, leading byte offset 16, stride 1024 bytes (8 rows of 128 B).
__device__ __forceinline__ unsigned long long desc(const bf16* p) {
    unsigned long long a = smem(p);
    return ((a & 0x3FFFF) >> 4) | ((16ull >> 4) << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// The descriptor of a MN-major tile (N contiguous): 64-element (128-byte)
// swizzled columns of 64 K-rows each, 8 KiB apart (LBO), and 8-row groups
// 1024 bytes apart along K (SBO). wgmma reads it with its B-transpose bit set.
__device__ __forceinline__ unsigned long long desc_mn(const bf16* p) {
    unsigned long long a = smem(p);
    return ((a & 0x3FFFF) >> 4) | ((8192ull >> 4) << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void bar_init(unsigned long long* b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem(b)), "r"(count));
}
__device__ __forceinline__ void bar_wait(unsigned long long* b, unsigned phase) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(smem(b)), "r"(phase) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned long long* b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem(b)) : "memory");
}
__device__ __forceinline__ void bar_expect(unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem(b)), "r"(bytes) : "memory");
}
// tma_load copies the box at (column c, row r) of the tensor map into dst.
__device__ __forceinline__ void tma_load(bf16* dst, const TensorMap* tm, int c, int r, unsigned long long* b) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
                 ::"r"(smem(dst)), "l"(tm), "r"(smem(b)), "r"(c), "r"(r) : "memory");
}

// wgmma_64x256 accumulates A (64×16, K-major, descriptor da) times B (16×256,
// N-major, db: the last 1 is the B-transpose bit) into d.
__device__ __forceinline__ void wgmma_64x256(float* d, unsigned long long da, unsigned long long db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(1));
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
wgmma_bf16(int M, int N, int K, const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB, float* __restrict__ C) {
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem& s = *reinterpret_cast<Smem*>((reinterpret_cast<size_t>(raw) + 1023) & ~size_t(1023));
    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int tiles = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int i = 0; i < STAGES; ++i) {
            bar_init(&s.full[i], 1);
            bar_init(&s.empty[i], CONSUMERS * 128);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (t == 0) {
            for (int kt = 0; kt < tiles; ++kt) {
                int st = kt % STAGES;
                if (kt >= STAGES) bar_wait(&s.empty[st], ((kt / STAGES) - 1) & 1);
                bar_expect(&s.full[st], (BM + BN) * BK * sizeof(bf16));
                tma_load(s.a[st], &tmA, kt * BK, m0, &s.full[st]);
#pragma unroll
                for (int j = 0; j < BN / 64; ++j)  // B: four 64-column boxes of 64 k-rows
                    tma_load(&s.b[st][j * 64 * BK], &tmB, n0 + 64 * j, kt * BK, &s.full[st]);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    const int rowOff = (wg - 1) * 64;
    for (int kt = 0; kt < tiles; ++kt) {
        int st = kt % STAGES;
        bar_wait(&s.full[st], (kt / STAGES) & 1);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int k = 0; k < BK / 16; ++k)
            wgmma_64x256(d, desc(&s.a[st][rowOff * BK + k * 16]), desc_mn(&s.b[st][k * 16 * 64]));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        // Keep this k-step's wgmmas in flight; once the previous k-step's
        // are done, its buffer goes back to the producer.
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        if (kt > 0) bar_arrive(&s.empty[(kt - 1) % STAGES]);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    // Accumulator layout of m64nNk16: thread t of the warpgroup holds, for each
    // 8-column chunk c, rows 16·warp + lane/4 (+8) and columns 8c + 2·(lane%4) (+1).
    const int w = t / 32, l = t % 32;
    const int r0 = m0 + rowOff + 16 * w + l / 4;
#pragma unroll
    for (int c = 0; c < BN / 8; ++c) {
        int col = n0 + 8 * c + 2 * (l % 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int row = r0 + 8 * h;
            if (row < M) {
                if (col < N) C[(size_t)row * N + col] = d[4 * c + 2 * h];
                if (col + 1 < N) C[(size_t)row * N + col + 1] = d[4 * c + 2 * h + 1];
            }
        }
    }
}

// pad_cols copies in (rows × cols) into out (rows × ldOut) with zeros in the extra columns.
extern "C" __global__ void pad_cols(int rows, int cols, int ldOut, const bf16* __restrict__ in, bf16* __restrict__ out) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
    if (r < rows && c < ldOut) out[(size_t)r * ldOut + c] = c < cols ? in[(size_t)r * cols + c] : __float2bfloat16(0.f);
}
