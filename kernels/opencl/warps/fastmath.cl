// fastmath: precision traded for speed in transcendental functions.
//
// The guide claims: "Use the -cl-fast-relaxed-math build option, which enables
// many aggressive compiler optimizations for floating-point arithmetic" and
// "Use native_* and half_* math built-ins, which have lower precision but are
// faster than their un-prefixed variants."
//
// This kernel measures both: each work-item sums ITERS terms
// exp(0.1 t) * (1 + sin(t)) for t = x + k*STEP, t running over [0, ~33), i.e.
// several periods of sin, so that the argument reduction matters. All
// terms are >= 0, so the float32 sum does not cancel and its error shows the
// functions' error. It is compute-bound: 8 bytes of memory per ITERS
// exp+sin pairs. Built three ways by the host: precise (exp, sin: the OpenCL
// spec bounds them to 3 and 4 ulp), fast flags (the same source with
// -cl-fast-relaxed-math: the compiler may reassociate, contract, assume no
// NaN/Inf and pick faster library variants) and native (-DUSE_NATIVE:
// native_exp, native_sin, whose precision is implementation-defined).
//
// Why: precise sin needs a careful range reduction and a polynomial long
// enough for 4 ulp; precise exp the same for its reduction by ln 2. On NVIDIA
// native_* map to the special function unit (MUFU.EX2, MUFU.SIN: a few
// instructions instead of tens, with errors ~1e-6 absolute near 0 that grow
// with |t| for sin). On PoCL's CPU device native_* and the fast flags may
// select cheaper vectorized library routines, or change nothing at all: the
// measured speedup and error say which.
#ifndef ITERS
#define ITERS 32
#endif
#define STEP (32.0f / ITERS)

#ifdef USE_NATIVE
#define EXP native_exp
#define SIN native_sin
#else
#define EXP exp
#define SIN sin
#endif

__kernel void fastmath(int n, __global const float* restrict x, __global float* restrict y) {
    int i = get_global_id(0);
    if (i >= n) return;
    float x0 = x[i], acc = 0.0f;
    for (int k = 0; k < ITERS; k++) {
        float t = fma((float)k, STEP, x0);  // explicit, so the flags cannot change t
        float u = 0.1f * t;
        acc += EXP(u) * (1.0f + SIN(t));
    }
    y[i] = acc;
}
