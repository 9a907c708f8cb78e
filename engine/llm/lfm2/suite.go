package lfm2

// The lfm2 benchmark suite: the prefill and greedy decode of LFM2 as
// bench.Cases, timed, checked and tabled like every suite of the lab
// (lab bench lfm2, nb.Run). On the CPU it runs the fp32 reference on a
// model of the MoE fixture's shape (datasets/testdata/lfm2/moe) with seeded
// random weights; on CUDA what lab lfm2 bench runs: the 8B architecture
// with random bf16 weights, the prefill with each MoE path, and decode at
// batch 1 and 64.
//
// Variants: prefill (the baseline: the engine's own choice of MoE path),
// prefill_grouped, prefill_wgmma and prefill_persistent (CUDA, where the
// path runs), decode_b1 and decode_bD (compared with decode_b1). Each
// record's params carry batch, seq, tokens (and steps for decode), dtype,
// precision, model, gpus, moe and micro_tokens; its GFLOP/s count the
// model's multiply-adds, and a decode's GB/s the weights a step must read
// (DecodeStepBytes). Times are the host clock's, to the last token read.
// The check recomputes each run's tokens (checkGreedy): in f32 max_rel_err
// is the largest gap to the reference's top logit, in bf16 the share of
// tokens that are not the top one.
//
// The profiles (by operation, by stage, on a timeline) and the MoE paths'
// profiled walls are more than a bench.Record holds: Bench measures them
// into a BenchRecord, which lab lfm2 bench writes and notebook 06 reads.

