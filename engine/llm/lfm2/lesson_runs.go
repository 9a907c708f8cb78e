package lfm2

// The GPU runs of notebook 06 (lab lfm2 bench's BenchRecord, measured now
// by MeasureLive or read from docs/results) and what the lesson shows of
// them: captions, tables, figures and the sentences that say what the
// numbers show. The prose of the lesson never types a measured figure:
// these functions write them from the run on the page, and compare the
// engine with its peer, HF transformers timed in the same session.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/plot"
)

// The runs of lab lfm2 bench kept in docs/results that the lesson shows
// (docs/lfm2.md tells each one's session).
const (
	// RecordedH200 is one H200: prefill, the MoE paths, decode at 1 and 64.
	RecordedH200 = "h200-lfm2-bf16.json"
	// RecordedH200x2 and RecordedH200x4 are the pipeline over two and four
	// H200s of the same session.
	RecordedH200x2 = "h200x2-lfm2-bf16.json"
	RecordedH200x4 = "h200x4-lfm2-bf16.json"
	// RecordedH200Micro4096 and RecordedH200x2Micro2048 are one H200 and
	// two with micro-batches of half the tokens, same session.
	RecordedH200Micro4096   = "h200-lfm2-bf16-micro4096.json"
	RecordedH200x2Micro2048 = "h200x2-lfm2-bf16-micro2048.json"
	// RecordedH100 is one H100, the session that also timed HF there.
	RecordedH100 = "h100-lfm2-bf16.json"
	// RecordedBeforeDecodeWork is one H100 before the decode work: the
	// profile that drove it.
	RecordedBeforeDecodeWork = "h100-lfm2-bf16-before-decode-work.json"
)

// recordedGPU is what the runs recorded before BenchRecord had the fields
// lack: their GPU, its DRAM bandwidth (datasheet) and the date of the run.
type recordedGPU struct {
	name     string
	peakGBps float64
	date     string
}

// The recorded GPUs: an H100 SXM (HBM3) and an H200 (HBM3e).
var (
	h100 = recordedGPU{"NVIDIA H100 80GB HBM3", 3350, "2026-11-22"}
	h200 = recordedGPU{"NVIDIA H200", 4800, "2026-11-22"}
)

// recordedRuns names the GPU of every lab lfm2 bench run in docs/results.
var recordedRuns = map[string]recordedGPU{
	RecordedH200: h200, RecordedH200x2: h200, RecordedH200x4: h200,
	RecordedH200Micro4096: h200, RecordedH200x2Micro2048: h200,
	"h200-lfm2-f32.json": h200, "h200x2-lfm2-f32.json": h200, "h200x4-lfm2-f32.json": h200,
	RecordedH100: h100, RecordedBeforeDecodeWork: h100, "h100-lfm2-random-bf16-vs-f32.json": h100,
}

// Run is a benchmark run a lesson shows: a BenchRecord, and File, its
// name in docs/results ("" for a run measured now).
type Run struct {
	BenchRecord
	File string `json:"file,omitempty"`
}

