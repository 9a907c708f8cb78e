package gemm

import (
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