import (
	"fmt"
	"math"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

func init() {
	bench.Register(bench.Suite{
		Name: "lfm2",
		Doc:  "LFM2 prefill (samples/s) and greedy decode (tokens/s): the CPU reference on the MoE fixture's shape, the CUDA engine on the 8B architecture with each MoE path",
		Sizes: func(dev engine.Info) []string {
			switch dev.Kind {
			case engine.CPU:
				return []string{"lfm2:batch=4,seq=8,decode=4,dbatch=4"}
			case engine.CUDA:
				return []string{DefaultGPUSize}
			}
			return nil
		},
		Cases: suiteCases,
	})
}

// DefaultGPUSize is the suite's size on CUDA, the size of the runs
// recorded in docs/results: 1024 sequences of 32 tokens, 32 decode steps
// at batch 1 and 64.
const DefaultGPUSize = "lfm2:batch=1024,seq=32,decode=32,dbatch=64"

// BenchSize is a size of the lfm2 suite:
// "lfm2:batch=B,seq=S,decode=N[,dbatch=D][,gpus=G][,micro=M][,fixture=1]".
type BenchSize struct {
	// Batch sequences of Seq random tokens are prefilled up to their first
	// new token.
	Batch, Seq int
	// Decode greedy steps follow Seq-token prompts at batch 1 and at
	// DecodeBatch (0 steps: no decode).
	Decode, DecodeBatch int
	// GPUs is the pipeline's length (CUDA): the device and the next GPUs-1.
	GPUs int
	// MicroTokens is the most tokens of one micro-batch (CUDA; 0: the
	// engine's default).
	MicroTokens int
	// Fixture runs the MoE fixture's shape in f32 on CUDA too, checked
	// against the CPU reference, instead of the 8B model in bf16.
	Fixture bool
}

// ParseBenchSize reads a size of the lfm2 suite. Fields left out are
// batch=1024, seq=32, decode=32, dbatch=64, gpus=1, micro=0, fixture=0.
func ParseBenchSize(s string) (BenchSize, error) {
	sz := BenchSize{Batch: 1024, Seq: 32, Decode: 32, DecodeBatch: 64, GPUs: 1}
	fixture := 0
	err := bench.ParseFields(s, "lfm2:", map[string]*int{"batch": &sz.Batch, "seq": &sz.Seq, "decode": &sz.Decode,
		"dbatch": &sz.DecodeBatch, "gpus": &sz.GPUs, "micro": &sz.MicroTokens, "fixture": &fixture})
	switch {
	case err != nil:
		return sz, fmt.Errorf("lfm2: %w (want lfm2:batch=B,seq=S,decode=N[,dbatch=D][,gpus=G][,micro=M][,fixture=1])", err)
	case sz.Batch < 1 || sz.Seq < 1 || sz.DecodeBatch < 1 || sz.GPUs < 1:
		return sz, fmt.Errorf("lfm2: size %q: batch, seq, dbatch and gpus must be at least 1", s)
	case fixture > 1:
		return sz, fmt.Errorf("lfm2: size %q: fixture is 0 or 1", s)
	}
	sz.Fixture = fixture == 1
	return sz, nil
}

// String is the size as ParseBenchSize reads it.
func (sz BenchSize) String() string {
	s := fmt.Sprintf("lfm2:batch=%d,seq=%d,decode=%d,dbatch=%d", sz.Batch, sz.Seq, sz.Decode, sz.DecodeBatch)
	if sz.GPUs > 1 {
		s += fmt.Sprintf(",gpus=%d", sz.GPUs)
	}
	if sz.MicroTokens > 0 {
		s += fmt.Sprintf(",micro=%d", sz.MicroTokens)
	}
	if sz.Fixture {
		s += ",fixture=1"
	}
	return s
}

// decodeBatches are the batch sizes the decode runs at.
func (sz BenchSize) decodeBatches() []int {
	switch {
	case sz.Decode == 0:
		return nil
	case sz.DecodeBatch == 1:
		return []int{1}
	}
	return []int{1, sz.DecodeBatch}
}

// fixtureConfig is the config.json of the MoE fixture
// (datasets/testdata/lfm2/moe, which transformers made): 5 layers of
// width 72, 6 experts of which 3 per token, a vocabulary of 211.
const fixtureConfig = `{"model_type": "lfm2_moe", "hidden_size": 72, "num_hidden_layers": 5, "vocab_size": 211,
  "num_attention_heads": 6, "num_key_value_heads": 2, "layer_types": ["conv", "full_attention", "conv", "conv", "full_attention"],
  "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "norm_eps": 1e-05, "conv_L_cache": 3, "conv_bias": false,
  "max_position_embeddings": 64, "num_dense_layers": 2, "intermediate_size": 100, "num_experts": 6, "num_experts_per_tok": 3,
  "moe_intermediate_size": 36, "use_expert_bias": true, "norm_topk_prob": true, "routed_scaling_factor": 1.0,
  "tie_word_embeddings": true, "dtype": "float32"}`

// The suite's models: the 8B preset and the fixture's shape, named so in
// the records, and the seed of their random weights.
const (
	suitePreset  = "lfm2-8b-a1b"
	fixtureShape = "random MoE fixture shape"
	suiteSeed    = 1
)

// The suite's checks (checkGreedy). In f32 each picked token must be the
// CPU reference's top one, up to suiteTolF32 of the top logit. In bf16 (the
// 8B model, against the engine's own logits of the whole sequences) the
// check counts the picked tokens that are not the top one, and at most
// suiteTolBF16 of them may differ: a random 8B model amplifies any
// rounding difference along the layers and positions (docs/lfm2.md: its
// bf16 and fp32 agree on two thirds of the positions, HF's on half), so
// the check catches wrong tokens, which agree on almost none, not
// rounding.
const (
	suiteTolF32  = 1e-4
	suiteTolBF16 = 0.5
)

// suiteChecked is how many sequences of the 8B model a check recomputes.
const suiteChecked = 16

// suiteRun is one size of the suite, opened: the engine, and what checks it.
type suiteRun struct {
	sz        BenchSize
	m         Engine
	model     string // the model's name in the records
	dtype     string
	reference func(seqs [][]int) ([]float32, error) // logits [len(seqs), len, vocab]
	checked   int                                   // sequences a check recomputes (0: all)
	tol       float64
	share     bool // the check counts the tokens that differ (bf16), rather than their largest gap
	gpus      int
}

func suiteCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	sz, err := ParseBenchSize(size)
	if err != nil {
		return nil, nil, err
	}
	r, err := openSuiteRun(dev, sz)
	if err != nil {
		return nil, nil, err
	}
	cases, err := r.cases()
	if err != nil {
		r.m.Close()
		return nil, nil, err
	}
	return cases, func() { r.m.Close() }, nil
}

