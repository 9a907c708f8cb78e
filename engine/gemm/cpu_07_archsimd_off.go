//go:build !(goexperiment.simd && amd64)

package gemm

// Step 07 (cpu_07_archsimd.go) needs GOEXPERIMENT=simd on amd64; without it
// the CPU ladder ends at step 06.
var optionalCPUSteps []cpuStep
