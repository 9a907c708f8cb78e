package lfm2

import (
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
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

// fwdModel writes a random F32 checkpoint of fwdConfig, scaled so that
// activations stay moderate, and loads it.
func fwdModel(t *testing.T) (*Config, *Weights) {
	t.Helper()
	c, err := ParseConfig([]byte(fwdConfig))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	tensors := map[string]TensorData{}
	shapes := ExpectedTensors(c)
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		shape := shapes[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			g := rng.NormFloat64()
			switch {
			case strings.HasSuffix(name, "norm.weight"):
				v[i] = float32(1 + 0.1*g)
			case strings.HasSuffix(name, "expert_bias"):
				v[i] = float32(0.1 * g)
			case strings.HasSuffix(name, "conv.conv.weight"):
				v[i] = float32(0.5 * g)
			case name == "model.embed_tokens.weight":
				v[i] = float32(g)
			default:
				v[i] = float32(g / math.Sqrt(float64(shape[len(shape)-1])))
			}
		}
		tensors[name] = TensorData{DType: "F32", Shape: shape, Data: v}
	}
	dir := t.TempDir()
	if err := WriteSafetensors(filepath.Join(dir, "model.safetensors"), tensors); err != nil {
		t.Fatal(err)
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	w, err := LoadWeights(c, ck)
	if err != nil {
		t.Fatal(err)
	}
	return c, w
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
	// Unbiased, experts 0 and 1 would win; the bias lifts 3 above 0 and 1.
	idx, wts := route(logits, []float32{0, 0.3, 0, 1}, 2)
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
	if idx, _ := route([]float32{0, 0, 0, 0}, []float32{0, 0, 0, 0}, 2); !slices.Equal(idx, []int{0, 1}) {
		t.Errorf("tied route picked %v, want [0 1]", idx)
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
