package lfm2

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tinyHub is a tiny lfm2_moe config.json in the hub's original style.
const tinyHub = `{
  "architectures": ["Lfm2MoeForCausalLM"], "model_type": "lfm2_moe",
  "hidden_size": 64, "num_hidden_layers": 4, "vocab_size": 100,
  "num_attention_heads": 4, "num_key_value_heads": 2,
  "layer_types": ["conv", "full_attention", "conv", "full_attention"],
  "rope_theta": 10000.0, "norm_eps": 1e-06, "conv_L_cache": 3,
  "num_dense_layers": 1, "intermediate_size": 96,
  "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16"
}`

// tinyV5 is the same model as transformers 5 writes it.
const tinyV5 = `{
  "model_type": "lfm2_moe", "dtype": "bfloat16",
  "hidden_size": 64, "num_hidden_layers": 4, "vocab_size": 100,
  "num_attention_heads": 4, "num_key_value_heads": 2,
  "layer_types": ["conv", "full_attention", "conv", "full_attention"],
  "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
  "norm_eps": 1e-06, "conv_L_cache": 3, "num_dense_layers": 1, "intermediate_size": 96,
  "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32
}`

var tiny = Config{
	ModelType: "lfm2_moe", Hidden: 64, Layers: 4, Vocab: 100, Heads: 4, KVHeads: 2, HeadDim: 16,
	LayerTypes: []string{Conv, Attention, Conv, Attention},
	RopeTheta:  1e4, NormEps: 1e-6, ConvL: 3, DenseLayers: 1, Intermediate: 96,
	Experts: 4, ExpertsPerToken: 2, MoEIntermediate: 32, ExpertBias: true, NormTopK: true, RoutedScaling: 1,
	MaxPositions: 128000, TiedEmbeddings: true, DType: "bfloat16",
}

func TestParseConfigStyles(t *testing.T) {
	for name, js := range map[string]string{"hub": tinyHub, "transformers 5": tinyV5} {
		c, err := ParseConfig([]byte(js))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(*c, tiny) {
			t.Errorf("%s: got %+v\nwant %+v", name, *c, tiny)
		}
	}
	c := tiny
	var attn, moe []bool
	for l := range c.Layers {
		attn, moe = append(attn, c.IsAttention(l)), append(moe, c.IsMoE(l))
	}
	if want := []bool{false, true, false, true}; !reflect.DeepEqual(attn, want) {
		t.Errorf("IsAttention %v, want %v", attn, want)
	}
	if want := []bool{false, true, true, true}; !reflect.DeepEqual(moe, want) {
		t.Errorf("IsMoE %v, want %v", moe, want)
	}
}

// TestParseConfigReal parses LFM2-8B-A1B's config.json (abridged) and
// LFM2-1.2B's, whose intermediate_size 12288 is auto-adjusted to 8192.
func TestParseConfigReal(t *testing.T) {
	layers := make([]string, 24)
	for l := range layers {
		layers[l] = Conv
	}
	for _, l := range []int{2, 6, 10, 14, 18, 21} {
		layers[l] = Attention
	}
	types, _ := json.Marshal(layers)
	moe := `{"model_type": "lfm2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
	  "vocab_size": 65536, "num_attention_heads": 32, "num_key_value_heads": 8,
	  "layer_types": ` + string(types) + `, "rope_theta": 1000000.0, "norm_eps": 1e-05,
	  "conv_L_cache": 3, "num_dense_layers": 2, "intermediate_size": 7168,
	  "num_experts": 32, "num_experts_per_tok": 4, "moe_intermediate_size": 1792,
	  "norm_topk_prob": true, "use_expert_bias": true, "tie_word_embeddings": true, "dtype": "bfloat16"}`
	c, err := ParseConfig([]byte(moe))
	if err != nil {
		t.Fatal(err)
	}
	var attn []int
	for l := range c.Layers {
		if c.IsAttention(l) {
			attn = append(attn, l)
		}
	}
	if c.HeadDim != 64 || c.RopeTheta != 1e6 || c.NormEps != 1e-5 || c.IsMoE(1) || !c.IsMoE(2) ||
		!reflect.DeepEqual(attn, []int{2, 6, 10, 14, 18, 21}) {
		t.Errorf("8B-A1B: %+v, attention at %v", c, attn)
	}
	if n := len(ExpectedTensors(c)); n != 2+24*2+6*6+18*3+2*3+22*(2+32*3) {
		t.Errorf("8B-A1B: %d expected tensors", n)
	}
	dense := `{"model_type": "lfm2", "hidden_size": 2048, "num_hidden_layers": 16, "vocab_size": 65536,
	  "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 12288,
	  "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256,
	  "full_attn_idxs": [2, 5, 8, 10, 12, 14]}`
	if c, err = ParseConfig([]byte(dense)); err != nil {
		t.Fatal(err)
	}
	if c.Intermediate != 8192 || c.DenseLayers != 16 || c.IsMoE(5) || !c.IsAttention(14) || c.IsAttention(15) {
		t.Errorf("1.2B: %+v", c)
	}
}

