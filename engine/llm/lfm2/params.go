package lfm2

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// presets are the config.json of known models, for sizes and parameter
// counts without their weights.
var presets = map[string]string{
	// LiquidAI/LFM2-8B-A1B: attention at layers 2, 6, 10, 14, 18 and 21.
	"lfm2-8b-a1b": `{"model_type": "lfm2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
	  "vocab_size": 65536, "num_attention_heads": 32, "num_key_value_heads": 8,
	  "layer_types": ["conv", "conv", "full_attention", "conv", "conv", "conv", "full_attention", "conv",
	    "conv", "conv", "full_attention", "conv", "conv", "conv", "full_attention", "conv", "conv", "conv",
	    "full_attention", "conv", "conv", "full_attention", "conv", "conv"],
	  "rope_theta": 1000000.0, "norm_eps": 1e-05, "conv_L_cache": 3, "max_position_embeddings": 128000,
	  "num_dense_layers": 2, "intermediate_size": 7168, "num_experts": 32, "num_experts_per_tok": 4,
	  "moe_intermediate_size": 1792, "use_expert_bias": true, "norm_topk_prob": true,
	  "routed_scaling_factor": 1.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16"}`,
}

// Preset returns the config of a known model: "lfm2-8b-a1b".
func Preset(name string) (*Config, error) {
	js, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("lfm2: no preset %q (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(presets)), ", "))
	}
	return parseConfig([]byte(js), "preset "+name)
}

// Part is the parameters of one kind of block, over the whole model.
type Part struct {
	Name   string
	Layers int   // how many layers have it (0 for the embedding, final norm, LM head)
	Total  int64 // parameters
	// Active is how many of them one token uses: all of them, but for the
	// experts only num_experts_per_tok of num_experts.
	Active int64
}

// Parts lists the model's parameters by kind of block, in ExpectedTensors'
// names and shapes: embedding (which is the LM head when tied), attention,
// short conv, dense feed-forward, router, experts, norms and an untied LM
// head.
func Parts(c *Config) []Part {
	order := []string{"embedding", "attention", "short conv", "dense FFN", "router", "experts", "norms", "LM head"}
	parts := map[string]*Part{}
	layers := map[string]map[int]bool{}
	for name, shape := range ExpectedTensors(c) {
		n := int64(1)
		for _, d := range shape {
			n *= int64(d)
		}
		kind := partOf(name)
		p := parts[kind]
		if p == nil {
			p, layers[kind] = &Part{Name: kind}, map[int]bool{}
			parts[kind] = p
		}
		p.Total += n
		if kind == "experts" {
			p.Active += n * int64(c.ExpertsPerToken) / int64(c.Experts)
		} else {
			p.Active += n
		}
		if rest, ok := strings.CutPrefix(name, "model.layers."); ok {
			l, _ := strconv.Atoi(rest[:strings.IndexByte(rest, '.')])
			layers[kind][l] = true
		}
	}
	var out []Part
	for _, kind := range order {
		if p := parts[kind]; p != nil {
			p.Layers = len(layers[kind])
			out = append(out, *p)
		}
	}
	return out
}

// partOf names the kind of block that tensor name belongs to.
func partOf(name string) string {
	switch {
	case name == "model.embed_tokens.weight":
		return "embedding"
	case name == "lm_head.weight":
		return "LM head"
	case strings.HasSuffix(name, "norm.weight") && !strings.Contains(name, "self_attn."):
		return "norms"
	case strings.Contains(name, ".self_attn."):
		return "attention"
	case strings.Contains(name, ".conv."):
		return "short conv"
	case strings.Contains(name, ".feed_forward.experts."):
		return "experts"
	case strings.Contains(name, ".feed_forward.gate.") || strings.HasSuffix(name, ".expert_bias"):
		return "router"
	}
	return "dense FFN"
}
