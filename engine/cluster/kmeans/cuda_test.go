package kmeans

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gpulab/engine/cuda"
)

func cudaContext(t *testing.T) *cuda.Context {
	t.Helper()
	n, err := cuda.DeviceCount()
	if err != nil || n == 0 {
		t.Skipf("no CUDA device: %v", err)
	}
	ctx, err := cuda.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// agree checks a GPU run against the CPU reference from the same centers:
// labels equal except on ties (mismatches), inertia within 1e-4 relative.
func agree(t *testing.T, name string, x *Matrix, got, want *Result) {
	t.Helper()
	if rel := math.Abs(got.Inertia-want.Inertia) / want.Inertia; rel > 1e-4 {
		t.Errorf("%s: inertia %g, CPU %g (relative difference %.2g)", name, got.Inertia, want.Inertia, rel)
	}
	if bad := mismatches(x, got, want); bad > 0 {
		t.Errorf("%s: %d labels differ from the CPU's beyond ties", name, bad)
	}
}

// TestGPUVariants runs every variant, resident and streamed in uneven
// batches, on shapes that are multiples of nothing: N = 3001, D = 100 (float4
// loads) and 37 (scalar loads), K = 7 and 40 (two GEMM center tiles).
func TestGPUVariants(t *testing.T) {
	ctx := cudaContext(t)
	for _, shape := range []struct{ n, d, k int }{{3001, 100, 7}, {3001, 37, 40}, {700, 1536, 25}} {
		x, _ := blobs(t, shape.n, shape.d, shape.k, 11)
		init, err := initialCenters(x, Config{K: shape.k, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{K: shape.k, MaxIters: 5, Centers: init}
		want, err := Fit(x, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range Variants {
			for _, batch := range []int{0, 777} {
				name := fmt.Sprintf("%d×%d K=%d %s batch %d", shape.n, shape.d, shape.k, v, batch)
				got, stats, err := FitCUDA(ctx, x, cfg, GPUOptions{Variant: v, Batch: batch})
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				agree(t, name, x, got, want)
				if batch > 0 && (stats.Resident || len(stats.Timeline) != 2*((shape.n+batch-1)/batch)) {
					t.Errorf("%s: resident %v, %d timeline spans", name, stats.Resident, len(stats.Timeline))
				}
			}
		}
	}
}

func TestGPUBadInput(t *testing.T) {
	ctx := cudaContext(t)
	x, _ := blobs(t, 100, 8, 3, 1)
	for _, tc := range []struct {
		opt  GPUOptions
		want string
	}{
		{GPUOptions{Variant: "magic"}, "unknown GPU variant"},
		{GPUOptions{TPB: 48}, "threads per block"},
		{GPUOptions{Batch: 1 << 40}, "do not fit"},
	} {
		if _, _, err := FitCUDA(ctx, x, Config{K: 3}, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.opt, err, tc.want)
		}
	}
}
