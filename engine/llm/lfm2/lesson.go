package lfm2

// What notebook 06 says about the model and its CPU reference, built from
// the config and from runs of the reference, so that its prose never types
// a number that a run computed. The experiments with the log's bugs are in
// lesson_bugs.go, the softmax in lesson_softmax.go, the warp reduction in
// lesson_warp.go, the experts' load in lesson_router.go and the tokenizer's
// in lesson_tokens.go.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/plot"
	"gpulab/kernels"
)

// FixturesDir is where, under the repository root, the tiny models that
// transformers made are kept (scripts/fixtures/lfm2_fixtures.py): "dense",
// "moe", and the "tokenizer".
const FixturesDir = "datasets/testdata/lfm2"

// ReferenceTolerance is how far apart two fp32 forwards of the same model
// may be: the CPU reference and transformers, or the CUDA fp32 engine and
// the reference. Their sums run in different orders, so they round
// differently in the last bits, and the layers carry that a little further.
const ReferenceTolerance = 1e-4

// LoadModel loads the config and the fp32 weights of a model directory.
func LoadModel(dir string) (*Config, *Weights, error) {
	c, err := LoadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, nil, err
	}
	defer ck.Close()
	w, err := LoadWeights(c, ck)
	if err != nil {
		return nil, nil, err
	}
	return c, w, nil
}

// A Fixture is a tiny random model that transformers made, with what
// transformers computed from it.
type Fixture struct {
	Name    string // the directory's name: dense or moe
	Dir     string // the directory, for an engine to open
	Config  *Config
	Weights *Weights
	Batch   [][]int   // ids.json: sequences of equal length
	Logits  []float32 // logits.npy: transformers' fp32 logits of Batch, [batch, seq, vocab]
	// greedy.json: a prompt and transformers' greedy continuation of it.
	Prompt, Continuation []int
}

// LoadFixture loads a fixture directory (FixturesDir/dense or /moe).
func LoadFixture(dir string) (*Fixture, error) {
	c, w, err := LoadModel(dir)
	if err != nil {
		return nil, err
	}
	f := &Fixture{Name: filepath.Base(dir), Dir: dir, Config: c, Weights: w}
	var ids struct{ Batch [][]int }
	if err := decodeJSONFile(filepath.Join(dir, "ids.json"), &ids); err != nil {
		return nil, err
	}
	var greedy struct{ Prompt, Continuation []int }
	if err := decodeJSONFile(filepath.Join(dir, "greedy.json"), &greedy); err != nil {
		return nil, err
	}
	f.Batch, f.Prompt, f.Continuation = ids.Batch, greedy.Prompt, greedy.Continuation
	if err := CheckBatch(c, f.Batch); err != nil {
		return nil, fmt.Errorf("lfm2: %s/ids.json: %w", dir, err)
	}
	logits, shape, err := datasets.ReadNPYTensor(filepath.Join(dir, "logits.npy"))
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	if want := []int{len(f.Batch), f.Seq(), c.Vocab}; !slices.Equal(shape, want) {
		return nil, fmt.Errorf("lfm2: %s/logits.npy has shape %v, want %v (batch, seq, vocab)", dir, shape, want)
	}
	f.Logits = logits
	return f, nil
}

