package datasets

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestBlobsValidate(t *testing.T) {
	for _, tc := range []struct {
		b    Blobs
		want string // "" for valid
	}{
		{Blobs{N: 10, D: 2, K: 3}, ""},
		{Blobs{N: 10, D: 2, K: 10, Spread: 0.1, Box: 1}, ""},
		{Blobs{N: 0, D: 2, K: 1}, "Blobs.N = 0"},
		{Blobs{N: 10, D: -1, K: 1}, "Blobs.D = -1"},
		{Blobs{N: 10, D: 2, K: 0}, "Blobs.K = 0"},
		{Blobs{N: 10, D: 2, K: 11}, "Blobs.K = 11, want 0 < K <= N = 10"},
		{Blobs{N: 10, D: 2, K: 1, Spread: -1}, "Blobs.Spread = -1"},
		{Blobs{N: 10, D: 2, K: 1, Box: float32(math.NaN())}, "Blobs.Box = NaN"},
	} {
		err := tc.b.Validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate() = %v, want %q", tc.b, err, tc.want)
		}
	}
}

func TestBlobsDeterministic(t *testing.T) {
	b := Blobs{N: 10, D: 7, K: 3, Seed: 42}
	all, again := make([]float32, 10*7), make([]float32, 10*7)
	b.Rows(0, 10, all)
	b.Rows(0, 10, again)
	if !slices.Equal(all, again) {
		t.Error("two calls of Rows(0, 10) differ")
	}
	part := make([]float32, 3*7)
	b.Rows(5, 3, part)
	if !slices.Equal(part, all[5*7:8*7]) {
		t.Errorf("Rows(5, 3) = %v, want rows 5..7 of Rows(0, 10) = %v", part, all[5*7:8*7])
	}
	b.Seed++
	b.Rows(0, 10, again)
	if slices.Equal(all, again) {
		t.Error("another seed gives the same rows")
	}
}

func TestBlobsClusters(t *testing.T) {
	b := Blobs{N: 1000, D: 16, K: 5, Seed: 7, Spread: 0.5}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	centers := b.Centers()
	for _, c := range centers {
		if c < -10 || c >= 10 {
			t.Fatalf("center coordinate %v outside [-10, 10)", c)
		}
	}
	x := make([]float32, b.N*b.D)
	b.Rows(0, b.N, x)
	count := make([]int, b.K)
	var sum float64
	for i := range b.N {
		l := b.Label(i)
		if l < 0 || l >= b.K {
			t.Fatalf("Label(%d) = %d outside [0, %d)", i, l, b.K)
		}
		count[l]++
		for k := range b.D {
			d := float64(x[i*b.D+k] - centers[l*b.D+k])
			sum += d * d
		}
	}
	if slices.Contains(count, 0) {
		t.Errorf("label counts %v: some center has no points", count)
	}
	want := float64(b.D) * 0.5 * 0.5
	if msd := sum / float64(b.N); math.Abs(msd-want) > 0.2*want {
		t.Errorf("mean squared distance to own center %.3f, want %.3f ± 20%%", msd, want)
	}
}
