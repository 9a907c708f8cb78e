package lfm2

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// fwdConfig is a tiny lfm2_moe: conv and attention layers, 2 dense then 2
// MoE feed-forwards, untied lm_head.
const fwdConfig = `{
  "model_type": "lfm2_moe", "hidden_size": 32, "num_hidden_layers": 4, "vocab_size": 50,
  "num_attention_heads": 4, "num_key_value_heads": 2,
  "layer_types": ["conv", "full_attention", "conv", "full_attention"],
  "rope_theta": 10000.0, "norm_eps": 1e-05, "conv_L_cache": 3,
  "num_dense_layers": 2, "intermediate_size": 48,
  "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
  "tie_word_embeddings": false
}`

// fwdModel writes a random F32 checkpoint of fwdConfig and loads it.
func fwdModel(t *testing.T) (*Config, *Weights) {
	t.Helper()
	dir := t.TempDir()
	if _, err := WriteRandomModel(dir, []byte(fwdConfig), 3); err != nil {
		t.Fatal(err)
	}
	return loadModel(t, dir)
}

func TestForwardPrefillMatchesDecode(t *testing.T) {
	c, w := fwdModel(t)
	prompt := []int{1, 17, 42, 3, 3, 49, 0}
	full, err := Forward(c, w, NewState(c), prompt)
	if err != nil {
		t.Fatal(err)
	}
	st := NewState(c)
	for p, tok := range prompt {
		one, err := Forward(c, w, st, []int{tok})
		if err != nil {
			t.Fatal(err)
		}
		var diff, scale float64
		for i, v := range one[0] {
			if math.IsNaN(float64(v)) {
				t.Fatalf("position %d: NaN logit", p)
			}
			diff = max(diff, math.Abs(float64(v-full[p][i])))
			scale = max(scale, math.Abs(float64(full[p][i])))
		}
		if diff > 1e-5*scale {
			t.Errorf("position %d: decode differs from prefill by %g (scale %g)", p, diff, scale)
		}
	}
	if st.Pos != len(prompt) {
		t.Errorf("Pos = %d, want %d", st.Pos, len(prompt))
	}
	// A prefill split in two also agrees with the whole.
	st = NewState(c)
	Forward(c, w, st, prompt[:4])
	rest, _ := Forward(c, w, st, prompt[4:])
	for p := range rest {
		for i, v := range rest[p] {
			if math.Abs(float64(v-full[4+p][i])) > 1e-5*(1+math.Abs(float64(v))) {
				t.Fatalf("split prefill position %d differs", 4+p)
			}
		}
	}
}

func TestRMSNorm(t *testing.T) {
	y := make([]float32, 2)
	rmsNorm(y, []float32{3, 4}, []float32{1, 1}, 0)
	r := math.Sqrt(12.5)
	for i, want := range []float64{3 / r, 4 / r} {
		if math.Abs(float64(y[i])-want) > 1e-6 {
			t.Errorf("rmsNorm [3,4] = %v, want [%g %g]", y, 3/r, 4/r)
		}
	}
}

func TestRoPE(t *testing.T) {
	x := []float32{0.3, -1.2, 0.7, 2.0, 1.5, -0.4, 0.9, 0.1}
	y := slices.Clone(x)
	rope(y, 0, 1e4)
	if !slices.Equal(x, y) {
		t.Errorf("rope at 0 = %v, want %v", y, x)
	}
	rope(y, 5, 1e4)
	norm := func(v []float32) (s float64) {
		for _, a := range v {
			s += float64(a) * float64(a)
		}
		return s
	}
	if math.Abs(norm(x)-norm(y)) > 1e-5 {
		t.Errorf("rope at 5 changes |x|² from %g to %g", norm(x), norm(y))
	}
	// Pair 0 turns by 5 radians (inv_freq 1).
	c, s := math.Cos(5), math.Sin(5)
	if want := float64(x[0])*c - float64(x[4])*s; math.Abs(float64(y[0])-want) > 1e-5 {
		t.Errorf("rope at 5: y[0] = %g, want %g", y[0], want)
	}
}

// TestRoPESignBug: the bug's pair map is [[cos, sin], [sin, cos]]: the
// identity at position 0, like RoPE; elsewhere it keeps the second half's
// formula, adds the first half's sine term, and changes the head's length.
func TestRoPESignBug(t *testing.T) {
	x := []float32{0.3, -1.2, 0.7, 2.0, 1.5, -0.4, 0.9, 0.1}
	bug := slices.Clone(x)
	RoPESignBug(bug, 0, 1e4)
	if !slices.Equal(bug, x) {
		t.Errorf("RoPESignBug at 0 = %v, want %v", bug, x)
	}
	good := slices.Clone(x)
	rope(good, 5, 1e4)
	RoPESignBug(bug, 5, 1e4)
	c, s := math.Cos(5), math.Sin(5) // pair 0 turns by 5 radians (inv_freq 1)
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"first half", float64(bug[0]), float64(x[0])*c + float64(x[4])*s},
		{"second half, as RoPE", float64(bug[4]), float64(good[4])},
	} {
		if math.Abs(tc.got-tc.want) > 1e-5 {
			t.Errorf("RoPESignBug at 5, %s: %g, want %g", tc.name, tc.got, tc.want)
		}
	}
	norm := func(v []float32) (s float64) {
		for _, a := range v {
			s += float64(a) * float64(a)
		}
		return s
	}
	if math.Abs(norm(bug)-norm(x)) < 1e-3 {
		t.Errorf("RoPESignBug at 5 keeps |x|² = %g: it should not be a rotation", norm(x))
	}
}

