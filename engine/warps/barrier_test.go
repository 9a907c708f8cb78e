package warps

import (
	"fmt"
	"slices"
	"testing"

	"gpulab/engine"
)

func TestBarrierSuite(t *testing.T) {
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		recs := measureSuite(t, dev, "barrier", "64K")
		limit, err := deviceLimit(g)
		if err != nil {
			t.Fatal(err)
		}
		byVariant := map[string]int{}
		for i, r := range recs {
			byVariant[r.Variant] = i
		}
		for _, l := range localsUpTo(barrierLocals, limit) {
			bar, okBar := byVariant[fmt.Sprintf("bar_l%d", l)]
			_, okNo := byVariant[fmt.Sprintf("nobar_l%d", l)]
			if !okBar || !okNo {
				t.Errorf("local %d: missing bar or nobar in %v", l, byVariant)
				continue
			}
			p := recs[bar].Params
			if want := barrierRounds * (1 << 16) / l; p["barriers"] != want {
				t.Errorf("bar_l%d: barriers %v, want %d", l, p["barriers"], want)
			}
			if _, ok := p["ns_per_barrier"]; !ok {
				t.Errorf("bar_l%d: no ns_per_barrier in %v", l, p)
			}
			if recs[bar].Baseline != fmt.Sprintf("nobar_l%d", l) {
				t.Errorf("bar_l%d compared with %q", l, recs[bar].Baseline)
			}
		}
	})
}

// TestBarrierRef checks the host reference on a small case by hand.
func TestBarrierRef(t *testing.T) {
	for _, tc := range []struct {
		x    []float32
		l, r int
		want []float32
	}{
		{[]float32{1, 3, 5, 7}, 4, 1, []float32{2, 4, 6, 4}},
		{[]float32{1, 3, 5, 7}, 2, 1, []float32{2, 2, 6, 6}},
		{[]float32{1, 3, 5, 7}, 4, 0, []float32{1, 3, 5, 7}},
	} {
		if got := barrierRef(tc.x, tc.l, tc.r); !slices.Equal(got, tc.want) {
			t.Errorf("%v l=%d r=%d: got %v, want %v", tc.x, tc.l, tc.r, got, tc.want)
		}
	}
}

func TestBarrierRejectsCPU(t *testing.T) { rejectsCPU(t, "barrier") }