// ReadRecorded reads the run kept in dir (docs/results) as file. The GPU,
// its bandwidth and the date that records made before those fields lack
// come from the list of recorded runs.
func ReadRecorded(dir, file string) (*Run, error) {
	rec, err := ReadBenchRecord(filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	r := &Run{BenchRecord: *rec, File: file}
	if gpu, ok := recordedRuns[file]; ok {
		r.DeviceName = cmp.Or(r.DeviceName, gpu.name)
		r.PeakGBps = cmp.Or(r.PeakGBps, gpu.peakGBps)
		r.Date = cmp.Or(r.Date, gpu.date)
	}
	if r.DeviceName == "" {
		return nil, fmt.Errorf("lfm2: %s names no GPU and is not among the recorded runs", file)
	}
	return r, nil
}

// Live says whether the run was measured now.
func (r *Run) Live() bool { return r.File == "" }

// GPUs is how many GPUs the run used: one per pipeline stage.
func (r *Run) GPUs() int { return max(1, len(r.Stages)) }

// GPU names the run's GPUs: "NVIDIA H200", "2 × NVIDIA H200".
func (r *Run) GPU() string {
	if g := r.GPUs(); g > 1 {
		return fmt.Sprintf("%d × %s", g, r.DeviceName)
	}
	return r.DeviceName
}

// shortGPU is a GPU's name without its vendor and memory: "H100", "2 × H200".
func (r *Run) shortGPU() string {
	name := strings.TrimPrefix(r.DeviceName, "NVIDIA ")
	if f := strings.Fields(name); len(f) > 0 {
		name = f[0]
	}
	if g := r.GPUs(); g > 1 {
		return fmt.Sprintf("%d × %s", g, name)
	}
	return name
}

// shortCommit is the commit in 7 digits, with -dirty where the tree had
// changes.
func (r *Run) shortCommit() string {
	hash, dirty, _ := strings.Cut(r.Commit, "-")
	if dirty != "" {
		dirty = "-" + dirty
	}
	return hash[:min(7, len(hash))] + dirty
}

// Caption says where a run's figures come from, in the style of the
// lab's recorded tables (bench.RecordsCaption): the GPU, device, commit
// (and whether the tree had uncommitted changes), date and command.
func (r *Run) Caption() string {
	date, _, _ := strings.Cut(r.Date, "T")
	if r.Live() {
		return fmt.Sprintf("*Measured now on %s (`%s`), commit `%s`%s, as `%s` measures it:*", r.GPU(), r.Device, r.Commit, bench.DirtyNote(r.Commit), r.Command())
	}
	return fmt.Sprintf("*Recorded on %s (`%s`), commit `%s`%s, %s, with `%s` (`docs/results/%s`):*", r.GPU(), r.Device, r.Commit, bench.DirtyNote(r.Commit), date, r.Command(), r.File)
}

// Source says where a run comes from, within a sentence: "recorded on
// NVIDIA H200, commit 6609c75", "measured now on NVIDIA H100 80GB HBM3".
func (r *Run) Source() string {
	if r.Live() {
		return "measured now on " + r.GPU()
	}
	return fmt.Sprintf("recorded on %s, commit %s", r.GPU(), r.shortCommit())
}

// Tag is Source short enough for a chart's title: "H200, 6609c75", "H100, now".
func (r *Run) Tag() string {
	if r.Live() {
		return r.shortGPU() + ", now"
	}
	return r.shortGPU() + ", " + r.shortCommit()
}

// DecodeAt is the run's decoding at batch b.
func (r *Run) DecodeAt(b int) (*DecodeRecord, error) {
	for i := range r.Decode {
		if r.Decode[i].Batch == b {
			return &r.Decode[i], nil
		}
	}
	return nil, fmt.Errorf("lfm2: %s (%s) has no decode at batch %d", r.Model, r.Source(), b)
}

// ModelConfig is the config of the run's model: a preset's for a random
// model of one ("random lfm2-8b-a1b (seed 1)"), the MoE fixture's for the
// fixture's shape, or the config.json of a model directory.
func (r *Run) ModelConfig() (*Config, error) {
	var name string
	var seed uint64
	switch _, err := fmt.Sscanf(r.Model, "random %s (seed %d)", &name, &seed); {
	case strings.HasPrefix(r.Model, fixtureShape):
		return ParseConfig([]byte(fixtureConfig))
	case err == nil:
		return Preset(name)
	}
	c, err := LoadConfig(r.Model)
	if err != nil {
		return nil, fmt.Errorf("lfm2: the model of %s is not known here: %w", r.Source(), err)
	}
	return c, nil
}

// MoEPath is the run's profile of the MoE path called path.
func (r *Run) MoEPath(path string) (*MoERecord, error) {
	for i := range r.MoE {
		if r.MoE[i].Path == path {
			return &r.MoE[i], nil
		}
	}
	return nil, fmt.Errorf("lfm2: %s (%s) has no profile of the %s MoE path", r.Model, r.Source(), path)
}

// MicroBatches is how many micro-batches the run's prefill had: the LM
// head runs once per micro-batch, on the last stage.
func (r *Run) MicroBatches() (int, error) {
	if n := findOpCalls(r.PrefillOps, "lm head"); n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("lfm2: %s (%s) has no prefill profile with the lm head", r.Model, r.Source())
}

func findOpCalls(ops []OpTime, name string) int {
	o, _ := findOp(ops, name)
	return o.Calls
}

// ExpertMS is the time of the operations that run the experts (their
// names start with "expert"), and their names.
func ExpertMS(ops []OpTime) (ms float64, names []string) {
	for _, o := range ops {
		if strings.HasPrefix(o.Name, "expert") {
			ms, names = ms+o.MS, append(names, o.Name)
		}
	}
	return ms, names
}

// LiveRuns is what MeasureLive measured: the model on one GPU and, with
// several, pipelined over all of them (nil with one GPU, or where the 8B
// model did not fit on one).
type LiveRuns struct {
	One      *Run `json:"one"`
	Pipeline *Run `json:"pipeline,omitempty"`
}

// Save keeps the runs at path (JSON), for later cells.
func (l *LiveRuns) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("lfm2: keep the runs: %w", err)
	}
	return bench.WriteJSONValue(path, l)
}

