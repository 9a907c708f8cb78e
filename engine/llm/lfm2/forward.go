package lfm2

// The fp32 CPU reference forward of transformers' Lfm2MoeForCausalLM (and
// Lfm2ForCausalLM) for one sequence, with a KV cache for each attention layer
// and a convolution state for each conv layer so that decode runs one token
// at a time.

import (
	"fmt"
	"math"

	"gpulab/engine"
	"gpulab/engine/cpu"
)

// Weights is every tensor the forward needs, converted to float32 once.
// Matrices are row-major [out, in] as in the checkpoint.
type Weights struct {
	Embed  []float32 // [vocab, hidden]
	Norm   []float32 // embedding_norm, the final norm
	LMHead []float32 // [vocab, hidden]; Embed when tied
	Layers []LayerWeights
}

// LayerWeights is one decoder layer. Only the fields of its mixer (attention
// or conv) and of its feed-forward (dense or MoE) are set.
type LayerWeights struct {
	OpNorm, FFNNorm []float32

	Q, K, V, O   []float32 // attention projections
	QNorm, KNorm []float32 // [headDim]

	InProj  []float32 // [3·hidden, hidden]: B, C, x
	ConvW   []float32 // [hidden, convL]
	ConvOut []float32 // [hidden, hidden]

	FFN     SwiGLU    // dense feed-forward
	Gate    []float32 // router [experts, hidden]
	Bias    []float32 // expert_bias [experts]; nil without use_expert_bias
	Experts []SwiGLU
}

// SwiGLU is w2(silu(w1 x) ⊙ w3 x) of width Inter.
type SwiGLU struct {
	W1, W3, W2 []float32
	Inter      int
}

// LoadWeights validates ck against c (Validate: sizes, names, shapes and
// finite values) and converts its tensors to float32, once the host has
// been found to have the memory for them.
func LoadWeights(c *Config, ck *Checkpoint) (*Weights, error) {
	params := c.Sizes().Params
	what := fmt.Sprintf("lfm2: the %s model in %s (%.0f parameters)", c.ModelType, ck.Dir, params)
	if err := engine.CheckHostMemory(what, "the float32 weights", engine.BytesOf(4*params)); err != nil {
		return nil, err
	}
	if err := Validate(c, ck); err != nil {
		return nil, err
	}
	get := func(name string) []float32 { return ck.Tensors[name].Float32() }
	w := &Weights{Embed: get("model.embed_tokens.weight"), Norm: get("model.embedding_norm.weight")}
	w.LMHead = w.Embed
	if !c.TiedEmbeddings {
		w.LMHead = get("lm_head.weight")
	}
	ffn := func(p string, inter int) SwiGLU {
		return SwiGLU{get(p + "w1.weight"), get(p + "w3.weight"), get(p + "w2.weight"), inter}
	}
	w.Layers = make([]LayerWeights, c.Layers)
	for n := range c.Layers {
		p, lw := fmt.Sprintf("model.layers.%d.", n), &w.Layers[n]
		lw.OpNorm, lw.FFNNorm = get(p+"operator_norm.weight"), get(p+"ffn_norm.weight")
		if c.IsAttention(n) {
			a := p + "self_attn."
			lw.Q, lw.K, lw.V, lw.O = get(a+"q_proj.weight"), get(a+"k_proj.weight"), get(a+"v_proj.weight"), get(a+"out_proj.weight")
			lw.QNorm, lw.KNorm = get(a+"q_layernorm.weight"), get(a+"k_layernorm.weight")
		} else {
			lw.InProj, lw.ConvW, lw.ConvOut = get(p+"conv.in_proj.weight"), get(p+"conv.conv.weight"), get(p+"conv.out_proj.weight")
		}
		if !c.IsMoE(n) {
			lw.FFN = ffn(p+"feed_forward.", c.Intermediate)
			continue
		}
		lw.Gate = get(p + "feed_forward.gate.weight")
		if c.ExpertBias {
			lw.Bias = get(p + "feed_forward.expert_bias")
		}
		for e := range c.Experts {
			lw.Experts = append(lw.Experts, ffn(fmt.Sprintf("%sfeed_forward.experts.%d.", p, e), c.MoEIntermediate))
		}
	}
	return w, nil
}

