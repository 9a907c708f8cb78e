package lfm2

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gpulab/datasets"
)

// fixtures are tiny random models that transformers made, with its logits
// and greedy continuations (scripts/fixtures/lfm2_fixtures.py): a dense
// Lfm2ForCausalLM and an Lfm2MoeForCausalLM with a nonzero expert_bias.
var fixtures = filepath.Join("..", "..", "..", "datasets", "testdata", "lfm2")

// loadModel loads the config and weights of a model directory (a fixture or a test model).
func loadModel(t *testing.T, dir string) (*Config, *Weights) {
	t.Helper()
	c, err := LoadConfig(dir)
	if err != nil {
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

// readJSON decodes the JSON file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestFixtureLogits: the CPU forward matches transformers' fp32 logits
// within 1e-4 at every position of every sequence.
func TestFixtureLogits(t *testing.T) {
	for _, name := range []string{"dense", "moe"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(fixtures, name)
			c, w := loadModel(t, dir)
			var ids struct{ Batch [][]int }
			readJSON(t, filepath.Join(dir, "ids.json"), &ids)
			want, shape, err := datasets.ReadNPYTensor(filepath.Join(dir, "logits.npy"))
			if err != nil {
				t.Fatal(err)
			}
			if len(ids.Batch) == 0 || !slices.Equal(shape, []int{len(ids.Batch), len(ids.Batch[0]), c.Vocab}) {
				t.Fatalf("logits.npy has shape %v for %d sequences and vocab %d", shape, len(ids.Batch), c.Vocab)
			}
			got, err := Logits(c, w, ids.Batch)
			if err != nil {
				t.Fatal(err)
			}
			worst, at := 0.0, 0
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > worst || math.IsNaN(d) {
					worst, at = d, i
				}
			}
			T, V := shape[1], shape[2]
			t.Logf("max |diff| %.3g at sequence %d, position %d, token %d", worst, at/(T*V), at/V%T, at%V)
			if !(worst <= 1e-4) {
				t.Errorf("max |diff| %.3g > 1e-4 at sequence %d, position %d, token %d: got %g, want %g",
					worst, at/(T*V), at/V%T, at%V, got[at], want[at])
			}
		})
	}
}

// TestFixtureGreedy: the greedy continuation is transformers' exactly.
func TestFixtureGreedy(t *testing.T) {
	for _, name := range []string{"dense", "moe"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(fixtures, name)
			c, w := loadModel(t, dir)
			var g struct {
				Prompt       []int
				Continuation []int
			}
			readJSON(t, filepath.Join(dir, "greedy.json"), &g)
			got, err := Greedy(c, w, g.Prompt, len(g.Continuation))
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Continuation) == 0 || !slices.Equal(got, g.Continuation) {
				t.Errorf("greedy after %v: %v, want %v", g.Prompt, got, g.Continuation)
			}
		})
	}
}