// LoadLive reads the runs Save kept at path.
func LoadLive(path string) (*LiveRuns, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lfm2: no runs measured in this session (run the measuring cell first): %w", err)
	}
	var l LiveRuns
	if err := json.Unmarshal(data, &l); err != nil || l.One == nil {
		return nil, fmt.Errorf("lfm2: runs %s: %v", path, cmp.Or(err, errors.New("no run on one GPU")))
	}
	return &l, nil
}

// Lesson is where notebook 06 finds the GPU runs it shows: the runs of lab
// lfm2 bench recorded in Results (docs/results), and, where a CUDA device
// measured them (Measured), the runs the measuring cell kept at Live.
type Lesson struct {
	Results, Live string
	Measured      bool
}

// Runs is GPURuns for the lesson.
func (l Lesson) Runs() (one, pipeline *Run, err error) { return GPURuns(l.Results, l.Live, l.Measured) }

// Recorded reads the recorded run called file.
func (l Lesson) Recorded(file string) (*Run, error) { return ReadRecorded(l.Results, file) }

// HF is HF transformers' run on the GPU of r.
func (l Lesson) HF(r *Run) (*HFPeer, error) { return ReadHFPeer(l.Results, r.DeviceName) }

// GPURuns returns the runs the lesson shows: with a GPU here (measured),
// those MeasureLive kept at livePath; without, the runs recorded in dir on
// one H200 and on two.
func GPURuns(dir, livePath string, measured bool) (one, pipeline *Run, err error) {
	if measured {
		l, err := LoadLive(livePath)
		if err != nil {
			return nil, nil, err
		}
		return l.One, l.Pipeline, nil
	}
	if one, err = ReadRecorded(dir, RecordedH200); err != nil {
		return nil, nil, err
	}
	pipeline, err = ReadRecorded(dir, RecordedH200x2)
	return one, pipeline, err
}

// SizeFrom is the first lfm2 size of sizes ($GPULAB_SIZES), or
// DefaultGPUSize.
func SizeFrom(sizes []string) (BenchSize, error) {
	for _, s := range sizes {
		if strings.HasPrefix(s, "lfm2:") {
			return ParseBenchSize(s)
		}
	}
	return ParseBenchSize(DefaultGPUSize)
}

