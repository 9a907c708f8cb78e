package lfm2

// The trained model of notebook 06: a tiny LFM2-MoE that writes Go,
// trained with transformers on the Go distribution's source
// (scripts/train/train_lfm2.py), and what transformers computed from it for
// the engines to match (scripts/train/reference_lfm2.py). Its streaming
// generation is in trained_stream.go, its loss curve in trained_curve.go.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gpulab/datasets"
	"gpulab/engine/llm/tokenizer"
)

// TrainedDir is where, under the repository root, the trained model is
// shipped in the hub layout (config.json, model.safetensors in bf16,
// tokenizer.json, ...), with transformers' references in reference/.
const TrainedDir = "datasets/models/lfm2-moe-tiny-go"

// Trained is the trained model on the CPU, with its tokenizer.
type Trained struct {
	Dir       string
	Config    *Config
	Weights   *Weights
	Tokenizer *tokenizer.Tokenizer
}

// LoadTrained loads the model directory dir (TrainedDir under the
// repository root): config, weights in float32, and tokenizer.json, which
// must cover the model's vocabulary.
func LoadTrained(dir string) (*Trained, error) {
	c, w, err := LoadModel(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	if tok.VocabSize() != c.Vocab {
		return nil, fmt.Errorf("lfm2: %s: tokenizer.json has %d ids, the model's vocab_size is %d", dir, tok.VocabSize(), c.Vocab)
	}
	return &Trained{Dir: dir, Config: c, Weights: w, Tokenizer: tok}, nil
}

// CPU is the trained model's fp32 CPU reference as an Engine.
func (t *Trained) CPU() *CPUModel { return NewCPUModel(t.Config, t.Weights) }

// TrainedReference is what transformers computed from the stored model
// (reference_lfm2.py): the checks every engine must pass.
type TrainedReference struct {
	Batch  [][]int   // ids.json: held-out windows of validation code
	Logits []float32 // logits.npy: transformers' fp32 logits of Batch, [batch, seq, vocab]
	Greedy []GreedyCase
	// HeldOut is heldout.json's windows of validation code, for the
	// bf16 check (20 480 positions); HFTop1 is transformers' fp32 top token
	// at each of their positions.
	HeldOut, HFTop1 [][]int
	HF              HFAgreement
}

// GreedyCase is one prompt of greedy.json with transformers' greedy
// continuation, and the smallest gap between the top two logits on the way.
type GreedyCase struct {
	Text         string  `json:"text"`
	Prompt       []int   `json:"prompt"` // Text's ids, <|startoftext|> first
	Continuation []int   `json:"continuation"`
	MinMargin    float64 `json:"min_margin"`
}

// HFAgreement is agreement.json: transformers' bf16 against its own fp32 on
// the held-out positions.
type HFAgreement struct {
	Positions    int     `json:"positions"`
	BF16VsFP32   float64 `json:"hf_bf16_vs_hf_fp32_top1"` // share of positions with the same top token
	Device       string  `json:"device"`
	Transformers string  `json:"transformers"`
	// ShareMarginBelow is, for a few gaps ("0.1", ...), the share of
	// positions whose fp32 top two logits are closer than that.
	ShareMarginBelow map[string]float64 `json:"fp32_share_margin_below"`
}

// Reference loads the model's reference/ directory, checked against the
// model's config: shapes, token ids and sequence lengths.
func (t *Trained) Reference() (*TrainedReference, error) {
	return LoadTrainedReference(filepath.Join(t.Dir, "reference"), t.Config)
}

// LoadTrainedReference loads the references in dir for a model of config c.
func LoadTrainedReference(dir string, c *Config) (*TrainedReference, error) {
	r := &TrainedReference{}
	var ids struct{ Batch [][]int }
	var greedy struct{ Cases []GreedyCase }
	var held struct {
		Batch  [][]int
		HFTop1 [][]int `json:"hf_fp32_top1"`
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"ids.json", &ids}, {"greedy.json", &greedy}, {"heldout.json", &held}, {"agreement.json", &r.HF}} {
		if err := decodeJSONFile(filepath.Join(dir, f.name), f.v); err != nil {
			return nil, err
		}
	}
	r.Batch, r.Greedy, r.HeldOut, r.HFTop1 = ids.Batch, greedy.Cases, held.Batch, held.HFTop1
	if err := CheckBatch(c, r.Batch); err != nil {
		return nil, fmt.Errorf("lfm2: %s/ids.json: %w", dir, err)
	}
	logits, shape, err := datasets.ReadNPYTensor(filepath.Join(dir, "logits.npy"))
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	if want := []int{len(r.Batch), len(r.Batch[0]), c.Vocab}; !slices.Equal(shape, want) {
		return nil, fmt.Errorf("lfm2: %s/logits.npy has shape %v, want %v (batch, seq, vocab)", dir, shape, want)
	}
	r.Logits = logits
	if len(r.Greedy) == 0 {
		return nil, fmt.Errorf("lfm2: %s/greedy.json has no cases", dir)
	}
	for i, g := range r.Greedy {
		if len(g.Continuation) == 0 {
			return nil, fmt.Errorf("lfm2: %s/greedy.json: case %d (%q) has no continuation", dir, i, g.Text)
		}
		if err := CheckTokens(c, 0, append(slices.Clone(g.Prompt), g.Continuation...)); err != nil {
			return nil, fmt.Errorf("lfm2: %s/greedy.json: case %d (%q): %w", dir, i, g.Text, err)
		}
	}
	if err := CheckBatch(c, r.HeldOut); err != nil {
		return nil, fmt.Errorf("lfm2: %s/heldout.json: %w", dir, err)
	}
	if len(r.HFTop1) != len(r.HeldOut) || len(r.HFTop1[0]) != len(r.HeldOut[0]) || CheckBatch(c, r.HFTop1) != nil {
		return nil, fmt.Errorf("lfm2: %s/heldout.json: hf_fp32_top1 is not one token id per position of the %d × %d batch",
			dir, len(r.HeldOut), len(r.HeldOut[0]))
	}
	return r, nil
}

