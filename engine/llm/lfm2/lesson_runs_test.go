package lfm2

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine/cuda/cudatest"
	"gpulab/engine/plot"
)

// results is docs/results, where the recorded runs are.
var results = filepath.Join("..", "..", "..", "docs", "results")

// TestReadRecorded: every recorded run reads with its GPU, bandwidth and
// date; a file that names no GPU and is not listed is an error.
func TestReadRecorded(t *testing.T) {
	for file, gpu := range recordedRuns {
		r, err := ReadRecorded(results, file)
		if err != nil {
			t.Fatal(err)
		}
		if r.DeviceName != gpu.name || r.PeakGBps != gpu.peakGBps || r.Date != gpu.date || r.File != file || r.Live() || r.GPUs() != max(1, len(r.Stages)) {
			t.Errorf("%s: %+v", file, r)
		}
	}
	dir := t.TempDir()
	data, _ := json.Marshal(BenchRecord{Commit: "abc", Device: "cuda:0", Model: "m", Batch: 1, Seq: 1})
	if err := os.WriteFile(filepath.Join(dir, "other.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecorded(dir, "other.json"); err == nil || !strings.Contains(err.Error(), "names no GPU") {
		t.Errorf("a run of no known GPU: %v", err)
	}
	if _, err := ReadRecorded(dir, "missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("a missing run: %v", err)
	}
}

// TestRunCaption: a recorded run's caption names its GPUs, device, commit,
// date, command and file; a live one says it was measured now.
func TestRunCaption(t *testing.T) {
	two, err := ReadRecorded(results, RecordedH200x2)
	if err != nil {
		t.Fatal(err)
	}
	want := "*Recorded on 2 × NVIDIA H200 (`all-gpus`), commit `6609c75d14df`, 2026-11-22, with `lab lfm2 bench --random lfm2-8b-a1b --batch 1024 --seq 32 --device all-gpus --dtype bf16` (`docs/results/h200x2-lfm2-bf16.json`):*"
	if got := two.Caption(); got != want {
		t.Errorf("Caption() = %q, want %q", got, want)
	}
	if got, want := two.Source(), "recorded on 2 × NVIDIA H200, commit 6609c75"; got != want {
		t.Errorf("Source() = %q, want %q", got, want)
	}
	if got, want := two.Tag(), "2 × H200, 6609c75"; got != want {
		t.Errorf("Tag() = %q, want %q", got, want)
	}
	before, err := ReadRecorded(results, RecordedBeforeDecodeWork)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := before.Tag(), "H100, 883cfb8-dirty"; got != want {
		t.Errorf("Tag() = %q, want %q", got, want)
	}
	if got := before.Caption(); !strings.Contains(got, "commit `883cfb89eea1-dirty` (built with uncommitted changes: not exactly that commit's code), 2026-11-22") {
		t.Errorf("a -dirty run's Caption() = %q", got)
	}
	live := &Run{BenchRecord: BenchRecord{Commit: "0123456789ab", Device: "cuda:0", DeviceName: "NVIDIA H100 80GB HBM3", DType: BF16,
		Model: "random lfm2-8b-a1b (seed 1)", Batch: 8, Seq: 4, Reps: 3}}
	if got := live.Caption(); !strings.HasPrefix(got, "*Measured now on NVIDIA H100 80GB HBM3 (`cuda:0`), commit `0123456789ab`, as `lab lfm2 bench --random") {
		t.Errorf("live Caption() = %q", got)
	}
	if got, want := live.Tag(), "H100, now"; got != want {
		t.Errorf("live Tag() = %q, want %q", got, want)
	}
	if _, err := live.DecodeAt(1); err == nil || !strings.Contains(err.Error(), "no decode at batch 1") {
		t.Errorf("DecodeAt(1) of a run without decode: %v", err)
	}
}

// TestLiveRuns: runs kept by Save come back from LoadLive and GPURuns;
// without a GPU, GPURuns gives the recorded H200 runs.
func TestLiveRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "live.json")
	if _, _, err := GPURuns(results, path, true); err == nil || !strings.Contains(err.Error(), "run the measuring cell first") {
		t.Errorf("no runs kept: %v", err)
	}
	one := &Run{BenchRecord: BenchRecord{Commit: "c", Device: "cuda:0", DeviceName: "GPU", Batch: 4, Seq: 2, SamplesPerSec: 10,
		Timeline: []TimelineSpan{{Stage: 0, Lane: 1, Device: "cuda:0", StartMS: 1, EndMS: 2}}}}
	if err := (&LiveRuns{One: one}).Save(path); err != nil {
		t.Fatal(err)
	}
	got, pipe, err := GPURuns(results, path, true)
	if err != nil || pipe != nil || got.SamplesPerSec != 10 || !got.Live() || len(got.Timeline) != 1 || got.Timeline[0] != one.Timeline[0] {
		t.Errorf("GPURuns = %+v, %+v, %v", got, pipe, err)
	}
	got, pipe, err = GPURuns(results, path, false)
	if err != nil || got.File != RecordedH200 || pipe.File != RecordedH200x2 {
		t.Errorf("GPURuns without a GPU = %v, %v, %v", got, pipe, err)
	}
	if err := os.WriteFile(path, []byte(`{"pipeline": null}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLive(path); err == nil || !strings.Contains(err.Error(), "no run on one GPU") {
		t.Errorf("runs without one GPU's: %v", err)
	}
}

func TestSizeFrom(t *testing.T) {
	for _, tc := range []struct {
		sizes []string
		batch int
	}{{nil, 1024}, {[]string{"64M", "lfm2:batch=8,seq=4"}, 8}} {
		if sz, err := SizeFrom(tc.sizes); err != nil || sz.Batch != tc.batch {
			t.Errorf("SizeFrom(%q) = %+v, %v; want batch %d", tc.sizes, sz, err, tc.batch)
		}
	}
	if _, err := SizeFrom([]string{"lfm2:batch=x"}); err == nil {
		t.Error("a bad lfm2 size passed")
	}
}

// TestReadHFPeer: HF's H100 run for an H100, the H200's otherwise, and
// what each says of its session against a run.
func TestReadHFPeer(t *testing.T) {
	h100run, err := ReadRecorded(results, RecordedH100)
	if err != nil {
		t.Fatal(err)
	}
	h200run, err := ReadRecorded(results, RecordedH200)
	if err != nil {
		t.Fatal(err)
	}
	other := &Run{BenchRecord: BenchRecord{DeviceName: "NVIDIA A100-SXM4-80GB"}}
	for _, tc := range []struct {
		gpu, file string
		run       *Run
		session   string
	}{
		{"NVIDIA H100 80GB HBM3", "h100-hf-lfm2.json", h100run, "timed on the NVIDIA H100 80GB HBM3 in the same session"},
		{"NVIDIA H200", "h200-hf-lfm2.json", h200run, "timed on the same kind of GPU in another session, `docs/results/h200-hf-lfm2.json`"},
		{"NVIDIA A100-SXM4-80GB", "h200-hf-lfm2.json", other, "timed on an NVIDIA H200, not this GPU"},
	} {
		hf, err := ReadHFPeer(results, tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		if hf.File != tc.file || hf.Prefill64 <= 0 || hf.Decode <= 0 {
			t.Errorf("%s: %+v", tc.gpu, hf)
		}
		if got := hf.session(tc.run); !strings.HasPrefix(got, tc.session) {
			t.Errorf("%s: session %q, want %q", tc.gpu, got, tc.session)
		}
	}
	acc, err := ReadHFComparison(results)
	if err != nil || acc.Positions != 512 || acc.Top1[top1Ours] <= 0 || acc.LabRoPE.Max <= 0 || acc.HFRoPE.Max <= acc.LabRoPE.Max {
		t.Errorf("ReadHFComparison = %+v, %v", acc, err)
	}
}

// TestTimelineFigure: one series per lane, named by stage and lane, in
// stage then lane order, drawn as a square wave per micro-batch.
func TestTimelineFigure(t *testing.T) {
	spans := []TimelineSpan{
		{Stage: 1, Lane: 1, Device: "cuda:1", StartMS: 6, EndMS: 9},
		{Stage: 0, Lane: 0, Device: "cuda:0", StartMS: 0, EndMS: 4},
		{Stage: 1, Lane: 0, Device: "cuda:1", StartMS: 4, EndMS: 7},
		{Stage: 0, Lane: 1, Device: "cuda:0", StartMS: 1, EndMS: 5},
	}
	fig := TimelineFigure("pipeline", spans)
	if _, err := fig.HTML(); err != nil {
		t.Fatal(err)
	}
	// The y axis names the lanes from the bottom up: the first stage's lane A on top.
	want := []string{"stage 2 · lane B (cuda:1)", "stage 2 · lane A (cuda:1)", "stage 1 · lane B (cuda:0)", "stage 1 · lane A (cuda:0)"}
	if got := fig.YNames(); !slices.Equal(got, want) {
		t.Errorf("y axis names %q, want %q", got, want)
	}
	if _, err := fig.PNG(0, 0); err != nil {
		t.Error(err)
	}
	if got := LaneName(spans[0]); got != "stage 2 · lane B (cuda:1)" {
		t.Errorf("LaneName = %q", got)
	}
}

func TestOpBars(t *testing.T) {
	ops := []OpTime{{Name: "router", Calls: 2, MS: 3}, {Name: "rmsnorm", Calls: 4, MS: 1}}
	for _, names := range [][]string{nil, {"rmsnorm", "router", "attention"}} {
		if _, err := OpBars("ops", ops, names).PNG(0, 0); err != nil {
			t.Errorf("OpBars(%q): %v", names, err)
		}
	}
}

// syntheticRun is a run with round numbers: 8 sequences of 4 tokens in 4
// micro-batches, 50 ms of operations of which the experts take 40.
func syntheticRun() *Run {
	return &Run{File: "x.json", BenchRecord: BenchRecord{Commit: "abcdef0123", Device: "cuda:0", DeviceName: "NVIDIA H200", PeakGBps: 4800,
		Date: "2026-01-02T03:04:05Z", DType: BF16, Model: "random lfm2-8b-a1b (seed 1)", Batch: 8, Seq: 4, Reps: 3, PrefillMS: 20, SamplesPerSec: 400,
		PrefillOps: []OpTime{{"expert w1|w3 gemms", 4, 30}, {"expert w2 gemms", 4, 10}, {"router", 4, 5}, {"rmsnorm", 8, 3}, {"moe group", 8, 1.5}, {"lm head", 4, 0.5}}}}
}

// TestPrefillFindings: the experts' share and the peers' ratios are those
// of the numbers given.
func TestPrefillFindings(t *testing.T) {
	hf := &HFPeer{Device: "NVIDIA H200", Prefill64: 100, Prefill1024: 200, Decode: 10, File: "h200-hf-lfm2.json"}
	got, err := PrefillFindings(syntheticRun(), hf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"the experts (`expert w1|w3 gemms` and `expert w2 gemms`) take 80% of the summed GPU time, 40.0 ms of 50.0 ms.",
		"The next operations are `router` (5.00 ms), `rmsnorm` (3.00 ms) and `moe group` (1.50 ms).",
		"more than the 20.0 ms of the fastest prefill",
		"400 samples/s are 4.00× HF's 100 in batches of 64 and 2.00× its 200 in one batch of 8",
		"timed on the same kind of GPU in another session",
		"micro-batches of 2 sequences",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("PrefillFindings lacks %q:\n%s", want, got)
		}
	}
	r := syntheticRun()
	r.PrefillOps = r.PrefillOps[2:]
	if _, err := PrefillFindings(r, hf); err == nil || !strings.Contains(err.Error(), "no expert operation") {
		t.Errorf("a profile without experts: %v", err)
	}
}

// decodeRuns are batch-1 steps before (an H100) and after (an H200) with
// round numbers: the experts halve, the router shrinks 4.4×, attention
// and the moe group stay.
func decodeRuns() (before, after *Run) {
	before = &Run{File: "b.json", BenchRecord: BenchRecord{Commit: "1111111aaaa", DeviceName: "NVIDIA H100 80GB HBM3", PeakGBps: 3350, DType: BF16,
		Model: "random lfm2-8b-a1b (seed 1)", Decode: []DecodeRecord{{Batch: 1, Steps: 32, MS: 137, TokensPerSec: 233.6,
			StepOps: []OpTime{{opPersistentExperts, 22, 1.8}, {opRouter, 22, 1.1}, {"attention", 6, 0.2}, {"moe group", 44, 0.25}}}}}}
	after = &Run{File: "a.json", BenchRecord: BenchRecord{Commit: "2222222bbbb", DeviceName: "NVIDIA H200", PeakGBps: 4800, DType: BF16,
		Model: "random lfm2-8b-a1b (seed 1)", Decode: []DecodeRecord{{Batch: 1, Steps: 32, MS: 64, TokensPerSec: 500,
			StepOps: []OpTime{{opPersistentExperts, 22, 0.9}, {opRouter, 22, 0.25}, {"attention", 6, 0.2}, {"moe group", 44, 0.25}}}}}}
	return before, after
}

func TestDecodeFindings(t *testing.T) {
	c, err := Preset("lfm2-8b-a1b")
	if err != nil {
		t.Fatal(err)
	}
	before, after := decodeRuns()
	// The 4 chosen experts of a layer: 4 × 3 × 2048 × 1792 bf16 values.
	expertsPerLayer := 4.0 * 3 * 2048 * 1792 * 2
	got, err := DecodeBeforeFindings(before)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"a batch-1 step took 4.28 ms",
		fmt.Sprintf("at least %.1f GB of weights", DecodeStepBytes(c, 1, 2)/1e9),
		"The router took 50.0 µs per layer (22 calls a step), for 32 scores per token",
		"the persistent experts took 81.8 µs per layer",
		fmt.Sprintf("their 4 chosen experts' 88 MB at %.0f%% of the H100's bandwidth", 100*expertsPerLayer/(1.8e-3/22)/3350e9),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("DecodeBeforeFindings lacks %q:\n%s", want, got)
		}
	}
	hf := &HFPeer{Device: "NVIDIA H200", Prefill64: 1, Prefill1024: 1, Decode: 50, File: "h200-hf-lfm2.json"}
	got, err = DecodeFindings(before, after, hf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"At batch 1 the engine decodes 500 tokens/s", "a 2.00 ms step): 10.0× HF's 50.0 tokens/s",
		"Before the work, 234 tokens/s", "a 4.28 ms step",
		"`experts (persistent)` and `router` shrank 2.00–4.40×, beyond the 1.43× that the H200's bandwidth over the H100's accounts for.",
		"`attention` and `moe group` stayed within 1.00×",
		fmt.Sprintf("from %.0f%% of the H100's bandwidth to %.0f%% of the H200's", 100*22*expertsPerLayer/1.8e-3/3350e9, 100*22*expertsPerLayer/0.9e-3/4800e9),
		fmt.Sprintf("at %.0f%% of the H200's bandwidth, in 94 timed operations over 24 layers", 100*DecodeStepBytes(c, 1, 2)/2e-3/4800e9),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("DecodeFindings lacks %q:\n%s", want, got)
		}
	}
	table, err := DecodeMarkdown(before, after)
	stepBytes := DecodeStepBytes(c, 1, 2)
	if want := fmt.Sprintf("| 1 | recorded on NVIDIA H200, commit 2222222 | 2.00 | 500 | 1.60 ms | 0.900 ms | %.2f TB/s (%.0f%%) | %.2f TB/s (%.0f%%) |",
		22*expertsPerLayer/0.9e-3/1e12, 100*22*expertsPerLayer/0.9e-3/4800e9, stepBytes/2e-3/1e12, 100*stepBytes/2e-3/4800e9); err != nil || !strings.Contains(table, want) {
		t.Errorf("DecodeMarkdown = %v, lacks %q:\n%s", err, want, table)
	}
	after.Decode[0].Batch = 64
	if _, err := DecodeMarkdown(before, after); err == nil || !strings.Contains(err.Error(), "no decode at batch 1") {
		t.Errorf("DecodeMarkdown of runs of other batches: %v", err)
	}
	after.Decode[0].Batch = 1
	figs, err := DecodeFigures(before, after, hf)
	if err != nil || len(figs) != 4 {
		t.Fatalf("DecodeFigures = %d figures, %v", len(figs), err)
	}
	for _, f := range figs {
		if _, err := f.PNG(0, 0); err != nil {
			t.Error(err)
		}
	}

	// The same GPU model, live: no bandwidth to discount; a slower
	// operation and one that shrank a little are reported too.
	live := &Run{BenchRecord: before.BenchRecord}
	live.Commit = "3333333cccc"
	live.Decode = []DecodeRecord{{Batch: 1, Steps: 32, MS: 80, TokensPerSec: 400,
		StepOps: []OpTime{{opPersistentExperts, 22, 1.1}, {opRouter, 22, 0.25}, {"attention", 6, 0.2}, {"moe group", 44, 0.22}, {"moe combine", 22, 0.2}}}}
	before.Decode[0].StepOps = append(before.Decode[0].StepOps, OpTime{"moe combine", 22, 0.178})
	if got := DecodeAfter(before, live, after); got != live {
		t.Errorf("DecodeAfter with a live run on the same GPU = %s", got.Source())
	}
	if got := DecodeAfter(after, live, after); got != after {
		t.Errorf("DecodeAfter with a live run on another GPU = %s", got.Source())
	}
	got, err = DecodeFindings(before, live, hf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"On the same GPU model, the step is 1.71× as fast.",
		"`experts (persistent)` and `router` shrank 1.64–4.40× on the same GPU model",
		"`moe group` shrank a little, 1.14×.",
		"`attention` stayed within 1.00×: the work left them as they were.",
		"`moe combine` got slower (before ÷ after 0.89×): a regression to look into.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("same-GPU DecodeFindings lacks %q:\n%s", want, got)
		}
	}
	figs, err = DecodeFigures(before, live, hf)
	if err != nil || !strings.Contains(figs[2].Title, "both on the H100") || !strings.Contains(figs[3].Title, "before: H100, 1111111; after: H100, now") {
		t.Errorf("same-GPU DecodeFigures: %v, %q, %q", err, figs[2].Title, figs[3].Title)
	}
	got, err = DecodeStepFindings(live)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"A batch-1 step (measured now on NVIDIA H100 80GB HBM3) takes 2.50 ms, 400 tokens/s; its timed operations sum to 1.97 ms",
		fmt.Sprintf("The persistent experts take 1.10 ms of it (56%%), reading their weights at %.0f%% of the H100's bandwidth.", 100*22*expertsPerLayer/1.1e-3/3350e9),
		"The next operations are `router` (250 µs), `moe group` (220 µs) and `attention` (200 µs).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("DecodeStepFindings lacks %q:\n%s", want, got)
		}
	}
}

func TestMoEFindings(t *testing.T) {
	r := syntheticRun()
	r.MoE = []MoERecord{
		{Path: MoEGrouped, WallMS: 100, Ops: []OpTime{{"expert w1|w3 gemms", 8, 50}, {"expert w2 gemms", 8, 30}, {"swiglu", 8, 10}, {"router", 8, 5}}},
		{Path: MoEWgmma, WallMS: 105, Ops: []OpTime{{"expert w1|w3 gemms", 8, 51}, {"expert w2 gemms", 8, 20}, {"swiglu", 8, 1}, {"router", 8, 5}}},
		{Path: MoEPersistent, WallMS: 4200, Ops: []OpTime{{opPersistentExperts, 8, 4000}}},
	}
	r.Decode = []DecodeRecord{{Batch: 1, Steps: 4, MS: 8}, {Batch: 64, Steps: 4, MS: 80, StepOps: []OpTime{{opPersistentExperts, 22, 17}, {opRouter, 22, 3}}}}
	got, err := MoEFindings(r)
	if err != nil {
		t.Fatal(err)
	}
	reached := 32 * (1 - math.Pow(28.0/32, 64)) // experts a layer of 64 tokens × top-4 reaches, on average
	for _, want := range []string{
		"The profiled prefills take 100 ms (grouped), 105 ms (wgmma) and 4.20 s (persistent)",
		"within 5.0% of each other", "`expert w2 gemms` 20.0 ms against 30.0 ms; `swiglu` 1.00 ms against 10.0 ms.",
		"the persistent kernel's prefill takes 42.0× as long as the grouped GEMMs'",
		"Decoding at batch 64 (256 (token, expert) pairs a step), the persistent experts take 17.0 ms of the profiled step's 20.0 ms (85%)",
		fmt.Sprintf("read the experts at %.0f%% of the H200's bandwidth; the timed step takes 20.0 ms", 100*22*reached*3*2048*1792*2/17e-3/4800e9),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("MoEFindings lacks %q:\n%s", want, got)
		}
	}
	table, err := MoEPathsMarkdown(r)
	if err != nil || !strings.Contains(table, `| expert w1\|w3 gemms | 50.0 | 51.0 | — |`) || !strings.Contains(table, "| experts (persistent) | — | — | 4000.0 |") ||
		!strings.Contains(table, "| **wall time of the profiled prefill** | **100.0** | **105.0** | **4200.0** |") {
		t.Errorf("MoEPathsMarkdown = %v\n%s", err, table)
	}
	auto, err := AutoChoiceMarkdown(r)
	if err != nil || !strings.Contains(auto, "| 64 | 256 | 8.00 | persistent |") || !strings.Contains(auto, "| 8 | 32 | 1.00 | persistent |") {
		t.Errorf("AutoChoiceMarkdown = %v\n%s", err, auto) // 8 × 4 tokens in 4 micro-batches: 8 tokens each
	}
	r.MoE = nil
	if _, err := MoEFindings(r); err == nil || !strings.Contains(err.Error(), "no profile of the grouped MoE path") {
		t.Errorf("a run without MoE paths: %v", err)
	}
}

func TestPipelineFindings(t *testing.T) {
	one := &Run{File: "one.json", BenchRecord: BenchRecord{Commit: "c1", DeviceName: "NVIDIA H200", Batch: 1024, Seq: 32, SamplesPerSec: 100,
		Stages: []string{"cuda:0: layers 0-23"}, StageTimes: []StageTime{{Stage: 0, BusyMS: 50}}, PrefillOps: []OpTime{{"lm head", 4, 1}}}}
	two := &Run{File: "two.json", BenchRecord: BenchRecord{Commit: "c1", DeviceName: "NVIDIA H200", Batch: 1024, Seq: 32, SamplesPerSec: 180,
		Stages: []string{"cuda:0: a", "cuda:1: b"}, StageTimes: []StageTime{{Stage: 0, BusyMS: 28, FirstMS: 0.2}, {Stage: 1, BusyMS: 29, FirstMS: 3}},
		PrefillOps: []OpTime{{"lm head", 10, 1}}}}
	four := &Run{File: "four.json", BenchRecord: BenchRecord{Commit: "c1", SamplesPerSec: 250, Stages: []string{"a", "b", "c", "d"}}}
	got, err := PipelineFindings(one, two, four)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2 GPUs give 1.80× one (180 against 100 samples/s; recorded in one session, commit c1)",
		"With 10 micro-batches over 2 stages, a balanced pipeline idles each stage 1 of 11 slots: at most 1.82×.",
		"The stages are busy 28.0 ms and 29.0 ms; the last starts 3.00 ms in. Together they work 57.0 ms, against one GPU's 50.0 ms",
		"4 GPUs give 2.50× one (250 samples/s).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("PipelineFindings lacks %q:\n%s", want, got)
		}
	}
	half := &Run{File: "half.json", BenchRecord: BenchRecord{Commit: "c1", DeviceName: "NVIDIA H200", Batch: 1024, Seq: 32, SamplesPerSec: 95,
		MicroTokens: 4096, PrefillOps: []OpTime{{"lm head", 8, 1}}}}
	table, err := MicroBatchMarkdown([2]*Run{one, half})
	if err != nil || !strings.Contains(table, "| NVIDIA H200, --micro-tokens 4096 (H200, c1) | 128 | 8 | 95 |") ||
		!strings.Contains(table, "NVIDIA H200 loses 5.0% going from about 256 to about 128 sequences per micro-batch.") {
		t.Errorf("MicroBatchMarkdown = %v\n%s", err, table)
	}
	if f, err := PipelineBars(one, two, four); err != nil {
		t.Error(err)
	} else if _, err := f.PNG(0, 0); err != nil {
		t.Error(err)
	} else if html, err := f.HTML(); err != nil || !strings.Contains(string(html), "bound, 2 GPUs") || !strings.Contains(f.Title, "(micro-batches: 10 on 2 GPUs; H200, c1)") || strings.Contains(string(html), "bound, 4 GPUs") {
		t.Errorf("PipelineBars: the bound of the pipeline with a profile is a bar of its own, none for the one without (%v)", err)
	}
	if got := PipelineBound(4, 1); got != 1 {
		t.Errorf("one stage: bound %g, want 1", got)
	}
}

// TestRecordedFindings: the findings of the recorded runs hold their
// numbers, read here from the files themselves.
func TestRecordedFindings(t *testing.T) {
	read := func(file string, v any) {
		data, err := os.ReadFile(filepath.Join(results, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	var h200, x2 struct {
		SamplesPerSec float64 `json:"samples_per_s"`
	}
	var hfFile map[string]any
	var accFile struct {
		Top1 map[string]float64 `json:"top1_agreement"`
	}
	read(RecordedH200, &h200)
	read(RecordedH200x2, &x2)
	read("h200-hf-lfm2.json", &hfFile)
	read(HFComparisonFile, &accFile)

	one, two, err := GPURuns(results, "", false)
	if err != nil {
		t.Fatal(err)
	}
	before, err := ReadRecorded(results, RecordedBeforeDecodeWork)
	if err != nil {
		t.Fatal(err)
	}
	hf, err := ReadHFPeer(results, one.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := ReadHFComparison(results)
	if err != nil {
		t.Fatal(err)
	}
	summary, err := SummaryFindings(one, before, []*Run{two}, hf, acc)
	if err != nil {
		t.Fatal(err)
	}
	peers, err := PeersMarkdown(one, two, hf, acc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("%.0f samples/s are %.2f× HF's", h200.SamplesPerSec, h200.SamplesPerSec/hfFile["prefill_1024x32_batches_of_64_samples_per_s"].(float64)),
		fmt.Sprintf("2 GPUs give %.2f× one", x2.SamplesPerSec/h200.SamplesPerSec),
		fmt.Sprintf("at %.1f%% of them, HF's own bf16 at %.1f%%", 100*accFile.Top1["ours-f32 vs ours-bf16"], 100*accFile.Top1["hf-f32 vs hf-bf16"]),
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("SummaryFindings lacks %q:\n%s", want, summary)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("| %.1f%% | %.1f%% (HF's bf16 against HF's fp32)", 100*accFile.Top1["ours-f32 vs ours-bf16"], 100*accFile.Top1["hf-f32 vs hf-bf16"]),
		"*HF transformers 5.17.0 (eager attention, bf16) timed on NVIDIA H200, 2026-11-22, with `python3 scripts/peers/hf_lfm2.py make DIR` (`docs/results/h200-hf-lfm2.json`, recorded in commit `d51e508`).*",
		"*The engine's logits against HF's on HF's random 8B checkpoint, on NVIDIA H100 80GB HBM3, 2026-11-22, with `lab lfm2 logits --model DIR, then python3 scripts/peers/hf_lfm2.py compare",
		"(`docs/results/h100-lfm2-vs-hf.json`, recorded in commit `d51e508`).*",
	} {
		if !strings.Contains(peers, want) {
			t.Errorf("PeersMarkdown lacks %q:\n%s", want, peers)
		}
	}
	for _, f := range []func() (string, error){
		func() (string, error) { return DecodeMarkdown(before, one) },
		func() (string, error) { return MoEPathsMarkdown(one) },
		func() (string, error) { return MoEFindings(one) },
		func() (string, error) { return PipelineFindings(one, two) },
	} {
		if md, err := f(); err != nil || md == "" {
			t.Errorf("%q, %v", md, err)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{runMS(178.2), "178 ms"}, {runMS(2.19), "2.19 ms"}, {runMS(10519.86), "10.5 s"}, {runMS(0.0508), "50.8 µs"},
		{runMS(99.96), "100 ms"}, {runMS(0.99996), "1.00 ms"},
		{runX(2.2795), "2.28×"}, {runX(12.46), "12.5×"}, {runX(150), "150×"}, {runX(9.996), "10.0×"},
		{runPct(0.43), "43%"}, {runPct(0.052), "5.2%"}, {runPct(0.0004), "0.04%"},
		{runRate(4376.7), "4377"}, {runRate(47.6), "47.6"}, {runRate(99.96), "100"},
		{runRange([]float64{2, 4.4}), "2.00–4.40×"}, {runRange([]float64{1.001, 0.999}), "1.00×"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestMeasureLiveNeedsAGPU(t *testing.T) {
	if _, err := MeasureLive(nil, BenchSize{Batch: 1, Seq: 1, GPUs: 1}, io.Discard); err == nil || !strings.Contains(err.Error(), "no CUDA device") {
		t.Errorf("MeasureLive without devices: %v", err)
	}
}

// TestCUDAMeasureLive measures on cuda:0 at a small size: the 8B model
// where it fits (the fixture's shape elsewhere), with the MoE paths and
// decode at two batch sizes, and keeps the runs for the lesson.
func TestCUDAMeasureLive(t *testing.T) {
	cudatest.Context(t)
	var log strings.Builder
	live, err := MeasureLive([]string{"cuda:0"}, BenchSize{Batch: 8, Seq: 8, Decode: 3, DecodeBatch: 4, GPUs: 1}, &log)
	if err != nil {
		t.Fatal(err)
	}
	one := live.One
	if live.Pipeline != nil || one.SamplesPerSec <= 0 || len(one.PrefillOps) == 0 || len(one.Timeline) == 0 || len(one.MoE) < 2 ||
		len(one.Decode) != 2 || one.Decode[1].Batch != 4 || one.DeviceName == "" || !one.Live() {
		t.Errorf("live runs %+v\n%s", one, log.String())
	}
	path := filepath.Join(t.TempDir(), "live.json")
	if err := live.Save(path); err != nil {
		t.Fatal(err)
	}
	if got, _, err := GPURuns(results, path, true); err != nil || got.SamplesPerSec != one.SamplesPerSec {
		t.Errorf("GPURuns after Save: %+v, %v", got, err)
	}
}

// TestRunTables: the tables of a run hold its numbers; its figures render.
func TestRunTables(t *testing.T) {
	r := syntheticRun()
	r.Decode = []DecodeRecord{{Batch: 1, Prompt: 4, Steps: 4, MS: 8, TokensPerSec: 500}}
	r.StageTimes = []StageTime{{Stage: 0, Device: "cuda:0", Parts: "layers 0-23", BusyMS: 19.5, FirstMS: 0.25, LastMS: 19.75}}
	for _, tc := range []struct{ got, want string }{
		{RunMarkdown(r), "| prefill (fastest of 3) | 8 | 8 × 4 | 20.0 | 400 samples/s |"},
		{RunMarkdown(r), "| decode, 4 steps (2.00 ms each) | 1 | 1 × 4 | 8.0 | 500 tokens/s |"},
		{StageMarkdown(r), "| 1 | cuda:0 | layers 0-23 | 19.5 | 0.2 | 19.8 |"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("table lacks %q:\n%s", tc.want, tc.got)
		}
	}
	r.MoE = []MoERecord{{Path: MoEGrouped, WallMS: 100}, {Path: MoEPersistent, WallMS: 4200}}
	hf := &HFPeer{Device: "NVIDIA H200", Prefill64: 100, Prefill1024: 200, Decode: 10}
	for _, f := range []*plot.Figure{PrefillPeerBars(r, hf), MoEWallBars(r)} {
		if _, err := f.PNG(0, 0); err != nil {
			t.Error(err)
		}
	}
}

// TestModelConfig: a run's model is a preset's, the fixture's shape, or a
// model directory's.
func TestModelConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := WriteRandomModel(dir, []byte(fixtureConfig), 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model  string
		hidden int
	}{{"random lfm2-8b-a1b (seed 3)", 2048}, {fixtureShape + " (seed 1)", 72}, {dir, 72}} {
		r := &Run{BenchRecord: BenchRecord{Model: tc.model}}
		if c, err := r.ModelConfig(); err != nil || c.Hidden != tc.hidden {
			t.Errorf("%s: %+v, %v; want hidden %d", tc.model, c, err, tc.hidden)
		}
	}
	r := &Run{File: "x.json", BenchRecord: BenchRecord{Model: filepath.Join(dir, "missing"), DeviceName: "GPU"}}
	if _, err := r.ModelConfig(); err == nil || !strings.Contains(err.Error(), "not known here") {
		t.Errorf("an unknown model: %v", err)
	}
}

func TestLesson(t *testing.T) {
	l := Lesson{Results: results, Live: filepath.Join(t.TempDir(), "live.json")}
	one, pipe, err := l.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if one.File != RecordedH200 || pipe.File != RecordedH200x2 {
		t.Errorf("without a GPU the lesson shows %s and %s, want %s and %s", one.File, pipe.File, RecordedH200, RecordedH200x2)
	}
	if r, err := l.Recorded(RecordedH100); err != nil || r.File != RecordedH100 {
		t.Errorf("Recorded(%s) = %v, %v", RecordedH100, r, err)
	}
	if hf, err := l.HF(one); err != nil || hf.File != "h200-hf-lfm2.json" {
		t.Errorf("HF(%s) = %v, %v", one.DeviceName, hf, err)
	}
	if _, _, err := (Lesson{Results: results, Live: l.Live, Measured: true}).Runs(); err == nil {
		t.Errorf("a measured lesson with no live runs kept: want an error")
	}
}

// TestDecodeWorkSentence: on one GPU model the change is the decode work's;
// across two, the sentence gives their bandwidth ratio and does not credit
// the work with all of it.
func TestDecodeWorkSentence(t *testing.T) {
	before, err := ReadRecorded(results, RecordedBeforeDecodeWork)
	if err != nil {
		t.Fatal(err)
	}
	after, err := ReadRecorded(results, RecordedH200)
	if err != nil {
		t.Fatal(err)
	}
	b1, err1 := before.DecodeAt(1)
	a1, err2 := after.DecodeAt(1)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if got := decodeWorkSentence(before, after, b1, a1); !strings.Contains(got, "on another GPU model, whose DRAM bandwidth is 1.43×") || strings.Contains(got, "The decode work took") {
		t.Errorf("across GPUs: %s", got)
	}
	if got := decodeWorkSentence(before, before, b1, b1); !strings.HasPrefix(got, "The decode work took the batch-1 step from 4.28 ms") {
		t.Errorf("one GPU model: %s", got)
	}
}
