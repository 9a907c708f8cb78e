package lfm2

import (
	"fmt"
	"gpulab/engine/atomicfile"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// RandomTensors returns every tensor of ExpectedTensors(c), seeded random
// and scaled so that activations stay moderate through the layers: norm
// weights 1 + 0.1·g, expert biases 0.1·g, conv kernels 0.5·g, embeddings g
// and the other matrices g/√fan_in, g standard normal. It is for tests,
// benchmarks and demonstrations that need a model but not its knowledge.
func RandomTensors(c *Config, seed uint64, dtype string) map[string]TensorData {
	rng := rand.New(rand.NewPCG(seed, 0x6c666d32))
	shapes := ExpectedTensors(c)
	tensors := make(map[string]TensorData, len(shapes))
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		shape := shapes[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		scale, offset := 1/math.Sqrt(float64(shape[len(shape)-1])), 0.0
		switch {
		case strings.HasSuffix(name, "norm.weight"):
			scale, offset = 0.1, 1
		case strings.HasSuffix(name, "expert_bias"):
			scale = 0.1
		case strings.HasSuffix(name, "conv.conv.weight"):
			scale = 0.5
		case name == "model.embed_tokens.weight":
			scale = 1
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(offset + scale*rng.NormFloat64())
		}
		tensors[name] = TensorData{DType: dtype, Shape: shape, Data: v}
	}
	return tensors
}

// WriteRandomModel writes a model directory: configJSON as config.json and
// model.safetensors of RandomTensors in F32. It returns the parsed config.
func WriteRandomModel(dir string, configJSON []byte, seed uint64) (*Config, error) {
	c, err := ParseConfig(configJSON)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, "config.json"), configJSON); err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	return c, WriteSafetensors(filepath.Join(dir, "model.safetensors"), RandomTensors(c, seed, "F32"))
}