// openSuiteRun opens the model of sz on dev, and its reference: on the CPU
// and with sz.Fixture, the MoE fixture's shape in f32 held to the CPU
// reference on the same weights; else the 8B model in bf16 held to its own
// logits.
func openSuiteRun(dev *engine.Device, sz BenchSize) (*suiteRun, error) {
	switch {
	case dev.Kind != engine.CPU && dev.Kind != engine.CUDA:
		return nil, fmt.Errorf("lfm2: no engine for %s (%s): the suite runs on cpu and cuda:N", dev.ID, dev.Name)
	case dev.Kind == engine.CPU && sz.GPUs > 1:
		return nil, fmt.Errorf("lfm2: gpus=%d needs a CUDA device, not %s", sz.GPUs, dev.ID)
	}
	fixture := dev.Kind == engine.CPU || sz.Fixture
	r := &suiteRun{sz: sz, gpus: 1, dtype: F32, tol: suiteTolF32, model: fmt.Sprintf("%s (seed %d)", fixtureShape, suiteSeed)}
	c, err := ParseConfig([]byte(fixtureConfig))
	if !fixture {
		r.dtype, r.tol, r.share, r.checked = BF16, suiteTolBF16, true, suiteChecked
		r.model = fmt.Sprintf("random %s (seed %d)", suitePreset, suiteSeed)
		c, err = Preset(suitePreset)
	}
	if err != nil {
		return nil, err
	}
	if n := sz.Seq + sz.Decode; n > c.MaxPositions {
		return nil, fmt.Errorf("lfm2: size %s: a %d-token prompt and %d decode steps are longer than max_position_embeddings = %d of the %s",
			sz, sz.Seq, sz.Decode, c.MaxPositions, r.model)
	}
	// The host's share; the CUDA engine checks its own buffers against the
	// device's free memory as it opens.
	if err := dev.CheckRun("lfm2 "+sz.String(), suiteHostMemory(c, sz, r.checked), engine.Need{}); err != nil {
		return nil, err
	}
	o := CUDAOptions{DType: r.dtype, MaxBatch: sz.Batch, MaxSeq: sz.Seq, MaxTokens: sz.MicroTokens}
	if bs := sz.decodeBatches(); len(bs) > 0 {
		o.MaxBatch, o.MaxSeq = max(sz.Batch, bs[len(bs)-1]), sz.Seq+sz.Decode
	}
	var devs []*engine.Device
	if dev.Kind == engine.CUDA {
		if devs, err = pipelineDevices(dev, sz.GPUs); err != nil {
			return nil, err
		}
	}
	switch {
	case fixture:
		ck := randomCheckpoint(c, suiteSeed)
		w, err := LoadWeights(c, ck)
		if err != nil {
			return nil, err
		}
		cpu := NewCPUModel(c, w)
		r.m, r.reference = cpu, cpu.Logits
		if dev.Kind == engine.CPU {
			return r, nil
		}
		if r.m, err = openCheckpoint(c, ck, devs, o); err != nil {
			return nil, err
		}
	default:
		if r.m, err = OpenRandom(c, suiteSeed, devs, o); err != nil {
			return nil, err
		}
		r.reference = r.m.Logits
	}
	r.gpus = len(r.m.(*CUDAModel).Stages())
	return r, nil
}

