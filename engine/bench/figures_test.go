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
	for _, f := range RooflineOf("r", dev, recs) {
		if _, err := f.PNG(400, 300); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRooflineOfSplits: eleven points make two charts of six and five,
// each point in exactly one, named by its variant when suite and size are
// shared; an above-the-roof point renders.
func TestRooflineOfSplits(t *testing.T) {
	dev := engine.Info{ID: "cuda:0", PeakGFLOPS: 66900, PeakGBps: 3350}
	var recs []Record
	for i := range 11 {
		recs = append(recs, Record{Suite: "gemm", Device: "cuda:0", Variant: fmt.Sprintf("%02d_step", i), Size: "4096", OK: true,
			Intensity: 0.25 * float64(i+1) * float64(i+1), GFLOPS: 500 * float64(i+1)})
	}
	recs[2].GFLOPS = 6000 // above the memory roof at 2.25 FLOP/B: cache-served
	figs := RooflineOf("GEMM steps on cuda:0 (FP32 roof), 4096", dev, recs)
	if len(figs) != 2 {
		t.Fatalf("%d charts, want 2", len(figs))
	}
	var names []string
	for i, f := range figs {
		if n := len(f.RooflinePoints()); n > MaxSeries || n < 5 {
			t.Errorf("chart %d has %d points", i, n)
		}
		if !strings.HasSuffix(f.Title, fmt.Sprintf("(%d of 2)", i+1)) {
			t.Errorf("title %q", f.Title)
		}
		for _, p := range f.RooflinePoints() {
			names = append(names, p.Name)
		}
		if _, err := f.PNG(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(names) != 11 || names[0] != "00_step" || names[10] != "10_step" {
		t.Errorf("points %v", names)
	}
	mixed := RooflineOf("r", dev, append(recs[:1:1], Record{Suite: "gemm", Device: "cuda:0", Variant: "v", Size: "1024", OK: true, Intensity: 1, GFLOPS: 1}))
	if got := mixed[0].RooflinePoints()[1].Name; got != "gemm v 1024" {
		t.Errorf("with two sizes a point is named %q", got)
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
