// fastmath: precision traded for speed in transcendental functions.
//
// The guide claims (for OpenCL): "Use the -cl-fast-relaxed-math build option,
// which enables many aggressive compiler optimizations for floating-point
// arithmetic" and "Use native_* [...] math built-ins, which have lower
// precision but are faster than their un-prefixed variants." CUDA's
// equivalents are the --use_fast_math compiler option and the __expf/__sinf
// intrinsics.
//
// This kernel measures both: each thread sums ITERS terms
// exp(0.1 t) * (1 + sin(t)) for t = x + k*STEP, t running over [0, ~33), i.e.
// several periods of sin, so that the argument reduction matters. All terms
// are >= 0, so the float32 sum does not cancel and its error shows the
// functions' error. It is compute-bound: 8 bytes of memory per ITERS
// exp+sin pairs. Built three ways by the host: precise (expf, sinf: 2 ulp),
// fast flags (the same source compiled by NVRTC with --use_fast_math, which
// the CUDA guide says maps expf and sinf to __expf and __sinf, flushes
// denormals to zero and approximates divisions and square roots) and
// intrinsic (-DUSE_NATIVE: __expf, __sinf written out).
//
// Why: precise sinf needs a range reduction (with a slow path for large
// arguments) and a polynomial, expf a reduction by ln 2 and a polynomial:
// tens of instructions on the FMA pipes. __sinf and __expf are one or two
// instructions on the special function unit (MUFU.SIN, MUFU.EX2), whose
// error is ~1e-6 absolute near 0 and grows with |t| for __sinf (the CUDA
// guide bounds it for |t| <= pi only). If the flag maps the calls, fast flags
// and intrinsics run the same instructions: about the same speed and the
// same error. If the fast-flags build runs at the precise build's speed with
// exactly its error, the precise instructions still ran: the module's SASS
// (cuobjdump -sass: MUFU.SIN or not) says so. That happened under NVRTC
// 13.0, whose CUBIN dropped the flag's approximations; engine/cuda's
// fastMathPtxas works around it.
// (The OpenCL twin explains PoCL's CPU device.)
#ifndef ITERS
#define ITERS 32
#endif
#define STEP (32.0f / ITERS)

#ifdef USE_NATIVE
#define EXP __expf
#define SIN __sinf
#else
#define EXP expf
#define SIN sinf
#endif

extern "C" __global__ void fastmath(int n, const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x0 = x[i], acc = 0.0f;
    for (int k = 0; k < ITERS; k++) {
        float t = fmaf((float)k, STEP, x0);  // explicit, so the flags cannot change t
        float u = 0.1f * t;
        acc += EXP(u) * (1.0f + SIN(t));
    }
    y[i] = acc;
}