// parseEdited parses tinyHub's config with edit's keys set (nil values
// delete the key).
func parseEdited(t *testing.T, edit map[string]any) error {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(tinyHub), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range edit {
		if m[k] = v; v == nil {
			delete(m, k)
		}
	}
	js, _ := json.Marshal(m)
	_, err := ParseConfig(js)
	return err
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit map[string]any // nil values delete the key
		want string
	}{
		{"missing hidden", map[string]any{"hidden_size": nil}, "hidden_size is missing"},
		{"zero vocab", map[string]any{"vocab_size": 0}, "vocab_size = 0"},
		{"other model", map[string]any{"model_type": "llama"}, `model_type "llama"`},
		{"short layer_types", map[string]any{"layer_types": []string{"conv"}}, "layer_types has 1 entries for num_hidden_layers = 4"},
		{"mamba", map[string]any{"layer_types": []string{"conv", "mamba", "conv", "conv"}}, `layer_types[1] = "mamba"`},
		{"heads", map[string]any{"num_attention_heads": 5, "num_key_value_heads": 5}, "num_attention_heads = 5 does not divide hidden_size = 64"},
		{"kv heads", map[string]any{"num_key_value_heads": 3}, "num_key_value_heads = 3 does not divide num_attention_heads = 4"},
		{"top-k", map[string]any{"num_experts_per_tok": 5}, "num_experts_per_tok = 5 exceeds num_experts = 4"},
		{"dense layers", map[string]any{"num_dense_layers": 5}, "num_dense_layers = 5 outside [0, 4]"},
		{"type", map[string]any{"hidden_size": "64"}, "hidden_size"},
		{"conv bias", map[string]any{"conv_bias": true}, "conv_bias = true is not supported"},
		{"positions", map[string]any{"max_position_embeddings": 0}, "max_position_embeddings = 0"},
		{"scaling", map[string]any{"routed_scaling_factor": -1}, "routed_scaling_factor = -1"},
	} {
		if err := parseEdited(t, tc.edit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadConfig(dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("no config.json: error %v", err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{"model_type": "lfm2_moe"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(dir); err == nil || !strings.Contains(err.Error(), path+": hidden_size is missing") {
		t.Errorf("bad config.json: error %v", err)
	}
	if err := os.WriteFile(path, []byte(tinyHub), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadConfig(dir); err != nil || c.Hidden != 64 {
		t.Errorf("LoadConfig: %v, %v", c, err)
	}
}

// TestParseConfigOptions: the router options, max_position_embeddings and
// the original tie_embedding key are read; tie_embedding wins over
// tie_word_embeddings, as in transformers.
func TestParseConfigOptions(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal([]byte(tinyHub), &m); err != nil {
		t.Fatal(err)
	}
	m["use_expert_bias"], m["norm_topk_prob"], m["routed_scaling_factor"] = false, false, 2.5
	m["max_position_embeddings"], m["tie_embedding"], m["tie_word_embeddings"] = 64, false, true
	js, _ := json.Marshal(m)
	c, err := ParseConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	if c.ExpertBias || c.NormTopK || c.RoutedScaling != 2.5 || c.MaxPositions != 64 || c.TiedEmbeddings {
		t.Errorf("options not read: %+v", c)
	}
	want := ExpectedTensors(c)
	if _, ok := want["model.layers.1.feed_forward.expert_bias"]; ok {
		t.Error("expert_bias expected without use_expert_bias")
	}
	if _, ok := want["lm_head.weight"]; !ok {
		t.Error("no lm_head.weight with tie_embedding false")
	}
}

// TestParseConfigBounds: every size is held to config.go's bounds before
// it sizes anything, and so are the tensors and parameters they imply
// together; the largest real configs pass.
func TestParseConfigBounds(t *testing.T) {
	conv := func(n int) []string {
		types := make([]string, n)
		for i := range types {
			types[i] = Conv
		}
		return types
	}
	for _, tc := range []struct {
		name string
		edit map[string]any
		want string
	}{
		{"experts", map[string]any{"num_experts": 2147483648}, "num_experts = 2147483648, want at most 1024"},
		{"hidden", map[string]any{"hidden_size": 1 << 40}, "hidden_size = 1099511627776, want at most 65536"},
		{"layers", map[string]any{"num_hidden_layers": 100000, "layer_types": nil, "full_attn_idxs": []int{1}}, "num_hidden_layers = 100000, want at most 1024"},
		{"vocab", map[string]any{"vocab_size": 1 << 30}, "vocab_size = 1073741824, want at most 4194304"},
		{"heads", map[string]any{"num_attention_heads": 1 << 12, "num_key_value_heads": 1}, "num_attention_heads = 4096, want at most 1024"},
		{"intermediate", map[string]any{"intermediate_size": 1 << 21}, "intermediate_size = 2097152, want at most 1048576"},
		{"moe intermediate", map[string]any{"moe_intermediate_size": 1 << 21}, "moe_intermediate_size = 2097152, want at most 1048576"},
		{"conv", map[string]any{"conv_L_cache": 1 << 20}, "conv_L_cache = 1048576, want at most 64"},
		{"positions", map[string]any{"max_position_embeddings": 1 << 40}, "max_position_embeddings = 1099511627776, want at most 16777216"},
		{"tensors", map[string]any{"num_hidden_layers": 1024, "layer_types": conv(1024), "num_experts": 1024}, "3149827 tensors, more than the 131072"},
		{"parameters", map[string]any{"hidden_size": 65536, "num_hidden_layers": 1024, "layer_types": conv(1024), "num_attention_heads": 64,
			"num_key_value_heads": 8, "num_experts": 2, "moe_intermediate_size": 1 << 20, "intermediate_size": 1 << 20},
			"parameters, more than the 1e+12"},
	} {
		if err := parseEdited(t, tc.edit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	dense := `{"model_type": "lfm2", "hidden_size": 16, "num_hidden_layers": 1, "vocab_size": 10, "num_attention_heads": 1,
	  "num_key_value_heads": 1, "layer_types": ["conv"], "intermediate_size": 96, "block_ffn_dim_multiplier": 1e300}`
	if _, err := ParseConfig([]byte(dense)); err == nil || !strings.Contains(err.Error(), "block_ffn_dim_multiplier = 1e+300") {
		t.Errorf("a huge block_ffn_dim_multiplier: %v", err)
	}
	if _, err := Preset("lfm2-8b-a1b"); err != nil {
		t.Errorf("the real model's config: %v", err)
	}
}
