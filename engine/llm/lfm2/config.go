// Package lfm2 reads LiquidAI's LFM2 language models from a Hugging Face
// model directory: the config, the safetensors checkpoint, and a check that
// the two agree.
//
// LFM2 is a hybrid: each of its layers mixes tokens either with grouped-query
// attention (RoPE, with RMSNorm on each head's queries and keys) or with a
// short gated convolution over the last few tokens, then runs a SwiGLU
// feed-forward. In LFM2-MoE (model_type lfm2_moe, e.g. LFM2-8B-A1B) the first
// num_dense_layers feed-forwards are dense and the rest are mixtures of
// experts: a sigmoid router picks num_experts_per_tok of num_experts small
// SwiGLU experts per token. Which layers attend is listed in layer_types.
//
// A checkpoint is opened by memory-mapping its files, so that a 16 GB model
// costs no copy until a tensor is converted to float32.
package lfm2

import (
	"encoding/json"
	"fmt"
	"gpulab/engine/readlimit"
	"math"
	"path/filepath"
)

// Layer types, as config.json's layer_types spells them.
const (
	Attention = "full_attention"
	Conv      = "conv"
)

// Config is the part of an HF config.json that inference needs, from either
// style: the hub's original (rope_theta at top level, torch_dtype) or the one
// transformers 5 writes (rope_parameters.rope_theta, dtype).
type Config struct {
	ModelType string // "lfm2_moe" or "lfm2"
	Hidden    int    // hidden_size
	Layers    int    // num_hidden_layers
	Vocab     int    // vocab_size
	Heads     int    // num_attention_heads
	KVHeads   int    // num_key_value_heads
	HeadDim   int    // Hidden / Heads
	// LayerTypes is Attention or Conv for each layer.
	LayerTypes []string
	RopeTheta  float64 // RoPE base (default 1e6)
	NormEps    float64 // RMSNorm epsilon (default 1e-5)
	ConvL      int     // conv_L_cache: the convolution's kernel size (default 3)
	// DenseLayers is how many leading layers have a dense feed-forward of
	// width Intermediate: num_dense_layers (default 2) for lfm2_moe, every
	// layer for lfm2.
	DenseLayers int
	// Intermediate is the dense feed-forward width the weights have. For
	// lfm2 with block_auto_adjust_ff_dim (the default) that is not
	// intermediate_size but, as in transformers, 2/3 of it times
	// block_ffn_dim_multiplier, rounded up to block_multiple_of.
	Intermediate    int
	Experts         int // num_experts (0 for lfm2)
	ExpertsPerToken int // num_experts_per_tok
	MoEIntermediate int // moe_intermediate_size: each expert's width
	// The router's options, as transformers names them: experts are chosen
	// by sigmoid(logit) + expert_bias if ExpertBias (use_expert_bias,
	// default true), their weights are divided by their sum (+1e-6) if
	// NormTopK (norm_topk_prob, default true), then multiplied by
	// RoutedScaling (routed_scaling_factor, default 1).
	ExpertBias     bool
	NormTopK       bool
	RoutedScaling  float64
	MaxPositions   int // max_position_embeddings (default 128000): the longest sequence
	TiedEmbeddings bool
	DType          string // the checkpoint's torch dtype, e.g. "bfloat16"; "" if unstated
}

// Bounds on what a config may size. Each is far above any LFM2 model's
// (LFM2-8B-A1B: hidden 2048, 24 layers, vocabulary 65536, 32 heads, a dense
// width of 7168, 32 experts of width 1792, 128000 positions), and ParseConfig
// holds every size to them before the size makes anything, so that no
// config.json can make the loader list millions of tensors or allocate
// what its numbers claim. Together they bound what a config implies
// (Sizes: the tensors, parameters and cache per token); the checkpoint's
// files (Validate) and the host's memory (LoadWeights) then bound the
// weights further.
const (
	maxHidden        = 1 << 16 // hidden_size
	maxLayers        = 1 << 10 // num_hidden_layers
	maxVocab         = 1 << 22 // vocab_size
	maxHeads         = 1 << 10 // num_attention_heads and num_key_value_heads
	maxWidth         = 1 << 20 // a feed-forward's width: intermediate_size (as adjusted), moe_intermediate_size
	maxNumExperts    = 1 << 10 // num_experts (and so num_experts_per_tok)
	maxConvL         = 1 << 6  // conv_L_cache
	maxPositions     = 1 << 24 // max_position_embeddings
	maxMultipleOf    = 1 << 16 // block_multiple_of
	maxFFNMultiplier = 64      // block_ffn_dim_multiplier
	maxTensors       = 1 << 17 // the tensors the config implies
	maxParams        = 1e12    // the parameters the config implies: 2 TB in bf16
)

