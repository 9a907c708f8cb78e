package kmedoids

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// line is items on a line: the distance is |x_i - x_j|.
type line []float64

func (l line) Len() int                  { return len(l) }
func (l line) Distance(i, j int) float64 { return math.Abs(l[i] - l[j]) }

// TestByHand: items 0, 1, 2 and 10, 11, 13 from medoids 0 and 1 (items 0
// and 1). First assignment: {0} and {1, 2, 10, 11, 13}. The second cluster's
// sums of distances are 1:34, 2:30, 10:30, 11:32, 13:38, so its medoid moves
// to item 2 (value 2; it ties with 10, and the lower index wins). Then
// {0, 1} and {2, 10, 11, 13}: medoids 0 (tie with 1) and 10 (sums: 2:30,
// 10:12, 11:13, 13:17). Then {0, 1, 2} and {10, 11, 13}: medoids 1 and 11;
// then stable. Cost 1 + 0 + 1 + 1 + 0 + 2 = 5.
func TestByHand(t *testing.T) {
	x := line{0, 1, 2, 10, 11, 13}
	r, err := Fit(x, Config{K: 2, Medoids: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Medoids[0] != 1 || r.Medoids[1] != 4 || r.Cost != 5 {
		t.Errorf("medoids %v cost %g, want [1 4] and 5 (history %v)", r.Medoids, r.Cost, r.History)
	}
	if want := []int32{0, 0, 0, 1, 1, 1}; !slices.Equal(r.Labels, want) {
		t.Errorf("labels %v", r.Labels)
	}
	for i := 1; i < len(r.History); i++ {
		if r.History[i] > r.History[i-1] {
			t.Errorf("cost rose: %v", r.History)
		}
	}
}

func TestClusters(t *testing.T) {
	list, off := Clusters([]int32{1, 0, 1, 2, 0}, 3)
	if want := []int32{1, 4, 0, 2, 3}; !slices.Equal(list, want) || !slices.Equal(off, []int32{0, 2, 4, 5}) {
		t.Errorf("list %v offsets %v", list, off)
	}
}

// TestSeparated: three far-apart groups on a line come back whole from
// k-medoids++ and from random starts, and the same seed repeats the run.
func TestSeparated(t *testing.T) {
	var x line
	for g := range 3 {
		for i := range 20 {
			x = append(x, float64(g*1000+i))
		}
	}
	for _, init := range []Init{PlusPlus, Random} {
		r, err := Fit(x, Config{K: 3, Seed: 4, Init: init})
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Fit(x, Config{K: 3, Seed: 4, Init: init})
		if !slices.Equal(r.Labels, again.Labels) {
			t.Errorf("init %d: the same seed gave another run", init)
		}
		if init == PlusPlus {
			for i := range x {
				if r.Labels[i] != r.Labels[i/20*20] {
					t.Errorf("k-medoids++: item %d split from its group", i)
					break
				}
			}
			if r.Cost != 3*100 { // each group of 0..19 around its medoid 9 or 10: 100
				t.Errorf("cost %g, want 300", r.Cost)
			}
		}
	}
}

func TestBadConfig(t *testing.T) {
	x := line{1, 2, 3}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{K: 4}, "K = 4 exceeds the 3 items"},
		{Config{K: 0}, "K = 0"},
		{Config{K: 2, Medoids: []int{0}}, "1 initial medoids for K = 2"},
		{Config{K: 2, Medoids: []int{0, 0}}, "repeated"},
		{Config{K: 2, Medoids: []int{0, 5}}, "out of range"},
	} {
		if _, err := Fit(x, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// failing passes fail their update from the given iteration on.
type failing struct {
	line
	from, calls int
}

func (f *failing) Assign(medoids []int, labels []int32, dist []float64) error {
	return CPU(f.line).Assign(medoids, labels, dist)
}

func (f *failing) Update(labels []int32, medoids []int) ([]int, int64, error) {
	if f.calls++; f.calls >= f.from {
		return nil, 0, errors.New("device lost")
	}
	return CPU(f.line).Update(labels, medoids)
}

// TestRunErrors: Run passes a device's error on, naming the iteration; and
// Run with CPU passes is Fit.
func TestRunErrors(t *testing.T) {
	x := line{0, 1, 2, 10, 11, 13}
	if _, err := Run(&failing{line: x, from: 2}, Config{K: 2, Medoids: []int{0, 1}}); err == nil || !strings.Contains(err.Error(), "iteration 2, update: device lost") {
		t.Errorf("Run: %v", err)
	}
	a, _ := Run(CPU(x), Config{K: 2, Seed: 3})
	b, _ := Fit(x, Config{K: 2, Seed: 3})
	if !slices.Equal(a.Medoids, b.Medoids) || a.Cost != b.Cost {
		t.Errorf("Run(CPU) %v %g, Fit %v %g", a.Medoids, a.Cost, b.Medoids, b.Cost)
	}
}

func TestInitString(t *testing.T) {
	for _, tc := range []struct {
		init Init
		want string
	}{{PlusPlus, "k-medoids++"}, {Random, "random"}, {Init(7), "Init(7)"}} {
		if got := tc.init.String(); got != tc.want {
			t.Errorf("%d: %q, want %q", int(tc.init), got, tc.want)
		}
	}
}