// TrainedCheck is an engine against transformers on the trained model.
type TrainedCheck struct {
	Ref     *TrainedReference
	MaxDiff float64 // max |engine − transformers| over every logit of Ref.Batch
	Greedy  [][]int // the engine's greedy continuation of each of Ref.Greedy
}

// CheckTrained runs the engine on the references: the logits of the
// held-out windows, and a greedy continuation of each prompt as long as
// transformers'. It returns an error if a logit is further than
// ReferenceTolerance from transformers' or a greedy token differs. The
// engine must hold len(Ref.Batch) sequences and the longest prompt with
// its continuation.
func CheckTrained(e Engine, ref *TrainedReference) (*TrainedCheck, error) {
	ch := &TrainedCheck{Ref: ref}
	logits, err := e.Logits(ref.Batch)
	if err != nil {
		return nil, err
	}
	ch.MaxDiff = slices.Max(PositionDiffs(logits, ref.Logits, len(ref.Batch[0]), e.Config().Vocab))
	for _, g := range ref.Greedy {
		var got []int
		err := e.Generate([][]int{g.Prompt}, len(g.Continuation), Sampling{}, func(_ int, toks []int) error {
			got = append(got, toks[0])
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("lfm2: greedy after %q: %w", g.Text, err)
		}
		ch.Greedy = append(ch.Greedy, got)
	}
	if !(ch.MaxDiff <= ReferenceTolerance) || ch.Same() != len(ref.Greedy) {
		return ch, fmt.Errorf("lfm2: the engine does not match transformers on the trained model: %s", ch)
	}
	return ch, nil
}

// Same is the number of prompts whose greedy continuation is transformers'.
func (ch *TrainedCheck) Same() int {
	n := 0
	for i, g := range ch.Ref.Greedy {
		if i < len(ch.Greedy) && slices.Equal(ch.Greedy[i], g.Continuation) {
			n++
		}
	}
	return n
}

func (ch *TrainedCheck) String() string {
	r := ch.Ref
	var b strings.Builder
	fmt.Fprintf(&b, "logits of %d held-out windows × %d tokens: max |engine − transformers| = %.2g (tolerance %.0e); greedy: %d of %d prompts give transformers' %d tokens",
		len(r.Batch), len(r.Batch[0]), ch.MaxDiff, ReferenceTolerance, ch.Same(), len(r.Greedy), len(r.Greedy[0].Continuation))
	for i, g := range r.Greedy {
		if i < len(ch.Greedy) && !slices.Equal(ch.Greedy[i], g.Continuation) {
			at := 0
			for at < min(len(ch.Greedy[i]), len(g.Continuation)) && ch.Greedy[i][at] == g.Continuation[at] {
				at++
			}
			fmt.Fprintf(&b, "\n  after %q the tokens part at step %d (transformers' smallest top-two gap: %.2g)", g.Text, at, g.MinMargin)
		}
	}
	return b.String()
}

// HeldOutAgreement is the share of held-out positions at which two
// computations pick the same top token.
type HeldOutAgreement struct {
	Positions  int
	BF16VsFP32 float64 // the bf16 engine against the fp32 one
	FP32VsHF   float64 // the fp32 engine against transformers' fp32
	HF         float64 // transformers' bf16 against its fp32 (agreement.json)
}

// CompareHeldOut runs the held-out windows through an fp32 and a bf16
// engine, chunk sequences at a time (the engines must hold chunk sequences
// of the windows' length), and compares their top tokens with each other
// and with transformers'.
func CompareHeldOut(f32, bf16 Engine, ref *TrainedReference, chunk int) (*HeldOutAgreement, error) {
	if chunk <= 0 {
		return nil, fmt.Errorf("lfm2: held-out comparison in chunks of %d sequences: want at least 1", chunk)
	}
	v := f32.Config().Vocab
	a := &HeldOutAgreement{HF: ref.HF.BF16VsFP32}
	sameBF16, sameHF := 0, 0
	for lo := 0; lo < len(ref.HeldOut); lo += chunk {
		batch := ref.HeldOut[lo:min(lo+chunk, len(ref.HeldOut))]
		l32, err := f32.Logits(batch)
		if err != nil {
			return nil, err
		}
		l16, err := bf16.Logits(batch)
		if err != nil {
			return nil, err
		}
		for r := range len(l32) / v {
			top := Argmax(l32[r*v : (r+1)*v])
			if Argmax(l16[r*v:(r+1)*v]) == top {
				sameBF16++
			}
			if s := len(batch[0]); ref.HFTop1[lo+r/s][r%s] == top {
				sameHF++
			}
			a.Positions++
		}
	}
	a.BF16VsFP32, a.FP32VsHF = float64(sameBF16)/float64(a.Positions), float64(sameHF)/float64(a.Positions)
	return a, nil
}

func (a *HeldOutAgreement) String() string {
	return fmt.Sprintf("top token over %d held-out positions: bf16 engine = fp32 engine at %.2f%%, fp32 engine = transformers' fp32 at %.2f%%; transformers' own bf16 = its fp32 at %.2f%%",
		a.Positions, 100*a.BF16VsFP32, 100*a.FP32VsHF, 100*a.HF)
}

// ExpertLoadOf runs each of seqs through the reference from an empty state
// and counts, for each MoE layer, the tokens routed to each expert (nil for
// the dense layers).
func ExpertLoadOf(c *Config, w *Weights, seqs [][]int) ([][]int, error) {
	load := make([][]int, c.Layers)
	for _, seq := range seqs {
		st := NewState(c)
		if _, err := Forward(c, w, st, seq); err != nil {
			return nil, err
		}
		for l, counts := range st.ExpertLoad {
			if counts == nil {
				continue
			}
			if load[l] == nil {
				load[l] = make([]int, len(counts))
			}
			for e, n := range counts {
				load[l][e] += n
			}
		}
	}
	return load, nil
}