// State is the caches of one sequence: Pos tokens have been run.
type State struct {
	Pos  int
	K, V [][]float32 // per attention layer: Pos × kvHeads·headDim
	Conv [][]float32 // per conv layer: the last convL−1 B⊙x vectors, oldest first
	// ExpertLoad counts, per MoE layer and expert, the tokens routed to
	// the expert (nil for dense layers).
	ExpertLoad [][]int
}

// NewState returns the empty state of a new sequence.
func NewState(c *Config) *State {
	st := &State{K: make([][]float32, c.Layers), V: make([][]float32, c.Layers), Conv: make([][]float32, c.Layers),
		ExpertLoad: make([][]int, c.Layers)}
	for l := range c.Layers {
		if !c.IsAttention(l) {
			st.Conv[l] = make([]float32, (c.ConvL-1)*c.Hidden)
		}
		if c.IsMoE(l) {
			st.ExpertLoad[l] = make([]int, c.Experts)
		}
	}
	return st
}

// CheckTokens returns an error naming the first token id outside the
// vocabulary, or the length if pos tokens followed by tokens would exceed
// max_position_embeddings.
func CheckTokens(c *Config, pos int, tokens []int) error {
	for i, tok := range tokens {
		if tok < 0 || tok >= c.Vocab {
			return fmt.Errorf("lfm2: token %d (at %d) is outside the vocabulary of %d", tok, pos+i, c.Vocab)
		}
	}
	if n := pos + len(tokens); n > c.MaxPositions {
		return fmt.Errorf("lfm2: a sequence of %d tokens is longer than max_position_embeddings = %d", n, c.MaxPositions)
	}
	return nil
}

// Forward runs tokens after those already in st, updating st, and returns
// the logits of each new position (len(tokens) × vocab).
func Forward(c *Config, w *Weights, st *State, tokens []int) ([][]float32, error) {
	return ForwardRotating(c, w, st, tokens, rope)
}

// A Rotation turns one query or key head in place by its position pos,
// with the base theta (rope_theta): LFM2's RoPE, which Forward applies, or
// a wrong one for an experiment, such as RoPESignBug.
type Rotation func(head []float32, pos int, theta float64)

// ForwardRotating is Forward with rot in place of LFM2's RoPE: how the
// lesson injects the RoPE sign bug (RoPESignBug) and measures what it does
// to the logits. Every call on one state must use the same rot, since the
// key cache keeps the keys as rot turned them. A value that stops being
// finite (a NaN or an infinity, from weights that overflow) fails the call,
// naming where it first appeared: the embedding, a layer's mixer or
// feed-forward, or the LM head, and the position; st is then spoilt.
func ForwardRotating(c *Config, w *Weights, st *State, tokens []int, rot Rotation) ([][]float32, error) {
	if rot == nil {
		return nil, fmt.Errorf("lfm2: ForwardRotating needs a rotation")
	}
	if err := CheckTokens(c, st.Pos, tokens); err != nil {
		return nil, err
	}
	pos, x := st.Pos, embed(c, w, tokens)
	if t, _ := firstNonFiniteRow(x); t >= 0 {
		return nil, checkRows(x[t:t+1], pos+t, fmt.Sprintf("the embedding of token %d is", tokens[t]), "channel")
	}
	for l := range c.Layers {
		if err := decoderLayer(c, w, st, l, x, rot); err != nil {
			return nil, err
		}
	}
	st.Pos += len(tokens)
	logits := linear(rmsNormRows(x, w.Norm, c.NormEps), w.LMHead, c.Vocab)
	if err := checkRows(logits, pos, "the logits (LM head) are", "token"); err != nil {
		return nil, err
	}
	return logits, nil
}

// embed returns each token's row of the embedding table: the residual
// stream before the first layer.
func embed(c *Config, w *Weights, tokens []int) [][]float32 {
	h := c.Hidden
	x := make([][]float32, len(tokens))
	for t, tok := range tokens {
		x[t] = append([]float32(nil), w.Embed[tok*h:(tok+1)*h]...)
	}
	return x
}

