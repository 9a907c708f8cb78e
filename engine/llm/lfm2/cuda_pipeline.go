package lfm2

// Splitting the layers over the GPUs of a pipeline by their measured cost.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gpulab/engine/cuda"
)

// splitCosts cuts costs (one per layer, or per part) into g contiguous,
// non-empty stages so that the costliest stage is as cheap as possible,
// and returns the g+1 boundaries: stage i has [bounds[i], bounds[i+1]).
func splitCosts(costs []float64, g int) ([]int, error) {
	n := len(costs)
	if g < 1 || g > n {
		return nil, fmt.Errorf("lfm2: cannot split %d layers or parts over %d GPUs", n, g)
	}
	prefix := make([]float64, n+1)
	for i, c := range costs {
		prefix[i+1] = prefix[i] + c
	}
	// worst[k][i]: the best possible costliest stage when the first i
	// layers form k stages; from[k][i] is where the k-th stage starts.
	worst := make([][]float64, g+1)
	from := make([][]int, g+1)
	for k := range worst {
		worst[k] = make([]float64, n+1)
		from[k] = make([]int, n+1)
		for i := range worst[k] {
			worst[k][i] = math.Inf(1)
		}
	}
	worst[0][0] = 0
	for k := 1; k <= g; k++ {
		for i := k; i <= n; i++ {
			for j := k - 1; j < i; j++ {
				if w := max(worst[k-1][j], prefix[i]-prefix[j]); w < worst[k][i] {
					worst[k][i], from[k][i] = w, j
				}
			}
		}
	}
	bounds := make([]int, g+1)
	bounds[g] = n
	for k := g; k > 0; k-- {
		bounds[k-1] = from[k][bounds[k]]
	}
	return bounds, nil
}

// probeSeq is the sequence length of the micro-batch that times the layers.
const probeSeq = 32

// measurePartCosts times one layer of each kind (conv or attention, dense
// or MoE) on ctx, with random weights, over micro-batches of the size a
// prefill of MaxBatch sequences gets on a pipeline of stages GPUs (see
// microBatches), and returns the cost of each part of the model (2l: layer
// l's mixer, 2l+1 its feed-forward; see StageInfo) in seconds, the fastest
// of two runs; the LM head's is added to the last part. The size matters:
// the MoE layers' share of the time grows as micro-batches shrink (each
// micro-batch streams every expert's weights). Whole layers are too coarse
// to balance the 8B model on two GPUs: with 12 layers each, the stage with
// the two dense layers was 9% less busy (123 against 135 ms).
func measurePartCosts(ctx *cuda.Context, c *Config, o CUDAOptions, stages int) ([]float64, error) {
	probe := *c
	probe.Layers, probe.DenseLayers = 4, 2
	probe.LayerTypes = []string{Conv, Attention, Conv, Attention}
	if c.Experts == 0 {
		probe.DenseLayers = 4
	}
	// per sequences of s tokens make one micro-batch of the pipeline; the
	// probe runs four of them, two on each lane, as a stage does.
	s := min(probeSeq, o.MaxSeq, o.MaxTokens)
	want := 2 * lanes * stages
	per := max(1, min(o.MaxTokens/s, (o.MaxBatch+want-1)/want))
	po := o
	po.MaxSeq, po.MaxTokens, po.MaxBatch = s, per*s, 2*lanes*per
	m, err := RandomModelCUDA([]*cuda.Context{ctx}, &probe, 1, po)
	if err != nil {
		return nil, fmt.Errorf("lfm2: timing the layers for the pipeline split: %w", err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([][]int, po.MaxBatch)
	for i := range batch {
		batch[i] = make([]int, s)
		for j := range batch[i] {
			batch[i][j] = rng.IntN(c.Vocab)
		}
	}
	b, _, flat, err := m.checkBatch(batch, 0)
	if err != nil {
		return nil, err
	}
	run := func() error { return m.prefill(b, s, flat, m.argmaxTo(0, false)) }
	if err := run(); err != nil { // warm-up: cuBLAS heuristics, caches
		return nil, err
	}
	var prof *Profile
	for range 2 {
		p, err := m.profiled(run)
		if err != nil {
			return nil, err
		}
		if prof == nil {
			prof = p
			continue
		}
		for i, d := range p.Parts {
			prof.Parts[i] = min(prof.Parts[i], d)
		}
		prof.Head = min(prof.Head, p.Head)
	}
	kind := func(l int) int { // the probe layer of the same kind as layer l
		k := 0
		if c.IsAttention(l) {
			k++
		}
		if c.IsMoE(l) {
			k += 2
		}
		return k
	}
	costs := make([]float64, 2*c.Layers)
	for l := range c.Layers {
		k := kind(l)
		costs[2*l], costs[2*l+1] = prof.Parts[2*k].Seconds(), prof.Parts[2*k+1].Seconds()
	}
	costs[len(costs)-1] += prof.Head.Seconds()
	return costs, nil
}

// enablePeers turns on direct access from each stage's GPU to the previous
// one's memory, where the hardware allows it; without it the copies between
// stages go through the host.
func (m *CUDAModel) enablePeers() {
	for i := 1; i < len(m.stages); i++ {
		m.stages[i].p2p = m.stages[i].ctx.EnablePeerAccess(m.stages[i-1].ctx) == nil
	}
}
