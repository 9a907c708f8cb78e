package warps

import (
	"fmt"
	"testing"

	"gpulab/engine"
)

func TestIntensitySuite(t *testing.T) {
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		recs := measureSuite(t, dev, "intensity", "64K")
		if len(recs) != len(intensityFs) {
			t.Fatalf("%d records, want %d", len(recs), len(intensityFs))
		}
		for i, f := range intensityFs {
			r := recs[i]
			if want := fmt.Sprintf("f%d", f); r.Variant != want {
				t.Errorf("record %d is %s, want %s", i, r.Variant, want)
			}
			if want := float64(f) / 4; r.Intensity != want {
				t.Errorf("%s: intensity %v, want %v flop/byte", r.Variant, r.Intensity, want)
			}
			if f == 1 && (r.Speedup != 1 || r.Baseline != "f1") {
				t.Errorf("f1 should be the baseline: %+v", r)
			}
		}
	})
}

func TestIntensityTolGrowsWithF(t *testing.T) {
	for i := 1; i < len(intensityFs); i++ {
		if fmaTol(intensityFs[i]) <= fmaTol(intensityFs[i-1]) {
			t.Errorf("tolerance for F=%d is not above F=%d's", intensityFs[i], intensityFs[i-1])
		}
	}
}

func TestIntensityRejectsCPU(t *testing.T) { rejectsCPU(t, "intensity") }
