package kmeans

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gpulab/datasets"
)

// blobs materializes a Gaussian mixture (datasets.Blobs) as a Matrix.
func blobs(t testing.TB, n, d, k int, seed uint64) (*Matrix, datasets.Blobs) {
	t.Helper()
	b := datasets.Blobs{N: n, D: d, K: k, Seed: seed, Spread: 1, Box: 10}
	x, err := Materialize(b)
	if err != nil {
		t.Fatal(err)
	}
	return x, b
}

// TestLloydByHand checks two iterations worked out on paper: points 0, 1,
// 10, 11 on a line from centers 0 and 10 settle at 0.5 and 10.5, with
// inertia 4·0.25 = 1.
func TestLloydByHand(t *testing.T) {
	x := &Matrix{N: 4, D: 1, X: []float32{0, 1, 10, 11}}
	r, err := Fit(x, Config{K: 2, MaxIters: 2, Centers: []float32{0, 10}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Centers[0] != 0.5 || r.Centers[1] != 10.5 || r.Inertia != 1 {
		t.Errorf("centers %v inertia %g, want [0.5 10.5] and 1", r.Centers, r.Inertia)
	}
	// First assignment against 0 and 10: 0 + 1 + 0 + 1 = 2; second: 1.
	if len(r.History) != 2 || r.History[0] != 2 || r.History[1] != 1 {
		t.Errorf("history %v, want [2 1]", r.History)
	}
	if want := []int32{0, 0, 1, 1}; !slices.Equal(r.Labels, want) || r.Sizes[0] != 2 || r.Sizes[1] != 2 {
		t.Errorf("labels %v sizes %v", r.Labels, r.Sizes)
	}
}

// TestEmptyCluster: a center far from every point gets none, and restarts
// at the point farthest from its center (point 0, the first of the two at
// distance 2.25).
func TestEmptyCluster(t *testing.T) {
	x := &Matrix{N: 4, D: 1, X: []float32{0, 1, 2, 3}}
	r, err := Fit(x, Config{K: 2, MaxIters: 1, Centers: []float32{1.5, 100}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Empty != 1 || r.Centers[1] != 0 {
		t.Errorf("empty %d, centers %v; want 1 re-seed at 0", r.Empty, r.Centers)
	}
}

// TestRecoversBlobs: well-separated blobs come back whole with k-means++,
// and the inertia is about N·D·spread².
func TestRecoversBlobs(t *testing.T) {
	x, b := blobs(t, 3000, 8, 6, 7)
	for _, init := range []Init{KMeansPlusPlus, Random} {
		r, err := Fit(x, Config{K: 6, Seed: 3, Init: init, Tol: 1e-6})
		if err != nil {
			t.Fatal(err)
		}
		// Each found cluster must hold one true blob's points only.
		mixed := Impurity(r.Labels, b.Label)
		want := float64(x.N * x.D)
		if init == KMeansPlusPlus && (mixed > 0 || math.Abs(r.Inertia-want) > 0.1*want) {
			t.Errorf("k-means++: %d points in a foreign cluster, inertia %g (want about %g)", mixed, r.Inertia, want)
		}
		for i := 1; i < len(r.History); i++ {
			if r.History[i] > r.History[i-1]*(1+1e-12) {
				t.Errorf("init %d: inertia rose at iteration %d: %v", init, i, r.History)
			}
		}
		again, _ := Fit(x, Config{K: 6, Seed: 3, Init: init, Tol: 1e-6})
		if !slices.Equal(again.Labels, r.Labels) || again.Inertia != r.Inertia {
			t.Errorf("init %d: the same seed gave a different run", init)
		}
	}
}

func TestBadInput(t *testing.T) {
	x := &Matrix{N: 3, D: 2, X: []float32{0, 1, 2, 3, 4, 5}}
	nan := &Matrix{N: 3, D: 2, X: []float32{0, 1, 2, float32(math.NaN()), 4, 5}}
	for _, tc := range []struct {
		x    *Matrix
		cfg  Config
		want string
	}{
		{x, Config{K: 4}, "K = 4 exceeds the 3 points"},
		{x, Config{K: 0}, "K = 0"},
		{x, Config{K: -1}, "K = -1"},
		{nan, Config{K: 2}, "point 1, dimension 1 is NaN"},
		{x, Config{K: 2, Centers: []float32{1, 2, 3}}, "3 initial center values for K = 2 centers of 2 dimensions"},
		{&Matrix{N: 3, D: 2, X: []float32{1}}, Config{K: 1}, "1 values for 3 points"},
		{x, Config{K: 1, Tol: -1}, "must not be negative"},
	} {
		if _, err := Fit(tc.x, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestAssign: one assignment pass equals the first iteration of Fit.
func TestAssign(t *testing.T) {
	x, _ := blobs(t, 500, 5, 4, 2)
	init, err := initialCenters(x, Config{K: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Fit(x, Config{K: 4, MaxIters: 1, Centers: append([]float32(nil), init...)})
	if err != nil {
		t.Fatal(err)
	}
	_, inertia, err := Assign(x, init, 4)
	if err != nil || inertia != r.History[0] {
		t.Errorf("Assign inertia %g (%v), Fit's first iteration %g", inertia, err, r.History[0])
	}
	if _, _, err := Assign(x, init[:3], 4); err == nil {
		t.Error("3 center values for K = 4 accepted")
	}
}

// TestProject2D: points spread along one axis and a little along another,
// in 5 dimensions, come out with that spread on the first two coordinates.
func TestProject2D(t *testing.T) {
	n := 200
	x := &Matrix{N: n, D: 5, X: make([]float32, n*5)}
	for i := range n {
		x.X[i*5+2] = float32(i - n/2)       // variance about n²/12 along dimension 2
		x.X[i*5+4] = float32((i%4)-2) * 0.5 // much smaller along dimension 4
	}
	p := Project2D(x)
	var v0, v1 float64
	for i := range n {
		v0 += float64(p[2*i] * p[2*i])
		v1 += float64(p[2*i+1] * p[2*i+1])
	}
	// Centred: the first point is 99.5 from the mean along the main axis (either sign).
	if math.Abs(math.Abs(float64(p[0]))-99.5) > 1e-3 || v1 > v0/100 || v1 == 0 {
		t.Errorf("first point at %g, variances %g and %g", p[0], v0/float64(n), v1/float64(n))
	}
}

// TestChunkRows: a pass's buffer never outgrows the data (two wide rows
// read as two rows, not rowChunk of them), nor 16 MiB unless a row does.
func TestChunkRows(t *testing.T) {
	for _, tc := range []struct{ n, d, want int }{
		{2, 1 << 22, 1}, {2, 8, 2}, {100000, 1536, 2730}, {100000, 16, rowChunk}, {1, 1 << 30, 1}, {0, 8, 1},
	} {
		if got := chunkRows(tc.n, tc.d); got != tc.want {
			t.Errorf("chunkRows(%d, %d) = %d, want %d", tc.n, tc.d, got, tc.want)
		}
	}
}
