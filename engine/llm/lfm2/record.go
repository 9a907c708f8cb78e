package lfm2

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpulab/datasets"
	"gpulab/engine/readlimit"
)

// BenchRecord is one run of `lab lfm2 bench` (Bench), as --json writes it
// and as docs/results keeps it: the timed prefill and decode, and what a
// bench.Record of the lfm2 suite cannot hold: the profiles by operation,
// by stage and on a timeline, and the MoE paths compared. The JSON names
// are the files' format: keep them (fields added later are omitempty, and
// the files recorded before them lack them).
type BenchRecord struct {
	Commit string `json:"commit"`
	// Date is when the run started (RFC 3339, UTC).
	Date string `json:"date,omitempty"`
	// Device is the --device the run was given: cuda:N, all-gpus or cpu;
	// DeviceName the name of its (first) device and PeakGBps that device's
	// DRAM bandwidth in GB/s (0 when unknown).
	Device     string  `json:"device"`
	DeviceName string  `json:"device_name,omitempty"`
	PeakGBps   float64 `json:"peak_gbps,omitempty"`
	// Stages is the pipeline, one line per GPU (CUDA).
	Stages []string `json:"stages,omitempty"`
	DType  string   `json:"dtype"`
	Model  string   `json:"model"`
	Batch  int      `json:"batch"`
	Seq    int      `json:"seq"`
	Reps   int      `json:"reps"`
	// MicroTokens is the most tokens of one micro-batch, when not the
	// engine's default (CUDA).
	MicroTokens int `json:"micro_tokens,omitempty"`
	// MoEPath is the MoE path asked for, when not the engine's auto choice.
	MoEPath       string   `json:"moe_path,omitempty"`
	PrefillMS     float64  `json:"prefill_ms"`
	SamplesPerSec float64  `json:"samples_per_s"`
	TokensPerSec  float64  `json:"prefill_tokens_per_s"`
	PrefillOps    []OpTime `json:"prefill_ops,omitempty"` // one more prefill, by operation (CUDA)
	// ProfileWallMS is that profiled prefill's wall time (CUDA): the
	// operations overlap on two lanes per GPU, and add up to more.
	ProfileWallMS float64 `json:"profile_wall_ms,omitempty"`
	// StageTimes is that profiled prefill by pipeline stage (CUDA).
	StageTimes []StageTime `json:"stage_times,omitempty"`
	// Timeline is that profiled prefill's micro-batches on every stage and
	// lane (CUDA).
	Timeline []TimelineSpan `json:"timeline,omitempty"`
	// With a reference: samples whose logits all lie within Tol of the
	// reference, the largest difference, and the share of positions that
	// agree on the most likely token.
	Validated int            `json:"validated,omitempty"`
	MaxDiff   float64        `json:"max_abs_diff,omitempty"`
	Top1Agree float64        `json:"top1_agreement,omitempty"`
	Tol       float64        `json:"tol,omitempty"`
	Decode    []DecodeRecord `json:"decode,omitempty"`
	MoE       []MoERecord    `json:"moe_paths,omitempty"`
}

// OpTime is one operation's GPU time in a profile, summed over layers,
// micro-batches, lanes and stages.
type OpTime struct {
	Name  string  `json:"name"`
	Calls int     `json:"calls"`
	MS    float64 `json:"ms"`
}

// DecodeRecord is greedy decoding timed at one batch size.
type DecodeRecord struct {
	Batch        int      `json:"batch"`
	Prompt       int      `json:"prompt"`
	Steps        int      `json:"steps"`
	MS           float64  `json:"ms"`
	TokensPerSec float64  `json:"tokens_per_s"`
	StepOps      []OpTime `json:"step_ops,omitempty"` // one more step, by operation (CUDA)
}

// MoERecord is one prefill profiled with one MoE path.
type MoERecord struct {
	Path   string   `json:"path"`
	WallMS float64  `json:"wall_ms"`
	Ops    []OpTime `json:"ops"`
}

// OpTimes is a profile's operations as a record keeps them, slowest first
// (nil for a nil profile).
func OpTimes(p *Profile) []OpTime {
	if p == nil {
		return nil
	}
	out := make([]OpTime, len(p.Kernels))
	for i, k := range p.Kernels {
		out[i] = OpTime{Name: k.Name, Calls: k.Calls, MS: ms(k.Time)}
	}
	return out
}

// StageTime is one pipeline stage in a profiled run: when it worked on at
// least one lane, and the span from its first start to its last end. Busy
// against the run's wall time is the stage's utilization; a pipeline is
// balanced when every stage's Busy is alike, and fills and drains fast when
// First is small for every stage and Last close to the wall time.
type StageTime struct {
	Stage   int     `json:"stage"`
	Device  string  `json:"device"`
	Parts   string  `json:"parts"` // its layers, e.g. "layers 0-11 and the mixer of layer 12"
	BusyMS  float64 `json:"busy_ms"`
	FirstMS float64 `json:"first_ms"`
	LastMS  float64 `json:"last_ms"`
}

