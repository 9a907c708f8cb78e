package lfm2

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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
	h, hd := c.Hidden, c.HeadDim
	want := map[string][]int{
		"model.embed_tokens.weight":   {c.Vocab, h},
		"model.embedding_norm.weight": {h},
	}
	if !c.TiedEmbeddings {
		want["lm_head.weight"] = []int{c.Vocab, h}
	}
	ffn := func(prefix string, inter int) {
		want[prefix+"w1.weight"] = []int{inter, h}
		want[prefix+"w3.weight"] = []int{inter, h}
		want[prefix+"w2.weight"] = []int{h, inter}
	}
	for n := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", n)
		want[p+"operator_norm.weight"] = []int{h}
		want[p+"ffn_norm.weight"] = []int{h}
		if c.IsAttention(n) {
			want[p+"self_attn.q_proj.weight"] = []int{c.Heads * hd, h}
			want[p+"self_attn.k_proj.weight"] = []int{c.KVHeads * hd, h}
			want[p+"self_attn.v_proj.weight"] = []int{c.KVHeads * hd, h}
			want[p+"self_attn.out_proj.weight"] = []int{h, c.Heads * hd}
			want[p+"self_attn.q_layernorm.weight"] = []int{hd}
			want[p+"self_attn.k_layernorm.weight"] = []int{hd}
		} else {
			want[p+"conv.in_proj.weight"] = []int{3 * h, h}
			want[p+"conv.conv.weight"] = []int{h, 1, c.ConvL}
			want[p+"conv.out_proj.weight"] = []int{h, h}
		}
		if !c.IsMoE(n) {
			ffn(p+"feed_forward.", c.Intermediate)
			continue
		}
		want[p+"feed_forward.gate.weight"] = []int{c.Experts, h}
		if c.ExpertBias {
			want[p+"feed_forward.expert_bias"] = []int{c.Experts}
		}
		for e := range c.Experts {
			ffn(fmt.Sprintf("%sfeed_forward.experts.%d.", p, e), c.MoEIntermediate)
		}
	}
	return want
}

// maxListed is how many tensors of each kind a Validate error names.
const maxListed = 20

// Validate compares a checkpoint with ExpectedTensors and returns one error
// listing every missing, extra and misshapen tensor, sorted by name, naming
// at most maxListed of each kind.
func Validate(c *Config, ck *Checkpoint) error {
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
		return nil
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
