package sqfd

import (
	"math"
	"testing"

	"gpulab/datasets"
	"gpulab/engine/cluster/kmedoids"
)

// TestMetric: the precomputed self-similarities give the same distances as
// Distance on normalized signatures, and k-medoids runs on it.
func TestSetMetric(t *testing.T) {
	s, err := datasets.SyntheticSignatures(120, 3, 9, Features, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kernel{{Gaussian, 0.5}, {Heuristic, 1}} {
		m, err := NewMetric(s, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][2]int{{0, 1}, {5, 77}, {119, 3}, {8, 8}} {
			want, err := Distance(m.Sigs.Centroids(p[0]), m.Sigs.Centroids(p[1]), Features, k)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Distance(p[0], p[1]); math.Abs(got-want) > 1e-12 {
				t.Errorf("%v %v: %g, Distance says %g", k, p, got, want)
			}
		}
		r, err := kmedoids.Fit(m, kmedoids.Config{K: 8, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Medoids) != 8 || r.Cost <= 0 || r.Evaluations <= int64(120*8) {
			t.Errorf("%v: medoids %v cost %g evaluations %d", k, r.Medoids, r.Cost, r.Evaluations)
		}
	}
	bad := &datasets.Signatures{Dim: 7, Index: []int32{0, 1}, Data: make([]float32, 8)} // weight 0
	if _, err := NewMetric(bad, Kernel{Gaussian, 1}); err == nil {
		t.Error("a signature with zero weight accepted")
	}
}
