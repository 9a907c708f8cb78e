package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// golden is 2⁶⁴/φ, the odd constant of Fibonacci hashing and SplitMix64.
const golden = 0x9E3779B97F4A7C15

// Blobs is a deterministic Gaussian mixture for clustering: N points in D
// dimensions, each drawn around one of K centers with standard deviation
// Spread in every coordinate.
//
// Row i depends only on Seed and i, so any range of rows can be generated
// on its own: a 1M × 1536 set (6 GB of float32) can be streamed batch by
// batch and never needs a file. The zero values of Spread and Box select
// their defaults.
type Blobs struct {
	N, D, K int     // points, dimensions and centers
	Seed    uint64  // selects the centers, labels and points
	Spread  float32 // standard deviation around each center; 0 means 1
	Box     float32 // centers are uniform in [-Box, Box)^D; 0 means 10
}

// Validate reports whether b describes a data set: N > 0, D > 0,
// 0 < K <= N, and Spread and Box finite and not negative.
func (b Blobs) Validate() error {
	switch {
	case b.N <= 0:
		return fmt.Errorf("datasets: Blobs.N = %d, want > 0", b.N)
	case b.D <= 0:
		return fmt.Errorf("datasets: Blobs.D = %d, want > 0", b.D)
	case b.K <= 0 || b.K > b.N:
		return fmt.Errorf("datasets: Blobs.K = %d, want 0 < K <= N = %d", b.K, b.N)
	case !(b.Spread >= 0) || math.IsInf(float64(b.Spread), 1):
		return fmt.Errorf("datasets: Blobs.Spread = %v, want finite and >= 0", b.Spread)
	case !(b.Box >= 0) || math.IsInf(float64(b.Box), 1):
		return fmt.Errorf("datasets: Blobs.Box = %v, want finite and >= 0", b.Box)
	}
	return nil
}

// Centers returns the K centers, row-major K×D, uniform in [-Box, Box)^D.
// The same Seed always gives the same centers. It returns nil if K or D is
// not positive.
func (b Blobs) Centers() []float32 {
	if b.K <= 0 || b.D <= 0 {
		return nil
	}
	box := float64(b.Box)
	if box == 0 {
		box = 10
	}
	// The centers use PCG state (Seed, 0); rows use (Seed, i·golden+1).
	r := rand.New(rand.NewPCG(b.Seed, 0))
	c := make([]float32, b.K*b.D)
	for i := range c {
		c[i] = float32(box * (2*r.Float64() - 1))
	}
	return c
}

// Label returns the index of the center that row i is drawn around: a hash
// of Seed and i, modulo K. It returns -1 if K is not positive.
func (b Blobs) Label(i int) int {
	if b.K <= 0 {
		return -1
	}
	return int(splitmix64(splitmix64(b.Seed)^uint64(i)) % uint64(b.K))
}

// splitmix64 is the output function of the SplitMix64 generator, a fast
// hash whose every output bit depends on every input bit.
func splitmix64(x uint64) uint64 {
	x += golden
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// Rows fills dst[:n*D] with rows start, …, start+n-1: row i is
// Centers()[Label(i)] plus Spread times D standard normal numbers from a PCG
// generator seeded with Seed and i. The rows are split into one chunk per
// GOMAXPROCS, generated concurrently.
//
// Rows does not report errors: the caller must check b with Validate and
// keep 0 <= start and start+n <= N (rows past N are well defined but are
// not part of the set). To stay in bounds it writes at most len(dst)/D
// rows, and nothing if K or D is not positive.
func (b Blobs) Rows(start, n int, dst []float32) {
	if b.K <= 0 || b.D <= 0 {
		return
	}
	if n = min(n, len(dst)/b.D); n <= 0 {
		return
	}
	centers := b.Centers()
	spread := float64(b.Spread)
	if spread == 0 {
		spread = 1
	}
	procs := runtime.GOMAXPROCS(0)
	chunk := (n + procs - 1) / procs
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		wg.Go(func() {
			var src rand.PCG
			r := rand.New(&src)
			for j := lo; j < min(lo+chunk, n); j++ {
				i := start + j
				src.Seed(b.Seed, uint64(i)*golden+1)
				c := centers[b.Label(i)*b.D:][:b.D]
				row := dst[j*b.D:][:b.D]
				for k := range row {
					row[k] = c[k] + float32(spread*r.NormFloat64())
				}
			}
		})
	}
	wg.Wait()
}