// rawConfig is config.json's keys; pointers tell a missing key from zero.
type rawConfig struct {
	ModelType      *string  `json:"model_type"`
	Hidden         *int     `json:"hidden_size"`
	Layers         *int     `json:"num_hidden_layers"`
	Vocab          *int     `json:"vocab_size"`
	Heads          *int     `json:"num_attention_heads"`
	KVHeads        *int     `json:"num_key_value_heads"`
	LayerTypes     []string `json:"layer_types"`
	FullAttnIdxs   []int    `json:"full_attn_idxs"`
	RopeTheta      *float64 `json:"rope_theta"`
	RopeParameters *struct {
		RopeTheta *float64 `json:"rope_theta"`
	} `json:"rope_parameters"`
	NormEps         *float64 `json:"norm_eps"`
	ConvL           *int     `json:"conv_L_cache"`
	DenseLayers     *int     `json:"num_dense_layers"`
	Intermediate    *int     `json:"intermediate_size"`
	AutoAdjustFF    *bool    `json:"block_auto_adjust_ff_dim"`
	FFMultiplier    *float64 `json:"block_ffn_dim_multiplier"`
	MultipleOf      *int     `json:"block_multiple_of"`
	Experts         *int     `json:"num_experts"`
	ExpertsPerToken *int     `json:"num_experts_per_tok"`
	MoEIntermediate *int     `json:"moe_intermediate_size"`
	ExpertBias      *bool    `json:"use_expert_bias"`
	NormTopK        *bool    `json:"norm_topk_prob"`
	RoutedScaling   *float64 `json:"routed_scaling_factor"`
	MaxPositions    *int     `json:"max_position_embeddings"`
	ConvBias        *bool    `json:"conv_bias"`
	Tied            *bool    `json:"tie_word_embeddings"`
	TieEmbedding    *bool    `json:"tie_embedding"` // the original LFM2 key; it wins, as in transformers
	TorchDType      *string  `json:"torch_dtype"`
	DType           *string  `json:"dtype"`
}

// ParseConfig reads a config.json. The sizes are required; rope_theta,
// norm_eps, conv_L_cache, num_dense_layers, max_position_embeddings, the
// router's options and tie_word_embeddings default as in transformers.
// Every size is held to the bounds above, and so are the tensors and
// parameters they imply together. Errors name the offending key.
func ParseConfig(data []byte) (*Config, error) { return parseConfig(data, "config.json") }

