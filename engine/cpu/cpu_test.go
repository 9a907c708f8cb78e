package cpu

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

func TestParallelCoversEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, grain int }{{0, 1}, {1, 1}, {7, 3}, {1000, 64}, {4097, 4096}, {100003, 4096}} {
		hits := make([]atomic.Int32, tc.n)
		Parallel(tc.n, tc.grain, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Fatalf("n=%d grain=%d: index %d visited %d times", tc.n, tc.grain, i, h)
			}
		}
	}
}

func TestKernels(t *testing.T) {
	for _, n := range []int{1, 1000, 1<<16 + 5} {
		a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(i)*0.5, float32(n-i)
		}
		VecAdd(c, a, b)
		for i := range c {
			if c[i] != a[i]+b[i] {
				t.Fatalf("VecAdd n=%d: c[%d]=%v", n, i, c[i])
			}
		}
		Saxpy(c, 3, a, b)
		for i := range c {
			if want := 3*a[i] + b[i]; c[i] != want {
				t.Fatalf("Saxpy n=%d: c[%d]=%v want %v", n, i, c[i], want)
			}
		}
		if Copy(c, a) != n {
			t.Fatal("Copy count")
		}
		for i := range c {
			if c[i] != a[i] {
				t.Fatalf("Copy n=%d: c[%d]", n, i)
			}
		}
	}
}

func TestHost(t *testing.T) {
	h := Host()
	t.Logf("%+v peak %.0f GFLOP/s", h, h.PeakGFLOPS())
	if h.Threads < 1 || h.Model == "" {
		t.Errorf("host info %+v", h)
	}
}

func TestSquaredDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b []float32
		want float64
	}{
		{nil, nil, 0},
		{[]float32{1, 2, 3}, []float32{1, 2, 3}, 0},
		{[]float32{0, 0}, []float32{3, 4}, 25},
		{[]float32{1e8, -1}, []float32{1e8 + 8, 1}, 68}, // summed in float64: no float32 cancellation
	} {
		if got := SquaredDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("SquaredDistance(%v, %v) = %g, want %g", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestLastLevelCache: the highest level's distinct instances are summed
// (two sockets of 32 MiB share nothing), instruction caches and lower
// levels are not.
func TestLastLevelCache(t *testing.T) {
	root := t.TempDir()
	write := func(cpu, index, level, typ, size, shared string) {
		dir := filepath.Join(root, cpu, "cache", index)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"level": level, "type": typ, "size": size, "shared_cpu_list": shared} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct{ cpu, shared string }{{"cpu0", "0-1"}, {"cpu1", "0-1"}, {"cpu2", "2-3"}, {"cpu3", "2-3"}} {
		write(c.cpu, "index0", "1", "Data", "48K", c.cpu[3:])
		write(c.cpu, "index1", "1", "Instruction", "32K", c.cpu[3:])
		write(c.cpu, "index2", "2", "Unified", "2048K", c.cpu[3:])
		write(c.cpu, "index3", "3", "Unified", "32768K", c.shared)
	}
	if got, want := lastLevelCache(root), uint64(64<<20); got != want {
		t.Errorf("lastLevelCache = %d, want %d", got, want)
	}
	if got := lastLevelCache(t.TempDir()); got != 0 {
		t.Errorf("no sysfs: %d", got)
	}
	t.Logf("this host: %d bytes", Host().LLCBytes)
}
