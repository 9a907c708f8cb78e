package exercise

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"gpulab/engine/exercise/wire"
	"gpulab/engine/gemm"
	"gpulab/kernels"
)

// The GEMM exercises are steps of notebook 01's ladders, in OpenCL C or in
// CUDA: the reference solution is the ladder's own kernel, launched with
// its step's geometry, and in a notebook the student's kernel is timed
// next to the ladder's neighbouring steps.
func init() {
	register(Exercise{
		Name: "gemm/tiled",
		Doc:  "C = A·B with tiles of A and B in __local / shared memory (OpenCL step 02, CUDA step 03)",
		Flavors: []Flavor{
			cudaGEMMFlavor("03_smem_tiling", tiles{mn: 32, k: 32}, "// TODO: load a TILE×TILE tile of A and of B into __shared__ arrays,",
				[]string{"02_coalesced", "04_1d_register_tiling"}),
			openCLGEMMFlavor("02_local_tiling", map[string]int{"TS": 16}, tiles{mn: 16, k: 16}, "// TODO: load a TS×TS tile of A and of B into __local memory,",
				[]string{"01_naive", "03_more_work_per_thread"}),
		},
	})
	register(Exercise{
		Name: "gemm/register-tiled",
		Doc:  "C = A·B with a block of C in registers per work-item: 2D register blocking (OpenCL step 05, CUDA step 05)",
		Flavors: []Flavor{
			cudaGEMMFlavor("05_2d_register_tiling", tiles{mn: 128, k: 8}, "", []string{"03_smem_tiling", "04_1d_register_tiling", "06_vectorized"}),
			// 64×64 tiles of 8×8 blocks: 64 work-items, which PoCL and
			// every GPU take.
			openCLGEMMFlavor("05_2d_register_blocking", map[string]int{"TSM": 64, "TSN": 64, "TSK": 16, "WPTM": 8, "WPTN": 8, "PADA": 4},
				tiles{mn: 64, k: 16}, "// TODO: for each slice of TSK along K, load the TSM×TSK slice of A and",
				[]string{"02_local_tiling", "03_more_work_per_thread", "04_wider_types"}),
		},
	})
}

// gemmShapes are the shapes a GEMM kernel is checked on: one element, thin
// ones, and sizes that are multiples of no tile.
var gemmShapes = []gemm.Shape{{M: 1, N: 1, K: 1}, {M: 17, N: 33, K: 5}, {M: 64, N: 48, K: 31}, {M: 100, N: 7, K: 130}, {M: 130, N: 67, K: 33}}

// tiles is the tile of C a step's work-group computes (mn along M and N)
// and the depth of its slices along K, for the hints.
type tiles struct{ mn, k int }

// gemmProblem is C = A·B at one shape, launched as launch says.
type gemmProblem struct {
	s      gemm.Shape
	a, b   []float32
	launch func(s gemm.Shape) (wire.Task, error)
	tiles  tiles
}

// hint says which partial tiles the shape has.
func (p gemmProblem) hint() string {
	var h []string
	switch {
	case p.s.K < p.tiles.k:
		h = append(h, fmt.Sprintf("K=%d is less than one slice along K (%d): that one slice is partial, and its elements past K must be loaded as zeros", p.s.K, p.tiles.k))
	case p.s.K%p.tiles.k != 0:
		h = append(h, fmt.Sprintf("K=%d is not a multiple of the slice along K (%d): the last slice is partial, and its elements past K must be loaded as zeros", p.s.K, p.tiles.k))
	}
	if p.s.M%p.tiles.mn != 0 || p.s.N%p.tiles.mn != 0 {
		h = append(h, fmt.Sprintf("M=%d and N=%d are not multiples of the %d×%d tile of C: the last tiles hang over C's edges, so loads there must be guarded and nothing stored past row M or column N", p.s.M, p.s.N, p.tiles.mn, p.tiles.mn))
	}
	return strings.Join(h, "; ")
}

func (p gemmProblem) String() string { return fmt.Sprintf("M=%d N=%d K=%d", p.s.M, p.s.N, p.s.K) }
func (p gemmProblem) rows() int      { return p.s.M }
func (p gemmProblem) work() float64  { return p.s.Flops() }

// rowLength lays A, B and C out as matrices (the task's arguments 3 to 5).
func (p gemmProblem) rowLength(arg int) int {
	return map[int]int{3: p.s.K, 4: p.s.N, 5: p.s.N}[arg]
}

func (p gemmProblem) task() wire.Task {
	t, _ := p.launch(p.s) // checked when the problem was drawn
	t.Args = []any{p.s.M, p.s.N, p.s.K, p.a, p.b, wire.Out(p.s.M * p.s.N)}
	return t
}

// mismatch compares the rows of C with float64 dot products, to a relative
// tolerance of K float32 roundings.
func (p gemmProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	c := floats(out[0])
	tol := p.tolerance()
	ref := make([]float64, p.s.N)
	return each(p.s.M, rows, func(i int) string {
		p.referenceRow(i, ref)
		for j, w := range ref {
			if d := wrongValue(c[i*p.s.N+j], w, tol); d != "" {
				return fmt.Sprintf("first wrong element: C[%d][%d] (index %d) %s", i, j, i*p.s.N+j, d)
			}
		}
		return ""
	}), nil
}

