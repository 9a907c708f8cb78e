package gemm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// recorded is the H200 run that docs/gemm.md records.
func recorded(t *testing.T) []bench.Record {
	t.Helper()
	recs, err := bench.ReadJSON("../../docs/results/h200-gemm-cuda.json")
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestSteps(t *testing.T) {
	for _, kind := range []engine.Kind{engine.CUDA, engine.OpenCL, engine.CPU} {
		steps := Steps(kind)
		if len(steps) < 5 {
			t.Fatalf("%s: %d steps", kind, len(steps))
		}
		for i, s := range steps {
			if s.Code == "" || strings.HasPrefix(s.File, "kernels/") || i > 0 && s.Code == steps[i-1].Code {
				t.Errorf("%s step %d: %+v", kind, i, s.File)
			}
		}
	}
}

func TestRidgeMarkdown(t *testing.T) {
	dev := engine.Info{ID: "cuda:0", Name: "test GPU", PeakGFLOPS: 60000, PeakGBps: 3000} // ridge 20 FLOP/byte
	md := RidgeMarkdown([]engine.Info{dev, {ID: "cpu", Name: "no peaks"}}, 4096)
	for _, want := range []string{
		"| `cuda:0` test GPU | 20.0 |",
		" 683: can reach the compute roof |", // 2n³ / 12n² = n/6
		" 0.25: memory-bound |",              // 2 flops per 8 bytes
		" 7.97: memory-bound |",              // 32×32 tiles: 2n / (4·(2n/32 + 1))
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "no peaks") {
		t.Errorf("a device without peaks is in the table:\n%s", md)
	}
}

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
	if !strings.Contains(SlowerSteps(at), "`") && !strings.Contains(SlowerSteps(at), "No step") {
		t.Errorf("SlowerSteps: %q", SlowerSteps(at))
	}
}

func TestChartGroups(t *testing.T) {
	var recs []bench.Record
	for _, r := range recorded(t) {
		if r.Device == "cuda:0" {
			recs = append(recs, r)
		}
	}
	groups := ChartGroups(recs)
	if len(groups) != 3 || groups[0].Title != "FP32 steps 01–05" || groups[2].Title != "tensor-core steps" {
		t.Fatalf("%d groups: %v", len(groups), groups)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		variants := map[string]bool{}
		for _, r := range g.Recs {
			variants[r.Variant], seen[r.Variant] = true, true
		}
		if len(variants) > 8 || len(variants) < 2 {
			t.Errorf("%s: %d series", g.Title, len(variants))
		}
	}
	for _, r := range recs {
		if !seen[r.Variant] {
			t.Errorf("%s is in no chart", r.Variant)
		}
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
		"**GPU cuda:1:** at K = 1024 the naive step runs at 990 GFLOP/s", "no power-of-two effect on this device"} {
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
