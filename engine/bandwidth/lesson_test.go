package bandwidth

import (
	"fmt"
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