// suiteHostMemory is the host memory of the cases of size sz for a model
// of config c: every case's prompts and picked tokens (Go ints of 8
// bytes), held while the cases exist, and the largest check's reference
// logits (float32) with the sequences it recomputes, checked of them at
// most (0: all). Figured in float64, so that no size overflows it.
func suiteHostMemory(c *Config, sz BenchSize, checked int) engine.Need {
	limit := func(n int) float64 {
		if checked > 0 {
			n = min(n, checked)
		}
		return float64(n)
	}
	perPosition := 8 + 4*float64(c.Vocab) // a token of the sequence and its logits
	held := 8 * float64(sz.Batch) * float64(sz.Seq+1)
	check := limit(sz.Batch) * float64(sz.Seq) * perPosition
	for _, b := range sz.decodeBatches() {
		held += 8 * float64(b) * float64(sz.Seq+sz.Decode+1)
		check = max(check, limit(b)*float64(sz.Seq+sz.Decode)*perPosition)
	}
	return engine.Need{Bytes: engine.BytesOf(held + check), Holds: "the prompts and picked tokens of every case, and the reference logits of the largest check"}
}

// pipelineDevices is dev and the next gpus-1 CUDA devices of the host.
func pipelineDevices(dev *engine.Device, gpus int) ([]*engine.Device, error) {
	if gpus == 1 {
		return []*engine.Device{dev}, nil
	}
	all, err := engine.OpenAllGPUs()
	if err != nil {
		return nil, err
	}
	for i, d := range all {
		if d.ID == dev.ID {
			if i+gpus > len(all) {
				return nil, fmt.Errorf("lfm2: gpus=%d from %s, but the host has %d CUDA devices", gpus, dev.ID, len(all))
			}
			return all[i : i+gpus], nil
		}
	}
	return nil, fmt.Errorf("lfm2: %s is not among the host's CUDA devices", dev.ID)
}

