package bench

import "testing"

func TestDiffer(t *testing.T) {
	rec := func(median, min float64) Record { return Record{MedianMS: median, MinMS: min} }
	for _, tc := range []struct {
		name        string
		a, b        Record
		differ      bool
		aSlowerThan bool // Slower(a, b)
	}{
		{"equal", rec(1, 0.99), rec(1, 0.99), false, false},
		{"1.02×, spreads overlapping", rec(1.02, 0.9), rec(1, 0.92), false, false},
		{"3% apart: under the floor", rec(1.03, 1.02), rec(1, 0.99), false, false},
		{"1.3×, repeat runs within a few %", rec(1.3, 1.27), rec(1, 0.98), true, true},
		{"1.3×, the baseline's runs spread wide", rec(1.3, 1.27), rec(1, 0.6), true, true},
		{"2.3×, tight runs", rec(2.3, 2.28), rec(1, 0.99), true, true},
		{"2.3× faster", rec(1, 0.99), rec(2.3, 2.28), true, false},
		{"10% apart, runs spread wider", rec(1.1, 1.04), rec(1, 0.9), true, true},
		{"the medians apart, the fastest runs alike", rec(1.3, 0.99), rec(1, 0.98), false, false},
		{"the fastest runs apart, the medians alike", rec(1.01, 0.6), rec(1, 0.98), false, false},
		{"two modes: medians and fastest runs disagree", rec(0.84, 0.071), rec(1, 0.06), false, false},
		{"no fastest run: the medians decide", rec(1.3, 0), rec(1, 0), true, true},
	} {
		if got := Differ(tc.a, tc.b); got != tc.differ {
			t.Errorf("%s: Differ = %v, want %v", tc.name, got, tc.differ)
		}
		if got := Differ(tc.b, tc.a); got != tc.differ {
			t.Errorf("%s (swapped): Differ = %v, want %v", tc.name, got, tc.differ)
		}
		if got := Slower(tc.a, tc.b); got != tc.aSlowerThan {
			t.Errorf("%s: Slower = %v, want %v", tc.name, got, tc.aSlowerThan)
		}
		if tc.aSlowerThan && Slower(tc.b, tc.a) {
			t.Errorf("%s: both slower than the other", tc.name)
		}
	}
}