// decoderLayer runs layer l on the residual stream x in place: the mixer
// (attention, whose heads rot turns, or the short conv), then the
// feed-forward (dense or MoE), each on the normed stream and added back.
// After each, the stream must be finite: an error names the layer, the
// block and the first position that is not.
func decoderLayer(c *Config, w *Weights, st *State, l int, x [][]float32, rot Rotation) error {
	lw, pos := &w.Layers[l], st.Pos
	normed := rmsNormRows(x, lw.OpNorm, c.NormEps)
	mixer := "conv"
	if c.IsAttention(l) {
		mixer = "attention"
		addRows(x, attention(c, lw, st, l, normed, rot))
	} else {
		addRows(x, convMixer(c, lw, st, l, normed))
	}
	if err := checkRows(x, pos, fmt.Sprintf("layer %d (%s) output is", l, mixer), "channel"); err != nil {
		return err
	}
	normed = rmsNormRows(x, lw.FFNNorm, c.NormEps)
	ffn := "dense feed-forward"
	if c.IsMoE(l) {
		ffn = "MoE feed-forward"
		addRows(x, moe(c, lw, normed, st.ExpertLoad[l]))
	} else {
		addRows(x, lw.FFN.apply(normed, c.Hidden))
	}
	return checkRows(x, pos, fmt.Sprintf("layer %d (%s) output is", l, ffn), "channel")
}

// Logits runs each sequence of batch from an empty state and returns the
// logits of every position as one float32 array [batch, seq, vocab]. The
// sequences must have the same length.
func Logits(c *Config, w *Weights, batch [][]int) ([]float32, error) {
	return LogitsRotating(c, w, batch, rope)
}

// LogitsRotating is Logits with rot in place of LFM2's RoPE
// (ForwardRotating).
func LogitsRotating(c *Config, w *Weights, batch [][]int, rot Rotation) ([]float32, error) {
	if err := CheckBatch(c, batch); err != nil {
		return nil, err
	}
	T := len(batch[0])
	out := make([]float32, len(batch)*T*c.Vocab)
	for b, seq := range batch {
		logits, err := ForwardRotating(c, w, NewState(c), seq, rot)
		if err != nil {
			return nil, fmt.Errorf("lfm2: sequence %d: %w", b, err)
		}
		for t, row := range logits {
			copy(out[(b*T+t)*c.Vocab:], row)
		}
	}
	return out, nil
}

// CheckBatch returns an error if batch is empty or ragged (naming the
// lengths), or if a sequence has a bad token or is too long (CheckTokens).
func CheckBatch(c *Config, batch [][]int) error {
	if len(batch) == 0 || len(batch[0]) == 0 {
		return fmt.Errorf("lfm2: the batch is empty")
	}
	for b, seq := range batch {
		if len(seq) != len(batch[0]) {
			lens := make([]int, len(batch))
			for i, s := range batch {
				lens[i] = len(s)
			}
			return fmt.Errorf("lfm2: the batch is ragged: sequence lengths %v (sequence %d differs from sequence 0)", lens, b)
		}
		if err := CheckTokens(c, 0, seq); err != nil {
			return fmt.Errorf("lfm2: sequence %d: %w", b, err)
		}
	}
	return nil
}

// Greedy generates n tokens after prompt, each the most likely one.
func Greedy(c *Config, w *Weights, prompt []int, n int) ([]int, error) {
	return Generate(c, w, prompt, n, Sampling{})
}

// Generate generates n tokens after prompt, each picked by s from the
// logits of the last position; the prompt is run once (prefill), then one
// token at a time through the caches (decode).
func Generate(c *Config, w *Weights, prompt []int, n int, s Sampling) ([]int, error) {
	var out []int
	err := GenerateBatch(c, w, [][]int{prompt}, n, s, func(_ int, toks []int) error {
		out = append(out, toks[0])
		return nil
	})
	return out, err
}

