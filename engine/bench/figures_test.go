package bench

import (
	"fmt"
	"slices"
	"strings"
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
	// Speedups that span a decade get a log axis; 1x to 2x does not.
	for _, tc := range []struct {
		speedups []float64
		log      bool
	}{{[]float64{1, 2}, false}, {[]float64{1, 70.6}, true}, {[]float64{0.05, 0.3}, true}, {[]float64{1, 9.9}, false}} {
		var sp []Record
		for i, s := range tc.speedups {
			sp = append(sp, Record{Variant: fmt.Sprint("v", i), Size: "1M", OK: true, Speedup: s})
		}
		html, err := SpeedupBars("s", sp).HTML()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(html), `"type":"log"`); got != tc.log {
			t.Errorf("speedups %v: log axis %v, want %v", tc.speedups, got, tc.log)
		}
	}
	dev := engine.Info{ID: "cpu", PeakGFLOPS: 100, PeakGBps: 50}
	if _, err := RooflineOf("r", dev, recs).PNG(400, 300); err != nil {
		t.Fatal(err)
	}
}

// TestSizeSeries: each line's points come in increasing x, whatever the
// order of the records, and records without the parameter, failed or
// without the metric are left out.
func TestSizeSeries(t *testing.T) {
	rec := func(variant string, n any, gflops float64, ok bool) Record {
		return Record{Variant: variant, Params: Params{"n": n}, GFLOPS: gflops, OK: ok}
	}
	recs := []Record{rec("a", 4096, 40, true), rec("b", 4096, 30, true), rec("a", 1024, 10, true), rec("b", float64(1024), 5, true),
		rec("a", 2048, 20, true), rec("b", 2048, 0, true), rec("b", 512, 1, false), {Variant: "a", GFLOPS: 1, OK: true}}
	got := sizeSeries("n", GFLOPS, recs, ByVariant)
	want := []struct {
		name string
		x, y []float64
	}{{"a", []float64{1024, 2048, 4096}, []float64{10, 20, 40}}, {"b", []float64{1024, 4096}, []float64{5, 30}}}
	if len(got) != len(want) {
		t.Fatalf("%d series: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].Name != w.name || !slices.Equal(got[i].X, w.x) || !slices.Equal(got[i].Y, w.y) {
			t.Errorf("series %d = %+v, want %+v", i, got[i], w)
		}
	}
}
