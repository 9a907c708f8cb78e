package warps

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// quick times a case once: the tests check results, not speed.
var quick = bench.Options{Warmup: 1, MinReps: 1, MaxReps: 1, MinTime: time.Nanosecond}

// measureSuite runs every case of suite on dev at size and fails on any
// record that does not pass.
func measureSuite(t *testing.T, dev *engine.Device, suite, size string) []bench.Record {
	t.Helper()
	s, err := bench.Lookup(suite)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := bench.Run(s, dev, []string{size}, quick)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if !r.OK {
			t.Errorf("%s/%s: %s", suite, r.Variant, r.Error)
		}
	}
	return recs
}

func TestWGSizeSuite(t *testing.T) {
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		recs := measureSuite(t, dev, "wgsize", "64K")
		limit, err := deviceLimit(g)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Variant)
			if r.Params["local"].(int) > limit {
				t.Errorf("%s: local %v above the device's %d", r.Variant, r.Params["local"], limit)
			}
		}
		for _, kind := range []string{"copy", "fma"} {
			for _, l := range localsUpTo(wgLocals, min(limit, 256)) {
				for _, v := range []string{fmt.Sprintf("%s_wg%d", kind, l), fmt.Sprintf("%s_wg%d_hint", kind, l)} {
					if !slices.Contains(got, v) {
						t.Errorf("variant %s missing from %v", v, got)
					}
				}
			}
		}
		if r := recs[slices.Index(got, "copy_wg256")]; r.Speedup != 1 || r.Params["hint"] != false {
			t.Errorf("copy_wg256 should be the baseline without the hint: %+v", r)
		}
	})
}

func TestWGSizeSkipsAboveLimit(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  []int
	}{
		{1024, []int{8, 16, 32, 64, 128, 256, 512, 1024}},
		{4096, []int{8, 16, 32, 64, 128, 256, 512, 1024}},
		{512, []int{8, 16, 32, 64, 128, 256, 512}},
		{256, []int{8, 16, 32, 64, 128, 256}},
		{100, []int{8, 16, 32, 64}},
		{4, nil},
	} {
		if got := localsUpTo(wgLocals, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d: got %v, want %v", tc.limit, got, tc.want)
		}
	}
}

// rejectsCPU checks that suite's Cases fails on the CPU device.
func TestWGSizeRejectsCPU(t *testing.T) { rejectsCPU(t, "wgsize") }

func TestWGSizeSweepSizes(t *testing.T) {
	for _, tc := range []struct {
		info engine.Info
		want string
	}{
		{engine.Info{Kind: engine.CPU, PeakGBps: 100}, "1M"},
		{engine.Info{Kind: engine.OpenCL, PeakGBps: 80}, "1M"},
		{engine.Info{Kind: engine.OpenCL, PeakGBps: 4800}, "16M"},
		{engine.Info{Kind: engine.CUDA, PeakGBps: 4800}, "16M"},
	} {
		if got := sizes("1M", "16M")(tc.info); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%+v: got %v, want [%s]", tc.info, got, tc.want)
		}
	}
	if n, err := elements("1M"); n != 1<<20 || err != nil {
		t.Errorf("1M = %d elements, %v", n, err)
	}
}
