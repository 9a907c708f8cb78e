package lfm2

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
)

// fixture loads one of the transformers fixtures.
func fixture(t *testing.T, name string) *Fixture {
	t.Helper()
	f, err := LoadFixture(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFixturesDir: the constant names the directory the tests read.
func TestFixturesDir(t *testing.T) {
	if got, want := filepath.Join("..", "..", "..", FixturesDir), fixtures; got != want {
		t.Errorf("FixturesDir under the root is %s, the tests read %s", got, want)
	}
}

// TestCheckReference: on both fixtures the reference is within the
// tolerance of transformers and its greedy continuation is theirs; a
// fixture whose transformers logits were changed fails, saying how far.
func TestCheckReference(t *testing.T) {
	for _, name := range []string{"dense", "moe"} {
		f := fixture(t, name)
		r, err := f.CheckReference()
		if err != nil {
			t.Fatal(err)
		}
		if !(r.MaxDiff > 0 && r.MaxDiff <= ReferenceTolerance) || !slices.Equal(r.Greedy, f.Continuation) {
			t.Errorf("%s: %s", name, r)
		}
		if s := r.String(); !strings.Contains(s, name+": "+f.Config.ModelType) || !strings.Contains(s, "identical to transformers'") {
			t.Errorf("%s: String() = %q", name, s)
		}
	}
	f := fixture(t, "moe")
	f.Logits[5] += 0.01
	if _, err := f.CheckReference(); err == nil || !strings.Contains(err.Error(), "does not match transformers") {
		t.Errorf("a changed logit: %v", err)
	}
}

// TestLoadFixtureErrors: a missing directory or a logits file of the wrong
// shape is an error that names it.
func TestLoadFixtureErrors(t *testing.T) {
	if _, err := LoadFixture(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing fixture loaded")
	}
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors", "ids.json", "greedy.json"} {
		data, err := os.ReadFile(filepath.Join(fixtures, "moe", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "ids.json" {
			data = []byte(`{"batch": [[1, 2], [3, 4]]}`)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(fixtures, "moe", "logits.npy"))
	os.WriteFile(filepath.Join(dir, "logits.npy"), data, 0o644)
	if _, err := LoadFixture(dir); err == nil || !strings.Contains(err.Error(), "want [2 2 211]") {
		t.Errorf("logits for another batch: %v", err)
	}
}

func TestPositionDiffs(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name string
		a, b []float32
		seq  int
		want []float64
	}{
		{"equal", []float32{1, 2, 3, 4}, []float32{1, 2, 3, 4}, 2, []float64{0, 0}},
		// [batch 2, seq 2, vocab 2]: position 1 is rows 1 and 3.
		{"by position", []float32{0, 0, 1, 1, 0, 0.5, 1, 3}, []float32{0, 0, 1, 1.25, 0, 0, 1, 1}, 2, []float64{0.5, 2}},
		{"NaN is infinite", []float32{nan, 0}, []float32{0, 0}, 1, []float64{math.Inf(1)}},
	} {
		if got := PositionDiffs(tc.a, tc.b, tc.seq, 2); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDescribe8B: the pattern, the attention layers and the sizes of
// LFM2-8B-A1B, and of a dense fixture.
func TestDescribe8B(t *testing.T) {
	c, err := Preset("lfm2-8b-a1b")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := LayerPattern(c), "CCacccacccacccacccaccacc"; got != want {
		t.Errorf("pattern %s, want %s", got, want)
	}
	if got, want := AttentionLayers(c), []int{2, 6, 10, 14, 18, 21}; !slices.Equal(got, want) {
		t.Errorf("attention layers %v, want %v", got, want)
	}
	for _, want := range []string{"hidden 2048, 24 layers, vocab 65536, 32 query / 8 KV heads of 64", "32 experts, top-4", "attention at [2 6 10 14 18 21]"} {
		if !strings.Contains(Describe(c), want) {
			t.Errorf("Describe: %q lacks %q", Describe(c), want)
		}
	}
	if d := Describe(fixture(t, "dense").Config); !strings.Contains(d, "dense feed-forward") || !strings.Contains(d, "layers CACCA ") {
		t.Errorf("dense fixture: %q", d)
	}
}

// TestParts8BMarkdown: the table's totals, and the batch-1 decode bound:
// 1 557 740 992 active parameters are 3.12 GB in bf16, and 4.8 TB/s reads
// them at most 1541 times a second.
func TestParts8BMarkdown(t *testing.T) {
	c, _ := Preset("lfm2-8b-a1b")
	if md := PartsMarkdown(c); !strings.Contains(md, "| experts | 22 | 7751.1 M | 968.9 M |") || !strings.Contains(md, "| **all** | | **8339.9 M** | **1557.7 M** |") {
		t.Errorf("PartsMarkdown:\n%s", md)
	}
	md := DecodeBoundMarkdown(c, nil)
	for _, want := range []string{"1.6 billion of the 8.3 billion parameters (18.7%)", "the experts hold 92.9%", "it is also the LM head", "3.12 GB",
		"No GPU runs this notebook, so the bound assumes an NVIDIA H200", "4.8 TB/s", "**1541 tokens/s**"} {
		if !strings.Contains(md, want) {
			t.Errorf("DecodeBoundMarkdown lacks %q:\n%s", want, md)
		}
	}
	// On an H100 (3.35 TB/s), the bound is its own: 3.35e12 / 3.115e9.
	h100 := &engine.Info{ID: "cuda:0", Name: "NVIDIA H100 80GB HBM3", Kind: engine.CUDA, PeakGBps: 3350,
		PeakNote: "sm_90: 132 SMs x 128 FP32 lanes x 2 x 1980 MHz; 5120-bit bus x 2 x 2619 MHz"}
	md = DecodeBoundMarkdown(c, h100)
	for _, want := range []string{"At the bandwidth of this machine's NVIDIA H100 80GB HBM3 (`cuda:0`), 3.35 TB/s (5120-bit bus x 2 x 2619 MHz), that is at most **1075 tokens/s**"} {
		if !strings.Contains(md, want) || strings.Contains(md, "H200") {
			t.Errorf("DecodeBoundMarkdown on an H100 lacks %q or names the H200:\n%s", want, md)
		}
	}
	if ExecutingGPU(nil) != nil {
		t.Error("ExecutingGPU of no ids is not nil")
	}
	if err := ActiveBars(c).Save(filepath.Join(t.TempDir(), "parts.png")); err != nil {
		t.Error(err)
	}
}

func TestKernelSteps(t *testing.T) {
	steps, err := KernelSteps("03_rope", "common.cuh", "02_rmsnorm")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, s := range steps {
		files = append(files, s.File)
	}
	if want := []string{"lfm2/03_rope.cu", "lfm2/common.cuh", "lfm2/02_rmsnorm.cu"}; !slices.Equal(files, want) {
		t.Errorf("files %v, want %v", files, want)
	}
	if !strings.Contains(steps[0].Code, "ROPE_SIGN_BUG") || !strings.Contains(steps[1].Code, "warp_sum") {
		t.Error("the steps do not hold their sources")
	}
	if _, err := KernelSteps("99_nothing"); err == nil || !strings.Contains(err.Error(), "common.cuh, 00_weights") || !strings.Contains(err.Error(), "12_moe_wgmma") {
		t.Errorf("an unknown step: %v", err)
	}
}
