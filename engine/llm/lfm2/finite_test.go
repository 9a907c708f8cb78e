package lfm2

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

// poisonedCheckpoint writes the random model of tinyHub, stored as dtype,
// with tensor name changed by poison, and opens it.
func poisonedCheckpoint(t *testing.T, dtype, name string, poison func(v []float32)) (*Config, *Checkpoint) {
	t.Helper()
	c, err := ParseConfig([]byte(tinyHub))
	if err != nil {
		t.Fatal(err)
	}
	tensors := RandomTensors(c, 3, dtype)
	poison(tensors[name].Data)
	dir := t.TempDir()
	if err := WriteSafetensors(filepath.Join(dir, "model.safetensors"), tensors); err != nil {
		t.Fatal(err)
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return c, ck
}

// TestLoadRefusesNonFinite: a NaN or an infinity in any stored dtype is
// refused at load, naming the tensor, the index and the value; a huge but
// finite weight loads.
func TestLoadRefusesNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		dtype, name string
		at          int
		value       float32
		want        string // "" = loads
	}{
		{"F32", "model.layers.1.self_attn.q_proj.weight", 2*64 + 5, nan, "tensor model.layers.1.self_attn.q_proj.weight holds NaN at [2 5] (element 133 of 4096)"},
		{"BF16", "model.embed_tokens.weight", 64*99 + 63, -inf, "tensor model.embed_tokens.weight holds -Inf at [99 63] (element 6399 of 6400)"},
		{"F16", "model.layers.3.feed_forward.experts.2.w2.weight", 0, inf, "tensor model.layers.3.feed_forward.experts.2.w2.weight holds +Inf at [0 0] (element 0 of 2048)"},
		{"F16", "model.layers.0.ffn_norm.weight", 5, 1e5, "tensor model.layers.0.ffn_norm.weight holds +Inf at [5] (element 5 of 64)"}, // past F16's range
		{"F32", "model.layers.0.ffn_norm.weight", 5, math.MaxFloat32, ""},
	} {
		c, ck := poisonedCheckpoint(t, tc.dtype, tc.name, func(v []float32) { v[tc.at] = tc.value })
		_, err := LoadWeights(c, ck)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s = %g: %v", tc.dtype, tc.name, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ck.Dir)):
			t.Errorf("%s %s = %g: error %v, want one naming %s and %q", tc.dtype, tc.name, tc.value, err, ck.Dir, tc.want)
		}
	}
}

// TestForwardNamesNonFiniteLayer: when a value stops being finite on the
// way through the model, the forward fails naming where it first appeared:
// the embedding, a layer's mixer or feed-forward, or the LM head, and the
// position. The weights are poisoned in memory, past the load's check; the
// last case overflows with finite weights.
func TestForwardNamesNonFiniteLayer(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name   string
		poison func(w *Weights)
		want   string
	}{
		{"embedding", func(w *Weights) { w.Embed[7*64+3] = nan }, "the embedding of token 7 is not finite at position 2 (channel 3 is NaN)"},
		{"dense", func(w *Weights) { w.Layers[0].FFN.W2[10] = inf }, "layer 0 (dense feed-forward) output is not finite at position 0"},
		{"attention", func(w *Weights) { w.Layers[1].Q[0] = nan }, "layer 1 (attention) output is not finite at position 0"},
		{"conv", func(w *Weights) { w.Layers[2].ConvOut[5] = nan }, "layer 2 (conv) output is not finite at position 0"},
		{"moe", func(w *Weights) {
			for _, e := range w.Layers[3].Experts {
				e.W2[0] = nan
			}
		}, "layer 3 (MoE feed-forward) output is not finite at position 0"},
		{"lm head", func(w *Weights) { w.Norm[0] = inf }, "the logits (LM head) are not finite at position 0"},
		{"overflow", func(w *Weights) { overflow(w.Layers[1].OpNorm) }, "layer 1 (attention) output is not finite at position 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ck := poisonedCheckpoint(t, "F32", "model.embedding_norm.weight", func([]float32) {})
			w, err := LoadWeights(c, ck)
			if err != nil {
				t.Fatal(err)
			}
			tc.poison(w)
			batch := [][]int{{1, 2, 7, 3}}
			if _, err := Logits(c, w, batch); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Logits: %v, want an error containing %q", err, tc.want)
			}
			err = GenerateBatch(c, w, batch, 3, Sampling{}, func(int, []int) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("GenerateBatch: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// overflow sets every weight of v to the largest float32: a norm weight
// that makes a layer's values overflow.
func overflow(v []float32) {
	for i := range v {
		v[i] = math.MaxFloat32
	}
}

// TestCUDANonFinite: the CUDA engine refuses a checkpoint with a NaN at
// load, naming the tensor, and when finite weights overflow, its logits,
// its last logits and its generation, greedy and sampled, fail naming the
// sequence, rather than returning NaN logits or token 0.
func TestCUDANonFinite(t *testing.T) {
	ctx := cudatest.Context(t)
	ctxs := []*cuda.Context{ctx}
	o := CUDAOptions{MaxBatch: 2, MaxSeq: 8}
	c, ck := poisonedCheckpoint(t, "BF16", "model.layers.1.self_attn.q_proj.weight", func(v []float32) { v[133] = float32(math.NaN()) })
	if m, err := NewPipeline(ctxs, c, ck, o); err == nil || !strings.Contains(err.Error(), "tensor model.layers.1.self_attn.q_proj.weight holds NaN at [2 5]") {
		if m != nil {
			m.Close()
		}
		t.Errorf("a NaN weight: %v", err)
	}
	c, ck = poisonedCheckpoint(t, "F32", "model.layers.1.operator_norm.weight", overflow)
	m := newCUDATest(t, ctxs, c, ck, o)
	batch := [][]int{{1, 2, 7, 3}, {4, 5, 6, 7}}
	want := "the CUDA engine's logits are not finite at sequence 0, position "
	if _, err := m.Logits(batch); err == nil || !strings.Contains(err.Error(), want+"0") {
		t.Errorf("Logits: %v, want %q", err, want+"0")
	}
	if _, err := m.PrefillLast(batch); err == nil || !strings.Contains(err.Error(), want+"3") {
		t.Errorf("PrefillLast: %v, want %q", err, want+"3")
	}
	for _, s := range []Sampling{{}, {Temperature: 1, Seed: 2}} {
		emitted := 0
		err := m.Generate(batch, 3, s, func(int, []int) error { emitted++; return nil })
		if err == nil || !strings.Contains(err.Error(), want+"3") || emitted != 0 {
			t.Errorf("Generate with %+v: %v after %d steps, want %q before any", s, err, emitted, want+"3")
		}
	}
}