// MeasureLive measures what lab lfm2 bench measures on the CUDA devices
// ids: the 8B architecture with random bf16 weights (seed 1) on the first,
// with the MoE paths compared and decode at batch 1 and size.DecodeBatch;
// with more devices, the prefill again pipelined over all of them. Where
// the 8B model does not fit on one GPU, a model of the MoE fixture's shape
// runs instead (the same operations at toy sizes), and no pipeline. It
// writes what it does to w.
func MeasureLive(ids []string, size BenchSize, w io.Writer) (*LiveRuns, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("lfm2: no CUDA device to measure on")
	}
	var devs []*engine.Device
	for _, id := range ids {
		d, err := engine.Open(id)
		if err != nil {
			return nil, err
		}
		if d.Kind != engine.CUDA {
			return nil, fmt.Errorf("lfm2: %s is not a CUDA device", id)
		}
		devs = append(devs, d)
	}
	c, err := Preset(suitePreset)
	if err != nil {
		return nil, err
	}
	model := fmt.Sprintf("random %s (seed %d)", suitePreset, suiteSeed)
	spec := BenchSpec{Batch: size.Batch, Seq: size.Seq, Reps: 3, Seed: suiteSeed, DecodeSteps: size.Decode,
		DecodeBatches: size.decodeBatches(), CompareMoE: size.Decode > 0}
	o := spec.Sized(CUDAOptions{DType: BF16, MaxTokens: size.MicroTokens})
	live := &LiveRuns{}
	var m Engine
	err = errors.New("it is left out under compute-sanitizer, which slows its kernels down a hundredfold and more")
	if !cuda.Sanitized() {
		m, err = OpenRandom(c, suiteSeed, devs[:1], o)
	}
	fits := err == nil
	if !fits {
		fmt.Fprintf(w, "The 8B model does not run on %s: %v\n\nA model of the MoE fixture's shape runs instead: the same operations at toy sizes.\n", ids[0], err)
		if c, err = ParseConfig([]byte(fixtureConfig)); err != nil {
			return nil, err
		}
		model = fmt.Sprintf("%s (seed %d)", fixtureShape, suiteSeed)
		spec.Seq = min(spec.Seq, c.MaxPositions/2)
		spec.DecodeSteps = min(spec.DecodeSteps, c.MaxPositions/2-1)
		if m, err = OpenRandom(c, suiteSeed, devs[:1], spec.Sized(o)); err != nil {
			return nil, err
		}
	}
	if live.One, err = measureLive(m, spec, devs[0], devs[0].ID, model, w); err != nil {
		return nil, err
	}
	switch {
	case len(devs) == 1:
		return live, nil
	case !fits:
		fmt.Fprintln(w, "The pipeline is compared with one GPU running the same model, so it runs only where the 8B model fits on one.")
		return live, nil
	}
	spec.DecodeSteps, spec.CompareMoE = 0, false
	if m, err = OpenRandom(c, suiteSeed, devs, spec.Sized(o)); err != nil {
		fmt.Fprintf(w, "The pipeline over %d GPUs does not run: %v\n", len(devs), err)
		return live, nil
	}
	live.Pipeline, err = measureLive(m, spec, devs[0], engine.AllGPUs, model, w)
	return live, err
}

// measureLive runs Bench on m and closes it.
func measureLive(m Engine, spec BenchSpec, dev *engine.Device, device, model string, w io.Writer) (run *Run, err error) {
	defer func() {
		if cerr := m.Close(); err == nil {
			err = cerr
		}
	}()
	run = &Run{BenchRecord: BenchRecord{Device: device, DeviceName: dev.Name, PeakGBps: dev.PeakGBps, DType: BF16, Model: model,
		Batch: spec.Batch, Seq: spec.Seq, Reps: spec.Reps}}
	err = Bench(m, spec, &run.BenchRecord, func(part string) error {
		switch part {
		case PartPrefill:
			fmt.Fprintf(w, "%s on %s: prefill of %d × %d in %.1f ms, %.0f samples/s\n", model, run.GPU(), spec.Batch, spec.Seq, run.PrefillMS, run.SamplesPerSec)
		case PartMoE:
			for _, p := range run.MoE {
				fmt.Fprintf(w, "  MoE path %s: profiled prefill %.1f ms\n", p.Path, p.WallMS)
			}
		case PartDecode:
			d := run.Decode[len(run.Decode)-1]
			fmt.Fprintf(w, "  decode at batch %d: %.2f ms/step, %.1f tokens/s\n", d.Batch, d.MS/float64(d.Steps), d.TokensPerSec)
		}
		return nil
	})
	return run, err
}

// HFPeer is the lesson's peer: HF transformers (eager attention, bf16) on
// the real 8B-A1B architecture with random weights, timed by
// scripts/peers/hf_lfm2.py on one GPU.
type HFPeer struct {
	Device       string  `json:"device"`
	Transformers string  `json:"transformers"`
	Prefill64    float64 `json:"prefill_1024x32_batches_of_64_samples_per_s"`   // PLATFORM.md's batching
	Prefill1024  float64 `json:"prefill_1024x32_batches_of_1024_samples_per_s"` // one batch: HF's fastest
	Decode       float64 `json:"decode_batch1_tokens_per_s"`                    // greedy, with its cache
	Attention    string  `json:"attention"`                                     // eager
	DType        string  `json:"dtype"`
	// File is its name in docs/results; SameSession the engine's run of
	// the session that timed HF, where it is kept.
	File        string `json:"-"`
	SameSession string `json:"-"`
}

