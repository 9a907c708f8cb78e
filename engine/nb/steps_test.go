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
	md := RecordedMarkdown(recs, "lab bench gemm --device cuda:0 --size 4096")
	if !strings.HasPrefix(md, "*Recorded on NVIDIA H200 (`cuda:0`), commit `abc123`, 2026-11-21, with `lab bench gemm --device cuda:0 --size 4096`:*\n\n|") {
		t.Errorf("%s", md)
	}
	if len(MeasuredFigures(strings.SplitN(md, "\n", 2)[0])) != 0 {
		t.Errorf("the caption types a figure: %s", md)
	}
}
