package gemm

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// TestLadderStory: every ratio the story states is the ratio of the two
// records it names, in ladder order, and no measured figure is typed in.
func TestLadderStory(t *testing.T) {
	at := bench.OfSize(recorded(t), "4096")
	story := LadderStory(at)
	speed := map[string]float64{}
	for _, r := range at {
		speed[r.Variant] = r.GFLOPS
	}
	re := regexp.MustCompile("`([0-9a-z_]+)`: ([0-9.]+)× `([0-9a-z_]+)`")
	matches := re.FindAllStringSubmatch(story, -1)
	if len(matches) < 8 {
		t.Fatalf("%d step ratios in:\n%s", len(matches), story)
	}
	for _, m := range matches {
		got, _ := strconv.ParseFloat(m[2], 64)
		want := speed[m[1]] / speed[m[3]]
		if fmt.Sprintf("%.2f", want) != m[2] || got <= 0 {
			t.Errorf("%s over %s: story says %s, records give %.2f", m[1], m[3], m[2], want)
		}
	}
	for _, want := range []string{"`02_coalesced`: ", "× `01_naive`", "The best fp32 step", "of `cublas_sgemm`", "of `cublas_bf16`"} {
		if !strings.Contains(story, want) {
			t.Errorf("story lacks %q:\n%s", want, story)
		}
	}
	// Step 10's tiles are those the search picked, which no card shows
	// when the cards were built before the run tuned them.
	for _, r := range at {
		if tuned, _ := r.Params["tuned"].(string); tuned != "" && !strings.Contains(story, "with tiles "+tuned+" (tuned here for this shape)") {
			t.Errorf("story lacks %s's tiles %s:\n%s", r.Variant, tuned, story)
		}
	}
	if !strings.Contains(SlowerSteps(at), "`") && !strings.Contains(SlowerSteps(at), "No step") {
		t.Errorf("SlowerSteps: %q", SlowerSteps(at))
	}
}

func TestStrideStory(t *testing.T) {
	if s := StrideSweep(); len(s) != 9 || s[4] != "1024x1024x1024" {
		t.Errorf("StrideSweep = %v", s)
	}
	rec := func(dev string, k int, g float64) bench.Record {
		return bench.Record{Device: dev, DeviceName: "GPU " + dev, Variant: "01_naive", Size: fmt.Sprintf("1024x1024x%d", k), GFLOPS: g, OK: true}
	}
	recs := []bench.Record{rec("cuda:0", 1016, 1300), rec("cuda:0", 1020, 1250), rec("cuda:0", 1024, 500), rec("cuda:0", 1028, 1200),
		rec("cuda:1", 1020, 1000), rec("cuda:1", 1024, 990), rec("cuda:1", 1028, 1010)}
	story := StrideStory(recs)
	for _, want := range []string{"**GPU cuda:0:** at K = 1024 the naive step runs at 500 GFLOP/s; at the other K its median is 1.25 TFLOP/s. The power-of-two stride costs it a factor of 2.5.",
		"**GPU cuda:1:** at K = 1024 the naive step runs at 990 GFLOP/s", "the power of two costs it nothing on this device"} {
		if !strings.Contains(story, want) {
			t.Errorf("lacks %q:\n%s", want, story)
		}
	}
}

// TestLadderStoryFlagsImpossibleSpeeds: a step faster than the compute
// peak allows is told as a measurement error.
func TestLadderStoryFlagsImpossibleSpeeds(t *testing.T) {
	recs := []bench.Record{
		{Suite: "gemm", Variant: "cublas", Device: "cuda:0", DeviceName: "GPU", Size: "1024", GFLOPS: 50000, PctPeakGFLOPS: 75, OK: true, Params: bench.Params{"precision": "fp32"}},
		{Suite: "gemm", Variant: "01_naive", Device: "cuda:0", DeviceName: "GPU", Size: "1024", GFLOPS: 90000, PctPeakGFLOPS: 135, Baseline: "cublas", PctOfBaseline: 180, OK: true, Params: bench.Params{"precision": "fp32"}},
	}
	story := LadderStory(recs)
	if !strings.Contains(story, "`01_naive`") || !strings.Contains(story, "✗ (135% of the peak: faster than the hardware's peak allows") {
		t.Errorf("the impossible step is not flagged:\n%s", story)
	}
	if n := strings.Count(story, "✗"); n != 1 {
		t.Errorf("%d flags, want the impossible step's alone:\n%s", n, story)
	}
}

// run is records of one device and size, each step at its GFLOP/s, its
// fastest run 2% under its median: ids "cpu", "opencl:0:0" (with onCPU,
// PoCL) or a GPU's; a ladder of one precision, baseline first.
func run(device, name string, onCPU bool, baseline string, steps ...any) []bench.Record {
	var recs []bench.Record
	for i := 0; i < len(steps); i += 2 {
		g := steps[i+1].(float64)
		recs = append(recs, bench.Record{Suite: "gemm", Device: device, DeviceName: name, OnCPU: onCPU, Size: "256",
			Variant: steps[i].(string), Baseline: baseline, GFLOPS: g, MedianMS: 1000 / g, MinMS: 980 / g,
			PctOfBaseline: 100 * g / steps[1].(float64), OK: true, Params: bench.Params{"precision": "fp32"}})
	}
	return recs
}

