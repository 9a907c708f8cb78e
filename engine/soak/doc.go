// Package soak is a test, and only a test: it runs the main path of each
// engine on a CUDA device over and over, and checks that nothing leaks.
// Each of
//
//	gemm     a mid-ladder CUDA step (05_2d_register_tiling) at 1024³:
//	         upload, launch, download, free, as gemm.CUDAGEMM does
//	spgemm   the last step of the SpGEMM ladder, C = A² on an R-MAT matrix
//	         (scale 16, edge factor 8), C handed back to the pool
//	kmeans   one Lloyd iteration (assignment and update) of the CUDA
//	         k-means, 100 000 points of 256 dimensions, K = 25
//	lfm2     a prefill and greedy decode steps of the CUDA engine on the MoE
//	         fixture (datasets/testdata/lfm2/moe), in f32
//
// runs a few times to warm up (compiling, filling caches and pools), then
// for 60 s or 1000 times, whichever comes first. The device memory in use
// (cuMemGetInfo: total − free) must not grow by more than 16 MiB from after
// the warm-up to the end, nor the host's resident set (VmRSS of
// /proc/self/status) by more than 64 MiB; the test logs both figures at
// the start and the end, their growth and the iterations.
//
// The soak takes minutes, so it runs only when GPULAB_SOAK=1: the regular
// GPU run (.gpu/run.sh) stays short and skips it, saying so, as it skips
// it where there is no CUDA device. On the GPU machine, with a bundle of
// make gpu-bundle:
//
//	GPULAB_SOAK=1 ONLY=engine-soak .gpu/run.sh -test.run TestSoak
//
// The package imports every engine it soaks; nothing imports it, so it
// adds no cycle.
package soak
