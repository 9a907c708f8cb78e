package lfm2

import (
	"encoding/json"
	"fmt"
	"os"
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
	MicroTokens   int      `json:"micro_tokens,omitempty"`
	PrefillMS     float64  `json:"prefill_ms"`
	SamplesPerSec float64  `json:"samples_per_s"`
	TokensPerSec  float64  `json:"prefill_tokens_per_s"`
	PrefillOps    []OpTime `json:"prefill_ops,omitempty"` // one more prefill, by operation (CUDA)
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
		out[i] = OpTime{Name: k.Name, Calls: k.Calls, MS: float64(k.Time) / float64(time.Millisecond)}
	}
	return out
}

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