// openCLLadder is the OpenCL ladder as PoCL ran it at 256: step 03 within
// noise of step 02, step 05 the largest regression.
func openCLLadder(device, name string, onCPU bool) []bench.Record {
	return run(device, name, onCPU, "01_naive", "01_naive", 4.9, "02_local_tiling", 5.52, "03_more_work_per_thread", 5.56,
		"04_wider_types", 38.0, "05_2d_register_blocking", 17.7, "06_prefetching", 21.7)
}

// TestStoryByPlatform: the story's reasons are those of the platform the
// records come from, and it names and explains the largest regression.
func TestStoryByPlatform(t *testing.T) {
	for _, tc := range []struct {
		name          string
		recs          []bench.Record
		want, notWant []string
	}{
		{"PoCL", openCLLadder("opencl:0:0", "pthread-skylake-avx512-AMD EPYC", true), []string{
			"OpenCL on the CPU's cores (PoCL)",
			"`02_local_tiling`: 1.13× `01_naive` (4.9 GFLOP/s → 5.52 GFLOP/s).",
			"`03_more_work_per_thread`: 1.01× `02_local_tiling` (5.52 GFLOP/s → 5.56 GFLOP/s): no faster beyond noise: work-items are iterations of PoCL's loop",
			"`05_2d_register_blocking`: 0.47× `04_wider_types` (38 GFLOP/s → 17.7 GFLOP/s): slower: a work-item's block of accumulators must outlive the barriers",
			"**Slower than the step before** beyond noise: `05_2d_register_blocking` (0.47× `04_wider_types`).",
			"The largest regression is `05_2d_register_blocking`, at 0.47× the speed of `04_wider_types` (38 GFLOP/s → 17.7 GFLOP/s): a work-item's block of accumulators",
		}, []string{"register pressure", "registers per work-item", "A GPU"}},
		{"the same ladder on a GPU", openCLLadder("opencl:1:0", "NVIDIA H200", false), []string{
			"A GPU: each step changes how the lanes of a warp reach memory",
			"no faster beyond noise: more work per work-item raises register pressure",
			"The largest regression is `05_2d_register_blocking`, at 0.47× the speed of `04_wider_types` (38 GFLOP/s → 17.7 GFLOP/s): its block of accumulators takes about 100 to 128 registers",
		}, []string{"PoCL"}},
		{"Go on the CPU", run("cpu", "AMD EPYC", true, "gonum_sgemm", "gonum_sgemm", 29.6, "01_naive_ijk", 2.74, "02_loop_order_ikj", 6.02,
			"03_transposed_b", 7.24, "04_cache_blocking", 7.46, "05_parallel_blocking", 14.2, "06_register_kernel", 13.0), []string{
			"Plain Go on the CPU's cores",
			"`01_naive_ijk`: 2.74 GFLOP/s, 9% of `gonum_sgemm`.",
			"`04_cache_blocking`: 1.03× `03_transposed_b` (7.24 GFLOP/s → 7.46 GFLOP/s): no faster beyond noise: step 03 was not waiting for memory",
			"The largest regression is `06_register_kernel`, at 0.92× the speed of `05_parallel_blocking` (14.2 GFLOP/s → 13 GFLOP/s): it packs blocks of A and B",
		}, []string{"warp", "`01_naive_ijk`: 0."}},
		{"no regression", run("cuda:0", "NVIDIA H100", false, "cublas_sgemm", "cublas_sgemm", 50000.0, "01_naive", 500.0, "02_coalesced", 5900.0),
			[]string{"`02_coalesced`: 11.80× `01_naive`", "No step was slower than the one before it beyond noise."}, []string{"no faster", "slower:"}},
	} {
		story := RunStory(tc.recs)
		for _, w := range tc.want {
			if !strings.Contains(story, w) {
				t.Errorf("%s: lacks %q:\n%s", tc.name, w, story)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(story, w) {
				t.Errorf("%s: has %q:\n%s", tc.name, w, story)
			}
		}
	}
}

// TestWhyNoGainCoversTheLadders: every step that has a step before it in
// its ladder has a reason on each platform its family runs on, and the
// reasons on a CPU use no GPU mechanism.
func TestWhyNoGainCoversTheLadders(t *testing.T) {
	for _, tc := range []struct {
		kind   engine.Kind
		device string
		onCPU  bool
	}{{engine.CUDA, "cuda:0", false}, {engine.OpenCL, "opencl:1:0", false}, {engine.OpenCL, "opencl:0:0", true}, {engine.CPU, "cpu", true}} {
		baseline := map[Precision]string{} // each precision's first variant: a library call, or OpenCL's naive step
		for _, v := range Variants(tc.kind) {
			if baseline[v.Precision] == "" {
				baseline[v.Precision] = v.Name
			}
		}
		var recs []bench.Record
		for _, v := range Variants(tc.kind) {
			recs = append(recs, bench.Record{Device: tc.device, OnCPU: tc.onCPU, Variant: v.Name, Baseline: baseline[v.Precision],
				GFLOPS: 1, MedianMS: 1, OK: true, Params: bench.Params{"precision": string(v.Precision)}})
		}
		p := platformOf(recs[0])
		n := 0
		for _, l := range ladders(recs) {
			for _, c := range l.changes() {
				n++
				if _, ok := whyNoGain[p][c.step.Variant]; !ok {
					t.Errorf("%s: no reason for %s after %s", tc.device, c.step.Variant, c.prev.Variant)
				}
			}
		}
		if n < 5 {
			t.Errorf("%s: %d steps with a step before them", tc.device, n)
		}
	}
	for _, p := range []platform{openCLOnCPU, goOnCPU} {
		for step, why := range whyNoGain[p] {
			for _, gpuTerm := range []string{"warp", "SM", "coalesc", "shared memory", "bank", "occupancy"} {
				if strings.Contains(why, gpuTerm) {
					t.Errorf("platform %d, %s: a CPU reason with %q: %s", p, step, gpuTerm, why)
				}
			}
		}
	}
}

func TestStridePairStory(t *testing.T) {
	rec := func(dev, size string, g float64) bench.Record {
		return bench.Record{Device: dev, DeviceName: "GPU " + dev, Variant: "01_naive", Size: size, GFLOPS: g, OK: true}
	}
	recs := []bench.Record{rec("cuda:0", "1000x1023x999", 1260), rec("cuda:0", "1024", 485), rec("cuda:0", "2048", 486),
		rec("cuda:1", "1000x1023x999", 1000), {Device: "cuda:0", Variant: "02_coalesced", Size: "1024", OK: true}}
	if kept := len(slices.DeleteFunc(slices.Clone(recs), func(r bench.Record) bool { return !AtStridePair(r) })); kept != 3 {
		t.Errorf("AtStridePair kept %d records, want 3", kept)
	}
	story := StridePairStory(recs)
	want := "**GPU cuda:0 (`cuda:0`):** the naive step runs at 1.26 TFLOP/s at `1000x1023x999` and at 485 GFLOP/s at `1024`. The power-of-two stride costs it a factor of 2.6.\n\n"
	if story != want {
		t.Errorf("story:\n%s\nwant:\n%s", story, want)
	}
	if story := StridePairStory(recs[3:]); !strings.Contains(story, "No device here ran both") {
		t.Errorf("a device with one of the two sizes: %q", story)
	}
	// OpenCL's naive kernel walks columns: an even pair is what its layout
	// predicts, not a property of the device (the H100 copy of lesson 01
	// said "no power-of-two effect on this device" of the H100 via OpenCL).
	cl := StridePairStory([]bench.Record{rec("opencl:1:0", "1000x1023x999", 5860), rec("opencl:1:0", "1024", 5040)})
	if !strings.Contains(cl, "as this kernel's layout predicts: its warps walk columns") || strings.Contains(cl, "on this device") {
		t.Errorf("OpenCL pair:\n%s", cl)
	}
}

// TestSizeFigures: the charts against n hold the n×n×n sizes of one
// device, and need two of them.
func TestSizeFigures(t *testing.T) {
	rec := func(dev, variant string, m, n, k int) bench.Record {
		return bench.Record{Device: dev, Variant: variant, Size: fmt.Sprintf("%dx%dx%d", m, n, k), GFLOPS: 1, OK: true,
			Params: bench.Params{"m": m, "n": n, "k": k, "precision": "fp32"}}
	}
	recs := []bench.Record{rec("cpu", "gonum_sgemm", 128, 128, 128), rec("cpu", "01_naive_ijk", 128, 128, 128),
		rec("cpu", "gonum_sgemm", 255, 257, 129), rec("cpu", "01_naive_ijk", 255, 257, 129),
		rec("cpu", "gonum_sgemm", 256, 256, 256), rec("cpu", "01_naive_ijk", 256, 256, 256), rec("cuda:0", "01_naive", 512, 512, 512)}
	if got := bench.Sizes(cubesOf("cpu", recs)); !slices.Equal(got, []string{"128x128x128", "256x256x256"}) {
		t.Errorf("cubes %v", got)
	}
	figs := SizeFigures("cpu", recs)
	if len(figs) != 1 || !strings.Contains(figs[0].Title, "n×n×n") {
		t.Fatalf("%d figures", len(figs))
	}
	if _, err := figs[0].PNG(400, 300); err != nil {
		t.Error(err)
	}
	if figs := SizeFigures("cuda:0", recs); figs != nil {
		t.Errorf("one cube size gave %d figures", len(figs))
	}
}
