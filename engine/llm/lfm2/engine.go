package lfm2

// The engines behind one interface, opened on engine devices: the fp32 CPU
// reference on cpu, the CUDA engine on cuda:N or pipelined over several
// GPUs (engine.AllGPUs). lab lfm2, the lfm2 suite and notebook 06 use them.

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"gpulab/engine"
	"gpulab/engine/cuda"
)

// Engine is an LFM2 model on a device: the CPU reference (*CPUModel) or the
// CUDA engine (*CUDAModel).
type Engine interface {
	Config() *Config
	// Logits runs equal-length sequences from empty caches and returns
	// float32 logits [batch, seq, vocab].
	Logits(batch [][]int) ([]float32, error)
	// Generate is GenerateBatch on the device.
	Generate(prompts [][]int, n int, s Sampling, emit func(step int, toks []int) error) error
	// BenchPrefill times the prefill of batch up to each sequence's first
	// new token (a sample), the fastest of reps runs. The CUDA engine warms
	// up first and adds a profile, operation by operation.
	BenchPrefill(batch [][]int, reps int) (*PrefillResult, error)
	// BenchDecode times steps greedy tokens after batch random prompts of
	// prompt tokens each (RandomBatch with seed), all decoding together.
	BenchDecode(batch, prompt, steps int, seed uint64) (*DecodeResult, error)
	// Close frees what the engine holds on its devices.
	Close() error
}

var (
	_ Engine = (*CUDAModel)(nil)
	_ Engine = (*CPUModel)(nil)
)

// CPUModel is the fp32 CPU reference as an Engine: Forward, parallel over
// goroutines, on weights in Go memory.
type CPUModel struct {
	c *Config
	w *Weights
}

// NewCPUModel wraps loaded weights of config c.
func NewCPUModel(c *Config, w *Weights) *CPUModel { return &CPUModel{c: c, w: w} }

// Config returns the model's config.
func (m *CPUModel) Config() *Config { return m.c }

// Logits is Logits of the reference.
func (m *CPUModel) Logits(batch [][]int) ([]float32, error) { return Logits(m.c, m.w, batch) }

// Generate is GenerateBatch of the reference.
func (m *CPUModel) Generate(prompts [][]int, n int, s Sampling, emit func(int, []int) error) error {
	return GenerateBatch(m.c, m.w, prompts, n, s, emit)
}

// Close has nothing to free: the weights are Go memory.
func (m *CPUModel) Close() error { return nil }

// BenchPrefill times GenerateBatch of one token, the fastest of reps runs
// on the host clock; there is no profile.
func (m *CPUModel) BenchPrefill(batch [][]int, reps int) (*PrefillResult, error) {
	var fastest time.Duration
	for i := range max(reps, 1) {
		took, err := timeGenerate(m, batch, 1, nil)
		if err != nil {
			return nil, err
		}
		if i == 0 || took < fastest {
			fastest = took
		}
	}
	b, s := len(batch), len(batch[0]) // Generate has checked the batch
	return &PrefillResult{Batch: b, Seq: s, Seconds: fastest.Seconds(),
		SamplesPerSec: PerSecond(b, fastest), TokensPerSec: PerSecond(b*s, fastest)}, nil
}

// BenchDecode times one greedy GenerateBatch from its first token on.
func (m *CPUModel) BenchDecode(batch, prompt, steps int, seed uint64) (*DecodeResult, error) {
	if steps < 1 {
		return nil, fmt.Errorf("lfm2: decode benchmark of %d steps: want at least 1", steps)
	}
	took, err := timeDecode(m, RandomBatch(m.c, batch, prompt, seed), steps, nil)
	if err != nil {
		return nil, err
	}
	return &DecodeResult{Batch: batch, Prompt: prompt, Steps: steps, Seconds: took.Seconds(),
		TokensPerSec: PerSecond(batch*steps, took)}, nil
}

// timeGenerate runs n greedy tokens after prompts on m and returns how long
// it took on the host clock; tokens, when not nil, receives each
// sequence's tokens ([sequence][step]).
func timeGenerate(m Engine, prompts [][]int, n int, tokens [][]int) (time.Duration, error) {
	start := time.Now()
	err := m.Generate(prompts, n, Sampling{}, func(step int, toks []int) error {
		for i := range tokens {
			tokens[i][step] = toks[i]
		}
		return nil
	})
	return time.Since(start), err
}

// timeDecode runs steps greedy decode steps after prompts on m and returns
// their time on the host clock, from the first new token (the end of the
// prefill) to the last; tokens, when not nil, receives the steps+1 tokens
// of each sequence, the prefill's first.
func timeDecode(m Engine, prompts [][]int, steps int, tokens [][]int) (time.Duration, error) {
	var start time.Time
	err := m.Generate(prompts, steps+1, Sampling{}, func(step int, toks []int) error {
		if step == 0 {
			start = time.Now()
		}
		for i := range tokens {
			tokens[i][step] = toks[i]
		}
		return nil
	})
	return time.Since(start), err
}