// hfPeers are the HF runs in docs/results, by GPU, with the engine's run
// of the same session where it is kept (the H200's was replaced by later
// runs: docs/lfm2.md).
var hfPeers = []struct{ gpu, file, sameSession string }{
	{"H100", "h100-hf-lfm2.json", RecordedH100},
	{"H200", "h200-hf-lfm2.json", ""},
}

// ReadHFPeer reads, from dir (docs/results), HF's run on the GPU called
// gpu (a device name): the H100's for an H100, the H200's otherwise.
func ReadHFPeer(dir, gpu string) (*HFPeer, error) {
	p := hfPeers[len(hfPeers)-1]
	for _, q := range hfPeers {
		if strings.Contains(gpu, q.gpu) {
			p = q
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, p.file))
	if err != nil {
		return nil, fmt.Errorf("lfm2: HF's run: %w", err)
	}
	hf := &HFPeer{File: p.file, SameSession: p.sameSession}
	if err := json.Unmarshal(data, hf); err != nil {
		return nil, fmt.Errorf("lfm2: HF's run %s: %w", p.file, err)
	}
	if hf.Prefill64 <= 0 || hf.Prefill1024 <= 0 || hf.Decode <= 0 {
		return nil, fmt.Errorf("lfm2: HF's run %s lacks a prefill or decode rate", p.file)
	}
	return hf, nil
}

// session says when HF was timed, against run r.
func (hf *HFPeer) session(r *Run) string {
	switch {
	case r.File != "" && r.File == hf.SameSession:
		return fmt.Sprintf("timed on the %s in the same session", hf.Device)
	case strings.Contains(r.DeviceName, strings.TrimPrefix(hf.Device, "NVIDIA ")):
		return fmt.Sprintf("timed on the same kind of GPU in another session, `docs/results/%s`", hf.File)
	}
	return fmt.Sprintf("timed on an %s, not this GPU, `docs/results/%s`", hf.Device, hf.File)
}

// HFComparison is scripts/peers/hf_lfm2.py's comparison of the engine with
// HF on HF's random 8B checkpoint (docs/results/h100-lfm2-vs-hf.json):
// logits of the same sequences, in fp32 and bf16, on an H100.
type HFComparison struct {
	Positions int                `json:"positions"`
	Top1      map[string]float64 `json:"top1_agreement"`
	// HFRoPE is the engine's fp32 against HF's fp32; LabRoPE the same with
	// the engine's RoPE frequencies in HF.
	HFRoPE           struct{ Max float64 } `json:"ours_f32_vs_hf-f32_per_position"`
	LabRoPE          struct{ Max float64 } `json:"ours_f32_vs_hf-f32-labrope_per_position"`
	MedianTop2Margin float64               `json:"median_top2_margin_hf_f32"`
}

// HFComparisonFile is the comparison's name in docs/results.
const HFComparisonFile = "h100-lfm2-vs-hf.json"

// The HF records in docs/results (the two HFPeer files and HFComparisonFile)
// hold no provenance of their own: these are their sessions' date, the
// commit that recorded them, and their commands (docs/lfm2.md, "Speed"
// and "Correctness at full size").
const (
	hfRecordedDate    = "2026-11-22"
	hfRecordedCommit  = "d51e508"
	hfTimingCommand   = "python3 scripts/peers/hf_lfm2.py make DIR"
	hfCompareCommand  = "lab lfm2 logits --model DIR, then python3 scripts/peers/hf_lfm2.py compare DIR OURS_F32.npy OURS_BF16.npy OUT.json"
	hfComparisonOnGPU = "NVIDIA H100 80GB HBM3"
)

