// Package cpu is gpulab's reference backend: plain Go, parallel over
// goroutines. Every computation a notebook runs on a GPU has a version here, so
// results can be checked, and so that a laptop without a GPU runs every notebook.
package cpu

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Workers is the number of goroutines parallel loops use (GOMAXPROCS).
func Workers() int { return runtime.GOMAXPROCS(0) }

// Parallel splits [0, n) into one contiguous chunk per worker and runs fn on
// each chunk concurrently. Chunks are multiples of grain (at least 1) so that
// workers do not share cache lines.
func Parallel(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	w := min(Workers(), (n+grain-1)/grain)
	if w <= 1 {
		fn(0, n)
		return
	}
	chunk := ((n+w-1)/w + grain - 1) / grain * grain
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// SquaredDistance is the squared Euclidean distance between two points of
// the same length, summed in float64: the reference that the k-means and
// SQFD kernels are checked against.
func SquaredDistance(a, b []float32) float64 {
	var s float64
	for i := range a {
		t := float64(a[i]) - float64(b[i])
		s += t * t
	}
	return s
}

// Copy copies src into dst in parallel; it returns the number of elements copied.
func Copy(dst, src []float32) int {
	n := min(len(dst), len(src))
	Parallel(n, 4096, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
	return n
}

// VecAdd sets c[i] = a[i] + b[i].
func VecAdd(c, a, b []float32) {
	n := min(len(a), len(b), len(c))
	Parallel(n, 4096, func(lo, hi int) {
		a, b, c := a[lo:hi], b[lo:hi], c[lo:hi]
		for i := range c {
			c[i] = a[i] + b[i]
		}
	})
}

// Saxpy sets out[i] = alpha·x[i] + y[i] (out-of-place, so repeated runs do the same work).
func Saxpy(out []float32, alpha float32, x, y []float32) {
	n := min(len(x), len(y), len(out))
	Parallel(n, 4096, func(lo, hi int) {
		x, y, out := x[lo:hi], y[lo:hi], out[lo:hi]
		for i := range out {
			out[i] = alpha*x[i] + y[i]
		}
	})
}

// Info describes the host processor.
type Info struct {
	Model    string  `json:"model"`
	Threads  int     `json:"threads"`   // GOMAXPROCS
	ClockMHz float64 `json:"clock_mhz"` // as /proc/cpuinfo reports it (0 if unknown)
	SIMD     string  `json:"simd"`      // widest vector extension: "avx512f", "avx2", "sse2", "neon" or ""
	// LLCBytes is the last-level cache of the whole host: the sum over its
	// distinct instances (one per socket or per core complex), 0 if
	// unknown. A working set that fits in it is served from cache.
	LLCBytes uint64   `json:"llc_bytes,omitempty"`
	Flags    []string `json:"-"`
}

// FP32Lanes is the number of float32 lanes of the widest vector unit.
func (i Info) FP32Lanes() int {
	switch i.SIMD {
	case "avx512f":
		return 16
	case "avx2":
		return 8
	default:
		return 4
	}
}

// PeakGFLOPS is the textbook FP32 peak: threads × clock × lanes × 2 (FMA) ×
// 2 FMA units. Go code does not vectorize, so scalar loops see a small
// fraction of it; the roofline shows how small.
func (i Info) PeakGFLOPS() float64 {
	return float64(i.Threads) * i.ClockMHz / 1e3 * float64(i.FP32Lanes()) * 2 * 2
}

var (
	infoOnce sync.Once
	info     Info
)

// Host reads /proc/cpuinfo once. Fields it cannot find stay empty.
func Host() Info {
	infoOnce.Do(func() {
		info = Info{Model: runtime.GOARCH + " CPU", Threads: Workers(), LLCBytes: lastLevelCache("/sys/devices/system/cpu")}
		f, err := os.Open("/proc/cpuinfo")
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case k == "model name" && info.Model == runtime.GOARCH+" CPU":
				info.Model = v
			case k == "cpu MHz" && info.ClockMHz == 0:
				info.ClockMHz, _ = strconv.ParseFloat(v, 64)
			case (k == "flags" || k == "Features") && info.Flags == nil:
				info.Flags = strings.Fields(v)
			}
		}
		for _, simd := range []string{"avx512f", "avx2", "sse2", "asimd"} {
			for _, f := range info.Flags {
				if f == simd && info.SIMD == "" {
					info.SIMD = simd
				}
			}
		}
	})
	return info
}

// lastLevelCache sums the distinct instances of the highest-level data or
// unified cache that sysfs under root (/sys/devices/system/cpu) lists:
// each cpuN/cache/indexM has level, type, size ("32768K") and
// shared_cpu_list, the CPUs that share one instance. 0 if there is none.
func lastLevelCache(root string) uint64 {
	dirs, _ := filepath.Glob(filepath.Join(root, "cpu[0-9]*", "cache", "index[0-9]*"))
	read := func(dir, name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b))
	}
	top := 0
	sizes := map[string]uint64{} // shared_cpu_list -> size, at level top
	for _, d := range dirs {
		level, err := strconv.Atoi(read(d, "level"))
		if err != nil || read(d, "type") == "Instruction" || level < top {
			continue
		}
		if level > top {
			top, sizes = level, map[string]uint64{}
		}
		size := read(d, "size")
		mult := uint64(1)
		switch {
		case strings.HasSuffix(size, "K"):
			mult, size = 1<<10, strings.TrimSuffix(size, "K")
		case strings.HasSuffix(size, "M"):
			mult, size = 1<<20, strings.TrimSuffix(size, "M")
		}
		if n, err := strconv.ParseUint(size, 10, 64); err == nil {
			sizes[read(d, "shared_cpu_list")] = n * mult
		}
	}
	var total uint64
	for _, n := range sizes {
		total += n
	}
	return total
}