// cases are the suite's variants at r's size: prefill (the baseline, the
// engine's own choice of MoE path), prefill_PATH with each MoE path
// (CUDA), and decode_bB at batch 1 and at DecodeBatch, each compared with
// decode_b1.
func (r *suiteRun) cases() ([]bench.Case, error) {
	c, sz := r.m.Config(), r.sz
	params := func(extra bench.Params) bench.Params {
		p := bench.Params{"batch": sz.Batch, "seq": sz.Seq, "dtype": r.dtype, "precision": precisionOf(r.dtype),
			"model": r.model, "gpus": r.gpus, "moe": "auto"}
		if sz.MicroTokens > 0 {
			p["micro_tokens"] = sz.MicroTokens
		}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	prompts := RandomBatch(c, sz.Batch, sz.Seq, suiteSeed)
	prefill := func(variant, path string) bench.Case {
		picked := tokenRows(sz.Batch, 1)
		p := params(bench.Params{"tokens": sz.Batch * sz.Seq})
		if path != MoEAuto {
			p["moe"] = path
		}
		return bench.Case{Variant: variant, Baseline: path == MoEAuto, Params: p, Flops: PrefillFlops(c, sz.Batch, sz.Seq), Tol: r.tol,
			Reset: func() error { resetRows(picked); return nil },
			Run: func() (time.Duration, error) {
				return r.withMoE(path, func() (time.Duration, error) { return timeGenerate(r.m, prompts, 1, picked) })
			},
			Check: func() (bench.Checked, error) { return r.check(prompts, picked) }}
	}
	cases := []bench.Case{prefill("prefill", MoEAuto)}
	if gpu, ok := r.m.(*CUDAModel); ok {
		for _, path := range gpu.MoEPaths() {
			cases = append(cases, prefill("prefill_"+path, path))
		}
	}
	es := 4
	if r.dtype == BF16 {
		es = 2
	}
	for _, b := range sz.decodeBatches() {
		prompts := RandomBatch(c, b, sz.Seq, suiteSeed)
		picked := tokenRows(b, sz.Decode+1)
		cases = append(cases, bench.Case{Variant: fmt.Sprintf("decode_b%d", b), CompareWith: "decode_b1",
			Params: params(bench.Params{"batch": b, "steps": sz.Decode, "tokens": b * sz.Decode}),
			Flops:  DecodeFlops(c, b, sz.Seq, sz.Decode), Bytes: float64(sz.Decode) * DecodeStepBytes(c, b, es), Tol: r.tol,
			Reset: func() error { resetRows(picked); return nil },
			Run:   func() (time.Duration, error) { return timeDecode(r.m, prompts, sz.Decode, picked) },
			Check: func() (bench.Checked, error) { return r.check(prompts, picked) }})
	}
	return cases, nil
}

// withMoE runs f with the CUDA engine's MoE path set to path, then back to
// the auto choice (the CPU has no paths: path is MoEAuto there).
func (r *suiteRun) withMoE(path string, f func() (time.Duration, error)) (time.Duration, error) {
	gpu, ok := r.m.(*CUDAModel)
	if !ok || path == MoEAuto {
		return f()
	}
	if err := gpu.SetMoE(path); err != nil {
		return 0, err
	}
	defer gpu.SetMoE(MoEAuto)
	return f()
}

// check holds the tokens picked after prompts to the run's reference, on
// the first r.checked sequences (all when 0).
func (r *suiteRun) check(prompts, picked [][]int) (bench.Checked, error) {
	n := len(prompts)
	if r.checked > 0 {
		n = min(n, r.checked)
	}
	return checkGreedy(r.reference, r.m.Config().Vocab, prompts[:n], picked[:n], r.share)
}

// checkGreedy holds tokens picked greedily after prompts (picked[i][j] is
// the j-th new token of sequence i) to reference logits of the same
// sequences, prompt and picked tokens but the last: at each position the
// picked token should be the top one. Its gap is the top logit less the
// picked token's, relative to max(|top|, 1): a near-tie that rounding
// flips costs little, a wrong token the whole gap, a token outside the
// vocabulary or a NaN logit +Inf. MaxRelErr is the largest gap, or with
// share the fraction of tokens with a gap (+Inf if one is infinite); Worst,
// Got and Want are the index ([sequence][step], flattened) of the token
// with the largest gap, its logit and the top one.
func checkGreedy(reference func([][]int) ([]float32, error), vocab int, prompts, picked [][]int, share bool) (bench.Checked, error) {
	if len(prompts) == 0 || len(picked) != len(prompts) {
		return bench.Checked{}, fmt.Errorf("lfm2: check %d sequences of picked tokens after %d prompts", len(picked), len(prompts))
	}
	s, k := len(prompts[0]), len(picked[0])
	seqs := make([][]int, len(prompts))
	for i := range prompts {
		if len(prompts[i]) != s || len(picked[i]) != k || k == 0 {
			return bench.Checked{}, fmt.Errorf("lfm2: check sequence %d: %d prompt and %d picked tokens, want %d and %d", i, len(prompts[i]), len(picked[i]), s, k)
		}
		seqs[i] = append(append([]int(nil), prompts[i]...), picked[i][:k-1]...)
	}
	logits, err := reference(seqs)
	if err != nil {
		return bench.Checked{}, err
	}
	n := s + k - 1
	if len(logits) != len(seqs)*n*vocab {
		return bench.Checked{}, fmt.Errorf("lfm2: check: %d reference logits for %d sequences of %d positions over %d tokens", len(logits), len(seqs), n, vocab)
	}
	out := bench.Checked{Worst: -1}
	differ := 0
	for i := range seqs {
		for j, tok := range picked[i] {
			row := logits[((i*n)+s-1+j)*vocab : ((i*n)+s+j)*vocab]
			for _, v := range row {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					out.NonFinite++
				}
			}
			top := row[Argmax(row)]
			gap, got := math.Inf(1), float32(math.NaN())
			if tok >= 0 && tok < vocab {
				got = row[tok]
				if d := float64(top) - float64(got); !math.IsNaN(d) {
					gap = d / math.Max(math.Abs(float64(top)), 1)
				}
			}
			if gap > 0 {
				differ++
			}
			if gap > out.MaxRelErr || out.Worst < 0 {
				out.MaxRelErr, out.Worst, out.Got, out.Want = gap, i*k+j, got, top
			}
		}
	}
	if share && !math.IsInf(out.MaxRelErr, 1) {
		out.MaxRelErr = float64(differ) / float64(len(seqs)*k)
	}
	return out, nil
}

