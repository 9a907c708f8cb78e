package exercise

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gpulab/engine"
	"gpulab/engine/gemm"
	"gpulab/kernels"
)

// The GEMM exercises are steps of notebook 01's ladders, in OpenCL C or in
// CUDA: the reference solution is the ladder's own kernel, checked with its
// launch geometry, and the student's kernel is timed next to the ladder's
// neighbouring steps.
func init() {
	register(Exercise{
		Name: "gemm/tiled",
		Doc:  "C = A·B with tiles of A and B in __local / shared memory (OpenCL step 02, CUDA step 03)",
		Flavors: []Flavor{
			cudaGEMMFlavor("03_smem_tiling", []string{"02_coalesced", "03_smem_tiling", "04_1d_register_tiling"}),
			openCLGEMMFlavor("02_local_tiling", map[string]int{"TS": 16}, []string{"01_naive", "02_local_tiling", "03_more_work_per_thread"}),
		},
	})
	register(Exercise{
		Name: "gemm/register-tiled",
		Doc:  "C = A·B with a block of C in registers per work-item: 2D register blocking (OpenCL step 05, CUDA step 05)",
		Flavors: []Flavor{
			cudaGEMMFlavor("05_2d_register_tiling", []string{"03_smem_tiling", "04_1d_register_tiling", "05_2d_register_tiling", "06_vectorized"}),
			// 64×64 tiles of 8×8 blocks: 64 work-items, which PoCL and
			// every GPU take.
			openCLGEMMFlavor("05_2d_register_blocking", map[string]int{"TSM": 64, "TSN": 64, "TSK": 16, "WPTM": 8, "WPTN": 8, "PADA": 4},
				[]string{"02_local_tiling", "03_more_work_per_thread", "04_wider_types", "05_2d_register_blocking"}),
		},
	})
}

// gemmRun computes C = A·B once with src, or with the ladder's own kernel
// of step when src is "", and returns C and the kernel's device time.
type gemmRun func(step, src string, s gemm.Shape, a, b []float32) ([]float32, time.Duration, error)

// gemmShapes are the shapes a GEMM kernel is checked on: one element, thin
// ones, and sizes that are multiples of no tile.
var gemmShapes = []gemm.Shape{{M: 1, N: 1, K: 1}, {M: 17, N: 33, K: 5}, {M: 64, N: 48, K: 31}, {M: 100, N: 7, K: 130}, {M: 130, N: 67, K: 33}}

func cudaGEMMFlavor(step string, ladder []string) Flavor {
	return Flavor{
		Lang:     LangCUDA,
		Solution: func() (string, error) { return kernels.CUDA("gemm/" + step) },
		devices:  cudaDevices,
		check: func(dev *engine.Device, src string) Result {
			run := func(step, src string, s gemm.Shape, a, b []float32) ([]float32, time.Duration, error) {
				return gemm.CUDAGEMM(dev.CUDA, step, src, s, a, b)
			}
			return checkGEMM(run, step, src, gemm.Shape{M: 2048, N: 2048, K: 2048}, ladder)
		},
	}
}

// openCLGEMMFlavor checks a kernel with the launch geometry of step at the
// given defines; the ladder's other steps run with their first
// configuration the device takes.
func openCLGEMMFlavor(step string, defines map[string]int, ladder []string) Flavor {
	return Flavor{
		Lang:     LangOpenCL,
		Solution: func() (string, error) { return kernels.OpenCL("gemm/" + step) },
		devices:  openCLDevices,
		check: func(dev *engine.Device, src string) Result {
			run := func(ladderStep, src string, s gemm.Shape, a, b []float32) ([]float32, time.Duration, error) {
				var cfgs []gemm.OpenCLConfig
				if src != "" || ladderStep == step { // the exercise's own geometry, for the student and the reference alike
					cfg, err := gemm.NewOpenCLConfig(step, defines)
					if err != nil {
						return nil, 0, err
					}
					cfg.Source = src
					cfgs = []gemm.OpenCLConfig{cfg}
				} else {
					var err error
					if cfgs, err = gemm.OpenCLConfigs(ladderStep); err != nil {
						return nil, 0, err
					}
				}
				var errs []error
				for _, c := range cfgs {
					got, d, err := gemm.OpenCLGEMM(dev.OpenCL, c, s, a, b)
					if err == nil {
						return got, d, nil
					}
					errs = append(errs, err)
				}
				return nil, 0, errors.Join(errs...)
			}
			timing := gemm.Shape{M: 2048, N: 2048, K: 2048}
			if isPoCL(dev.Info) {
				timing = gemm.Shape{M: 256, N: 256, K: 256}
			}
			return checkGEMM(run, step, src, timing, ladder)
		},
	}
}

// checkGEMM checks src against the CPU reference on gemmShapes, then times
// it and the ladder's steps at the timing shape (best of three each).
func checkGEMM(run gemmRun, step, src string, timing gemm.Shape, ladder []string) Result {
	r := Result{}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range gemmShapes {
		a, b := randomMatrix(rng, s.M*s.K), randomMatrix(rng, s.K*s.N)
		got, _, err := run(step, src, s, a, b)
		if err != nil {
			r.Compiled, r.Error = runError(err)
			return r
		}
		r.Compiled = true
		want, err := gemm.Reference(s, a, b)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		at := func(i int) string { return fmt.Sprintf("C[%d][%d] (index %d)", i/s.N, i%s.N, i) }
		if d := firstMismatch(got, want, float64(s.K)*math.Ldexp(1, -22), at); d != "" {
			r.Error, r.Detail = fmt.Sprintf("wrong result for M=%d N=%d K=%d", s.M, s.N, s.K), d
			return r
		}
	}
	r.Correct, r.Size = true, timing.String()
	a, b := randomMatrix(rng, timing.M*timing.K), randomMatrix(rng, timing.K*timing.N)
	gflops := func(step, src string) (float64, error) {
		t, err := best(func() (time.Duration, error) {
			_, d, err := run(step, src, timing, a, b)
			return d, err
		})
		return timing.Flops() / t.Seconds() / 1e9, err
	}
	var err error
	if r.GFLOPS, err = gflops(step, src); err != nil {
		r.Correct, r.Error = false, fmt.Sprintf("correct on the small shapes, but it failed at %s: %v", timing, err)
		return r
	}
	for _, l := range ladder {
		g, err := gflops(l, "")
		if err != nil {
			continue // a step this device cannot run: the chart shows the others
		}
		r.Ladder = append(r.Ladder, Rung{Name: "step " + l, GFLOPS: g})
		if l == step {
			r.PctOfRef = 100 * r.GFLOPS / g
		}
	}
	return r
}
