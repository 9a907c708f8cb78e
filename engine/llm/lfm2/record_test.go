package lfm2

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpulab/datasets"
)

func TestReadBenchRecord(t *testing.T) {
	r, err := ReadBenchRecord(filepath.Join("..", "..", "..", "docs", "results", "h200-lfm2-bf16.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Commit == "" || r.Device == "" || r.Batch != 1024 || r.Seq != 32 || r.SamplesPerSec <= 0 || r.PrefillMS <= 0 {
		t.Errorf("record header: commit %q device %q batch %d seq %d, %g samples/s, %g ms", r.Commit, r.Device, r.Batch, r.Seq, r.SamplesPerSec, r.PrefillMS)
	}
	if len(r.PrefillOps) == 0 || r.PrefillOps[0].Name == "" || r.PrefillOps[0].Calls <= 0 || r.PrefillOps[0].MS <= 0 {
		t.Errorf("prefill ops: %+v", r.PrefillOps)
	}
	if len(r.Decode) == 0 || r.Decode[0].Steps <= 0 || r.Decode[0].TokensPerSec <= 0 || len(r.Decode[0].StepOps) == 0 {
		t.Errorf("decode: %+v", r.Decode)
	}
}

func TestReadBenchRecordErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"batch": "many"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing.json")} {
		if _, err := ReadBenchRecord(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadBenchRecord(%s) = %v, want an error naming the file", path, err)
		}
	}
}

func TestOpTimes(t *testing.T) {
	if got := OpTimes(nil); got != nil {
		t.Errorf("OpTimes(nil) = %v, want nil", got)
	}
	got := OpTimes(&Profile{Kernels: []KernelTime{{Name: "router", Calls: 8, Time: 1500000}}})
	if len(got) != 1 || got[0] != (OpTime{Name: "router", Calls: 8, MS: 1.5}) {
		t.Errorf("OpTimes = %+v, want router, 8 calls, 1.5 ms", got)
	}
}