// Caption says where HF's timings come from: its version and settings,
// the GPU, date, command, file and the commit that recorded it.
func (hf *HFPeer) Caption() string {
	return fmt.Sprintf("*HF transformers %s (%s attention, %s) timed on %s, %s, with `%s` (`docs/results/%s`, recorded in commit `%s`).*",
		hf.Transformers, hf.Attention, hf.DType, hf.Device, hfRecordedDate, hfTimingCommand, hf.File, hfRecordedCommit)
}

// HFComparisonCaption says where the comparison of the engine's logits with
// HF's (ReadHFComparison) comes from: the GPU, date, commands, file and the
// commit that recorded it.
func HFComparisonCaption() string {
	return fmt.Sprintf("*The engine's logits against HF's on HF's random 8B checkpoint, on %s, %s, with `%s` (`docs/results/%s`, recorded in commit `%s`).*",
		hfComparisonOnGPU, hfRecordedDate, hfCompareCommand, HFComparisonFile, hfRecordedCommit)
}

// ReadHFComparison reads the comparison from dir (docs/results).
func ReadHFComparison(dir string) (*HFComparison, error) {
	data, err := os.ReadFile(filepath.Join(dir, HFComparisonFile))
	if err != nil {
		return nil, fmt.Errorf("lfm2: comparison with HF: %w", err)
	}
	var a HFComparison
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("lfm2: %s: %w", HFComparisonFile, err)
	}
	for _, k := range []string{top1Ours, top1HF} {
		if _, ok := a.Top1[k]; !ok {
			return nil, fmt.Errorf("lfm2: %s has no top-1 agreement %q", HFComparisonFile, k)
		}
	}
	return &a, nil
}

// The top-1 agreements the lesson reads: the engine's bf16 against its
// fp32, and HF's bf16 against its fp32.
const (
	top1Ours = "ours-f32 vs ours-bf16"
	top1HF   = "hf-f32 vs hf-bf16"
)

// OpBars draws each operation's time in ms, in the order of names (every
// operation of ops, as they come, when names is nil), on a logarithmic
// axis where the times span decades; an operation ops lack is a bar of 0
// (and the axis linear).
func OpBars(title string, ops []OpTime, names []string) *plot.Figure {
	if names == nil {
		for _, o := range ops {
			names = append(names, o.Name)
		}
	}
	values := make([]float64, len(names))
	for i, n := range names {
		values[i] = OpMS(ops, n)
	}
	return decadeBars(title, "ms", names, values)
}

// LaneName names a lane of a pipeline stage as the timeline shows it:
// "stage 1 · lane A (cuda:0)", stages from 1, lanes from A.
func LaneName(s TimelineSpan) string {
	return fmt.Sprintf("stage %d · lane %c (%s)", s.Stage+1, 'A'+rune(s.Lane), s.Device)
}

// TimelineFigure draws every micro-batch on every stage and lane: one
// square wave per lane, high while the lane works, on a y axis that names
// each lane (LaneName): the first stage's lane A at the top.
func TimelineFigure(title string, spans []TimelineSpan) *plot.Figure {
	type laneKey struct{ stage, lane int }
	var keys []laneKey
	for _, s := range spans {
		if k := (laneKey{s.Stage, s.Lane}); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b laneKey) int { return cmp.Or(cmp.Compare(a.stage, b.stage), cmp.Compare(a.lane, b.lane)) })
	series := make([]plot.Series, len(keys))
	sorted := slices.Clone(spans)
	slices.SortStableFunc(sorted, func(a, b TimelineSpan) int { return cmp.Compare(a.StartMS, b.StartMS) })
	for _, s := range sorted {
		i := slices.Index(keys, laneKey{s.Stage, s.Lane})
		level := float64(len(keys) - 1 - i)
		series[i].Name = LaneName(s)
		series[i].X = append(series[i].X, s.StartMS, s.StartMS, s.EndMS, s.EndMS)
		series[i].Y = append(series[i].Y, level-0.3, level+0.3, level+0.3, level-0.3)
	}
	names := make([]string, len(keys))
	for i, s := range series {
		names[len(keys)-1-i] = s.Name
	}
	return plot.Lines(title, "ms from the start of the prefill", "", series...).WithYNames(names...)
}