// parseConfig is ParseConfig with errors naming where the data came from.
func parseConfig(data []byte, where string) (*Config, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("lfm2: %s: %s", where, fmt.Sprintf(format, args...))
	}
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fail("%v", err)
	}
	if r.ModelType == nil || (*r.ModelType != "lfm2_moe" && *r.ModelType != "lfm2") {
		return nil, fail("model_type %s, want \"lfm2_moe\" or \"lfm2\"", quoted(r.ModelType))
	}
	moe := *r.ModelType == "lfm2_moe"
	c := &Config{ModelType: *r.ModelType, LayerTypes: r.LayerTypes, RopeTheta: 1e6, NormEps: 1e-5, ConvL: 3,
		MaxPositions: 128000, TiedEmbeddings: true}
	sizes := []struct {
		key  string
		src  *int
		dst  *int
		most int
	}{
		{"hidden_size", r.Hidden, &c.Hidden, maxHidden},
		{"num_hidden_layers", r.Layers, &c.Layers, maxLayers},
		{"vocab_size", r.Vocab, &c.Vocab, maxVocab},
		{"num_attention_heads", r.Heads, &c.Heads, maxHeads},
		{"num_key_value_heads", r.KVHeads, &c.KVHeads, maxHeads},
		{"intermediate_size", r.Intermediate, &c.Intermediate, maxWidth},
		{"num_experts", r.Experts, &c.Experts, maxNumExperts},
		{"num_experts_per_tok", r.ExpertsPerToken, &c.ExpertsPerToken, maxNumExperts},
		{"moe_intermediate_size", r.MoEIntermediate, &c.MoEIntermediate, maxWidth},
	}
	if !moe {
		sizes = sizes[:6] // lfm2 has no experts
	}
	for _, s := range sizes {
		switch {
		case s.src == nil:
			return nil, fail("%s is missing", s.key)
		case *s.src <= 0:
			return nil, fail("%s = %d, want a positive size", s.key, *s.src)
		case *s.src > s.most:
			return nil, fail("%s = %d, want at most %d (the bound on it, far above any LFM2 model's)", s.key, *s.src, s.most)
		}
		*s.dst = *s.src
	}
	switch {
	case r.RopeParameters != nil && r.RopeParameters.RopeTheta != nil:
		c.RopeTheta = *r.RopeParameters.RopeTheta
	case r.RopeTheta != nil:
		c.RopeTheta = *r.RopeTheta
	}
	if r.NormEps != nil {
		c.NormEps = *r.NormEps
	}
	if r.ConvL != nil {
		c.ConvL = *r.ConvL
	}
	if r.MaxPositions != nil {
		c.MaxPositions = *r.MaxPositions
	}
	if r.ConvBias != nil && *r.ConvBias {
		return nil, fail("conv_bias = true is not supported (LFM2 checkpoints have no conv biases)")
	}
	switch {
	case r.TieEmbedding != nil:
		c.TiedEmbeddings = *r.TieEmbedding
	case r.Tied != nil:
		c.TiedEmbeddings = *r.Tied
	}
	if r.DType != nil {
		c.DType = *r.DType
	} else if r.TorchDType != nil {
		c.DType = *r.TorchDType
	}
	c.DenseLayers = c.Layers
	if moe {
		c.DenseLayers, c.ExpertBias, c.NormTopK, c.RoutedScaling = 2, true, true, 1
		if r.DenseLayers != nil {
			c.DenseLayers = *r.DenseLayers
		}
		if r.ExpertBias != nil {
			c.ExpertBias = *r.ExpertBias
		}
		if r.NormTopK != nil {
			c.NormTopK = *r.NormTopK
		}
		if r.RoutedScaling != nil {
			c.RoutedScaling = *r.RoutedScaling
		}
	} else if r.AutoAdjustFF == nil || *r.AutoAdjustFF {
		mult, of := 1.0, 256
		if r.FFMultiplier != nil {
			mult = *r.FFMultiplier
		}
		if r.MultipleOf != nil {
			of = *r.MultipleOf
		}
		switch {
		case of <= 0 || of > maxMultipleOf:
			return nil, fail("block_multiple_of = %d, want a positive size of at most %d", of, maxMultipleOf)
		case !(mult > 0 && mult <= maxFFNMultiplier):
			return nil, fail("block_ffn_dim_multiplier = %g, want one in (0, %d]", mult, maxFFNMultiplier)
		}
		ff := int(mult * float64(2*c.Intermediate/3))
		if c.Intermediate = of * ((ff + of - 1) / of); c.Intermediate <= 0 || c.Intermediate > maxWidth {
			return nil, fail("block_ffn_dim_multiplier = %g and block_multiple_of = %d make a feed-forward width of %d, want 1 to %d",
				mult, of, c.Intermediate, maxWidth)
		}
	}
	if c.LayerTypes == nil && r.FullAttnIdxs != nil { // older lfm2 configs
		c.LayerTypes = make([]string, c.Layers)
		for i := range c.LayerTypes {
			c.LayerTypes[i] = Conv
		}
		for _, i := range r.FullAttnIdxs {
			if i < 0 || i >= c.Layers {
				return nil, fail("full_attn_idxs names layer %d of %d", i, c.Layers)
			}
			c.LayerTypes[i] = Attention
		}
	}
	if err := c.validate(); err != nil {
		return nil, fail("%v", err)
	}
	return c, nil
}

// quoted is *s in quotes, or "missing".
func quoted(s *string) string {
	if s == nil {
		return "missing"
	}
	return fmt.Sprintf("%q", *s)
}

