package exercise

import (
	"gpulab/engine"
	"gpulab/engine/cuda"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSample: k distinct rows in increasing order, all of them reachable,
// every row (nil) when there are no more than k, and the same rows for the
// same seed.
func TestSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if got := sample(rng, 16, 16); got != nil {
		t.Errorf("n = k: %v, want nil (every row)", got)
	}
	seen := make([]int, 40)
	for range 2000 {
		rows := sample(rng, 40, 16)
		if len(rows) != 16 || !slices.IsSorted(rows) || len(slices.Compact(slices.Clone(rows))) != 16 || rows[0] < 0 || rows[15] >= 40 {
			t.Fatalf("rows %v: want 16 distinct rows of 40, increasing", rows)
		}
		for _, r := range rows {
			seen[r]++
		}
	}
	// Each row is drawn with probability 16/40: 800 of 2000 times.
	for r, n := range seen {
		if n < 650 || n > 950 {
			t.Errorf("row %d drawn %d times of 2000, want about 800", r, n)
		}
	}
	a := sample(rand.New(rand.NewPCG(7, 7)), 1<<23, 16)
	b := sample(rand.New(rand.NewPCG(7, 7)), 1<<23, 16)
	if !slices.Equal(a, b) || a[15] >= 1<<23 {
		t.Errorf("the same seed: %v and %v", a, b)
	}
}

// TestSmallTiming: small timing problems on PoCL and under compute-sanitizer
// only.
func TestSmallTiming(t *testing.T) {
	for _, tc := range []struct {
		platform, sanitizer string
		want                bool
	}{{"NVIDIA CUDA", "", false}, {"Portable Computing Language", "", true}, {"NVIDIA CUDA", "racecheck", true}} {
		t.Setenv(cuda.SanitizeEnv, tc.sanitizer)
		s := &session{info: engine.Info{Platform: tc.platform}}
		if got := s.smallTiming(); got != tc.want {
			t.Errorf("%s, %s=%q: smallTiming %v, want %v", tc.platform, cuda.SanitizeEnv, tc.sanitizer, got, tc.want)
		}
	}
}
