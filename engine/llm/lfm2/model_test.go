package lfm2

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/enginetest"
)

// writeModel writes a random BF16 checkpoint of the given tensors to dir, in
// two shards with an index, and opens it.
func writeModel(t *testing.T, dir string, shapes map[string][]int) *Checkpoint {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	shards := []map[string]TensorData{{}, {}}
	index := map[string]string{}
	for i, name := range slices.Sorted(maps.Keys(shapes)) {
		n := 1
		for _, d := range shapes[name] {
			n *= d
		}
		v := make([]float32, n)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		shards[i%2][name] = TensorData{"BF16", shapes[name], v}
		index[name] = fmt.Sprintf("model-%05d-of-00002.safetensors", i%2+1)
	}
	for i, s := range shards {
		if err := WriteSafetensors(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)), s); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(map[string]any{"weight_map": index})
	writeFile(t, filepath.Join(dir, "model.safetensors.index.json"), b)
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

func TestExpectedTensors(t *testing.T) {
	c := tiny
	want := ExpectedTensors(&c)
	// 2 + 4 layers × 2 norms + 2 attention × 6 + 2 conv × 3 + 1 dense × 3
	// + 3 MoE × (router, bias, 4 experts × 3).
	if len(want) != 2+8+12+6+3+3*(2+12) {
		t.Errorf("%d tensors", len(want))
	}
	for name, shape := range map[string][]int{
		"model.embed_tokens.weight":                       {100, 64},
		"model.layers.0.conv.conv.weight":                 {64, 1, 3},
		"model.layers.0.conv.in_proj.weight":              {192, 64},
		"model.layers.0.feed_forward.w1.weight":           {96, 64},
		"model.layers.1.self_attn.k_proj.weight":          {32, 64},
		"model.layers.1.self_attn.out_proj.weight":        {64, 64},
		"model.layers.1.self_attn.q_layernorm.weight":     {16},
		"model.layers.1.feed_forward.expert_bias":         {4},
		"model.layers.3.feed_forward.gate.weight":         {4, 64},
		"model.layers.3.feed_forward.experts.3.w2.weight": {64, 32},
	} {
		if !slices.Equal(want[name], shape) {
			t.Errorf("%s: %v, want %v", name, want[name], shape)
		}
	}
	if _, ok := want["lm_head.weight"]; ok {
		t.Error("tied embeddings expect an lm_head")
	}
	c.TiedEmbeddings = false
	if !slices.Equal(ExpectedTensors(&c)["lm_head.weight"], []int{100, 64}) {
		t.Error("untied embeddings expect no lm_head")
	}
}

func TestValidate(t *testing.T) {
	c := tiny
	want := ExpectedTensors(&c)
	if err := Validate(&c, writeModel(t, t.TempDir(), want)); err != nil {
		t.Fatal(err)
	}

	bad := maps.Clone(want)
	delete(bad, "model.layers.2.conv.out_proj.weight")
	bad["model.layers.1.self_attn.o_proj.weight"] = []int{64, 64}
	bad["model.layers.3.feed_forward.experts.1.w3.weight"] = []int{64, 32}
	err := Validate(&c, writeModel(t, t.TempDir(), bad))
	for _, s := range []string{
		"1 missing:\n    model.layers.2.conv.out_proj.weight [64 64]",
		"1 extra:\n    model.layers.1.self_attn.o_proj.weight [64 64]",
		"1 misshapen:\n    model.layers.3.feed_forward.experts.1.w3.weight is [64 32], want [32 64]",
	} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v\nwant it to contain %q", err, s)
		}
	}

	// A checkpoint of only the embeddings (and bytes enough) misses the other 72, of which 20 are named.
	err = Validate(&c, writeModel(t, t.TempDir(), map[string][]int{"model.embed_tokens.weight": {100, 64}, "padding": {200000}}))
	if err == nil || !strings.Contains(err.Error(), "72 missing:") || !strings.Contains(err.Error(), "and 52 more") ||
		strings.Count(err.Error(), "\n    model.") != 20 {
		t.Errorf("error %v", err)
	}
}

// TestValidateWeightBytes: a config that implies more weights than the
// checkpoint's files hold is refused before the tensors it implies are
// listed, saying both sizes.
func TestValidateWeightBytes(t *testing.T) {
	c := tiny
	c.Experts = 1024 // 4 × 3 × 1024 × 32 × 64 parameters of experts
	err := Validate(&c, writeModel(t, t.TempDir(), map[string][]int{"model.embed_tokens.weight": {100, 64}}))
	for _, want := range []string{"the lfm2_moe config implies 19157248 parameters, 38314496 bytes in 16-bit dtypes,",
		"but the checkpoint's tensors hold 12800 bytes: its config.json does not describe these weights"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
}

// TestLoadWeightsChecksHostMemory: the float32 copy of the weights is held
// to the host's free memory before it is made.
func TestLoadWeightsChecksHostMemory(t *testing.T) {
	c := tiny
	ck := writeModel(t, t.TempDir(), ExpectedTensors(&c))
	t.Setenv(engine.HostMemoryEnv, "10000")
	_, err := LoadWeights(&c, ck)
	enginetest.WantMemoryError(t, err, uint64(4*c.Sizes().Params), "the float32 weights")
}
