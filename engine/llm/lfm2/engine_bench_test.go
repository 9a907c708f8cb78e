package lfm2

import (
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/enginetest"
)

// TestBenchCPU: Bench fills the record part by part on the CPU reference
// (no profile, no stages), reporting each part as it is measured.
func TestBenchCPU(t *testing.T) {
	c, err := ParseConfig([]byte(fixtureConfig))
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenRandom(c, 1, []*engine.Device{cpuDevice}, CUDAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := BenchSpec{Batch: 3, Seq: 4, Reps: 2, Seed: 5, DecodeSteps: 3, DecodeBatches: []int{1, 2}}
	rec := BenchRecord{Device: "cpu", Model: "fixture shape", Batch: 3, Seq: 4}
	var parts []string
	err = Bench(m, spec, &rec, func(part string) error {
		parts = append(parts, part)
		if part == PartDecode && rec.Decode[len(rec.Decode)-1].Batch != spec.DecodeBatches[len(rec.Decode)-1] {
			t.Errorf("decode reported with %+v last", rec.Decode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{PartPrefill, PartDecode, PartDecode}; !slices.Equal(parts, want) {
		t.Errorf("parts reported %q, want %q", parts, want)
	}
	if rec.Commit == "" || rec.Date == "" || rec.PrefillMS <= 0 || !sameRate(rec.SamplesPerSec, 3/(rec.PrefillMS/1e3)) ||
		rec.PrefillOps != nil || rec.Stages != nil || len(rec.Decode) != 2 {
		t.Errorf("record %+v", rec)
	}
	for i, d := range rec.Decode {
		if d.Batch != spec.DecodeBatches[i] || d.Prompt != 4 || d.Steps != 3 || d.MS <= 0 || !sameRate(d.TokensPerSec, float64(3*d.Batch)/(d.MS/1e3)) {
			t.Errorf("decode %d: %+v", i, d)
		}
	}

	stop := errors.New("stop here")
	rec = BenchRecord{}
	if err := Bench(m, spec, &rec, func(string) error { return stop }); !errors.Is(err, stop) || rec.Decode != nil {
		t.Errorf("a report's error: Bench = %v with decode %+v, want it to stop after the prefill", err, rec.Decode)
	}
	spec.CompareMoE = true
	if err := Bench(m, spec, &rec, nil); err == nil || !strings.Contains(err.Error(), "CUDA engine") {
		t.Errorf("comparing the MoE paths on the CPU: %v", err)
	}
	for _, bad := range []BenchSpec{{Batch: 0, Seq: 4, Reps: 1}, {Batch: 1, Seq: 4, Reps: 0}, {Batch: 1, Seq: 4, Reps: 1, DecodeSteps: 2, DecodeBatches: []int{0}}} {
		if err := Bench(m, bad, &rec, nil); err == nil {
			t.Errorf("Bench(%+v) ran", bad)
		}
	}
}

// TestBenchSpecSized: an engine is sized for the prefill, and for decode
// at the largest batch with one more position for the profiled step.
func TestBenchSpecSized(t *testing.T) {
	for _, tc := range []struct {
		spec       BenchSpec
		batch, seq int
	}{
		{BenchSpec{Batch: 1024, Seq: 32}, 1024, 32},
		{BenchSpec{Batch: 1024, Seq: 32, DecodeBatches: []int{1, 64}}, 1024, 32}, // no steps: no decode
		{BenchSpec{Batch: 16, Seq: 32, DecodeSteps: 8, DecodeBatches: []int{1, 64}}, 64, 41},
	} {
		o := tc.spec.Sized(CUDAOptions{DType: BF16, MaxTokens: 4096, MoE: MoEGrouped})
		if o.MaxBatch != tc.batch || o.MaxSeq != tc.seq || o.DType != BF16 || o.MaxTokens != 4096 || o.MoE != MoEGrouped {
			t.Errorf("%+v: sized %+v, want batch %d, seq %d and the other options kept", tc.spec, o, tc.batch, tc.seq)
		}
	}
}

// TestBenchSpecChecksHostMemory: the prompts (8-byte tokens, a 24-byte
// slice header per sequence) and, when asked, their logits are held to the
// host's free memory before they are drawn.
func TestBenchSpecChecksHostMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	c, err := ParseConfig([]byte(fixtureConfig))
	if err != nil {
		t.Fatal(err)
	}
	s := BenchSpec{Batch: 100000, Seq: 8, Reps: 1}
	enginetest.WantMemoryError(t, s.CheckHostMemory(c, false), 100000*(8*8+24), "100000 sequences of 8 tokens needs")
	enginetest.WantMemoryError(t, s.CheckHostMemory(c, true), 100000*(8*8+24)+4*100000*8*211, "for the prompts and their logits")
	enginetest.WantMemoryError(t, Bench(NewCPUModel(c, nil), s, &BenchRecord{}, nil), 100000*(8*8+24))
	if err := (BenchSpec{Batch: 100, Seq: 8}).CheckHostMemory(c, true); err != nil {
		t.Errorf("100 sequences: %v", err)
	}
}

// TestBenchRefusesLongSequences: sequences longer than the model's
// max_position_embeddings (64 here), in the prefill or with the decode
// steps, are refused before a prompt is drawn or a part runs.
func TestBenchRefusesLongSequences(t *testing.T) {
	c, w := loadModel(t, filepath.Join(fixtures, "moe"))
	m := NewCPUModel(c, w)
	for _, tc := range []struct {
		spec BenchSpec
		want string
	}{
		{BenchSpec{Batch: 1, Seq: 20000000, Reps: 1}, "sequences of 20000000 tokens are longer than max_position_embeddings = 64"},
		{BenchSpec{Batch: 1, Seq: 8, Reps: 1, DecodeSteps: 60, DecodeBatches: []int{1}}, "8-token prompts and 60 decode steps are longer than max_position_embeddings = 64"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ran := 0
		err := Bench(m, tc.spec, &BenchRecord{}, func(string) error { ran++; return nil })
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), tc.want) || ran > 0 {
			t.Errorf("%+v: %v after %d parts, want %q before any", tc.spec, err, ran, tc.want)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("%+v: %d bytes allocated before the refusal", tc.spec, got)
		}
	}
}

// TestGenerateBatchChecksHostMemory: the CPU reference holds the key and
// value caches of every sequence to the host's free memory before the
// prefill runs.
func TestGenerateBatchChecksHostMemory(t *testing.T) {
	c, w := loadModel(t, filepath.Join(fixtures, "moe"))
	t.Setenv(engine.HostMemoryEnv, "1000")
	prompts := [][]int{{1, 2}, {3, 4}, {5, 6}}
	emitted := 0
	err := GenerateBatch(c, w, prompts, 60, Sampling{}, func(int, []int) error { emitted++; return nil })
	enginetest.WantMemoryError(t, err, uint64(3*61*c.Sizes().KVBytesPerToken), "3 sequences of 61 tokens", "key and value caches")
	if emitted != 0 {
		t.Errorf("%d steps ran before the refusal", emitted)
	}
}
