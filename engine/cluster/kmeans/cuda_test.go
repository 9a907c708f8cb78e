package kmeans

import (
	"fmt"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda/cudatest"
	"math"
	"strings"
	"testing"
	"time"
)

// agree checks a GPU run against the CPU reference from the same initial
// centers. The first assignment, from identical centers, must give the same
// labels except on ties (distances within 10⁻⁵, relatively). After that the
// runs drift apart by float32 rounding in the sums, so the final labels must
// be the nearest of the run's own centers, and the inertia must agree within
// 10⁻⁴.
func agree(t *testing.T, name string, x *Matrix, g *GPU, init []float32, got, want *Result) {
	t.Helper()
	if rel := math.Abs(got.Inertia-want.Inertia) / want.Inertia; rel > 1e-4 {
		t.Errorf("%s: inertia %g, CPU %g (relative difference %.2g)", name, got.Inertia, want.Inertia, rel)
	}
	if n := inconsistent(x, got); n > 0 {
		t.Errorf("%s: %d points not labelled with their nearest center", name, n)
	}
	gl, gi, err := g.Assign(init)
	if err != nil {
		t.Fatal(err)
	}
	cl, ci, _ := Assign(x, init, got.K)
	d := x.D
	for i := range gl {
		if gl[i] == cl[i] {
			continue
		}
		row := x.X[i*d : (i+1)*d]
		a, b := cpu.SquaredDistance(row, init[int(gl[i])*d:(int(gl[i])+1)*d]), cpu.SquaredDistance(row, init[int(cl[i])*d:(int(cl[i])+1)*d])
		if math.Abs(a-b) > 1e-5*max(a, b) {
			t.Errorf("%s: first assignment: point %d labelled %d, CPU %d (distances %g, %g)", name, i, gl[i], cl[i], a, b)
			break
		}
	}
	if math.Abs(gi-ci) > 1e-5*ci {
		t.Errorf("%s: first assignment inertia %g, CPU %g", name, gi, ci)
	}
}

// TestGPUVariants runs every variant, resident and streamed in uneven
// batches, on shapes that are multiples of nothing: N = 3001, D = 100 (float4
// loads) and 37 (scalar loads), K = 7 and 40 (two GEMM center tiles). Under
// compute-sanitizer, a tenth of the points or less in batches of 97, for 2
// iterations. Each run logs its time, to show where a slow run goes.
func TestGPUVariants(t *testing.T) {
	ctx := cudatest.Context(t)
	n, batch, iters := cudatest.Size(3001, 301), cudatest.Size(777, 97), cudatest.Size(5, 2)
	for _, shape := range []struct{ n, d, k int }{{n, 100, 7}, {n, 37, 40}, {cudatest.Size(700, 41), 1536, cudatest.Size(25, 9)}} {
		x, _ := blobs(t, shape.n, shape.d, shape.k, 11)
		init, err := initialCenters(x, Config{K: shape.k, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{K: shape.k, MaxIters: iters, Centers: init}
		want, err := Fit(x, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range Variants {
			for _, batch := range []int{0, batch} {
				name := fmt.Sprintf("%d×%d K=%d %s batch %d", shape.n, shape.d, shape.k, v, batch)
				start := time.Now()
				g, err := NewGPU(ctx, x, shape.k, GPUOptions{Variant: v, Batch: batch})
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				got, err := g.Fit(cfg)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					g.Close()
					continue
				}
				stats := g.Stats()
				t.Logf("%s: %v", name, time.Since(start))
				agree(t, name, x, g, init, got, want)
				g.Close()
				if batch > 0 && (stats.Resident || len(stats.Timeline) != 2*((shape.n+batch-1)/batch)) {
					t.Errorf("%s: resident %v, %d timeline spans", name, stats.Resident, len(stats.Timeline))
				}
			}
		}
	}
}

func TestGPUBadInput(t *testing.T) {
	ctx := cudatest.Context(t)
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

// TestTimeSeedTable: the seed's table on a small set, each time the sum of
// its iterations only, so 36 iterations take longer than 10.
func TestTimeSeedTable(t *testing.T) {
	ctx := cudatest.Context(t)
	x, _ := blobs(t, 3001, 96, 7, 3)
	runs, err := TimeSeedTable(ctx, x, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(SeedLog) {
		t.Fatalf("%d runs, want %d", len(runs), len(SeedLog))
	}
	at := map[[2]int]time.Duration{}
	for _, r := range runs {
		if r.Time <= 0 {
			t.Errorf("TPB %d, %d iterations: %v", r.TPB, r.Iters, r.Time)
		}
		at[[2]int{r.TPB, r.Iters}] = r.Time
	}
	for _, tpb := range []int{32, 256} {
		if at[[2]int{tpb, 36}] <= at[[2]int{tpb, 10}] {
			t.Errorf("TPB %d: 36 iterations in %v, 10 in %v", tpb, at[[2]int{tpb, 36}], at[[2]int{tpb, 10}])
		}
	}
	t.Log(SeedTableMarkdown(ctx.ID(), Spec{N: x.N, D: x.D, K: 7}, runs))
}