// GenerateBatch generates n tokens after each of the prompts (of equal
// lengths), the sequences stepping together: the prompts are run (prefill),
// then each step picks one token per sequence and runs it through that
// sequence's caches (decode). emit gets each step's tokens, one per prompt,
// as soon as they are picked, so that a caller can stream them or time the
// first step (toks is reused: copy it to keep it); an error from emit
// stops the generation. Sampled tokens are
// drawn from one generator seeded by s.Seed, sequence by sequence. The
// sequences' key and value caches are held to the host's free memory
// before the prompts run.
func GenerateBatch(c *Config, w *Weights, prompts [][]int, n int, s Sampling, emit func(step int, toks []int) error) error {
	if len(prompts) == 0 || len(prompts[0]) == 0 {
		return fmt.Errorf("lfm2: generation needs a non-empty prompt")
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := CheckBatch(c, prompts); err != nil {
		return err
	}
	T := len(prompts[0])
	if n-1 > c.MaxPositions-T {
		return fmt.Errorf("lfm2: a %d-token prompt and %d new tokens are longer than max_position_embeddings = %d", T, n, c.MaxPositions)
	}
	kv := float64(len(prompts)) * float64(T+max(n-1, 0)) * c.Sizes().KVBytesPerToken
	what := fmt.Sprintf("lfm2: %d sequences of %d tokens", len(prompts), T+max(n-1, 0))
	if err := engine.CheckHostMemory(what, "the CPU reference's key and value caches", engine.BytesOf(kv)); err != nil {
		return err
	}
	states, last := make([]*State, len(prompts)), make([][]float32, len(prompts))
	for b, p := range prompts {
		states[b] = NewState(c)
		logits, err := Forward(c, w, states[b], p)
		if err != nil {
			return err
		}
		last[b] = logits[len(logits)-1]
	}
	pick := s.picker()
	toks := make([]int, len(prompts))
	for step := range n {
		for b := range toks {
			toks[b] = pick(last[b])
		}
		if err := emit(step, toks); err != nil {
			return err
		}
		if step == n-1 {
			break
		}
		for b, st := range states {
			logits, err := Forward(c, w, st, toks[b:b+1])
			if err != nil {
				return err
			}
			last[b] = logits[0]
		}
	}
	return nil
}

// Argmax is the index of v's largest value (the first if tied): the
// greedy choice.
func Argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// attention is the GQA mixer of layer l over the rows x, appending their
// keys and values to st's cache.
func attention(c *Config, lw *LayerWeights, st *State, l int, x [][]float32, rot Rotation) [][]float32 {
	hd, H, kvw := c.HeadDim, c.Heads, c.KVHeads*c.HeadDim
	q := queries(c, lw, st, l, x, rot)
	out := make([][]float32, len(x))
	for t := range out {
		out[t] = make([]float32, H*hd)
	}
	cpu.Parallel(len(x)*H, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t, hh := i/H, i%H
			p := scores(c, st, l, q[t], hh, st.Pos+t+1) // causal: positions 0..Pos+t
			softmax(p)
			kh, o := hh/(H/c.KVHeads), out[t][hh*hd:(hh+1)*hd]
			for j, pj := range p {
				vj := st.V[l][j*kvw+kh*hd : j*kvw+(kh+1)*hd]
				for d := range o {
					o[d] += pj * vj[d]
				}
			}
		}
	})
	return linear(out, lw.O, c.Hidden)
}

// queries projects the rows x of attention layer l to queries, keys and
// values, normalizes each query and key head (q_layernorm, k_layernorm) and
// turns it by its position with rot, appends the keys and values to st's
// caches, and returns the queries, one row of heads·headDim per token.
func queries(c *Config, lw *LayerWeights, st *State, l int, x [][]float32, rot Rotation) [][]float32 {
	hd, H, KV := c.HeadDim, c.Heads, c.KVHeads
	q, k, v := linear(x, lw.Q, H*hd), linear(x, lw.K, KV*hd), linear(x, lw.V, KV*hd)
	for t := range x {
		pos := st.Pos + t
		for hh := range H {
			head := q[t][hh*hd : (hh+1)*hd]
			rmsNorm(head, head, lw.QNorm, c.NormEps)
			rot(head, pos, c.RopeTheta)
		}
		for hh := range KV {
			head := k[t][hh*hd : (hh+1)*hd]
			rmsNorm(head, head, lw.KNorm, c.NormEps)
			rot(head, pos, c.RopeTheta)
		}
		st.K[l] = append(st.K[l], k[t]...)
		st.V[l] = append(st.V[l], v[t]...)
	}
	return q
}