// LoadFixtures loads the fixtures that hold a model, dense then moe, from
// dir (FixturesDir under the repository's root).
func LoadFixtures(dir string) ([]*Fixture, error) {
	var out []*Fixture
	for _, name := range []string{"dense", "moe"} {
		f, err := LoadFixture(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// decodeJSONFile decodes the JSON file at path into v.
func decodeJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("lfm2: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("lfm2: %s: %w", path, err)
	}
	return nil
}

// Seq is the length of the fixture's sequences.
func (f *Fixture) Seq() int { return len(f.Batch[0]) }

// A ReferenceCheck is the CPU reference against transformers on a fixture.
type ReferenceCheck struct {
	Fixture *Fixture
	MaxDiff float64 // max |reference − transformers| over every logit of the batch
	Greedy  []int   // the reference's greedy continuation of the fixture's prompt
}

// CheckReference runs the reference on the fixture's batch and prompt; it
// returns an error if a logit is further than ReferenceTolerance from
// transformers' or a greedy token differs.
func (f *Fixture) CheckReference() (ReferenceCheck, error) {
	r := ReferenceCheck{Fixture: f}
	logits, err := Logits(f.Config, f.Weights, f.Batch)
	if err != nil {
		return r, err
	}
	r.MaxDiff = slices.Max(PositionDiffs(logits, f.Logits, f.Seq(), f.Config.Vocab))
	if r.Greedy, err = Greedy(f.Config, f.Weights, f.Prompt, len(f.Continuation)); err != nil {
		return r, err
	}
	if !(r.MaxDiff <= ReferenceTolerance) || !slices.Equal(r.Greedy, f.Continuation) {
		return r, fmt.Errorf("lfm2: %s: the CPU reference does not match transformers: %s", f.Name, r)
	}
	return r, nil
}

func (r ReferenceCheck) String() string {
	f := r.Fixture
	same := "identical to transformers'"
	if !slices.Equal(r.Greedy, f.Continuation) {
		same = fmt.Sprintf("transformers' is %v", f.Continuation)
	}
	return fmt.Sprintf("%s: %s\n  logits of %d sequences × %d positions × %d tokens: max |reference − transformers| = %.2g (tolerance %.0e)\n  greedy after %v: %v, %s",
		f.Name, Describe(f.Config), len(f.Batch), f.Seq(), f.Config.Vocab, r.MaxDiff, ReferenceTolerance, f.Prompt, r.Greedy, same)
}

// PositionDiffs is, for each position, the largest |a − b| over the
// sequences and the vocabulary of two logits arrays [batch, seq, vocab]
// (NaN counts as +Inf). The arrays must have the same length.
func PositionDiffs(a, b []float32, seq, vocab int) []float64 {
	out := make([]float64, seq)
	for i := range a {
		d := math.Abs(float64(a[i] - b[i]))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		p := i / vocab % seq
		out[p] = max(out[p], d)
	}
	return out
}

// LayerPattern spells the layers as letters: C for a conv layer, A for an
// attention layer; lower case where the feed-forward is a mixture of
// experts, upper case where it is dense.
func LayerPattern(c *Config) string {
	var b strings.Builder
	for l := range c.Layers {
		letter := "C"
		if c.IsAttention(l) {
			letter = "A"
		}
		if c.IsMoE(l) {
			letter = strings.ToLower(letter)
		}
		b.WriteString(letter)
	}
	return b.String()
}

// AttentionLayers lists the layers that attend.
func AttentionLayers(c *Config) []int {
	var out []int
	for l := range c.Layers {
		if c.IsAttention(l) {
			out = append(out, l)
		}
	}
	return out
}

// Describe is a config in two lines: its sizes, then its layers.
func Describe(c *Config) string {
	ffn := "dense feed-forward"
	if c.Experts > 0 {
		ffn = fmt.Sprintf("%d experts, top-%d", c.Experts, c.ExpertsPerToken)
	}
	return fmt.Sprintf("%s, hidden %d, %d layers, vocab %d, %d query / %d KV heads of %d, RoPE θ %g, %s\n  layers %s (C conv, A attention; lower case: MoE feed-forward), attention at %v",
		c.ModelType, c.Hidden, c.Layers, c.Vocab, c.Heads, c.KVHeads, c.HeadDim, c.RopeTheta, ffn, LayerPattern(c), AttentionLayers(c))
}

// paramTotals is the model's parameters, those one token uses, and the experts'.
func paramTotals(c *Config) (total, active, experts int64) {
	for _, p := range Parts(c) {
		total, active = total+p.Total, active+p.Active
		if p.Name == "experts" {
			experts = p.Total
		}
	}
	return total, active, experts
}

// paramMillions formats a parameter count in millions.
func paramMillions(n int64) string { return fmt.Sprintf("%.1f M", float64(n)/1e6) }

// PartsMarkdown is the table of Parts: each kind of block, its layers, its
// parameters and those one token uses.
func PartsMarkdown(c *Config) string {
	var b strings.Builder
	b.WriteString("| part | layers | parameters | used per token |\n|---|---:|---:|---:|\n")
	for _, p := range Parts(c) {
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", p.Name, p.Layers, paramMillions(p.Total), paramMillions(p.Active))
	}
	total, active, _ := paramTotals(c)
	fmt.Fprintf(&b, "| **all** | | **%s** | **%s** |\n", paramMillions(total), paramMillions(active))
	return b.String()
}

// ActiveBars charts the parameters one token uses, by part, in millions,
// on a logarithmic axis where they span decades (the norms against the
// experts).
func ActiveBars(c *Config) *plot.Figure {
	var names []string
	var active []float64
	for _, p := range Parts(c) {
		names, active = append(names, p.Name), append(active, float64(p.Active)/1e6)
	}
	return decadeBars("parameters one token uses, by part", "millions", names, active)
}

// H200BytesPerSecond is an NVIDIA H200's memory bandwidth: 4.8 TB/s of
// HBM3e, per NVIDIA's H200 datasheet.
const H200BytesPerSecond = 4.8e12

// ExecutingGPU is the device of the first of ids (CUDA device ids of this
// machine, such as nb.IDsOf(engine.CUDA)) where its memory bandwidth is
// known, else nil.
func ExecutingGPU(ids []string) *engine.Info {
	if len(ids) == 0 {
		return nil
	}
	devs, _ := engine.Devices()
	for _, d := range devs {
		if d.ID == ids[0] && d.PeakGBps > 0 {
			return &d
		}
	}
	return nil
}

// DecodeBoundMarkdown says what share of the parameters a token uses, and
// what that bounds batch-1 decode to: each step reads every weight the
// token uses once, in bf16, at best at the bandwidth of gpu, the GPU that
// runs the notebook, or, where gpu is nil, of an H200 (its datasheet's),
// as the sentence says.
func DecodeBoundMarkdown(c *Config, gpu *engine.Info) string {
	total, active, experts := paramTotals(c)
	var b strings.Builder
	fmt.Fprintf(&b, "A token uses %.1f billion of the %.1f billion parameters (%.1f%%); the experts hold %.1f%% of them, and a token uses %d experts of %d per MoE layer.",
		float64(active)/1e9, float64(total)/1e9, 100*float64(active)/float64(total), 100*float64(experts)/float64(total), c.ExpertsPerToken, c.Experts)
	if c.TiedEmbeddings {
		b.WriteString(" The embedding counts in full: it is also the LM head, whose product reads all of it.")
	}
	bytes := 2 * float64(active)
	bw, where := H200BytesPerSecond, fmt.Sprintf("No GPU runs this notebook, so the bound assumes an NVIDIA H200: at its HBM3e bandwidth, %.1f TB/s per NVIDIA's datasheet,", H200BytesPerSecond/1e12)
	if gpu != nil {
		note := gpu.PeakNote // "sm_90: ... FP32 lanes ...; 5120-bit bus x 2 x 2619 MHz": the bandwidth's part
		if _, mem, ok := strings.Cut(note, "; "); ok {
			note = mem
		}
		bw = gpu.PeakGBps * 1e9
		where = fmt.Sprintf("At the bandwidth of this machine's %s (`%s`), %.2f TB/s (%s),", gpu.Name, gpu.ID, bw/1e12, note)
	}
	fmt.Fprintf(&b, "\n\nDecode at batch 1 reads each of those weights once per token: %.2f GB in bf16. %s that is at most **%.0f tokens/s**, before any cache, activation or launch overhead.",
		bytes/1e9, where, bw/bytes)
	return b.String()
}

// KernelSteps returns the CUDA engine's kernel files named by their steps
// ("02_rmsnorm", "03_rope", ...: kernels/cuda/lfm2) or, for the code they
// share, "common.cuh", in the order given, to show next to the story of
// each (nb.ShowSteps).
func KernelSteps(names ...string) ([]kernels.Step, error) {
	all, err := kernels.CUDAFamily.Steps("lfm2", "")
	if err != nil {
		return nil, err
	}
	headers := kernels.CUDAFamily.Headers()
	var steps []kernels.Step
	for _, name := range names {
		if code, ok := headers["lfm2/"+name]; ok && strings.HasSuffix(name, ".cuh") {
			steps = append(steps, kernels.Step{Name: name, File: "lfm2/" + name, Code: code})
			continue
		}
		i := slices.IndexFunc(all, func(s kernels.Step) bool { return s.Name == name })
		if i < 0 {
			var have []string
			for file := range headers {
				if name, ok := strings.CutPrefix(file, "lfm2/"); ok && strings.HasSuffix(name, ".cuh") {
					have = append(have, name)
				}
			}
			slices.Sort(have)
			for _, s := range all {
				have = append(have, s.Name)
			}
			return nil, fmt.Errorf("lfm2: no kernel step %q (have: %s)", name, strings.Join(have, ", "))
		}
		steps = append(steps, all[i])
	}
	return steps, nil
}
