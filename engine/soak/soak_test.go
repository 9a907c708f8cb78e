package soak

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/cluster/kmeans"
	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
	"gpulab/engine/gemm"
	"gpulab/engine/llm/lfm2"
	"gpulab/engine/sparse"
)

const (
	// warmup runs come first, untimed and unmeasured: they compile
	// kernels and fill caches and pools.
	warmup = 10
	// The soak then runs for soakTime or soakIterations, whichever ends
	// first.
	soakTime       = 60 * time.Second
	soakIterations = 1000
	// What the memory in use may grow by from after the warm-up to the end.
	deviceBound = 16 << 20
	hostBound   = 64 << 20
)

// TestSoak runs each engine's main path until soakTime or soakIterations
// and checks that device memory in use and host RSS stay within bounds
// (see the package comment).
func TestSoak(t *testing.T) {
	if os.Getenv("GPULAB_SOAK") != "1" {
		t.Skip("the soak takes minutes: set GPULAB_SOAK=1 to run it")
	}
	ctx := cudatest.Context(t)
	t.Run("gemm", func(t *testing.T) { soakGEMM(t, ctx) })
	t.Run("spgemm", func(t *testing.T) { soakSpGEMM(t, ctx) })
	t.Run("kmeans", func(t *testing.T) { soakKMeans(t, ctx) })
	t.Run("lfm2", func(t *testing.T) { soakLFM2(t, ctx) })
}

func soakGEMM(t *testing.T, ctx *cuda.Context) {
	s := gemm.Shape{M: 1024, N: 1024, K: 1024}
	p, err := gemm.NewProblem(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	soak(t, ctx, func(int) error {
		c, _, err := gemm.CUDAGEMM(ctx, "05_2d_register_tiling", "", s, p.A, p.B)
		if err == nil && len(c) != s.M*s.N {
			err = fmt.Errorf("C has %d elements, want %d", len(c), s.M*s.N)
		}
		return err
	})
}

func soakSpGEMM(t *testing.T, ctx *cuda.Context) {
	a, err := sparse.Generate("rmat:scale=16,ef=8")
	if err != nil {
		t.Fatal(err)
	}
	da, err := sparse.UploadCSR(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer da.Free()
	g := sparse.NewGPUSpGEMM(ctx)
	defer g.Close()
	step := sparse.GPUSteps[len(sparse.GPUSteps)-1]
	t.Logf("step %s on %s", step, a.Shape())
	soak(t, ctx, func(int) error {
		c, _, err := g.Multiply(step, da, da)
		if err != nil {
			return err
		}
		g.Release(c)
		return nil
	})
}

func soakKMeans(t *testing.T, ctx *cuda.Context) {
	const k = 25
	x, err := kmeans.Materialize(datasets.Blobs{N: 100_000, D: 256, K: k, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := kmeans.NewGPU(ctx, x, k, kmeans.GPUOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	soak(t, ctx, func(i int) error {
		r, err := g.Fit(kmeans.Config{K: k, MaxIters: 1, Init: kmeans.Random, Seed: uint64(i)})
		if err == nil && len(r.Labels) != x.N {
			err = fmt.Errorf("%d labels for %d points", len(r.Labels), x.N)
		}
		return err
	})
}

func soakLFM2(t *testing.T, ctx *cuda.Context) {
	dir := filepath.Join("..", "..", lfm2.FixturesDir, "moe")
	dev, err := engine.Open(ctx.ID())
	if err != nil {
		t.Fatal(err)
	}
	m, err := lfm2.Open(dir, []*engine.Device{dev}, lfm2.CUDAOptions{DType: "f32", MaxBatch: 2, MaxSeq: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := rand.New(rand.NewPCG(1, 2))
	soak(t, ctx, func(int) error {
		prompts := make([][]int, 2)
		for i := range prompts {
			for range 5 {
				prompts[i] = append(prompts[i], 3+r.IntN(m.Config().Vocab-3))
			}
		}
		return m.Generate(prompts, 8, lfm2.Sampling{}, nil) // a prefill of 5 tokens, then 7 decode steps
	})
}

// usage is the memory in use at one moment.
type usage struct {
	device, host int64 // bytes: the device's total − free, the process's VmRSS
}

// measure waits for the device, collects the Go heap and hands what it
// freed back to the system, then reads the memory in use.
func measure(t *testing.T, ctx *cuda.Context) usage {
	t.Helper()
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	free, total, err := ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	rss, err := residentBytes()
	if err != nil {
		t.Fatal(err)
	}
	return usage{device: int64(total - free), host: rss}
}

// residentBytes is the VmRSS line of /proc/self/status, in bytes.
func residentBytes() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kB, err := strconv.ParseInt(f[0], 10, 64)
				return kB << 10, err
			}
			return 0, fmt.Errorf("/proc/self/status: %q is not VmRSS: N kB", strings.TrimSpace(line))
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no VmRSS line")
}

// soak runs step warmup times, measures, runs it until soakTime or
// soakIterations, measures again, logs both and fails the test if either
// memory grew beyond its bound. step gets the iteration's index.
func soak(t *testing.T, ctx *cuda.Context, step func(i int) error) {
	t.Helper()
	for i := range warmup {
		if err := step(i); err != nil {
			t.Fatalf("warm-up run %d: %v", i, err)
		}
	}
	start := measure(t, ctx)
	began, n := time.Now(), 0
	for n < soakIterations && time.Since(began) < soakTime {
		if err := step(warmup + n); err != nil {
			t.Fatalf("iteration %d: %v", n, err)
		}
		n++
	}
	took := time.Since(began)
	end := measure(t, ctx)
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	t.Logf("%d iterations in %v (%v each) after %d to warm up", n, took.Round(time.Millisecond), (took / time.Duration(n)).Round(time.Microsecond), warmup)
	t.Logf("device memory in use: %.1f MiB at the start, %.1f MiB at the end, grew %+.1f MiB (bound %d MiB)",
		mib(start.device), mib(end.device), mib(end.device-start.device), deviceBound>>20)
	t.Logf("host RSS: %.1f MiB at the start, %.1f MiB at the end, grew %+.1f MiB (bound %d MiB)",
		mib(start.host), mib(end.host), mib(end.host-start.host), hostBound>>20)
	if grew := end.device - start.device; grew > deviceBound {
		t.Errorf("device memory in use grew by %.1f MiB over %d iterations, more than %d MiB", mib(grew), n, deviceBound>>20)
	}
	if grew := end.host - start.host; grew > hostBound {
		t.Errorf("host RSS grew by %.1f MiB over %d iterations, more than %d MiB", mib(grew), n, hostBound>>20)
	}
}
