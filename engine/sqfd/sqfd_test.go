package sqfd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestBeecksExample is the worked example of Beecks, Uysal and Seidl (CIVR
// 2010) with the heuristic similarity 1/(1 + L2). Query q: (3,3) and (8,7),
// weights 0.5 each; object o: (4,7), (9,5), (8,1), weights 0.5, 0.25, 0.25.
//
//	q·q: 0.25·(1 + 1) + 2·0.25·1/(1+√41)                                 = 0.567539
//	o·o: 0.25 + 2·0.0625 + 2·0.125/(1+√29) + 2·0.125/(1+√52) + 2·0.0625/(1+√17) = 0.468999
//	q·o: 0.25/(1+√17) + 0.125/(1+√40) + 0.125/(1+√29)
//	   + 0.25/(1+4)   + 0.125/(1+√5)  + 0.125/(1+6)                       = 0.191925
//	SQFD = √(0.567539 + 0.468999 − 2·0.191925) = √0.652688 = 0.80789
func TestBeecksExample(t *testing.T) {
	q := []float32{3, 3, 0.5, 8, 7, 0.5}
	o := []float32{4, 7, 0.5, 9, 5, 0.25, 8, 1, 0.25}
	k := Kernel{Heuristic, 1}
	got, err := Distance(q, o, 2, k)
	if err != nil || math.Abs(got-0.808) >= 5e-4 {
		t.Errorf("SQFD = %v (%v), want 0.808", got, err)
	}
	if s := SelfSimilarity(q, 2, k); math.Abs(s-0.567539) > 1e-6 {
		t.Errorf("q·q = %v, want 0.567539", s)
	}
}

func TestKernel(t *testing.T) {
	for _, tc := range []struct {
		k      Kernel
		d2, fd float64
	}{
		{Kernel{Gaussian, 2}, 0, 1},
		{Kernel{Gaussian, 2}, 1.5, math.Exp(-3)},
		{Kernel{Heuristic, 1}, 0, 1},
		{Kernel{Heuristic, 0.5}, 4, 0.4},
	} {
		if got := tc.k.Of(tc.d2); math.Abs(got-tc.fd) > 1e-15 {
			t.Errorf("%v α=%g: f(d²=%g) = %v, want %v", tc.k.Sim, tc.k.Alpha, tc.d2, got, tc.fd)
		}
	}
	for _, s := range []string{"gaussian", "heuristic"} {
		if sim, err := ParseSimilarity(s); err != nil || sim.String() != s {
			t.Errorf("ParseSimilarity(%q) = %v, %v", s, sim, err)
		}
	}
	if _, err := ParseSimilarity("cosine"); err == nil {
		t.Error("ParseSimilarity accepted cosine")
	}
}

// randomSignature has 1 to 6 centroids of dim features in [0, 10), with
// weights that sum to 1.
func randomSignature(rng *rand.Rand, dim int) []float32 {
	s := make([]float32, (1+rng.IntN(6))*(dim+1))
	for i := range s {
		s[i] = 10 * rng.Float32()
		if i%(dim+1) == dim {
			s[i] = 0.05 + rng.Float32()
		}
	}
	if err := Normalize(s, dim); err != nil {
		panic(err)
	}
	return s
}

// TestMetric checks the metric properties on random triples for both
// kernels, which are positive definite (see the package documentation).
func TestMetric(t *testing.T) {
	const dim = 3
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []Kernel{{Gaussian, 0.05}, {Gaussian, 1}, {Heuristic, 1}, {Heuristic, 0.2}} {
		for range 300 {
			a, b, c := randomSignature(rng, dim), randomSignature(rng, dim), randomSignature(rng, dim)
			ab, _ := Distance(a, b, dim, k)
			ba, _ := Distance(b, a, dim, k)
			bc, _ := Distance(b, c, dim, k)
			ac, err := Distance(a, c, dim, k)
			if err != nil {
				t.Fatal(err)
			}
			aa, _ := Distance(a, a, dim, k)
			switch {
			case aa != 0:
				t.Fatalf("%+v: SQFD(a, a) = %g", k, aa)
			case math.Abs(ab-ba) > 1e-12:
				t.Fatalf("%+v: SQFD(a, b) = %v but SQFD(b, a) = %v", k, ab, ba)
			case !(ab >= 0 && bc >= 0 && ac >= 0):
				t.Fatalf("%+v: distances %v %v %v", k, ab, bc, ac)
			case ac > ab+bc+1e-9:
				t.Fatalf("%+v: triangle broken: SQFD(a, c) = %v > %v + %v", k, ac, ab, bc)
			}
		}
	}
}

func TestNormalize(t *testing.T) {
	s := []float32{1, 2, 1, 3, 4, 3}
	if err := Normalize(s, 2); err != nil || s[2] != 0.25 || s[5] != 0.75 {
		t.Errorf("Normalize: %v %v", s, err)
	}
	z := []float32{1, 0, 2, 0}
	if err := Normalize(z, 1); err == nil || !strings.Contains(err.Error(), "weights sum to 0") || z[0] != 1 {
		t.Errorf("zero weights: %v %v", z, err)
	}
}

func TestErrors(t *testing.T) {
	ok := []float32{0, 0, 1}
	nan := float32(math.NaN())
	for _, tc := range []struct {
		a, b []float32
		dim  int
		k    Kernel
		want string
	}{
		{ok, ok, 0, Kernel{Gaussian, 1}, "0 features per centroid"},
		{nil, ok, 2, Kernel{Gaussian, 1}, "signature a is empty"},
		{ok, []float32{1, 2, 3, 4}, 2, Kernel{Gaussian, 1}, "signature b has 4 values, not a whole number of centroids of 2 features"},
		{[]float32{0, 0, 1, 0, nan, 1}, ok, 2, Kernel{Gaussian, 1}, "signature a, centroid 1: feature 1 is NaN"},
		{ok, []float32{0, 0, float32(math.Inf(1))}, 2, Kernel{Gaussian, 1}, "signature b, centroid 0: the weight is +Inf"},
		{ok, ok, 2, Kernel{Gaussian, 0}, "alpha 0: want a finite alpha > 0"},
		{ok, ok, 2, Kernel{Heuristic, math.NaN()}, "alpha NaN"},
		{ok, ok, 2, Kernel{Similarity(7), 1}, "unknown similarity Similarity(7)"},
	} {
		_, err := Distance(tc.a, tc.b, tc.dim, tc.k)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Distance(%v, %v, %d, %+v): %v, want %q", tc.a, tc.b, tc.dim, tc.k, err, tc.want)
		}
	}
	for _, a := range [][]float32{nil, {1, 2}, {0, nan, 1}} {
		if s := SelfSimilarity(a, 2, Kernel{Gaussian, 1}); !math.IsNaN(s) {
			t.Errorf("SelfSimilarity(%v) = %v, want NaN", a, s)
		}
	}
}