// TestStageTimes: a stage is busy while any of its lanes is; its span runs
// from its first start to its last end.
func TestStageTimes(t *testing.T) {
	at := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	p := &Profile{Timeline: []Span{
		{Device: "cuda:1", Stage: 1, Lane: 0, Start: at(4), End: at(9), From: 25, To: 48},
		{Device: "cuda:0", Stage: 0, Lane: 0, Start: at(0), End: at(4), From: 0, To: 25},
		{Device: "cuda:0", Stage: 0, Lane: 1, Start: at(1), End: at(6), From: 0, To: 25},  // overlaps lane 0
		{Device: "cuda:0", Stage: 0, Lane: 0, Start: at(5), End: at(7), From: 0, To: 25},  // inside lane 1, then past it
		{Device: "cuda:0", Stage: 0, Lane: 1, Start: at(8), End: at(10), From: 0, To: 25}, // after a gap of 1
		{Device: "cuda:1", Stage: 1, Lane: 1, Start: at(10), End: at(12), From: 25, To: 48},
	}}
	want := []StageTime{
		{Stage: 0, Device: "cuda:0", Parts: "layers 0-11 and the mixer of layer 12", BusyMS: 9, FirstMS: 0, LastMS: 10},
		{Stage: 1, Device: "cuda:1", Parts: "the feed-forward of layer 12 and layers 13-23", BusyMS: 7, FirstMS: 4, LastMS: 12},
	}
	got := StageTimes(p)
	if len(got) != len(want) {
		t.Fatalf("StageTimes = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Stage != w.Stage || g.Device != w.Device || g.Parts != w.Parts ||
			math.Abs(g.BusyMS-w.BusyMS) > 1e-9 || math.Abs(g.FirstMS-w.FirstMS) > 1e-9 || math.Abs(g.LastMS-w.LastMS) > 1e-9 {
			t.Errorf("stage %d: got %+v, want %+v", i, g, w)
		}
	}
	if StageTimes(nil) != nil {
		t.Error("StageTimes(nil) is not nil")
	}
}

// TestCommand: the command of each recorded run is the one docs/lfm2.md
// gives for it.
func TestCommand(t *testing.T) {
	const bench8B = "lab lfm2 bench --random lfm2-8b-a1b --batch 1024 --seq 32"
	for file, want := range map[string]string{
		"h200-lfm2-bf16.json":             bench8B + " --device cuda:0 --dtype bf16 --decode 32 --decode-batch 1,64 --compare-moe",
		"h200x2-lfm2-bf16.json":           bench8B + " --device all-gpus --dtype bf16",
		"h200x4-lfm2-f32.json":            bench8B + " --device all-gpus --dtype f32",
		"h200-lfm2-bf16-micro4096.json":   bench8B + " --device cuda:0 --dtype bf16 --micro-tokens 4096",
		"h200x2-lfm2-bf16-micro2048.json": bench8B + " --device all-gpus --dtype bf16 --micro-tokens 2048",
		"h100-lfm2-bf16.json":             bench8B + " --device cuda:0 --dtype bf16 --decode 32 --decode-batch 1,64",
	} {
		r, err := ReadBenchRecord(filepath.Join("..", "..", "..", "docs", "results", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Command(); got != want {
			t.Errorf("%s: Command() = %q, want %q", file, got, want)
		}
	}
	r := BenchRecord{Model: "datasets/testdata/lfm2/moe", Device: "cpu", DType: "f32", Batch: 3, Seq: 9, Reps: 1, Tol: 1e-4, MoEPath: MoEGrouped}
	if got, want := r.Command(), "lab lfm2 bench --model datasets/testdata/lfm2/moe --batch 3 --seq 9 --device cpu --dtype f32 --reps 1 --moe grouped --ref REF.npy --tol 0.0001"; got != want {
		t.Errorf("Command() = %q, want %q", got, want)
	}
	r = BenchRecord{Model: "random lfm2-8b-a1b (seed 7)", Device: "cuda:1", DType: "bf16", Batch: 8, Seq: 4, Reps: 3}
	if got, want := r.Command(), "lab lfm2 bench --random lfm2-8b-a1b --seed 7 --batch 8 --seq 4 --device cuda:1 --dtype bf16"; got != want {
		t.Errorf("Command() = %q, want %q", got, want)
	}
}

// TestBenchRecordValidate: samples within the tolerance of the reference count as
// validated; one off by more fails the run but is no error; a NaN is
// infinitely off; a reference of another shape is an error.
func TestBenchRecordValidate(t *testing.T) {
	dir := t.TempDir()
	shape := []int{2, 3, 4} // two samples of three positions over four tokens
	ref := make([]float32, 24)
	for i := range ref {
		ref[i] = float32(i % 5)
	}
	path := filepath.Join(dir, "ref.npy")
	if err := datasets.WriteNPYTensor(path, ref, shape); err != nil {
		t.Fatal(err)
	}
	logits := slices.Clone(ref)
	var r BenchRecord
	if failed, err := r.Validate(logits, path, shape, 1e-4); failed != nil || err != nil || r.Validated != 2 || r.MaxDiff != 0 || r.Top1Agree != 1 || r.Tol != 1e-4 {
		t.Errorf("identical logits: %v, %v, %+v", failed, err, r)
	}
	logits[13] += 0.5 // sample 1, position 0, token 1
	failed, err := r.Validate(logits, path, shape, 1e-4)
	if err != nil || failed == nil || !strings.Contains(failed.Error(), "1 of 2 samples") || r.Validated != 1 || math.Abs(r.MaxDiff-0.5) > 1e-6 {
		t.Errorf("one sample off by 0.5: %v, %v, %+v", failed, err, r)
	}
	logits[13] = float32(math.NaN())
	if failed, err := r.Validate(logits, path, shape, 1e-4); err != nil || failed == nil || !math.IsInf(r.MaxDiff, 1) {
		t.Errorf("a NaN: %v, %v, max diff %v", failed, err, r.MaxDiff)
	}
	if _, err := r.Validate(logits, path, []int{1, 3, 8}, 1e-4); err == nil || !strings.Contains(err.Error(), "shape [2 3 4]") {
		t.Errorf("another shape: %v", err)
	}
	if _, err := r.Validate(logits, filepath.Join(dir, "missing.npy"), shape, 1e-4); err == nil || !strings.Contains(err.Error(), "missing.npy") {
		t.Errorf("a missing reference: %v", err)
	}
}

func TestTimeline(t *testing.T) {
	if Timeline(nil) != nil {
		t.Error("Timeline(nil) is not nil")
	}
	got := Timeline(&Profile{Timeline: []Span{{Device: "cuda:1", Stage: 1, Lane: 0, MicroBatch: 3, Start: 1500 * time.Microsecond, End: 4 * time.Millisecond}}})
	if want := (TimelineSpan{Stage: 1, Lane: 0, Device: "cuda:1", MicroBatch: 3, StartMS: 1.5, EndMS: 4}); len(got) != 1 || got[0] != want {
		t.Errorf("Timeline = %+v, want %+v", got, want)
	}
}
