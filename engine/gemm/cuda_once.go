package gemm

import (
	"fmt"
	"time"

	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// ExerciseSourceName is the file name an exercise's own kernel is compiled
// under: NVRTC's diagnostics for it read "exercise.cu:LINE: error: ...",
// with the lines of the source as given.
const ExerciseSourceName = "exercise.cu"

// CUDAGEMM computes C = A·B once on ctx with one FP32 kernel step of the
// CUDA ladder (01_naive to 09_warp_tiling) and returns C and the kernel's
// device time. Source, if set, is compiled instead of the step's file, with
// the step's launch geometry and entry point (sgemm): an exercise's own
// kernel. It allocates, uploads and frees its own buffers: for exercises
// and notebooks, not for timing loops.
func CUDAGEMM(ctx *cuda.Context, step, source string, s Shape, a, b []float32) ([]float32, time.Duration, error) {
	if ctx == nil {
		return nil, 0, fmt.Errorf("gemm: CUDA step %s: no context", step)
	}
	if err := s.Validate(); err != nil {
		return nil, 0, err
	}
	if len(a) != s.M*s.K || len(b) != s.K*s.N {
		return nil, 0, fmt.Errorf("gemm: shape %s: A has %d elements and B %d, want %d and %d", s, len(a), len(b), s.M*s.K, s.K*s.N)
	}
	st, err := cudaFP32Step(step)
	if err != nil {
		return nil, 0, err
	}
	k := st.cudaKernel(s)
	src := cuda.Source{Name: ExerciseSourceName, Code: source, Headers: kernels.CUDAFamily.Headers(), Options: k.Options}
	if source == "" {
		src.Name = k.File + ".cu"
		if src.Code, err = kernels.CUDA(k.File); err != nil {
			return nil, 0, err
		}
	}
	mod, err := ctx.Compile(src)
	if err != nil {
		return nil, 0, err
	}
	fn, err := mod.Function(k.Entry)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w (the kernel must be %s)", src.Name, err, CUDADecl(k.Entry))
	}
	da, err := cuda.Upload(ctx, a)
	if err != nil {
		return nil, 0, err
	}
	defer da.Free()
	db, err := cuda.Upload(ctx, b)
	if err != nil {
		return nil, 0, err
	}
	defer db.Free()
	dc, err := cuda.AllocSlice[float32](ctx, s.M*s.N)
	if err != nil {
		return nil, 0, err
	}
	defer dc.Free()
	if err := dc.Memset(0xff, nil); err != nil { // NaN: an element the kernel skips cannot pass
		return nil, 0, err
	}
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		return nil, 0, err
	}
	defer timer.Destroy()
	d, err := timer.Time(func() error { return fn.Launch(k.Launch, s.M, s.N, s.K, da, db, dc) })
	if err != nil {
		return nil, 0, err
	}
	c, err := cuda.Download[float32](dc, s.M*s.N)
	return c, d, err
}

// CUDADecl is the declaration of a CUDA GEMM step's kernel.
func CUDADecl(kernel string) string {
	return `extern "C" __global__ void ` + kernel + `(int M, int N, int K, const float* A, const float* B, float* C)`
}

// OpenCLKernel is the __kernel function every OpenCL step's file defines,
// and OpenCLDecl its declaration.
const (
	OpenCLKernel = "gemm"
	OpenCLDecl   = "__kernel void gemm(int M, int N, int K, const __global float* A, const __global float* B, __global float* C)"
)
