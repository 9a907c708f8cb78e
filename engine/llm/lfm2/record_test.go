package lfm2

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
