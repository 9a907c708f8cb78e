package lfm2

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ExpectedTensors lists every tensor name and shape the config implies, with
// the names of the Hugging Face checkpoints (weights are [out, in]):
//
//	model.embed_tokens.weight          [vocab, hidden]
//	model.embedding_norm.weight        [hidden]  (the final norm, despite its name)
//	lm_head.weight                     [vocab, hidden], only if not tied
//
// and for each layer N, under model.layers.N.:
//
//	operator_norm.weight, ffn_norm.weight                [hidden]
//	attention:   self_attn.q_proj.weight                 [heads·headDim, hidden]
//	             self_attn.k_proj.weight, v_proj.weight  [kvHeads·headDim, hidden]
//	             self_attn.out_proj.weight               [hidden, heads·headDim]
//	             self_attn.q_layernorm.weight, k_layernorm.weight  [headDim]
//	conv:        conv.in_proj.weight                     [3·hidden, hidden]  (gate B, gate C, input)
//	             conv.conv.weight                        [hidden, 1, convL]  (depthwise)
//	             conv.out_proj.weight                    [hidden, hidden]
//	dense:       feed_forward.w1.weight, w3.weight       [inter, hidden]  (gate, up)
//	             feed_forward.w2.weight                  [hidden, inter]  (down)
//	MoE:         feed_forward.gate.weight                [experts, hidden]  (router)
//	             feed_forward.expert_bias                [experts], if use_expert_bias
//	             feed_forward.experts.E.w1, w3, w2       as dense, with moeInter
func ExpectedTensors(c *Config) map[string][]int {
	groups := tensorGroups(c)
	n := 0
	for _, g := range groups {
		n += g.count()
	}
	want := make(map[string][]int, n)
	for _, g := range groups {
		if g.experts == 0 {
			want[g.name] = g.shape
			continue
		}
		for e := range g.experts {
			want[g.name+strconv.Itoa(e)+g.suffix] = g.shape
		}
	}
	return want
}

// tensorGroup is tensors of one shape: a single one called name, or, with
// experts > 0, one per expert e called name + e + suffix.
type tensorGroup struct {
	name, suffix string
	shape        []int
	experts      int
}

// count is how many tensors g stands for.
func (g tensorGroup) count() int { return max(g.experts, 1) }

// tensorGroups lists ExpectedTensors' tensors in groups, a few per layer
// however many experts there are, so that counting them (Sizes) costs
// O(layers).
func tensorGroups(c *Config) []tensorGroup {
	h, hd := c.Hidden, c.HeadDim
	var out []tensorGroup
	add := func(name string, shape ...int) { out = append(out, tensorGroup{name: name, shape: shape}) }
	add("model.embed_tokens.weight", c.Vocab, h)
	add("model.embedding_norm.weight", h)
	if !c.TiedEmbeddings {
		add("lm_head.weight", c.Vocab, h)
	}
	for n := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", n)
		add(p+"operator_norm.weight", h)
		add(p+"ffn_norm.weight", h)
		if c.IsAttention(n) {
			add(p+"self_attn.q_proj.weight", c.Heads*hd, h)
			add(p+"self_attn.k_proj.weight", c.KVHeads*hd, h)
			add(p+"self_attn.v_proj.weight", c.KVHeads*hd, h)
			add(p+"self_attn.out_proj.weight", h, c.Heads*hd)
			add(p+"self_attn.q_layernorm.weight", hd)
			add(p+"self_attn.k_layernorm.weight", hd)
		} else {
			add(p+"conv.in_proj.weight", 3*h, h)
			add(p+"conv.conv.weight", h, 1, c.ConvL)
			add(p+"conv.out_proj.weight", h, h)
		}
		if !c.IsMoE(n) {
			add(p+"feed_forward.w1.weight", c.Intermediate, h)
			add(p+"feed_forward.w3.weight", c.Intermediate, h)
			add(p+"feed_forward.w2.weight", h, c.Intermediate)
			continue
		}
		add(p+"feed_forward.gate.weight", c.Experts, h)
		if c.ExpertBias {
			add(p+"feed_forward.expert_bias", c.Experts)
		}
		experts := p + "feed_forward.experts."
		im := c.MoEIntermediate
		out = append(out, tensorGroup{experts, ".w1.weight", []int{im, h}, c.Experts},
			tensorGroup{experts, ".w3.weight", []int{im, h}, c.Experts},
			tensorGroup{experts, ".w2.weight", []int{h, im}, c.Experts})
	}
	return out
}

// maxListed is how many tensors of each kind a Validate error names.
const maxListed = 20

// Validate checks a checkpoint against config c: first its bytes, so that
// a config that implies more weights than the files hold is refused before
// its tensors are listed; then its tensors' names and shapes against
// ExpectedTensors, in one error listing every missing, extra and misshapen
// tensor, sorted by name, naming at most maxListed of each kind; then its
// values, which must all be finite (the first NaN or infinity is named,
// with its tensor and index).
func Validate(c *Config, ck *Checkpoint) error {
	if err := checkWeightBytes(c, ck); err != nil {
		return err
	}
	want := ExpectedTensors(c)
	var missing, extra, misshapen []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t, ok := ck.Tensors[name]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s %v", name, want[name]))
		case !slices.Equal(t.Shape, want[name]):
			misshapen = append(misshapen, fmt.Sprintf("%s is %v, want %v", name, t.Shape, want[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ck.Tensors)) {
		if _, ok := want[name]; !ok {
			extra = append(extra, fmt.Sprintf("%s %v", name, ck.Tensors[name].Shape))
		}
	}
	if len(missing)+len(extra)+len(misshapen) == 0 {
		return checkFinite(ck)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lfm2: %s: the checkpoint does not match the %s config", ck.Dir, c.ModelType)
	for _, kind := range []struct {
		what  string
		names []string
	}{{"missing", missing}, {"extra", extra}, {"misshapen", misshapen}} {
		if len(kind.names) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n  %d %s:", len(kind.names), kind.what)
		for _, s := range kind.names[:min(len(kind.names), maxListed)] {
			b.WriteString("\n    " + s)
		}
		if more := len(kind.names) - maxListed; more > 0 {
			fmt.Fprintf(&b, "\n    and %d more", more)
		}
	}
	return errors.New(b.String())
}

// checkWeightBytes refuses a config whose parameters would need more bytes,
// at two each (bf16 or f16, the smallest dtype read), than ck's tensors
// hold.
func checkWeightBytes(c *Config, ck *Checkpoint) error {
	var have int64
	for _, t := range ck.Tensors {
		have += int64(len(t.data))
	}
	params := c.Sizes().Params
	if need := 2 * params; need > float64(have) {
		return fmt.Errorf("lfm2: %s: the %s config implies %.0f parameters, %.0f bytes in 16-bit dtypes, but the checkpoint's tensors hold %d bytes: its config.json does not describe these weights",
			ck.Dir, c.ModelType, params, need, have)
	}
	return nil
}