// TestForwardRotating: Forward is ForwardRotating with LFM2's RoPE, bit for
// bit; with RoPESignBug, the first position's logits are the same (no
// rotation at position 0) and the others are not; a nil rotation is an error.
func TestForwardRotating(t *testing.T) {
	c, w := fwdModel(t)
	prompt := []int{1, 17, 42, 3}
	want, err := Forward(c, w, NewState(c), prompt)
	if err != nil {
		t.Fatal(err)
	}
	same, _ := ForwardRotating(c, w, NewState(c), prompt, rope)
	bug, err := ForwardRotating(c, w, NewState(c), prompt, RoPESignBug)
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		if !slices.Equal(same[p], want[p]) {
			t.Errorf("position %d: ForwardRotating with rope differs from Forward", p)
		}
		if equal := slices.Equal(bug[p], want[p]); equal != (p == 0) {
			t.Errorf("position %d: logits with the sign bug equal Forward's: %v, want %v", p, equal, p == 0)
		}
	}
	flat, err := LogitsRotating(c, w, [][]int{prompt}, RoPESignBug)
	if err != nil || !slices.Equal(flat[len(flat)-c.Vocab:], bug[len(bug)-1]) {
		t.Errorf("LogitsRotating differs from ForwardRotating (%v)", err)
	}
	if _, err := ForwardRotating(c, w, NewState(c), prompt, nil); err == nil || !strings.Contains(err.Error(), "needs a rotation") {
		t.Errorf("nil rotation: %v", err)
	}
}

// TestSoftmaxInPlace: the reference's softmax sums to 1, keeps the order,
// and does not overflow where e^x would.
func TestSoftmaxInPlace(t *testing.T) {
	for _, s := range [][]float32{{1, 2, 3}, {1000, 999, 0}, {-5}} {
		p := slices.Clone(s)
		softmax(p)
		var sum float64
		for i, v := range p {
			sum += float64(v)
			if math.IsNaN(float64(v)) || i > 0 && (s[i] < s[i-1]) != (v < p[i-1]) {
				t.Errorf("softmax(%v) = %v", s, p)
			}
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("softmax(%v) sums to %g", s, sum)
		}
	}
}

func TestCausalConvShift(t *testing.T) {
	seq := [][]float32{{0}, {0}} // empty history
	for v := 1; v <= 5; v++ {
		seq = append(seq, []float32{float32(v)})
	}
	out := causalConv(seq, []float32{1, 0, 0}, 3)
	want := []float32{0, 0, 1, 2, 3}
	for i := range want {
		if out[i][0] != want[i] {
			t.Fatalf("conv with kernel [1 0 0] = %v, want %v", out, want)
		}
	}
}

func TestRoute(t *testing.T) {
	logits := []float32{2, 1, 0, -1}
	sig := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
	c := &Config{ExpertsPerToken: 2, NormTopK: true, RoutedScaling: 1}
	// Unbiased, experts 0 and 1 would win; the bias lifts 3 above 0 and 1.
	idx, wts := route(c, logits, []float32{0, 0.3, 0, 1})
	if !slices.Equal(idx, []int{3, 1}) {
		t.Fatalf("route picked %v, want [3 1]", idx)
	}
	s3, s1 := sig(-1), sig(1)
	for i, want := range []float64{s3 / (s1 + s3), s1 / (s1 + s3)} {
		if math.Abs(float64(wts[i])-want) > 1e-5 {
			t.Errorf("weights %v, want [%g %g]", wts, s3/(s1+s3), s1/(s1+s3))
		}
	}
	// Ties go to the lower index.
	if idx, _ := route(c, []float32{0, 0, 0, 0}, []float32{0, 0, 0, 0}); !slices.Equal(idx, []int{0, 1}) {
		t.Errorf("tied route picked %v, want [0 1]", idx)
	}
	// Without use_expert_bias the top sigmoids win; without norm_topk_prob
	// the weights are the sigmoids themselves, times routed_scaling_factor.
	raw := &Config{ExpertsPerToken: 2, RoutedScaling: 2.5}
	idx, wts = route(raw, logits, nil)
	if !slices.Equal(idx, []int{0, 1}) || math.Abs(float64(wts[0])-2.5*sig(2)) > 1e-5 || math.Abs(float64(wts[1])-2.5*sig(1)) > 1e-5 {
		t.Errorf("unbiased, unnormalized route: %v %v, want [0 1] [%g %g]", idx, wts, 2.5*sig(2), 2.5*sig(1))
	}
}