// validate checks what ParseConfig cannot see key by key, and the bounds
// of the optional sizes and of what the sizes imply together (Sizes).
func (c *Config) validate() error {
	if len(c.LayerTypes) != c.Layers {
		return fmt.Errorf("layer_types has %d entries for num_hidden_layers = %d", len(c.LayerTypes), c.Layers)
	}
	for i, t := range c.LayerTypes {
		if t != Attention && t != Conv {
			return fmt.Errorf("layer_types[%d] = %q, want %q or %q", i, t, Attention, Conv)
		}
	}
	switch {
	case c.Hidden%c.Heads != 0:
		return fmt.Errorf("num_attention_heads = %d does not divide hidden_size = %d", c.Heads, c.Hidden)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("num_key_value_heads = %d does not divide num_attention_heads = %d", c.KVHeads, c.Heads)
	case !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 1):
		return fmt.Errorf("rope_theta = %g, want positive", c.RopeTheta)
	case !(c.NormEps > 0) || math.IsInf(c.NormEps, 1):
		return fmt.Errorf("norm_eps = %g, want positive", c.NormEps)
	case c.ConvL <= 0:
		return fmt.Errorf("conv_L_cache = %d, want a positive size", c.ConvL)
	case c.ConvL > maxConvL:
		return fmt.Errorf("conv_L_cache = %d, want at most %d", c.ConvL, maxConvL)
	case c.MaxPositions <= 0:
		return fmt.Errorf("max_position_embeddings = %d, want a positive size", c.MaxPositions)
	case c.MaxPositions > maxPositions:
		return fmt.Errorf("max_position_embeddings = %d, want at most %d", c.MaxPositions, maxPositions)
	case c.Experts > 0 && (!(c.RoutedScaling > 0) || math.IsInf(c.RoutedScaling, 1)):
		return fmt.Errorf("routed_scaling_factor = %g, want positive", c.RoutedScaling)
	case c.DenseLayers < 0 || c.DenseLayers > c.Layers:
		return fmt.Errorf("num_dense_layers = %d outside [0, %d]", c.DenseLayers, c.Layers)
	case c.ExpertsPerToken > c.Experts:
		return fmt.Errorf("num_experts_per_tok = %d exceeds num_experts = %d", c.ExpertsPerToken, c.Experts)
	}
	c.HeadDim = c.Hidden / c.Heads
	switch s := c.Sizes(); {
	case s.Tensors > maxTensors:
		return fmt.Errorf("the sizes imply %d tensors, more than the %d a config may (%d layers, %d experts each)", s.Tensors, maxTensors, c.Layers, c.Experts)
	case s.Params > maxParams:
		return fmt.Errorf("the sizes imply %.4g parameters, more than the %g a config may", s.Params, float64(maxParams))
	}
	return nil
}

// Sizes is what a config implies, figured from its sizes alone, before
// anything is allocated for them.
type Sizes struct {
	Tensors int     // the checkpoint's tensors: len(ExpectedTensors)
	Params  float64 // their elements, in float64 so that no product overflows
	// KVBytesPerToken is the float32 keys and values one token adds to the
	// caches of every attention layer.
	KVBytesPerToken float64
}

// Sizes counts the tensors and parameters of ExpectedTensors without
// listing them: a few groups per layer, whatever the number of experts.
func (c *Config) Sizes() Sizes {
	var s Sizes
	for _, g := range tensorGroups(c) {
		n := float64(g.count())
		for _, d := range g.shape {
			n *= float64(d)
		}
		s.Tensors += g.count()
		s.Params += n
	}
	for l := range c.Layers {
		if c.IsAttention(l) {
			s.KVBytesPerToken += 2 * 4 * float64(c.KVHeads) * float64(c.HeadDim)
		}
	}
	return s
}

// maxConfigBytes bounds a config.json: a real one is a few kilobytes.
const maxConfigBytes = 1 << 20

// LoadConfig reads dir/config.json.
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := readlimit.ReadFile(path, "config.json", maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	return parseConfig(data, path)
}

// IsAttention reports whether layer mixes tokens by attention (and not by
// convolution).
func (c *Config) IsAttention(layer int) bool {
	return layer >= 0 && layer < len(c.LayerTypes) && c.LayerTypes[layer] == Attention
}

// IsMoE reports whether layer's feed-forward is a mixture of experts.
func (c *Config) IsMoE(layer int) bool {
	return c.Experts > 0 && layer >= c.DenseLayers && layer < c.Layers
}
