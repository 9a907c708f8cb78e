package gemm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine/cuda"
)

// TestCUDAKernelLaunches checks the build and launch of every CUDA kernel
// step against values worked out by hand from its tiles, at a cube whose
// sides are multiples of every tile and of 16 bytes, and at a shape that
// is neither (so -DVEC=0, and grids rounded up). Step 10 is at its
// default tiles: the cache is empty.
func TestCUDAKernelLaunches(t *testing.T) {
	t.Setenv("GPULAB_CACHE_DIR", t.TempDir())
	cube, odd := Shape{M: 1024, N: 1024, K: 1024}, Shape{M: 1000, N: 1023, K: 999}
	type want struct {
		file, entry  string
		grid, block  cuda.Dim3 // the same at both shapes: ceil(1023/t) = 1024/t and ceil(1000/t) = 1024/t for these tiles
		shared       int
		cube, oddOpt []string
		hopper       bool
	}
	square := cuda.Dim3{X: 32, Y: 32}
	tiles10 := []string{"-DBM=128", "-DBN=128", "-DBK=16", "-DWM=64", "-DWN=32"} // TileCandidates[0]
	wants := map[string]want{
		// 32×32 tiles: 1024/32 = 32 blocks each way (01 has x along rows, the same here).
		"01_naive":       {file: "gemm/01_naive", entry: "sgemm", grid: cuda.Dim3{X: 32, Y: 32}, block: square},
		"02_coalesced":   {file: "gemm/02_coalesced", entry: "sgemm", grid: cuda.Dim3{X: 32, Y: 32}, block: square},
		"03_smem_tiling": {file: "gemm/03_smem_tiling", entry: "sgemm", grid: cuda.Dim3{X: 32, Y: 32}, block: square},
		// 64×64 tiles, 8 outputs per thread: 64·64/8 = 512 threads.
		"04_1d_register_tiling": {file: "gemm/04_1d_register_tiling", entry: "sgemm", grid: cuda.Dim3{X: 16, Y: 16}, block: cuda.Dim3{X: 512}},
		// 128×128 tiles, 8×8 outputs per thread: 256 threads.
		"05_2d_register_tiling": {file: "gemm/05_2d_register_tiling", entry: "sgemm", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256}},
		"06_vectorized": {file: "gemm/06_vectorized", entry: "sgemm", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256},
			cube: []string{"-DVEC=1"}, oddOpt: []string{"-DVEC=0"}},
		"07_bank_conflict_free": {file: "gemm/07_bank_conflict_free", entry: "sgemm", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256},
			cube: []string{"-DVEC=1"}, oddOpt: []string{"-DVEC=0"}},
		"08_double_buffering": {file: "gemm/08_double_buffering", entry: "sgemm", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256},
			cube: []string{"-DVEC=1"}, oddOpt: []string{"-DVEC=0"}},
		"09_warp_tiling": {file: "gemm/09_warp_tiling", entry: "sgemm", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256},
			cube: []string{"-DVEC=1"}, oddOpt: []string{"-DVEC=0"}},
		// 128×128 block tiles of 64×32 warp tiles: 2·4 warps = 256 threads.
		"10_autotuned": {file: "gemm/10_autotuned", entry: "sgemm", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256},
			cube: append(slices.Clone(tiles10), "-DVEC=1"), oddOpt: append(slices.Clone(tiles10), "-DVEC=0")},
		// K = 999 is no multiple of 4 (TF32) or 8 (BF16) elements per 16 bytes.
		"11_wmma_tf32": {file: "gemm/11_wmma", entry: "wmma_tf32", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256},
			cube: []string{"-DVEC=1"}, oddOpt: []string{"-DVEC=0"}},
		"11_wmma_bf16": {file: "gemm/11_wmma", entry: "wmma_bf16", grid: cuda.Dim3{X: 8, Y: 8}, block: cuda.Dim3{X: 256},
			cube: []string{"-DVEC=1"}, oddOpt: []string{"-DVEC=0"}},
		// 128×256 tiles: 1024/256 = 4 columns of blocks, 1024/128 = 8 rows;
		// 3 warpgroups of 128 threads; 4 stages of 128×64 + 64×256 BF16
		// (196608 B), 8 barriers of 8 B and 1 KiB of alignment slack.
		"12_wgmma_tma": {file: "gemm/12_wgmma_tma", entry: "wgmma_bf16", grid: cuda.Dim3{X: 4, Y: 8}, block: cuda.Dim3{X: 384},
			shared: 196608 + 64 + 1024, cube: []string{"--gpu-architecture=sm_90a"}, oddOpt: []string{"--gpu-architecture=sm_90a"}, hopper: true},
	}
	order := []string{"01_naive", "02_coalesced", "03_smem_tiling", "04_1d_register_tiling", "05_2d_register_tiling", "06_vectorized",
		"07_bank_conflict_free", "08_double_buffering", "09_warp_tiling", "10_autotuned", "11_wmma_tf32", "11_wmma_bf16", "12_wgmma_tma"}
	for _, s := range []Shape{cube, odd} {
		var steps []string
		for _, k := range CUDAKernels(s, "Some GPU") {
			steps = append(steps, k.Step)
			w, ok := wants[k.Step]
			if !ok {
				t.Errorf("%s: step %s has no expected launch", s, k.Step)
				continue
			}
			opts := w.cube
			if s == odd {
				opts = w.oddOpt
			}
			cfg := k.Launch
			if k.File != w.file || k.Entry != w.entry || cfg.Grid != w.grid || cfg.Block != w.block ||
				cfg.SharedMem != w.shared || !slices.Equal(k.Options, opts) || k.Hopper != w.hopper {
				t.Errorf("%s %s: file %s, entry %s, grid %v, block %v, %d B shared, options %q, hopper %t;\nwant %s, %s, %v, %v, %d B, %q, %t",
					s, k.Step, k.File, k.Entry, cfg.Grid, cfg.Block, cfg.SharedMem, k.Options, k.Hopper,
					w.file, w.entry, w.grid, w.block, w.shared, opts, w.hopper)
			}
			if (k.Tiles != nil) != (k.Step == "10_autotuned") || k.Tuned {
				t.Errorf("%s %s: tiles %v, tuned %t", s, k.Step, k.Tiles, k.Tuned)
			}
			if strings.HasPrefix(k.Step, "0") { // the FP32 steps 01 to 09
				entry, cfg, opts, err := CUDALaunch(k.Step, s)
				if err != nil || entry != k.Entry || cfg != k.Launch || !slices.Equal(opts, k.Options) {
					t.Errorf("CUDALaunch(%s, %s) = %s, %+v, %q, %v; want the step's kernel", k.Step, s, entry, cfg, opts, err)
				}
			}
		}
		if !slices.Equal(steps, order) {
			t.Errorf("%s: kernels of %v, want %v", s, steps, order)
		}
	}
	for _, step := range []string{"10_autotuned", "11_wmma_tf32", "12_wgmma_tma", "cublas_sgemm"} {
		if _, _, _, err := CUDALaunch(step, cube); err == nil || !strings.Contains(err.Error(), "no FP32 CUDA kernel step") {
			t.Errorf("CUDALaunch(%s): %v, want an error", step, err)
		}
	}
}

