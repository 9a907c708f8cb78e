package warps

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/plot"
	"gpulab/kernels"
)

// recorded reads the H200 runs of a suite kept in docs/results.
func recorded(t *testing.T, suite string) []bench.Record {
	t.Helper()
	var all []bench.Record
	for _, run := range RecordedRuns(suite) {
		recs, err := bench.ReadJSON(filepath.Join("..", "..", "docs", "results", run.File))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
	return all
}

func TestMeasure(t *testing.T) {
	if _, err := Measure([]string{"cpu"}, "intensity", []string{"64K"}, nil); err == nil || !strings.Contains(err.Error(), "intensity on cpu") {
		t.Errorf("the CPU device ran a kernel suite: %v", err)
	}
	if _, err := Measure(nil, "no-such-suite", nil, nil); err == nil {
		t.Error("an unknown suite ran")
	}
	var ids []string
	for _, id := range engine.IDs() {
		if kind, _, _ := strings.Cut(id, ":"); kind == string(engine.OpenCL) || kind == string(engine.CUDA) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		t.Skip("no CUDA or OpenCL device")
	}
	var progress strings.Builder
	recs, err := Measure(ids, "intensity", []string{"64K"}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(ids)*len(intensityFs) {
		t.Errorf("%d records for %d devices and %d variants", len(recs), len(ids), len(intensityFs))
	}
	for _, r := range recs {
		if !r.OK || r.Suite != "intensity" || r.Size != "64K" || r.Reps < LessonOptions.MinReps {
			t.Errorf("record %+v", r)
		}
	}
	for _, id := range ids {
		if !strings.Contains(progress.String(), "intensity on "+id+": 10 cases") {
			t.Errorf("progress %q lacks %s", progress.String(), id)
		}
	}
}

func TestKernelSteps(t *testing.T) {
	for _, suite := range Suites {
		for _, f := range []kernels.Family{kernels.CUDAFamily, kernels.OpenCLFamily} {
			steps, err := KernelSteps(f, suite)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != 1 || steps[0].Name != suite || steps[0].File != "warps/"+suite+f.Ext {
				t.Errorf("%s %s: %+v", f.Dir, suite, steps)
			}
			if h := kernels.Header(steps[0].Code); len(strings.Split(h, "\n")) < 5 {
				t.Errorf("%s %s: the header comment is %q", f.Dir, suite, h)
			}
		}
	}
	if _, err := KernelSteps(kernels.CUDAFamily, "nosuch"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown experiment: %v", err)
	}
}

func TestRecordedRuns(t *testing.T) {
	for _, suite := range Suites {
		runs := RecordedRuns(suite)
		if len(runs) != len(recordedDevices) {
			t.Fatalf("%s: %d runs", suite, len(runs))
		}
		for i, run := range runs {
			recs, err := bench.ReadJSON(filepath.Join("..", "..", "docs", "results", run.File))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Suite != suite || r.Device != recordedDevices[i] || !r.OK {
					t.Errorf("%s: record %s/%s on %s (ok %v)", run.File, r.Suite, r.Variant, r.Device, r.OK)
				}
			}
			want := "lab bench " + suite + " --device " + recordedDevices[i] + " --min-time 20ms --json " + run.File
			if run.Command != want {
				t.Errorf("command %q, want %q", run.Command, want)
			}
		}
	}
}

func TestSeries(t *testing.T) {
	rec := func(name string, x, y float64, ok bool) bench.Record {
		return bench.Record{Variant: name, OK: ok, MedianMS: y, Params: bench.Params{"x": x}}
	}
	recs := []bench.Record{
		rec("b", 4, 40, true), rec("a", 2, 2, true), rec("b", 1, 10, true),
		rec("a", 8, 8, true), rec("b", 2, 20, true), rec("a", 1, 99, false),
	}
	got := Series(recs, func(r bench.Record) string { return r.Variant }, func(r bench.Record) float64 { return r.Params.Float("x") }, ms)
	if len(got) != 2 || got[0].Name != "b" || got[1].Name != "a" {
		t.Fatalf("series %+v: want b then a, in the order they appear", got)
	}
	if !slices.Equal(got[0].X, []float64{1, 2, 4}) || !slices.Equal(got[0].Y, []float64{10, 20, 40}) {
		t.Errorf("b = %v, %v: want its points sorted by x", got[0].X, got[0].Y)
	}
	if !slices.Equal(got[1].X, []float64{2, 8}) || !slices.Equal(got[1].Y, []float64{2, 8}) {
		t.Errorf("a = %v, %v: want the failed record left out", got[1].X, got[1].Y)
	}
}

func TestFiguresOfRecordedRuns(t *testing.T) {
	// Figures per device: two for wgsize (copy, FMA) and intensity (the
	// roofline in two halves), one for the others.
	want := map[string]int{"divergence": 1, "fastmath": 1, "wgsize": 2, "barrier": 1, "occupancy": 1, "intensity": 2, "banks": 1, "filter": 1}
	for _, suite := range Suites {
		figs := Figures(recorded(t, suite))
		if len(figs) != want[suite]*len(recordedDevices) {
			t.Errorf("%s: %d figures, want %d per device", suite, len(figs), want[suite])
		}
		for _, f := range figs {
			if _, err := f.PNG(0, 0); err != nil {
				t.Errorf("%s: %v", suite, err)
			}
			if len(f.Title) > 60 {
				t.Errorf("%s: title %q is too long for the chart", suite, f.Title)
			}
		}
	}
}

func TestSpansDecade(t *testing.T) {
	for _, tc := range []struct {
		ys   [][]float64
		want bool
	}{
		{[][]float64{{106, 2332}}, true},                    // the H200's copy against work-group size
		{[][]float64{{6765, 20000}, {30000, 49016}}, false}, // its FMA chain: under a decade
		{[][]float64{{1}, {10}}, true},                      // across series
		{[][]float64{{0, 100}}, false},                      // no log axis through zero
		{nil, false},
	} {
		var series []plot.Series
		for _, y := range tc.ys {
			series = append(series, plot.Series{X: make([]float64, len(y)), Y: y})
		}
		if got := spansDecade(series); got != tc.want {
			t.Errorf("spansDecade(%v) = %v, want %v", tc.ys, got, tc.want)
		}
	}
}

func TestDivergenceOrder(t *testing.T) {
	var got []string
	for _, r := range divergenceOrder(recorded(t, "divergence")[:9]) {
		got = append(got, r.Variant)
	}
	want := []string{"uniform", "warp_split", "random_p0.01", "random_p0.05", "random_p0.1", "random_p0.25", "alternate_lanes", "random_p0.5", "branchless"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestPeaksOf(t *testing.T) {
	recs := recorded(t, "intensity")
	gflops, gbps := peaksOf(recs)
	if gflops < 66000 || gflops > 68000 || gbps < 4700 || gbps > 4900 {
		t.Errorf("H200 peaks %v GFLOP/s, %v GB/s: want about 66.9 TFLOP/s and 4.8 TB/s", gflops, gbps)
	}
	if g, b := peaksOf([]bench.Record{{GBps: 10}}); g != 0 || b != 0 {
		t.Errorf("records without peaks gave %v, %v", g, b)
	}
}

func TestFilterPanels(t *testing.T) {
	w, h := 48, 32
	img := make([]float32, w*h)
	for i := range img {
		img[i] = float32(i%w) / float32(w)
	}
	cpuDev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FilterPanels(cpuDev, img, w, h); err == nil {
		t.Error("the CPU device filtered")
	}
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		panels, err := FilterPanels(dev, img, w, h)
		if err != nil {
			t.Fatal(err)
		}
		if len(panels) != 2 {
			t.Fatalf("%d panels, want blur and Sobel", len(panels))
		}
		for i, want := range [][]float32{BlurRef(img, w, h), SobelRef(img, w, h)} {
			p := panels[i]
			if !strings.Contains(p.Title, dev.ID) || len(p.RGB) != 3*w*h {
				t.Errorf("panel %q with %d values", p.Title, len(p.RGB))
			}
			for j, v := range want {
				if d := p.RGB[3*j] - v; d > 1e-4 || d < -1e-4 {
					t.Fatalf("%s: pixel %d is %v, want %v", p.Title, j, p.RGB[3*j], v)
				}
			}
		}
	})
}

// TestSamePictures: pictures of one filter that are equal bit for bit are
// shown once, titled with every kernel that drew them; a device that
// disagrees, or another filter with the same pixels, keeps its own panel.
func TestSamePictures(t *testing.T) {
	panel := func(what, run string, px ...float32) FilterPanel {
		return FilterPanel{Title: panelTitle(what, []string{run}), RGB: px, what: what, runs: []string{run}}
	}
	got := samePictures([]FilterPanel{
		panel("blur", "blur_image on opencl:0:0", 1, 2), panel("sobel", "sobel_image on opencl:0:0", 3, 4),
		panel("blur", "blur_image on opencl:1:0", 1, 2), panel("sobel", "sobel_image on opencl:1:0", 3, 5),
		panel("blur", "blur_texture on cuda:0", 1, 2), panel("edges", "edges on cuda:0", 1, 2),
	})
	want := []string{
		"blur by blur_image on opencl:0:0, blur_image on opencl:1:0 and blur_texture on cuda:0, the same picture bit for bit",
		"sobel_image on opencl:0:0: sobel",
		"sobel_image on opencl:1:0: sobel",
		"edges on cuda:0: edges",
	}
	var titles []string
	for _, p := range got {
		titles = append(titles, p.Title)
	}
	if !slices.Equal(titles, want) {
		t.Errorf("titles\n%q\nwant\n%q", titles, want)
	}
}

func TestGrayRGB(t *testing.T) {
	if got := GrayRGB([]float32{0.25, 1}); !slices.Equal(got, []float32{0.25, 0.25, 0.25, 1, 1, 1}) {
		t.Errorf("GrayRGB = %v", got)
	}
}