// tokenRows is a [rows][cols] table of tokens.
func tokenRows(rows, cols int) [][]int {
	out := make([][]int, rows)
	for i := range out {
		out[i] = make([]int, cols)
	}
	return out
}

// resetRows marks every token as not picked (-1, outside any vocabulary).
func resetRows(rows [][]int) {
	for _, r := range rows {
		for j := range r {
			r[j] = -1
		}
	}
}

// precisionOf is the record's precision parameter for a dtype: the unit
// whose peak the GFLOP/s are held to (engine.Info.PeakFor).
func precisionOf(dtype string) string {
	if dtype == BF16 {
		return "bf16"
	}
	return "fp32"
}

// matmulParams is the parameters a token multiplies by in the layers:
// the projections of attention, the short conv's projections and kernel,
// the dense feed-forward, and the router and the chosen experts of the MoE
// (not the norms, the embedding or the LM head).
func matmulParams(c *Config) float64 {
	h, q, kv := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	var n int
	for l := range c.Layers {
		if c.IsAttention(l) {
			n += h*q + 2*h*kv + q*h
		} else {
			n += 3*h*h + h*h + h*c.ConvL
		}
		if c.IsMoE(l) {
			n += c.Experts*h + c.ExpertsPerToken*3*h*c.MoEIntermediate
		} else {
			n += 3 * h * c.Intermediate
		}
	}
	return float64(n)
}

// countAttention counts the layers that attend.
func countAttention(c *Config) int {
	n := 0
	for l := range c.Layers {
		if c.IsAttention(l) {
			n++
		}
	}
	return n
}

// PrefillFlops counts the floating-point operations of a prefill of batch
// sequences of seq tokens up to their first new token: a multiply-add per
// parameter a token uses in the layers, the causal attention's scores and
// weighted sums, and the LM head on each sequence's last position.
func PrefillFlops(c *Config, batch, seq int) float64 {
	attention := 4 * float64(c.Heads*c.HeadDim) * float64(seq*(seq+1)/2) * float64(countAttention(c))
	return float64(batch) * (2*float64(seq)*matmulParams(c) + attention + 2*float64(c.Vocab*c.Hidden))
}

// DecodeFlops counts the floating-point operations of steps greedy decode
// steps of batch sequences after prompt tokens: each step as a prefill of
// one token whose attention reads every position before it.
func DecodeFlops(c *Config, batch, prompt, steps int) float64 {
	perToken := 2*matmulParams(c) + 2*float64(c.Vocab*c.Hidden)
	var attention float64
	for j := range steps {
		attention += 4 * float64(c.Heads*c.HeadDim) * float64(prompt+j+1) * float64(countAttention(c))
	}
	return float64(batch) * (float64(steps)*perToken + attention)
}

// DecodeStepBytes is what one decode step of batch sequences must read
// at least, with weights of elemSize bytes: every weight a token uses
// (the tied embedding as the LM head; an untied one not at all) but the
// experts, and of the
// experts the distinct ones that batch·top-k uniform choices reach on
// average in each MoE layer.
func DecodeStepBytes(c *Config, batch, elemSize int) float64 {
	var other, experts float64
	for _, p := range Parts(c) {
		switch {
		case p.Name == "experts":
			experts = float64(p.Total)
		case p.Name == "embedding" && !c.TiedEmbeddings: // a step reads batch rows of it, the untied LM head in full
		default:
			other += float64(p.Total)
		}
	}
	if c.Experts == 0 {
		return other * float64(elemSize)
	}
	reached := 1 - math.Pow(1-float64(c.ExpertsPerToken)/float64(c.Experts), float64(batch))
	return (other + experts*reached) * float64(elemSize)
}