// StageTimes sums a profile's timeline by stage: the union of its lanes'
// spans (nil for a nil profile).
func StageTimes(p *Profile) []StageTime {
	if p == nil {
		return nil
	}
	byStage := map[int][]Span{}
	for _, s := range p.Timeline {
		byStage[s.Stage] = append(byStage[s.Stage], s)
	}
	var out []StageTime
	for stage, spans := range byStage {
		slices.SortFunc(spans, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
		var busy time.Duration
		start, end := spans[0].Start, spans[0].End // the interval being merged
		last := end
		for _, s := range spans[1:] {
			if s.Start > end {
				busy += end - start
				start, end = s.Start, s.End
			}
			end, last = max(end, s.End), max(last, s.End)
		}
		busy += end - start
		out = append(out, StageTime{Stage: stage, Device: spans[0].Device,
			Parts:  partsString(spans[0].From, spans[0].To),
			BusyMS: ms(busy), FirstMS: ms(spans[0].Start), LastMS: ms(last)})
	}
	slices.SortFunc(out, func(a, b StageTime) int { return cmp.Compare(a.Stage, b.Stage) })
	return out
}

// TimelineSpan is one micro-batch's work on one lane of one pipeline stage
// in a profiled run, in ms from the run's start (see Span).
type TimelineSpan struct {
	Stage      int     `json:"stage"`
	Lane       int     `json:"lane"`
	Device     string  `json:"device"`
	MicroBatch int     `json:"micro_batch"`
	StartMS    float64 `json:"start_ms"`
	EndMS      float64 `json:"end_ms"`
}

// Timeline is a profile's timeline as a record keeps it (nil for a nil
// profile).
func Timeline(p *Profile) []TimelineSpan {
	if p == nil {
		return nil
	}
	var out []TimelineSpan
	for _, s := range p.Timeline {
		out = append(out, TimelineSpan{Stage: s.Stage, Lane: s.Lane, Device: s.Device, MicroBatch: s.MicroBatch,
			StartMS: ms(s.Start), EndMS: ms(s.End)})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Command is the `lab lfm2 bench` command line that makes a run like r:
// its model, sizes, device and options as the record keeps them (a
// reference file, unnamed in the record, is REF.npy; --json is left out).
func (r *BenchRecord) Command() string {
	args := []string{"lab lfm2 bench"}
	add := func(format string, v ...any) { args = append(args, fmt.Sprintf(format, v...)) }
	var preset string
	var seed uint64
	if _, err := fmt.Sscanf(r.Model, "random %s (seed %d)", &preset, &seed); err == nil {
		add("--random %s", preset)
		if seed != 1 {
			add("--seed %d", seed)
		}
	} else {
		add("--model %s", r.Model)
	}
	add("--batch %d --seq %d --device %s --dtype %s", r.Batch, r.Seq, r.Device, r.DType)
	if r.Reps != 3 {
		add("--reps %d", r.Reps)
	}
	if r.MicroTokens > 0 {
		add("--micro-tokens %d", r.MicroTokens)
	}
	if r.MoEPath != "" {
		add("--moe %s", r.MoEPath)
	}
	if len(r.Decode) > 0 {
		var batches []string
		for _, d := range r.Decode {
			batches = append(batches, strconv.Itoa(d.Batch))
		}
		add("--decode %d --decode-batch %s", r.Decode[0].Steps, strings.Join(batches, ","))
	}
	if len(r.MoE) > 0 {
		add("--compare-moe")
	}
	if r.Tol > 0 {
		add("--ref REF.npy --tol %g", r.Tol)
	}
	return strings.Join(args, " ")
}

// Validate compares logits of shape [batch, seq, vocab] with the reference
// logits in the .npy file at path, and fills r's validation fields: the
// samples (sequences) whose logits all lie within tol, the largest
// difference (NaN counts as infinite) and the share of positions whose
// most likely token agrees. failed says how many samples are off by more
// than tol; err is for a reference that cannot be read or has another
// shape.
func (r *BenchRecord) Validate(logits []float32, path string, shape []int, tol float64) (failed, err error) {
	ref, refShape, err := datasets.ReadNPYTensor(path)
	if err != nil {
		return nil, fmt.Errorf("lfm2: reference logits: %w", err)
	}
	if len(shape) != 3 || !slices.Equal(refShape, shape) || len(logits) != shape[0]*shape[1]*shape[2] {
		return nil, fmt.Errorf("lfm2: reference logits %s have shape %v, want %v (the same batch, sequence length and model) for %d logits",
			path, refShape, shape, len(logits))
	}
	B, T, V := shape[0], shape[1], shape[2]
	agree := 0
	r.Tol, r.Validated, r.MaxDiff = tol, 0, 0
	for b := range B {
		worst := 0.0
		for t := range T {
			row, refRow := logits[(b*T+t)*V:(b*T+t+1)*V], ref[(b*T+t)*V:(b*T+t+1)*V]
			for i := range row {
				d := math.Abs(float64(row[i] - refRow[i]))
				if math.IsNaN(d) {
					d = math.Inf(1)
				}
				worst = max(worst, d)
			}
			if Argmax(row) == Argmax(refRow) {
				agree++
			}
		}
		r.MaxDiff = max(r.MaxDiff, worst)
		if worst <= tol {
			r.Validated++
		}
	}
	r.Top1Agree = float64(agree) / float64(B*T)
	if r.Validated < B {
		return fmt.Errorf("%d of %d samples differ from %s by more than %g (max %.3g)", B-r.Validated, B, path, tol, r.MaxDiff), nil
	}
	return nil, nil
}

// ReadBenchRecord reads a BenchRecord from the JSON file at path.
func ReadBenchRecord(path string) (*BenchRecord, error) {
	data, err := readlimit.ReadFile(path, "bench record", 16<<20)
	if err != nil {
		return nil, fmt.Errorf("lfm2: bench record: %w", err)
	}
	var r BenchRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("lfm2: bench record %s: %w", path, err)
	}
	return &r, nil
}
