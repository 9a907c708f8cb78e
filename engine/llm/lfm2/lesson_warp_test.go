package lfm2

import (
	"math"
	"strings"
	"testing"
)

// TestWarpXorSum: lanes holding 0..31 hold 496 each after five rounds;
// after the first, lane i holds i + (i^16).
func TestWarpXorSum(t *testing.T) {
	var lanes [WarpSize]float32
	for i := range lanes {
		lanes[i] = float32(i)
	}
	rounds := WarpXorSum(lanes)
	if len(rounds) != 6 || rounds[0] != lanes {
		t.Fatalf("%d rounds, first %v", len(rounds), rounds[0])
	}
	for i, v := range rounds[1] {
		if want := float32(i + (i ^ 16)); v != want {
			t.Errorf("round 1, lane %d: %g, want %g", i, v, want)
		}
	}
	for i, v := range rounds[5] {
		if v != 496 {
			t.Errorf("round 5, lane %d: %g, want 496", i, v)
		}
	}
}

// TestLaneSquares: lane i sums the squares of elements i, i+32, ...
func TestLaneSquares(t *testing.T) {
	row := make([]float32, 70)
	for i := range row {
		row[i] = float32(i % 3)
	}
	lanes := LaneSquares(row)
	for i, v := range lanes {
		var want float32
		for j := i; j < len(row); j += WarpSize {
			want += row[j] * row[j]
		}
		if v != want {
			t.Errorf("lane %d: %g, want %g", i, v, want)
		}
	}
}

// TestWarpSumMarkdown: a row of 64 ones: every round halves the different
// values, the sum is 64, and the scale is 1/√(1 + ε).
func TestWarpSumMarkdown(t *testing.T) {
	row := make([]float32, 64)
	for i := range row {
		row[i] = 1
	}
	md := WarpSumMarkdown(row, 0)
	for _, want := range []string{"| 0 | (each lane's own share) | 2 | 1 | 1 |", "| 5 | `v += __shfl_xor_sync(mask, v, 1)` | 64 | 32 | 1 |",
		"every lane holds Σx² = 64 over the row's 64 values", "1/√(Σx²/64 + ε) = 1.", "log₂ 32 = 5 rounds"} {
		if !strings.Contains(md, want) {
			t.Errorf("WarpSumMarkdown lacks %q:\n%s", want, md)
		}
	}
	if math.IsNaN(float64(WarpXorSum(LaneSquares(row))[5][0])) {
		t.Error("NaN sum")
	}
}