// TestCUDAKernelsAutotuneCache checks that step 10's kernel takes the
// tiles the autotune cache holds for the GPU and the shape, without
// searching, and the default ones where it holds none (or the cache is
// corrupt).
func TestCUDAKernelsAutotuneCache(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPULAB_CACHE_DIR", dir)
	s := Shape{M: 1000, N: 1023, K: 999}
	step10 := func(gpu string, s Shape) CUDAKernel {
		t.Helper()
		for _, k := range CUDAKernels(s, gpu) {
			if k.Tiles != nil {
				return k
			}
		}
		t.Fatal("no kernel with tiles")
		return CUDAKernel{}
	}
	if k := step10("Test GPU", s); k.Tuned || *k.Tiles != TileCandidates[0] {
		t.Errorf("no cache: tiles %v, tuned %t; want the default %v", *k.Tiles, k.Tuned, TileCandidates[0])
	}

	cache := `{"Test GPU 1000x1023x999": {"BM": 64, "BN": 128, "BK": 8, "WM": 32, "WN": 32},
  "Test GPU 1024x1024x1024": {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64}}`
	if err := os.WriteFile(filepath.Join(dir, "gemm-autotune.json"), []byte(cache), 0o644); err != nil {
		t.Fatal(err)
	}
	tuned := TileConfig{BM: 64, BN: 128, BK: 8, WM: 32, WN: 32}
	if got, ok := CachedTiles("Test GPU", s); !ok || got != tuned {
		t.Errorf("CachedTiles = %v, %t; want %v", got, ok, tuned)
	}
	k := step10("Test GPU", s)
	// 64×128 tiles of 32×32 warp tiles: 2·4 warps = 256 threads; ceil(1023/128) = 8 by ceil(1000/64) = 16 blocks.
	wantOpts := []string{"-DBM=64", "-DBN=128", "-DBK=8", "-DWM=32", "-DWN=32", "-DVEC=0"}
	if !k.Tuned || *k.Tiles != tuned || k.Launch.Grid != (cuda.Dim3{X: 8, Y: 16}) || k.Launch.Block != (cuda.Dim3{X: 256}) ||
		!slices.Equal(k.Options, wantOpts) {
		t.Errorf("cached: tiles %v, tuned %t, launch %+v, options %q; want %v, true, grid 8×16, block 256, %q",
			*k.Tiles, k.Tuned, k.Launch, k.Options, tuned, wantOpts)
	}
	for _, other := range []struct {
		gpu string
		s   Shape
	}{{"Other GPU", s}, {"Test GPU", Shape{M: 512, N: 512, K: 512}}} {
		if k := step10(other.gpu, other.s); k.Tuned || *k.Tiles != TileCandidates[0] {
			t.Errorf("%s %s, not in the cache: tiles %v, tuned %t; want the default", other.gpu, other.s, *k.Tiles, k.Tuned)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "gemm-autotune.json"), []byte(`{"Test GPU 1000x1023x999": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if k := step10("Test GPU", s); k.Tuned || *k.Tiles != TileCandidates[0] {
		t.Errorf("corrupt cache: tiles %v, tuned %t; want the default", *k.Tiles, k.Tuned)
	}
}
