package gemm

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gpulab/engine"
	"gpulab/engine/atomicfile"
	"gpulab/engine/cuda"
)

// TileConfig is one set of step 09/10 parameters: the block tile BM×BN, its
// depth BK, and the warp tile WM×WN.
type TileConfig struct {
	BM, BN, BK, WM, WN int
}

func (t TileConfig) String() string {
	return fmt.Sprintf("BM=%d BN=%d BK=%d WM=%d WN=%d", t.BM, t.BN, t.BK, t.WM, t.WN)
}

// Threads is the block size: one warp per warp tile.
func (t TileConfig) Threads() int { return (t.BM / t.WM) * (t.BN / t.WN) * 32 }

func (t TileConfig) defines() []string {
	return []string{fmt.Sprintf("-DBM=%d", t.BM), fmt.Sprintf("-DBN=%d", t.BN), fmt.Sprintf("-DBK=%d", t.BK),
		fmt.Sprintf("-DWM=%d", t.WM), fmt.Sprintf("-DWN=%d", t.WN)}
}

// step is step 10 at these tiles.
func (t TileConfig) step() cudaStep {
	return cudaStep{Variant: autotunedVariant(), kernel: "sgemm", block: t.Threads(), tileM: t.BM, tileN: t.BN, vecElem: 4,
		defines: t.defines()}
}

func (t TileConfig) function(ctx *cuda.Context, s Shape) (*cuda.Function, error) {
	return t.step().function(ctx, s)
}

func (t TileConfig) launch(s Shape) cuda.LaunchConfig { return t.step().launch(s) }

func autotunedVariant() Variant {
	return Variant{Name: "10_autotuned", Kind: engine.CUDA, Precision: FP32,
		Doc:     "step 09 with BM, BN, BK, WM, WN searched on this GPU and shape, cached",
		Traffic: tiledTraffic(128, 128, 4)} // at the default tiles; a run records the tuned ones
}

// TileCandidates is the search space of step 10. Candidates that do not fit
// (too much shared memory, too many registers) fail to compile or launch and
// are skipped.
var TileCandidates = []TileConfig{
	{128, 128, 16, 64, 32}, {128, 128, 8, 64, 32}, {128, 128, 16, 32, 64}, {128, 128, 16, 64, 64},
	{128, 128, 8, 64, 64}, {128, 256, 16, 64, 64}, {256, 128, 16, 64, 64}, {128, 256, 8, 64, 64},
	{256, 128, 8, 64, 64}, {64, 256, 16, 32, 64}, {256, 64, 16, 64, 32}, {64, 128, 16, 32, 32},
	{128, 64, 16, 32, 32}, {64, 64, 16, 32, 32}, {128, 128, 32, 64, 32},
}

var autotuneMu sync.Mutex

// AutotunePath is the JSON file that keeps the best config per device and shape.
func AutotunePath() string {
	dir := os.Getenv("GPULAB_CACHE_DIR")
	if dir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			d = os.TempDir()
		}
		dir = filepath.Join(d, "gpulab")
	}
	return filepath.Join(dir, "gemm-autotune.json")
}

// Autotune returns the fastest TileConfig for shape s on ctx's GPU, searching
// TileCandidates the first time and reading the cache after that.
func Autotune(ctx *cuda.Context, s Shape) (TileConfig, error) {
	autotuneMu.Lock()
	defer autotuneMu.Unlock()
	key := autotuneKey(ctx.Properties().Name, s)
	cache := readAutotuneCache()
	if t, ok := cache[key]; ok {
		return t, nil
	}
	best, err := search(ctx, s)
	if err != nil {
		return TileConfig{}, err
	}
	cache[key] = best
	// The cache is best effort: a failed write only costs a new search.
	if data, err := json.MarshalIndent(cache, "", "  "); err == nil && os.MkdirAll(filepath.Dir(AutotunePath()), 0o755) == nil {
		atomicfile.WriteBytes(AutotunePath(), data)
	}
	return best, nil
}

// CachedTiles is the TileConfig that Autotune chose for shape s on the GPU
// named gpu (cuda.Properties.Name), read from the cache without searching;
// ok is false when that GPU and shape were never tuned.
func CachedTiles(gpu string, s Shape) (t TileConfig, ok bool) {
	t, ok = readAutotuneCache()[autotuneKey(gpu, s)]
	return t, ok
}

// autotuneKey is the cache's key for a GPU's name and a shape.
func autotuneKey(gpu string, s Shape) string { return gpu + " " + s.String() }

// readAutotuneCache is the cache at AutotunePath by autotuneKey: empty when
// there is none, or when it is corrupt (Autotune then rebuilds it). Writes
// replace the file whole, so it needs no lock.
func readAutotuneCache() map[string]TileConfig {
	cache := map[string]TileConfig{}
	data, err := os.ReadFile(AutotunePath())
	if err != nil || json.Unmarshal(data, &cache) != nil {
		return map[string]TileConfig{}
	}
	return cache
}

// search times every candidate on random inputs of shape s (3 runs after a
// warm-up) and returns the fastest.
func search(ctx *cuda.Context, s Shape) (TileConfig, error) {
	p, err := NewProblem(s, 7)
	if err != nil {
		return TileConfig{}, err
	}
	r, err := newCUDARun(ctx, p)
	if err != nil {
		return TileConfig{}, err
	}
	defer r.close()
	best, bestTime := TileConfig{}, time.Duration(math.MaxInt64)
	var errs []error
	for _, t := range TileCandidates {
		fn, err := t.function(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t, err))
			continue
		}
		cfg := t.launch(s)
		run := func() error { return fn.Launch(cfg, s.M, s.N, s.K, r.a, r.b, r.c) }
		if err := run(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t, err))
			continue
		}
		var total time.Duration
		for range 3 {
			d, err := r.timer.Time(run)
			if err != nil {
				return TileConfig{}, err
			}
			total += d
		}
		if total < bestTime {
			best, bestTime = t, total
		}
	}
	if bestTime == time.Duration(math.MaxInt64) {
		return TileConfig{}, fmt.Errorf("gemm: autotune %s: no candidate ran: %v", s, errs)
	}
	return best, nil
}