// tolerance is relative: K float32 roundings.
func (p gemmProblem) tolerance() float64 { return float64(p.s.K) * math.Ldexp(1, -22) }

// referenceRow sets ref to row i of A·B, in float64.
func (p gemmProblem) referenceRow(i int, ref []float64) {
	clear(ref)
	for k := range p.s.K {
		aik := float64(p.a[i*p.s.K+k])
		for j, bkj := range p.b[k*p.s.N : (k+1)*p.s.N] {
			ref[j] += aik * float64(bkj)
		}
	}
}

// gemmDraws draws A and B in [-1, 1) for each shape.
func gemmDraws(shapes []gemm.Shape, launch func(gemm.Shape) (wire.Task, error), t tiles) []draw {
	var out []draw
	for _, s := range shapes {
		out = append(out, func(rng *rand.Rand) (problem, error) {
			if _, err := launch(s); err != nil {
				return nil, err
			}
			return gemmProblem{s: s, a: randomMatrix(rng, s.M*s.K), b: randomMatrix(rng, s.K*s.N), launch: launch, tiles: t}, nil
		})
	}
	return out
}

func cudaGEMMFlavor(step string, t tiles, todo string, neighbours []string) Flavor {
	launch := func(s gemm.Shape) (wire.Task, error) {
		kernel, cfg, options, err := gemm.CUDALaunch(step, s)
		return wire.Task{Entry: kernel, Decl: gemm.CUDADecl(kernel), Options: options, Shared: cfg.SharedMem,
			Grid:  [3]int{cfg.Grid.X, cfg.Grid.Y, cfg.Grid.Z},
			Block: [3]int{cfg.Block.X, cfg.Block.Y, cfg.Block.Z}}, err
	}
	return Flavor{
		Lang:     LangCUDA,
		TODO:     todo,
		Solution: func() (string, error) { return kernels.CUDA("gemm/" + step) },
		devices:  cudaDevices,
		shape:    gemmShape(launch, t),
		check: func(s *session) Result {
			timing := gemm.Shape{M: 2048, N: 2048, K: 2048}
			if s.smallTiming() {
				timing = gemm.Shape{M: 256, N: 256, K: 256}
			}
			return s.judge(gemmDraws(gemmShapes, launch, t), gemmDraws([]gemm.Shape{timing}, launch, t)[0], "step "+step, gemmLadder(neighbours, func(step string, p gemmProblem) ([]float32, time.Duration, error) {
				return gemm.CUDAGEMM(s.dev.CUDA, step, "", p.s, p.a, p.b)
			}))
		},
	}
}

// openCLGEMMFlavor launches a kernel with step's geometry at the given
// defines; in a notebook, the ladder's other steps run with their first
// configuration the device takes.
func openCLGEMMFlavor(step string, defines map[string]int, t tiles, todo string, neighbours []string) Flavor {
	launch := func(s gemm.Shape) (wire.Task, error) {
		cfg, err := gemm.NewOpenCLConfig(step, defines)
		if err != nil {
			return wire.Task{}, err
		}
		g := cfg.Global(s)
		return wire.Task{Entry: gemm.OpenCLKernel, Decl: gemm.OpenCLDecl, Options: strings.Fields(cfg.Options()),
			Grid:  [3]int{g[0] / cfg.Local[0], g[1] / cfg.Local[1]},
			Block: [3]int{cfg.Local[0], cfg.Local[1]}}, nil
	}
	return Flavor{
		Lang:     LangOpenCL,
		TODO:     todo,
		Solution: func() (string, error) { return kernels.OpenCL("gemm/" + step) },
		devices:  openCLDevices,
		shape:    gemmShape(launch, t),
		check: func(s *session) Result {
			timing := gemm.Shape{M: 2048, N: 2048, K: 2048}
			if s.smallTiming() {
				timing = gemm.Shape{M: 256, N: 256, K: 256}
			}
			return s.judge(gemmDraws(gemmShapes, launch, t), gemmDraws([]gemm.Shape{timing}, launch, t)[0], "step "+step,
				gemmLadder(neighbours, func(step string, p gemmProblem) ([]float32, time.Duration, error) {
					cfgs, err := gemm.OpenCLConfigs(step)
					if err != nil {
						return nil, 0, err
					}
					var errs []error
					for _, c := range cfgs {
						got, d, err := gemm.OpenCLGEMM(s.dev.OpenCL, c, p.s, p.a, p.b)
						if err == nil {
							return got, d, nil
						}
						errs = append(errs, err)
					}
					return nil, 0, errors.Join(errs...)
				}))
		},
	}
}

// gemmLadder times the neighbouring steps of the ladder on the timing
// problem with run (best of three device times); a step this device
// cannot run is left out of the chart.
func gemmLadder(steps []string, run func(step string, p gemmProblem) ([]float32, time.Duration, error)) func(problem) []Rung {
	return func(pr problem) []Rung {
		p := pr.(gemmProblem)
		var rungs []Rung
		for _, step := range steps {
			t, err := best(func() (time.Duration, error) {
				_, d, err := run(step, p)
				return d, err
			})
			if err == nil {
				rungs = append(rungs, Rung{Name: "step " + step, GFLOPS: p.work() / t.Seconds() / 1e9})
			}
		}
		return rungs
	}
}