// PerSecond is n / d in 1/s, 0 when nothing was timed.
func PerSecond(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// The dtypes of CUDAOptions.DType.
const (
	F32  = "f32"
	BF16 = "bf16"
)

// CheckDType checks that the engines on devices of kind compute in dtype:
// f32 anywhere, bf16 on CUDA ("" is f32).
func CheckDType(kind engine.Kind, dtype string) error {
	switch {
	case dtype != "" && dtype != F32 && dtype != BF16:
		return fmt.Errorf("lfm2: dtype %q: want f32 or bf16", dtype)
	case kind == engine.CPU && dtype == BF16:
		return fmt.Errorf("lfm2: bf16 is the GPU path; the CPU reference computes in f32")
	}
	return nil
}

// engineDevices checks devs and o for an engine of config c: one CPU
// device, or CUDA devices, of which it returns the contexts of at most one
// per layer (a pipeline stage holds at least one layer).
func engineDevices(devs []*engine.Device, c *Config, o CUDAOptions) (ctxs []*cuda.Context, err error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("lfm2: no device to run the model on")
	}
	if err := CheckDType(devs[0].Kind, o.DType); err != nil {
		return nil, err
	}
	for _, d := range devs {
		switch {
		case d.Kind == engine.CPU && len(devs) > 1:
			return nil, fmt.Errorf("lfm2: the CPU reference runs on cpu alone, not with %d other devices", len(devs)-1)
		case d.Kind == engine.CPU && o.MoE != MoEAuto:
			return nil, fmt.Errorf("lfm2: the MoE path %q is the CUDA engine's; the CPU reference has one", o.MoE)
		case d.Kind == engine.CUDA:
			ctxs = append(ctxs, d.CUDA)
		case d.Kind != engine.CPU:
			return nil, fmt.Errorf("lfm2: no engine for %s (%s): the engines run on cpu and cuda:N", d.ID, d.Name)
		}
	}
	return ctxs[:min(len(ctxs), c.Layers)], nil
}

// Open loads the model in dir (config.json and safetensors) onto devs: the
// fp32 CPU reference on [cpu], the CUDA engine on one CUDA device, or
// pipelined over several (at most one per layer), sized by o (the CPU
// ignores the sizes).
func Open(dir string, devs []*engine.Device, o CUDAOptions) (Engine, error) {
	c, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if _, err := engineDevices(devs, c, o); err != nil {
		return nil, err
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close() // both engines copy what they need
	return openCheckpoint(c, ck, devs, o)
}

// openCheckpoint loads ck onto devs as Open does.
func openCheckpoint(c *Config, ck *Checkpoint, devs []*engine.Device, o CUDAOptions) (Engine, error) {
	ctxs, err := engineDevices(devs, c, o)
	if err != nil {
		return nil, err
	}
	if len(ctxs) == 0 {
		w, err := LoadWeights(c, ck)
		if err != nil {
			return nil, err
		}
		return NewCPUModel(c, w), nil
	}
	m, err := NewPipeline(ctxs, c, ck, capPositions(c, o)) // NewCUDA, for one context
	if err != nil {
		return nil, err // not a nil *CUDAModel in a non-nil Engine
	}
	return m, nil
}

// capPositions caps o.MaxSeq at max_position_embeddings: positions past it
// are refused before they run, so the caches never need more.
func capPositions(c *Config, o CUDAOptions) CUDAOptions {
	if o.MaxSeq > c.MaxPositions {
		o.MaxSeq = c.MaxPositions
	}
	return o
}

// cpuRandomLimit is the most float32 bytes of weights OpenRandom makes on
// the host: the CPU reference is for small models.
const cpuRandomLimit = 1 << 30

// OpenRandom builds the model of config c with seeded random weights on
// devs: on the CPU, RandomTensors (up to 1 GiB of float32 weights: more is
// an error that says how big the model is); on CUDA, RandomModelCUDA,
// made on the devices.
func OpenRandom(c *Config, seed uint64, devs []*engine.Device, o CUDAOptions) (Engine, error) {
	ctxs, err := engineDevices(devs, c, o)
	if err != nil {
		return nil, err
	}
	if len(ctxs) > 0 {
		m, err := RandomModelCUDA(ctxs, c, seed, capPositions(c, o))
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	var params int64
	for _, p := range Parts(c) {
		params += p.Total
	}
	if 4*params > cpuRandomLimit {
		return nil, fmt.Errorf("lfm2: the model has %.2f billion parameters (%.1f GB in float32): the CPU reference is for small models; run it on a CUDA device",
			float64(params)/1e9, float64(params)*4/1e9)
	}
	w, err := LoadWeights(c, randomCheckpoint(c, seed))
	if err != nil {
		return nil, err
	}
	return NewCPUModel(c, w), nil
}

// randomCheckpoint is a checkpoint in memory of RandomTensors(c, seed) in
// F32, which loads on the CPU and on CUDA alike: the same weights on both.
func randomCheckpoint(c *Config, seed uint64) *Checkpoint {
	ck := &Checkpoint{Dir: fmt.Sprintf("random %s (seed %d)", c.ModelType, seed), Tensors: map[string]*Tensor{}}
	for name, t := range RandomTensors(c, seed, "F32") {
		data := make([]byte, 4*len(t.Data))
		for i, v := range t.Data {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		ck.Tensors[name] = &Tensor{Name: name, DType: "F32", Shape: t.Shape, data: data}
	}
	return ck
}