// PrefillPeerBars draws the run's prefill samples/s next to HF's, in
// batches of 64 and in one batch.
func PrefillPeerBars(r *Run, hf *HFPeer) *plot.Figure {
	return plot.Bars(fmt.Sprintf("prefill %d × %d, samples/s: gpulab and HF transformers", r.Batch, r.Seq), "samples/s",
		[]string{"gpulab, " + r.Tag(), "HF, batches of 64", "HF, one batch"},
		[]float64{r.SamplesPerSec, hf.Prefill64, hf.Prefill1024})
}

// RunMarkdown tabulates a run's timed parts: the prefill, and the decode
// at each batch size, with their rates.
func RunMarkdown(r *Run) string {
	var b strings.Builder
	b.WriteString("| part | sequences | tokens | ms | rate |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| prefill (fastest of %d) | %d | %d × %d | %.1f | %.0f samples/s |\n", r.Reps, r.Batch, r.Batch, r.Seq, r.PrefillMS, r.SamplesPerSec)
	for _, d := range r.Decode {
		fmt.Fprintf(&b, "| decode, %d steps (%.2f ms each) | %d | %d × %d | %.1f | %s tokens/s |\n",
			d.Steps, d.MS/float64(d.Steps), d.Batch, d.Batch, d.Steps, d.MS, runRate(d.TokensPerSec))
	}
	return b.String()
}

// StageMarkdown tabulates a pipeline's profiled prefill by stage: its
// parts, how long it was busy (a lane working), its first start and last
// end. Stages count from 1, as on the timeline.
func StageMarkdown(r *Run) string {
	var b strings.Builder
	b.WriteString("| stage | GPU | parts | busy ms | first start ms | last end ms |\n|---:|---|---|---:|---:|---:|\n")
	for _, st := range r.StageTimes {
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %.1f | %.1f |\n", st.Stage+1, st.Device, st.Parts, st.BusyMS, st.FirstMS, st.LastMS)
	}
	return b.String()
}

