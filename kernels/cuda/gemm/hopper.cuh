// Hopper building blocks shared by the wgmma kernels (gemm step 12 and the
// LFM2 experts' grouped GEMM): tensor maps, mbarriers, TMA copies, the
// producer/consumer ring of stages, shared-memory descriptors for 128-byte
// swizzled tiles, and the 64×256×16 wgmma.
// sm_90a only. Step 12's header comment explains how the pieces fit.
#pragma once
#include <cuda_bf16.h>
typedef __nv_bfloat16 bf16;

struct alignas(64) TensorMap { unsigned long long raw[16]; };


__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// aligned_smem is the kernel's dynamic shared memory as a T, its start rounded
// up to 1024 bytes: 128-byte swizzled tiles must start on a 1024-byte
// boundary, and the runtime promises less (the host asks for 1 KiB extra).
template <class T>
__device__ __forceinline__ T& aligned_smem() {
    extern __shared__ __align__(1024) unsigned char raw[];
    return *reinterpret_cast<T*>((reinterpret_cast<size_t>(raw) + 1023) & ~size_t(1023));
}

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

// The ring of STAGES shared-memory buffers between a producer thread, which
// fills them with TMA, and the consumer warpgroups, which multiply out of
// them. Stage kt % STAGES holds k-step kt; full[st] completes when its
// bytes have landed, empty[st] when every consumer thread is done with it.
// ring_init sets the barriers up (one thread; a __syncthreads must follow).
template <int STAGES>
__device__ __forceinline__ void ring_init(unsigned long long* full, unsigned long long* empty, unsigned consumerThreads) {
    for (int i = 0; i < STAGES; ++i) {
        bar_init(&full[i], 1);
        bar_init(&empty[i], consumerThreads);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// ring_produce: for each of the tiles k-steps, wait until its stage is
// free, announce its bytes on full[st], and call load(st, kt), which issues
// the TMA copies that complete on full[st]. One thread runs it.
template <int STAGES, class Load>
__device__ __forceinline__ void ring_produce(unsigned long long* full, unsigned long long* empty, int tiles, unsigned bytes, Load load) {
    for (int kt = 0; kt < tiles; ++kt) {
        int st = kt % STAGES;
        if (kt >= STAGES) bar_wait(&empty[st], ((kt / STAGES) - 1) & 1);
        bar_expect(&full[st], bytes);
        load(st, kt);
    }
}

// ring_consume: for each k-step, a consumer warpgroup waits for its stage,
// calls mma(st) (its wgmmas on that stage), and commits them. It keeps one
// k-step's wgmmas in flight: once the previous k-step's are done, that
// buffer goes back to the producer. It returns with every wgmma finished.
template <int STAGES, class Mma>
__device__ __forceinline__ void ring_consume(unsigned long long* full, unsigned long long* empty, int tiles, Mma mma) {
    for (int kt = 0; kt < tiles; ++kt) {
        int st = kt % STAGES;
        bar_wait(&full[st], (kt / STAGES) & 1);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        mma(st);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        if (kt > 0) bar_arrive(&empty[(kt - 1) % STAGES]);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// wgmma_64x256 accumulates A (64×16, K-major, descriptor da) times B (16×256,
// descriptor db) into d. TRANS_B is wgmma's B-transpose bit: 0 for a K-major
// B tile (rows of W in C = A·Wᵀ), 1 for an N-major one (rows of B in C = A·B).
template <int TRANS_B>
__device__ __forceinline__ void wgmma_64x256(float* d, unsigned long long da, unsigned long long db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, %131;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(1), "n"(TRANS_B));
}