func TestGreedyAndVocab(t *testing.T) {
	c, w := fwdModel(t)
	a, err := Greedy(c, w, []int{5, 9, 2}, 6)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Greedy(c, w, []int{5, 9, 2}, 6)
	if len(a) != 6 || !slices.Equal(a, b) {
		t.Fatalf("Greedy gave %v then %v, want the same 6 tokens", a, b)
	}
	for _, tok := range a {
		if tok < 0 || tok >= c.Vocab {
			t.Errorf("token %d outside the vocabulary", tok)
		}
	}
	_, err = Forward(c, w, NewState(c), []int{1, c.Vocab})
	if err == nil || !strings.Contains(err.Error(), "token 50") {
		t.Errorf("Forward of token %d: err %v, want one naming it", c.Vocab, err)
	}
}

// TestBatch: Logits is Forward of each sequence, GenerateBatch is Greedy of
// each prompt, and every MoE layer routes k experts per token.
func TestBatch(t *testing.T) {
	c, w := fwdModel(t)
	batch := [][]int{{1, 17, 42, 3}, {49, 0, 0, 7}, {5, 5, 5, 5}}
	flat, err := Logits(c, w, batch)
	if err != nil {
		t.Fatal(err)
	}
	for b, seq := range batch {
		st := NewState(c)
		rows, err := Forward(c, w, st, seq)
		if err != nil {
			t.Fatal(err)
		}
		for p, row := range rows {
			if got := flat[(b*len(seq)+p)*c.Vocab : (b*len(seq)+p+1)*c.Vocab]; !slices.Equal(got, row) {
				t.Fatalf("Logits sequence %d position %d differs from Forward", b, p)
			}
		}
		for l, load := range st.ExpertLoad {
			sum := 0
			for _, n := range load {
				sum += n
			}
			if want := len(seq) * c.ExpertsPerToken; c.IsMoE(l) && sum != want || !c.IsMoE(l) && load != nil {
				t.Errorf("layer %d: expert load %v, want %d routings in MoE layers only", l, load, want)
			}
		}
	}
	var steps [][]int
	err = GenerateBatch(c, w, batch, 5, Sampling{}, func(step int, toks []int) error {
		if step != len(steps) {
			t.Errorf("step %d after %d steps", step, len(steps))
		}
		steps = append(steps, slices.Clone(toks))
		return nil
	})
	if err != nil || len(steps) != 5 {
		t.Fatalf("GenerateBatch: %d steps, %v", len(steps), err)
	}
	for b, seq := range batch {
		want, _ := Greedy(c, w, seq, 5)
		for i := range want {
			if steps[i][b] != want[i] {
				t.Fatalf("sequence %d: batch generation %v, alone %v", b, steps, want)
			}
		}
	}
}

func TestBatchErrors(t *testing.T) {
	c, w := fwdModel(t)
	short := *c
	short.MaxPositions = 4
	for _, tc := range []struct {
		c     *Config
		batch [][]int
		want  string
	}{
		{c, nil, "the batch is empty"},
		{c, [][]int{{}}, "the batch is empty"},
		{c, [][]int{{1, 2, 3}, {4, 5}, {6, 7, 8}}, "ragged: sequence lengths [3 2 3]"},
		{c, [][]int{{1, 2}, {4, 50}}, "sequence 1: lfm2: token 50 (at 1) is outside the vocabulary of 50"},
		{&short, [][]int{{1, 2, 3, 4, 5}}, "a sequence of 5 tokens is longer than max_position_embeddings = 4"},
	} {
		if _, err := Logits(tc.c, w, tc.batch); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Logits(%v): %v, want %q", tc.batch, err, tc.want)
		}
	}
	// Generation counts the new tokens too: 3 + 2 − 1 positions fit in 4, 3 + 3 − 1 do not.
	if _, err := Generate(&short, w, []int{1, 2, 3}, 2, Sampling{}); err != nil {
		t.Errorf("3 + 2 tokens in 4 positions: %v", err)
	}
	if _, err := Generate(&short, w, []int{1, 2, 3}, 3, Sampling{}); err == nil || !strings.Contains(err.Error(), "max_position_embeddings = 4") {
		t.Errorf("3 + 3 tokens in 4 positions: %v", err)
	}
	if _, err := Generate(c, w, nil, 3, Sampling{}); err == nil || !strings.Contains(err.Error(), "non-empty prompt") {
		t.Errorf("empty prompt: %v", err)
	}
}
