package bench

import (
	"testing"

	"gpulab/engine"
)

func TestFigures(t *testing.T) {
	recs := []Record{
		{Device: "cpu", Variant: "base", Size: "1M", Params: Params{"bytes": 1 << 20}, OK: true, GBps: 10, GFLOPS: 1, Intensity: 0.1, Speedup: 1},
		{Device: "cpu", Variant: "fast", Size: "1M", Params: Params{"bytes": 1 << 20}, OK: true, GBps: 20, GFLOPS: 2, Intensity: 0.1, Speedup: 2},
		{Device: "cpu", Variant: "fast", Size: "4M", Params: Params{"bytes": float64(4 << 20)}, OK: true, GBps: 30, GFLOPS: 3, Intensity: 0.1, Speedup: 3},
		{Device: "cpu", Variant: "broken", Size: "4M", Params: Params{"bytes": 4 << 20}, OK: false, GBps: 99},
	}
	lines := SizeLines("t", "bytes", GBps, recs, ByVariant)
	if _, err := lines.PNG(400, 300); err != nil {
		t.Fatal(err)
	}
	if got := Sizes(recs); len(got) != 2 || got[1] != "4M" {
		t.Errorf("Sizes = %v", got)
	}
	if got := OfSize(recs, "1M"); len(got) != 2 {
		t.Errorf("OfSize = %v", got)
	}
	if _, err := SpeedupBars("s", OfSize(recs, "1M")).PNG(400, 300); err != nil {
		t.Fatal(err)
	}
	dev := engine.Info{ID: "cpu", PeakGFLOPS: 100, PeakGBps: 50}
	if _, err := RooflineOf("r", dev, recs).PNG(400, 300); err != nil {
		t.Fatal(err)
	}
}