// MoEPathsMarkdown tabulates the run's prefill profiled with each MoE
// path: each operation's ms per path ("—" where a path does not run it),
// then the profiled prefill's wall time.
func MoEPathsMarkdown(r *Run) (string, error) {
	if len(r.MoE) == 0 {
		return "", fmt.Errorf("lfm2: %s (%s) did not compare the MoE paths", r.Model, r.Source())
	}
	var b strings.Builder
	b.WriteString("| operation |")
	for _, p := range r.MoE {
		fmt.Fprintf(&b, " %s (ms) |", p.Path)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(r.MoE)) + "\n")
	for _, op := range moeOperations(r.MoE) {
		b.WriteString("| " + strings.ReplaceAll(op, "|", "\\|") + " |") // "w1|w3" would end the cell
		for _, p := range r.MoE {
			if o, ok := findOp(p.Ops, op); ok {
				fmt.Fprintf(&b, " %.1f |", o.MS)
			} else {
				b.WriteString(" — |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("| **wall time of the profiled prefill** |")
	for _, p := range r.MoE {
		fmt.Fprintf(&b, " **%.1f** |", p.WallMS)
	}
	return b.String() + "\n", nil
}

// MoEWallBars draws the wall time of the prefill profiled with each MoE
// path, on a logarithmic axis where they span decades (the persistent
// kernel's prefill against the GEMMs').
func MoEWallBars(r *Run) *plot.Figure {
	var paths []string
	var walls []float64
	for _, p := range r.MoE {
		paths, walls = append(paths, p.Path), append(walls, p.WallMS)
	}
	return decadeBars(fmt.Sprintf("prefill %d × %d by MoE path, profiled wall time (%s)", r.Batch, r.Seq, r.Tag()), "ms", paths, walls)
}

// AutoChoiceMarkdown says which MoE path the engine picks (the auto
// choice) at decode at batch 1 and 64 and at the run's micro-batch size:
// (token, expert) pairs against PersistentMaxPairs.
func AutoChoiceMarkdown(r *Run) (string, error) {
	c, err := r.ModelConfig()
	if err != nil {
		return "", err
	}
	mbs, err := r.MicroBatches()
	if err != nil {
		return "", err
	}
	per := r.Batch * r.Seq / mbs // tokens of a micro-batch
	var b strings.Builder
	fmt.Fprintf(&b, "The auto choice runs the persistent kernel up to %d (token, expert) pairs per micro-batch; above, wgmma on an H100 or H200 (bf16), grouped elsewhere:\n\n", PersistentMaxPairs)
	b.WriteString("| tokens in a micro-batch | pairs (top-k) | pairs per expert, on average | path |\n|---:|---:|---:|---|\n")
	for _, tokens := range []int{1, 64, per} {
		pairs := tokens * c.ExpertsPerToken
		choice := "wgmma or grouped"
		if pairs <= PersistentMaxPairs {
			choice = MoEPersistent
		}
		fmt.Fprintf(&b, "| %d | %d | %.2f | %s |\n", tokens, pairs, float64(pairs)/float64(c.Experts), choice)
	}
	return b.String(), nil
}

// MicroBatchMarkdown tabulates runs of one session with fewer or more
// sequences per micro-batch, then says, for each pair (a run, then the
// same GPUs with smaller micro-batches), what the smaller ones cost.
func MicroBatchMarkdown(pairs ...[2]*Run) (string, error) {
	var b strings.Builder
	b.WriteString("| run | sequences per micro-batch (mean) | micro-batches | samples/s |\n|---|---:|---:|---:|\n")
	var sentences []string
	for _, p := range pairs {
		var perMB [2]int
		for i, r := range p {
			mbs, err := r.MicroBatches()
			if err != nil {
				return "", err
			}
			perMB[i] = r.Batch / mbs
			tokens := "the default micro-batch size"
			if r.MicroTokens > 0 {
				tokens = fmt.Sprintf("--micro-tokens %d", r.MicroTokens)
			}
			fmt.Fprintf(&b, "| %s, %s (%s) | %d | %d | %.0f |\n", r.GPU(), tokens, r.Tag(), perMB[i], mbs, r.SamplesPerSec)
		}
		change := p[1].SamplesPerSec/p[0].SamplesPerSec - 1
		verb := "loses"
		if change > 0 {
			verb = "gains"
		}
		sentences = append(sentences, fmt.Sprintf("%s %s %s going from about %d to about %d sequences per micro-batch",
			p[0].GPU(), verb, runPct(math.Abs(change)), perMB[0], perMB[1]))
	}
	b.WriteString("\n" + bench.JoinAnd(sentences) + ".\n")
	return b.String(), nil
}

// PipelineBound is what a pipeline of g stages over n equal micro-batches
// can give at most over one GPU: each stage idles g-1 of n+g-1 slots, so
// n·g/(n+g-1).
func PipelineBound(n, g int) float64 { return float64(n*g) / float64(n+g-1) }

// PipelineBars draws the prefill samples/s on one GPU and on each
// pipeline, each pipeline followed by the bound of its bubble
// (PipelineBound of its micro-batches and stages, times one GPU's rate):
// a bar of its own, since each bound holds for its pipeline alone. The
// first pipeline needs a profile to count its micro-batches; a later one
// without a profile gets no bound.
func PipelineBars(one *Run, pipes ...*Run) (*plot.Figure, error) {
	if len(pipes) == 0 {
		return nil, fmt.Errorf("lfm2: no pipeline to set against one GPU")
	}
	labels, values := []string{"one GPU"}, []float64{one.SamplesPerSec}
	var counts []string // micro-batches of each bound
	for i, p := range pipes {
		g := p.GPUs()
		labels, values = append(labels, fmt.Sprintf("%d GPUs", g)), append(values, p.SamplesPerSec)
		mbs, err := p.MicroBatches()
		switch {
		case err != nil && i == 0:
			return nil, err
		case err != nil: // a later pipeline recorded without a profile: its bound is unknown
			continue
		}
		labels, counts = append(labels, fmt.Sprintf("bound, %d GPUs", g)), append(counts, fmt.Sprintf("%d on %d GPUs", mbs, g))
		values = append(values, PipelineBound(mbs, g)*one.SamplesPerSec)
	}
	return plot.Bars(fmt.Sprintf("prefill %d × %d, samples/s, each pipeline next to its bubble's bound (micro-batches: %s; %s)",
		one.Batch, one.Seq, strings.Join(counts, ", "), one.Tag()), "samples/s", labels, values), nil
}
