// Step 10 — autotuned: step 09's kernel with parameters searched per device
// and shape.
//
// Idea: BM, BN, BK, WM and WN trade registers and shared memory against reuse
// and occupancy, and the best trade depends on the GPU and on the shape. So we
// do not guess: engine/gemm/autotune.go compiles this file with each candidate
// set of -D defines through NVRTC, times it on the actual problem, keeps the
// fastest, and caches the choice per device and shape in
// <user cache dir>/gpulab/gemm-autotune.json, so the search runs once.
// Traffic and cost: those of step 09 at the chosen parameters; the search
// itself costs one compile and a few runs per candidate, the first time.
#include "gemm/09_warp_tiling.cu"
