package lfm2

// Benchmark hooks of the CUDA engine for the CLI and notebook 06: prefill
// samples/s, decode tokens/s, kernel times, the MoE paths compared, the
// expert load, and the random model of the real architecture.

import (
	"fmt"
	"math/rand/v2"
	"time"

	"gpulab/engine/cuda"
)

// RandomBatch is batch sequences of seq tokens drawn uniformly from the
// vocabulary with seed.
func RandomBatch(c *Config, batch, seq int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 0x6c666d32))
	out := make([][]int, batch)
	for i := range out {
		out[i] = make([]int, seq)
		for j := range out[i] {
			out[i][j] = rng.IntN(c.Vocab)
		}
	}
	return out
}

// PrefillResult is a timed prefill: each sequence's last-position logits and
// their argmax on the GPU (what a sample of the benchmark produces).
type PrefillResult struct {
	Batch, Seq    int
	Seconds       float64 // the best of the timed runs, host clock, to the end of the last kernel
	SamplesPerSec float64
	TokensPerSec  float64
	Profile       *Profile // one more run, kernel by kernel
}

// BenchPrefill times the prefill of batch: one warm-up run, then the best of
// reps runs, then one profiled run.
func (m *CUDAModel) BenchPrefill(batch [][]int, reps int) (*PrefillResult, error) {
	b, s, flat, err := m.checkBatch(batch, 0)
	if err != nil {
		return nil, err
	}
	run := func() error { return m.prefill(b, s, flat, m.argmaxTo(0, false)) }
	r := &PrefillResult{Batch: b, Seq: s}
	if r.Seconds, err = m.best(run, reps); err != nil {
		return nil, err
	}
	r.SamplesPerSec, r.TokensPerSec = float64(b)/r.Seconds, float64(b*s)/r.Seconds
	if r.Profile, err = m.profiled(run); err != nil {
		return nil, err
	}
	return r, nil
}

// best runs f once to warm up, then reps times, and returns the fastest
// run's seconds, each run ending when every device is idle.
func (m *CUDAModel) best(f func() error, reps int) (float64, error) {
	if err := f(); err != nil {
		return 0, err
	}
	if err := m.synchronize(); err != nil {
		return 0, err
	}
	fastest := time.Duration(0)
	for i := range max(reps, 1) {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if err := m.synchronize(); err != nil {
			return 0, err
		}
		if d := time.Since(start); i == 0 || d < fastest {
			fastest = d
		}
	}
	return fastest.Seconds(), nil
}

// DecodeResult is timed greedy decoding.
type DecodeResult struct {
	Batch, Prompt, Steps int
	Seconds              float64 // decode only, after the prefill
	// TokensPerSec counts every sequence's tokens: Batch·Steps/Seconds.
	TokensPerSec float64
	// StepProfile is one more decode step, kernel by kernel.
	StepProfile *Profile
}

// BenchDecode times greedy decoding of steps tokens after random prompts of
// prompt tokens, batch sequences at once (after a warm-up run).
func (m *CUDAModel) BenchDecode(batch, prompt, steps int, seed uint64) (*DecodeResult, error) {
	if steps < 1 {
		return nil, fmt.Errorf("lfm2: decode benchmark of %d steps: want at least 1", steps)
	}
	prompts := RandomBatch(m.c, batch, prompt, seed)
	var start time.Time
	timed := func() error {
		return m.generate(prompts, steps+1, Sampling{}, nil, func() { start = time.Now() })
	}
	if err := timed(); err != nil {
		return nil, err
	}
	fastest := time.Duration(0)
	for i := range 3 {
		if err := timed(); err != nil {
			return nil, err
		}
		if d := time.Since(start); i == 0 || d < fastest {
			fastest = d
		}
	}
	r := &DecodeResult{Batch: batch, Prompt: prompt, Steps: steps, Seconds: fastest.Seconds()}
	r.TokensPerSec = float64(batch*steps) / r.Seconds
	if m.pos < m.o.MaxSeq { // one more step from where decoding stopped
		step := []microBatch{{B: batch, S: 1, pos: m.pos, tokens: make([]int32, batch)}}
		var err error
		if r.StepProfile, err = m.profiled(func() error { return m.run(step, m.argmaxTo(0, false)) }); err != nil {
			return nil, err
		}
		m.pos++
	}
	return r, nil
}

// MoEPaths lists the MoE paths this engine can run: grouped cuBLAS, step
// 12's grouped wgmma where every stage has it, and the persistent kernel.
func (m *CUDAModel) MoEPaths() []string {
	for _, st := range m.stages {
		if st.k.moeGateUpWgmma == nil {
			return []string{MoEGrouped, MoEPersistent}
		}
	}
	return []string{MoEGrouped, MoEWgmma, MoEPersistent}
}

// CompareMoE profiles the prefill of batch once with each of MoEPaths,
// after a warm-up of each, and returns the profiles by path. The engine's
// MoE option is restored.
func (m *CUDAModel) CompareMoE(batch [][]int) (map[string]*Profile, error) {
	b, s, flat, err := m.checkBatch(batch, 0)
	if err != nil {
		return nil, err
	}
	saved := m.o.MoE
	defer func() { m.o.MoE = saved }()
	out := map[string]*Profile{}
	for _, path := range m.MoEPaths() {
		m.o.MoE = path
		run := func() error { return m.prefill(b, s, flat, m.argmaxTo(0, false)) }
		if err := run(); err != nil {
			return nil, err
		}
		if out[path], err = m.profiled(run); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ExpertLoad returns how many (token, expert) pairs each layer's router
// sent to each expert since the engine was made or ResetExpertLoad:
// [layer][expert], nil for dense layers.
func (m *CUDAModel) ExpertLoad() ([][]int, error) {
	c := m.c
	if err := m.synchronize(); err != nil {
		return nil, err
	}
	out := make([][]int, c.Layers)
	for _, st := range m.stages {
		for _, ln := range st.lanes {
			load, err := cuda.Download[int32](ln.load, c.Layers*max(c.Experts, 1))
			if err != nil {
				return nil, fmt.Errorf("lfm2: expert load: %w", err)
			}
			for l := st.first; l < st.last; l++ {
				if !c.IsMoE(l) || !st.hasFFN(l) {
					continue
				}
				if out[l] == nil {
					out[l] = make([]int, c.Experts)
				}
				for e := range c.Experts {
					out[l][e] += int(load[l*c.Experts+e])
				}
			}
		}
	}
	return out, nil
}

// ResetExpertLoad zeroes the counts of ExpertLoad.
func (m *CUDAModel) ResetExpertLoad() error {
	for _, st := range m.stages {
		for _, ln := range st.lanes {
			if err := ln.load.Memset(0, ln.stream); err != nil {
				return fmt.Errorf("lfm2: %w", err)
			}
		}
	}
	return m.synchronize()
}

// Top1Agreement is the fraction of positions (rows of vocab logits) where a
// and b have the same argmax: how the bf16 engine is held to the fp32 one.
func Top1Agreement(a, b []float32, vocab int) (float64, error) {
	if len(a) != len(b) || vocab <= 0 || len(a)%vocab != 0 || len(a) == 0 {
		return 0, fmt.Errorf("lfm2: top-1 agreement of %d and %d logits over a vocabulary of %d: want equal, non-empty rows", len(a), len(b), vocab)
	}
	same := 0
	for r := 0; r < len(a); r += vocab {
		if Argmax(a[r:r+vocab]) == Argmax(b[r:r+vocab]) {
			same++
		}
	}
	return float64(same) / float64(len(a)/vocab), nil
}
