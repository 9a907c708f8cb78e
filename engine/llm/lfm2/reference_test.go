package lfm2

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestReferenceExports: the exported RMSNorm and Route give the forward
// pass's results and refuse inputs that would make it panic.
func TestReferenceExports(t *testing.T) {
	x, w := []float32{3, -4}, []float32{1, 0.5}
	y := make([]float32, 2)
	// mean(x²) = 12.5, so y = x / √12.5 · w.
	if err := RMSNorm(y, x, w, 0); err != nil || math.Abs(float64(y[0])-0.8485281) > 1e-6 || math.Abs(float64(y[1])+0.5656854) > 1e-6 {
		t.Errorf("RMSNorm = %v, %v; want [0.8485281 -0.5656854]", y, err)
	}
	c := &Config{ExpertsPerToken: 2, NormTopK: true, RoutedScaling: 1}
	logits, bias := []float32{0, 2, 1, 2}, []float32{0, 0, 5, 0}
	idx, wts, err := Route(c, logits, bias)
	wantIdx, wantW := route(c, logits, bias)
	if err != nil || !slices.Equal(idx, wantIdx) || !slices.Equal(wts, wantW) || !slices.Equal(idx, []int{2, 1}) {
		t.Errorf("Route = %v %v %v, want %v %v", idx, wts, err, wantIdx, wantW)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"RMSNorm of an empty row", RMSNorm(nil, nil, nil, 1e-5), "want equal, non-zero lengths"},
		{"RMSNorm with short weights", RMSNorm(y, x, w[:1], 1e-5), "with 1 weights"},
		{"Route of more experts than there are", second(Route(&Config{ExpertsPerToken: 5}, logits, nil)), "route 5 of 4 experts"},
		{"Route of no expert", second(Route(&Config{}, logits, nil)), "route 0 of 4 experts"},
		{"Route with short biases", second(Route(c, logits, bias[:3])), "4 experts with 3 biases"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

func second(_ []int, _ []float32, err error) error { return err }