// scores is the scaled dot products q·k/√headDim of query head hh of the
// row q with the first n keys in layer l's cache; under GQA the head reads
// KV head hh/(heads/kvHeads).
func scores(c *Config, st *State, l int, q []float32, hh, n int) []float32 {
	hd, kvw := c.HeadDim, c.KVHeads*c.HeadDim
	kh, qh := hh/(c.Heads/c.KVHeads), q[hh*hd:(hh+1)*hd]
	scale := float32(1 / math.Sqrt(float64(hd)))
	s := make([]float32, n)
	for j := range s {
		s[j] = dot(qh, st.K[l][j*kvw+kh*hd:j*kvw+(kh+1)*hd]) * scale
	}
	return s
}

// softmax turns the scores s into probabilities in place, the stable way:
// e^(s−max) / Σ e^(s−max). Subtracting the largest score changes nothing
// in exact arithmetic, but no exponent is above 0, so none overflows.
func softmax(s []float32) {
	m := float32(math.Inf(-1))
	for _, v := range s {
		m = max(m, v)
	}
	var sum float32
	for j := range s {
		s[j] = float32(math.Exp(float64(s[j] - m)))
		sum += s[j]
	}
	for j := range s {
		s[j] /= sum
	}
}

// convMixer is the gated short convolution of layer l over the rows x,
// continuing from and updating st's conv state.
func convMixer(c *Config, lw *LayerWeights, st *State, l int, x [][]float32) [][]float32 {
	h, L := c.Hidden, c.ConvL
	bcx := linear(x, lw.InProj, 3*h)
	seq := make([][]float32, 0, L-1+len(x)) // the conv state, then the new B⊙x
	for j := range L - 1 {
		seq = append(seq, st.Conv[l][j*h:(j+1)*h])
	}
	for _, r := range bcx {
		bx := make([]float32, h)
		for i := range bx {
			bx[i] = r[i] * r[2*h+i]
		}
		seq = append(seq, bx)
	}
	out := causalConv(seq, lw.ConvW, L)
	for t, r := range bcx {
		for i := range out[t] {
			out[t][i] *= r[h+i] // C gate
		}
	}
	state := make([]float32, 0, (L-1)*h)
	for _, r := range seq[len(seq)-(L-1):] {
		state = append(state, r...)
	}
	st.Conv[l] = state
	return linear(out, lw.ConvOut, h)
}

// causalConv is the depthwise convolution of the rows seq, whose first L−1
// are history, by the kernels w [channels, L]: out_t[c] = Σ_j w[c][j]·seq[t+j][c]
// for each of the len(seq)−(L−1) new rows.
func causalConv(seq [][]float32, w []float32, L int) [][]float32 {
	out := make([][]float32, len(seq)-(L-1))
	for t := range out {
		o := make([]float32, len(seq[t]))
		for ch := range o {
			var s float32
			for j := range L {
				s += w[ch*L+j] * seq[t+j][ch]
			}
			o[ch] = s
		}
		out[t] = o
	}
	return out
}

// moe is the sparse mixture-of-experts feed-forward of the rows x; it adds
// each token's experts to load.
func moe(c *Config, lw *LayerWeights, x [][]float32, load []int) [][]float32 {
	logits := linear(x, lw.Gate, c.Experts)
	out := make([][]float32, len(x))
	for t := range x {
		out[t] = make([]float32, c.Hidden)
		idx, wts := route(c, logits[t], lw.Bias)
		for i, e := range idx {
			load[e]++
			y := lw.Experts[e].apply(x[t:t+1], c.Hidden)[0]
			for d, v := range y {
				out[t][d] += wts[i] * v
			}
		}
	}
	return out
}

// route picks the k = ExpertsPerToken experts with the largest
// sigmoid(logit) + bias (the lower index on ties; no bias if bias is nil)
// and weights them by their unbiased sigmoid s, as transformers does:
// s / (Σ s + 1e-6) if NormTopK, times RoutedScaling.
func route(c *Config, logits, bias []float32) ([]int, []float32) {
	s, score := make([]float32, len(logits)), make([]float32, len(logits))
	for i, z := range logits {
		s[i] = float32(1 / (1 + math.Exp(-float64(z))))
		score[i] = s[i]
		if bias != nil {
			score[i] += bias[i]
		}
	}
	k := c.ExpertsPerToken
	used := make([]bool, len(s))
	idx, wts := make([]int, 0, k), make([]float32, 0, k)
	var sum float32
	for range k {
		best := -1
		for i := range s {
			if !used[i] && (best < 0 || score[i] > score[best]) {
				best = i
			}
		}
		used[best] = true
		idx, wts = append(idx, best), append(wts, s[best])
		sum += s[best]
	}
	for i := range wts {
		if c.NormTopK {
			wts[i] /= sum + 1e-6
		}
		wts[i] *= float32(c.RoutedScaling)
	}
	return idx, wts
}

