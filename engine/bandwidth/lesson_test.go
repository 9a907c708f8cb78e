package bandwidth

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

func TestCopyStory(t *testing.T) {
	recs, err := bench.ReadJSON("../../docs/results/h200-copy-cuda.json")
	if err != nil {
		t.Fatal(err)
	}
	story := CopyStory(recs)
	var base, f4 bench.Record
	for _, r := range bench.OfSize(recs, "1G") {
		switch r.Variant {
		case "memcpy_dtod":
			base = r
		case "copy_f4":
			f4 = r
		}
	}
	for _, want := range []string{
		"- **NVIDIA H200** (`cuda:0`), at 1G per array: the baseline `memcpy_dtod` moved " + gbps(base.GBps),
		fmt.Sprintf("`copy_f4` %.2f×", f4.GBps/base.GBps),
		"At 1M per array the baseline moved",
	} {
		if !strings.Contains(story, want) {
			t.Errorf("lacks %q:\n%s", want, story)
		}
	}
	// The H100 host's copies: its 1M go_serial and 64M go_parallel rows
	// are a cache's rates, which the story says, with no share of the peak.
	host := []bench.Record{
		{Suite: "copy", Device: "cpu", DeviceName: "CPU", Variant: "go_serial", Baseline: "go_serial", Size: "1M", GBps: 41, PctPeakGBps: 86.3, InCache: true, OK: true},
		{Suite: "copy", Device: "cpu", DeviceName: "CPU", Variant: "go_serial", Baseline: "go_serial", Size: "64M", GBps: 12.4, PctPeakGBps: 26.1, OK: true},
		{Suite: "copy", Device: "cpu", DeviceName: "CPU", Variant: "go_parallel", Baseline: "go_serial", Size: "64M", GBps: 140.5, PctPeakGBps: 295, Speedup: 11.32, OK: true},
	}
	want := "- **CPU** (`cpu`), at 64M per array: the baseline `go_serial` moved 12.4 GB/s, 26% of the device's peak; " +
		"against it, `go_parallel` 11.32× ‡ (effective: more than memory can move, so caches served part of it). " +
		"At 1M per array the baseline moved 41 GB/s ‡ (effective: every byte it moves fits in the last-level cache, so the cache served it, not memory).\n"
	if got := CopyStory(host); got != want {
		t.Errorf("host story:\n%s\nwant:\n%s", got, want)
	}
	if CopyStory(nil) != "" {
		t.Error("a story of nothing")
	}
}

func TestInFlight(t *testing.T) {
	md := InFlight([]engine.Info{{ID: "cuda:0", Name: "GPU", Kind: engine.CUDA, PeakGBps: 4800}, {ID: "cpu", Name: "CPU", Kind: engine.CPU}})
	if md != "- **GPU** (`cuda:0`): 4.8 TB/s × 600 ns ≈ 2.88 MB in flight.\n" {
		t.Errorf("%q", md)
	}
}

// TestCopyFigures: the H100 run's twelve copy lines become charts of at
// most bench.MaxSeries lines, host-memory devices apart from GPUs, and the
// % chart leaves out the rows served from cache.
func TestCopyFigures(t *testing.T) {
	var recs []bench.Record
	add := func(dev string, onCPU bool, variants ...string) {
		for _, v := range variants {
			for i, size := range []string{"1M", "64M"} {
				recs = append(recs, bench.Record{Suite: "copy", Device: dev, OnCPU: onCPU, Variant: v, Size: size, OK: true,
					Params: bench.Params{"bytes": float64(int(1) << (20 + 6*i))}, GBps: 10, PctPeakGBps: 50, InCache: i == 0 && onCPU})
			}
		}
	}
	add("cpu", true, "go_serial", "go_parallel")
	add("opencl:0:0", true, "clEnqueueCopyBuffer", "copy_f32", "copy_f4")
	add("opencl:1:0", false, "clEnqueueCopyBuffer", "copy_f32", "copy_f4")
	add("cuda:0", false, "memcpy_dtod", "copy_f32", "copy_f4", "copy_f4_grid_stride")
	// A third size, so that the host's % chart keeps two once its
	// cache-served 1M rows are left out.
	for _, r := range slices.Clone(recs) {
		if r.Size == "64M" {
			r.Size, r.Params = "256M", bench.Params{"bytes": float64(256 << 20)}
			recs = append(recs, r)
		}
	}
	figs := CopyFigures(recs)
	if len(figs) != 4 {
		t.Fatalf("%d charts, want 4", len(figs))
	}
	if n := len(CopyFigures(slices.DeleteFunc(slices.Clone(recs), func(r bench.Record) bool { return r.Size == "256M" }))); n != 3 {
		t.Errorf("with the host's %% chart down to one size: %d charts, want 3", n)
	}
	lines := 0
	for _, f := range figs {
		ss := f.Series()
		if len(ss) > bench.MaxSeries {
			t.Errorf("%s: %d lines", f.Title, len(ss))
		}
		lines += len(ss)
		for _, s := range ss {
			if strings.Contains(f.Title, "% of") && strings.Contains(f.Title, "host") && len(s.X) != 2 {
				t.Errorf("%s: %s keeps its cache-served point: %v", f.Title, s.Name, s.X)
			}
		}
	}
	if lines != 24 {
		t.Errorf("%d lines in all, want 12 twice", lines)
	}
}

func TestGridStrideStory(t *testing.T) {
	rec := func(v string, ms, gb float64) bench.Record {
		return bench.Record{Suite: "copy", Device: "cuda:0", DeviceName: "GPU", Variant: v, Size: "1G", MedianMS: ms, MinMS: ms, GBps: gb, OK: true}
	}
	slower := GridStrideStory([]bench.Record{rec("copy_f4", 1, 3000), rec("copy_f4_grid_stride", 1.064, 2820)})
	if !strings.Contains(slower, "- **GPU** (`cuda:0`), at 1G per array: `copy_f4_grid_stride` moved 2.82 TB/s, `copy_f4` 3 TB/s: the grid-stride loop is slower, at 0.94× `copy_f4`.") {
		t.Errorf("slower:\n%s", slower)
	}
	if even := GridStrideStory([]bench.Record{rec("copy_f4", 1, 3000), rec("copy_f4_grid_stride", 1.001, 2997)}); !strings.Contains(even, "within noise") {
		t.Errorf("even:\n%s", even)
	}
	if none := GridStrideStory([]bench.Record{rec("copy_f4", 1, 3000)}); !strings.Contains(none, "No device here ran") {
		t.Errorf("none:\n%s", none)
	}
}
