package lfm2

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"
)

// BenchRecord is one run of `lab lfm2 bench`, as --json writes it and as
// docs/results keeps it. The JSON names are the files' format: keep them.
type BenchRecord struct {
	Commit string `json:"commit"`
	Device string `json:"device"`
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
	// StageTimes is that profiled prefill by pipeline stage (CUDA).
	StageTimes []StageTime `json:"stage_times,omitempty"`
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ReadBenchRecord reads a BenchRecord from the JSON file at path.
func ReadBenchRecord(path string) (*BenchRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lfm2: bench record: %w", err)
	}
	var r BenchRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("lfm2: bench record %s: %w", path, err)
	}
	return &r, nil
}