// apply is the SwiGLU of each row of x, giving rows of width hidden.
func (f *SwiGLU) apply(x [][]float32, hidden int) [][]float32 {
	g, u := linear(x, f.W1, f.Inter), linear(x, f.W3, f.Inter)
	for t := range g {
		for i, a := range g[t] {
			g[t][i] = a / (1 + float32(math.Exp(-float64(a)))) * u[t][i]
		}
	}
	return linear(g, f.W2, hidden)
}

// linear returns x·wᵀ for w [out, in], parallel over the output rows.
func linear(x [][]float32, w []float32, out int) [][]float32 {
	in := len(w) / out
	y := make([][]float32, len(x))
	for t := range y {
		y[t] = make([]float32, out)
	}
	cpu.Parallel(out, max(1, 8192/max(in*len(x), 1)), func(lo, hi int) {
		for o := lo; o < hi; o++ {
			row := w[o*in : (o+1)*in]
			for t, xt := range x {
				y[t][o] = dot(row, xt)
			}
		}
	})
	return y
}

// dot is Σ a[i]·b[i] over len(a).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// rmsNorm sets dst = x / sqrt(mean(x²) + eps) · w; dst may be x.
func rmsNorm(dst, x, w []float32, eps float64) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	r := float32(1 / math.Sqrt(ss/float64(len(x))+eps))
	for i, v := range x {
		dst[i] = v * r * w[i]
	}
}

// rmsNormRows is rmsNorm of each row of x into new rows.
func rmsNormRows(x [][]float32, w []float32, eps float64) [][]float32 {
	y := make([][]float32, len(x))
	for t, r := range x {
		y[t] = make([]float32, len(r))
		rmsNorm(y[t], r, w, eps)
	}
	return y
}

// addRows adds b to a, row by row.
func addRows(a, b [][]float32) {
	for t := range a {
		for i, v := range b[t] {
			a[t][i] += v
		}
	}
}

// rope rotates one head x in place for position pos, rotate_half style:
// x[i] and x[i+d/2] turn by pos·theta^(−2i/d).
func rope(x []float32, pos int, theta float64) { turnHalves(x, pos, theta, -1) }

// RoPESignBug is RoPE with the sign error of the LFM2 development log: the
// first half's sine term is added, not subtracted,
//
//	x'[i]       = x[i]·cos + x[i+d/2]·sin   (RoPE: x[i]·cos − x[i+d/2]·sin)
//	x'[i+d/2]   = x[i+d/2]·cos + x[i]·sin   (as in RoPE)
//
// so each pair goes through [[cos, sin], [sin, cos]], which is no rotation:
// it changes the head's length, and q·k no longer depends on the distance
// between the positions alone. At position 0 (sin = 0) it is the identity,
// like RoPE. Pass it to ForwardRotating to see what it does.
func RoPESignBug(x []float32, pos int, theta float64) { turnHalves(x, pos, theta, +1) }

// turnHalves maps each pair (x[i], x[i+d/2]) to (x[i]·cos + firstSign·x[i+d/2]·sin,
// x[i+d/2]·cos + x[i]·sin), with the angle pos·theta^(−2i/d): a rotation
// for firstSign −1.
func turnHalves(x []float32, pos int, theta float64, firstSign float32) {
	half := len(x) / 2
	for i := range half {
		invFreq := float32(1 / math.Pow(theta, float64(2*i)/float64(len(x))))
		ang := float64(float32(pos) * invFreq)
		cos, sin := float32(math.Cos(ang)), float32(math.Sin(ang))
		x1, x2 := x[i], x[i+half]
		x[i], x[i+half] = x1*cos+firstSign*x2*sin, x2*cos+x1*sin
	}
}
