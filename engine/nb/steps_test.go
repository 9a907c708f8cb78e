package nb

import (
	"strings"
	"testing"

	"gpulab/engine/bench"
	"gpulab/kernels"
)

func TestStepsMarkdown(t *testing.T) {
	steps := []kernels.Step{
		{Name: "01_a", File: "x/01_a.cu", Code: "// Idea: one.\n// Cost: two.\nint a = 1;\n"},
		{Name: "02_b", File: "x/02_b.cu", Code: "// Idea: three.\nint a = 2;\n"},
	}
	md := StepsMarkdown(steps, "cpp")
	if len(md) != 2 {
		t.Fatalf("%d outputs", len(md))
	}
	for _, want := range []string{"#### `01_a` (`x/01_a.cu`)", "```text\nIdea: one.\nCost: two.\n```", "▸ the whole of <code>01_a.cu</code>", "```cpp\n// Idea: one."} {
		if !strings.Contains(md[0], want) {
			t.Errorf("step 1 lacks %q:\n%s", want, md[0])
		}
	}
	if strings.Contains(md[0], "what changed") || !strings.Contains(md[1], "what changed since <code>01_a.cu</code>") || !strings.Contains(md[1], "-int a = 1;") || !strings.Contains(md[1], "+int a = 2;") {
		t.Errorf("diffs:\n%s\n%s", md[0], md[1])
	}
}

func TestRecordedMarkdown(t *testing.T) {
	recs := []bench.Record{{Suite: "gemm", Variant: "01_naive", Device: "cuda:0", DeviceName: "NVIDIA H200", Size: "4096", Commit: "abc123", Date: "2026-11-21T10:00:00Z", OK: true}}
	md, err := RecordedMarkdown(recs, "lab bench gemm --device cuda:0 --size 4096")
	if err != nil || !strings.HasPrefix(md, "*Recorded on NVIDIA H200 (`cuda:0`), commit `abc123`, 2026-11-21, with `lab bench gemm --device cuda:0 --size 4096`:*\n\n|") {
		t.Errorf("%s (%v)", md, err)
	}
	recs[0].Date = ""
	if _, err := RecordedMarkdown(recs, "lab bench gemm"); err == nil || !strings.Contains(err.Error(), "lacks its date") {
		t.Errorf("records without a date: %v", err)
	}
	recs[0].Date = "2026-11-21T10:00:00Z"
	if len(MeasuredFigures(strings.SplitN(md, "\n", 2)[0])) != 0 {
		t.Errorf("the caption types a figure: %s", md)
	}
	cpu, two := recs[0], recs[0]
	cpu.Device, cpu.DeviceName = "cpu", "the host's CPU"
	two.Device, two.DeviceName = "cuda:0,cuda:1", "2 × NVIDIA H200"
	dirty := recs[0]
	dirty.Commit = "abc123-dirty"
	other := recs[0]
	other.Commit = "def456"
	for _, tc := range []struct {
		recs []bench.Record
		want string
	}{
		{[]bench.Record{cpu, recs[0], recs[0], two}, "*Recorded on the host's CPU (`cpu`) and NVIDIA H200 (`cuda:0`) and 2 × NVIDIA H200 (`cuda:0,cuda:1`), commit `abc123`, 2026-11-21,"},
		{[]bench.Record{dirty}, "commit `abc123-dirty` (built with uncommitted changes: not exactly that commit's code), 2026-11-21"},
		{[]bench.Record{recs[0], other}, "commits `abc123`, `def456` (rows of several runs), 2026-11-21"},
	} {
		if md, err := RecordedMarkdown(tc.recs, "lab bench"); err != nil || !strings.Contains(strings.SplitN(md, "\n", 2)[0], tc.want) {
			t.Errorf("want a caption with %q, got:\n%s (%v)", tc.want, md, err)
		}
	}
}
