package lfm2

// Running the CUDA engine: micro-batches through the pipeline's stages and
// lanes, and what callers use: Logits, PrefillLast and Generate.

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"gpulab/engine/cuda"
)

// errAborted stops the other goroutines of a run when one fails.
var errAborted = errors.New("lfm2: aborted")

// collector queues the head of a micro-batch on the last stage's lane and
// takes its results.
type collector func(ln *lane, mb microBatch) error

// run pushes the micro-batches through the stages. Micro-batch i runs on
// lane i mod 2 of every stage, and every (stage, lane) has a goroutine that
// queues its micro-batches in order, so a stage computes one micro-batch
// while the next stage pulls the other, and a lane waiting on the host (the
// grouped MoE path) leaves the GPU to the other lane. Stages hand over
// through events, never through the host:
//
//	stage s, lane l:  [wait computed(s-1)] pull x from s-1 → record pulled(s)
//	                  layers → record computed(s)           (or collect, last)
//	                  next micro-batch: [wait pulled(s+1)] before x is reused
//
// The channels only order the event waits after the records they wait for.
func (m *CUDAModel) run(mbs []microBatch, collect collector) error {
	g, nl := len(m.stages), min(lanes, len(mbs))
	signals := func() [][]chan struct{} {
		out := make([][]chan struct{}, g)
		for s := range out {
			out[s] = make([]chan struct{}, nl)
			for l := range out[s] {
				out[s][l] = make(chan struct{}, 1)
			}
		}
		return out
	}
	computed, pulled := signals(), signals()
	done := make(chan struct{})
	var once sync.Once
	errs := make([]error, g*nl)
	var wg sync.WaitGroup
	for s := range g {
		for l := range nl {
			wg.Go(func() {
				if err := m.drive(s, l, nl, mbs, computed, pulled, done, collect); err != nil {
					errs[s*nl+l] = err
					once.Do(func() { close(done) })
				}
			})
		}
	}
	wg.Wait()
	var real []error
	for _, err := range errs {
		if err != nil && !errors.Is(err, errAborted) {
			real = append(real, err)
		}
	}
	return errors.Join(real...)
}

// drive queues lane l of stage s for its micro-batches.
func (m *CUDAModel) drive(s, l, nl int, mbs []microBatch, computed, pulled [][]chan struct{}, done chan struct{}, collect collector) error {
	st, h := m.stages[s], m.c.Hidden
	ln := st.lanes[l]
	wait := func(ch chan struct{}, e *cuda.Event) error {
		select {
		case <-ch:
		case <-done:
			return errAborted
		}
		return ln.stream.WaitEvent(e)
	}
	for n, j := 0, l; j < len(mbs); n, j = n+1, j+nl {
		mb := mbs[j]
		if s > 0 {
			if err := wait(computed[s-1][l], m.stages[s-1].lanes[l].computed); err != nil {
				return err
			}
		}
		if n > 0 && s+1 < len(m.stages) { // the next stage has pulled our previous x
			if err := wait(pulled[s+1][l], m.stages[s+1].lanes[l].pulled); err != nil {
				return err
			}
		}
		if ln.prof != nil {
			ln.prof.mb = mb.index
		}
		err := ln.op("micro-batch", -1, func() error {
			if s == 0 {
				if err := ln.embed(mb); err != nil {
					return err
				}
			} else {
				prev := m.stages[s-1].lanes[l]
				if err := cuda.CopyPeer(ln.x, prev.x, 4*mb.B*mb.S*h, ln.stream); err != nil {
					return fmt.Errorf("lfm2: hidden states %s -> %s: %w", prev.st.ctx.ID(), st.ctx.ID(), err)
				}
				if err := ln.pulled.Record(ln.stream); err != nil {
					return err
				}
				pulled[s][l] <- struct{}{}
			}
			if err := ln.layers(mb); err != nil {
				return err
			}
			if s+1 < len(m.stages) {
				if err := ln.computed.Record(ln.stream); err != nil {
					return err
				}
				computed[s][l] <- struct{}{}
				return nil
			}
			return collect(ln, mb)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// lastLane is the last stage's lane that runs micro-batch mb of n.
func (m *CUDAModel) lastLane(mb microBatch, n int) *lane {
	return m.stages[len(m.stages)-1].lanes[mb.index%min(lanes, n)]
}

// checkBatch validates a batch of equal-length sequences that will grow by
// extra positions (CheckBatch, then the engine's sizes), and flattens it.
func (m *CUDAModel) checkBatch(batch [][]int, extra int) (b, s int, flat []int32, err error) {
	if err := CheckBatch(m.c, batch); err != nil {
		return 0, 0, nil, err
	}
	b, s = len(batch), len(batch[0])
	switch {
	case b > m.o.MaxBatch:
		return 0, 0, nil, fmt.Errorf("lfm2: %d sequences exceed the engine's MaxBatch of %d", b, m.o.MaxBatch)
	case s+extra > m.c.MaxPositions:
		return 0, 0, nil, fmt.Errorf("lfm2: a %d-token prompt and %d more positions are longer than max_position_embeddings = %d", s, extra, m.c.MaxPositions)
	case s+extra > m.o.MaxSeq:
		return 0, 0, nil, fmt.Errorf("lfm2: a %d-token prompt and %d more positions exceed the engine's MaxSeq of %d", s, extra, m.o.MaxSeq)
	}
	flat = make([]int32, 0, b*s)
	for _, seq := range batch {
		for _, tok := range seq {
			flat = append(flat, int32(tok))
		}
	}
	return b, s, flat, nil
}

// microBatches splits b sequences of s tokens (flat) at position pos into
// micro-batches of whole sequences, at most MaxTokens tokens each. A prefill
// gets at least four per stage when it has the sequences, so that the two
// lanes overlap and a pipeline spends little time filling and draining
// (with g stages and n micro-batches, a stage idles g-1 of n+g-1 slots); a
// decode step (s = 1) stays one, as splitting it would read every chosen
// expert's weights once per micro-batch.
// On a pipeline the first and the last micro-batch are cut in two halves:
// the second stage starts once the first has finished the first half, and
// after the first stage is done the last ones have only a half left. On two
// H200s (8B model, bf16, 1024 × 32 tokens) the second stage then started
// after 11.4 ms instead of 18.8, for two more micro-batches' overhead (each
// micro-batch streams every expert's weights once per layer).
func (m *CUDAModel) microBatches(b, s, pos int, flat []int32) ([]microBatch, error) {
	per := m.o.MaxTokens / s
	if per == 0 {
		return nil, fmt.Errorf("lfm2: a sequence of %d tokens exceeds the engine's MaxTokens of %d", s, m.o.MaxTokens)
	}
	if s > 1 {
		want := 2 * lanes * len(m.stages)
		per = min(per, max(1, (b+want-1)/want))
	}
	var sizes []int
	for b0 := 0; b0 < b; b0 += per {
		sizes = append(sizes, min(per, b-b0))
	}
	if s > 1 && len(m.stages) > 1 && len(sizes) > 1 {
		halves := func(n int) []int {
			if n < 2 {
				return []int{n}
			}
			return []int{n / 2, n - n/2}
		}
		last := len(sizes) - 1
		sizes = slices.Concat(halves(sizes[0]), sizes[1:last], halves(sizes[last]))
	}
	out := make([]microBatch, len(sizes))
	b0 := 0
	for i, n := range sizes {
		out[i] = microBatch{index: i, b0: b0, B: n, S: s, pos: pos}
		if flat != nil {
			out[i].tokens = flat[b0*s : (b0+n)*s]
		}
		b0 += n
	}
	return out, nil
}

// reset empties the caches: position 0, conv states zero (the KV caches are
// never read past the position).
func (m *CUDAModel) reset() error {
	if err := m.synchronize(); err != nil {
		return err
	}
	for _, st := range m.stages {
		for i := range st.layers {
			if dl := &st.layers[i]; dl.conv != nil {
				if err := dl.conv.Memset(0, st.lanes[0].stream); err != nil {
					return fmt.Errorf("lfm2: reset conv state: %w", err)
				}
			}
		}
	}
	m.pos = 0
	return m.synchronize()
}

// Logits runs a batch of equal-length sequences from empty caches and
// returns the logits of every position: [batch][seq][vocab], flattened.
// A logit that is not finite fails it (checkCUDALogits).
func (m *CUDAModel) Logits(batch [][]int) ([]float32, error) {
	b, s, flat, err := m.checkBatch(batch, 0)
	if err != nil {
		return nil, err
	}
	if err := m.reset(); err != nil {
		return nil, err
	}
	mbs, err := m.microBatches(b, s, 0, flat)
	if err != nil {
		return nil, err
	}
	v, rows := m.c.Vocab, logitRows(m.o)
	out := make([]float32, b*s*v)
	err = m.run(mbs, func(ln *lane, mb microBatch) error {
		t := mb.B * mb.S
		if err := ln.finalNorm(0, 1, t); err != nil {
			return err
		}
		for r0 := 0; r0 < t; r0 += rows {
			n := min(rows, t-r0)
			if err := ln.lmHead(r0, n); err != nil {
				return err
			}
			if err := ln.stream.Synchronize(); err != nil {
				return fmt.Errorf("lfm2: %w", err)
			}
			base := (mb.b0*mb.S + r0) * v
			if err := cuda.CopyDtoH(out[base:base+n*v], ln.logits); err != nil {
				return fmt.Errorf("lfm2: logits: %w", err)
			}
			if err := checkCUDALogits(out[base:base+n*v], v, func(row int) (int, int) {
				at := mb.b0*mb.S + r0 + row
				return at / mb.S, at % mb.S
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.pos = s
	return out, nil
}

// PrefillLast runs a batch of equal-length sequences from empty caches and
// returns the logits of each sequence's last position: [batch][vocab].
func (m *CUDAModel) PrefillLast(batch [][]int) ([]float32, error) {
	b, s, flat, err := m.checkBatch(batch, 0)
	if err != nil {
		return nil, err
	}
	out := make([]float32, b*m.c.Vocab)
	if err := m.prefill(b, s, flat, m.lastLogits(out, nil)); err != nil {
		return nil, err
	}
	return out, nil
}

// prefill resets the caches and runs b sequences of s tokens.
func (m *CUDAModel) prefill(b, s int, flat []int32, collect collector) error {
	if err := m.reset(); err != nil {
		return err
	}
	mbs, err := m.microBatches(b, s, 0, flat)
	if err != nil {
		return err
	}
	if err := m.run(mbs, collect); err != nil {
		return err
	}
	m.pos = s
	return nil
}

// lastLogits is the collector that copies each sequence's last logits to
// out ([batch][vocab]), checks that they are finite and, with after, hands
// each sequence's row to it.
func (m *CUDAModel) lastLogits(out []float32, after func(b int, logits []float32)) collector {
	v := m.c.Vocab
	return func(ln *lane, mb microBatch) error {
		if err := ln.head(mb); err != nil {
			return err
		}
		if err := ln.stream.Synchronize(); err != nil {
			return fmt.Errorf("lfm2: %w", err)
		}
		rows := out[mb.b0*v : (mb.b0+mb.B)*v]
		if err := cuda.CopyDtoH(rows, ln.logits); err != nil {
			return fmt.Errorf("lfm2: logits: %w", err)
		}
		if err := checkCUDALogits(rows, v, func(row int) (int, int) { return mb.b0 + row, mb.pos + mb.S - 1 }); err != nil {
			return err
		}
		if after != nil {
			for i := range mb.B {
				after(mb.b0+i, rows[i*v:(i+1)*v])
			}
		}
		return nil
	}
}

// head queues the final norm and the LM head of each sequence's last
// position of mb into the lane's logits.
func (ln *lane) head(mb microBatch) error {
	if err := ln.finalNorm(mb.S-1, mb.S, mb.B); err != nil {
		return err
	}
	return ln.lmHead(0, mb.B)
}

// checkCUDALogits returns an error if a value of logits, rows of vocab
// values, is not finite, naming the sequence and position that where
// gives for its row. The CUDA engine checks what it copies back; greedy
// generation, whose logits stay on the device, learns of a row that is not
// finite from the argmax (readIDs).
func checkCUDALogits(logits []float32, vocab int, where func(row int) (seq, pos int)) error {
	i := slices.IndexFunc(logits, func(v float32) bool { return !finite(v) })
	if i < 0 {
		return nil
	}
	seq, pos := where(i / vocab)
	return fmt.Errorf("lfm2: the CUDA engine's logits are not finite at sequence %d, position %d (token %d is %s): a layer overflowed; the CPU reference (--device cpu) names the layer",
		seq, pos, i%vocab, valueName(logits[i]))
}

// argmaxTo is the collector of greedy decoding: the argmax of each
// sequence's last position goes to the lane's token buffer when feed (the
// next step's input, on one GPU) or to its ids buffer, and on to slot of the
// lane's pinned ids, where readIDs finds it.
func (m *CUDAModel) argmaxTo(slot int, feed bool) collector {
	return func(ln *lane, mb microBatch) error {
		if err := ln.head(mb); err != nil {
			return err
		}
		return m.argmaxIDs(ln, mb, slot, feed)
	}
}

// argmaxIDs queues argmaxTo's work after the head: the argmax of the
// lane's logits rows of mb, and its copy to slot of the pinned ids.
func (m *CUDAModel) argmaxIDs(ln *lane, mb microBatch, slot int, feed bool) error {
	dst := ln.ids
	if feed {
		dst = ln.tokens
	}
	if err := ln.argmax(mb.B, dst); err != nil {
		return err
	}
	// Each micro-batch has its own rows of the slot, so that two on one
	// lane do not overwrite each other before the host reads them.
	if err := cuda.CopyDtoHAsync(ln.hostIDs, 4*(slot*m.o.MaxBatch+mb.b0), dst, 0, 4*mb.B, ln.stream); err != nil {
		return fmt.Errorf("lfm2: argmax: %w", err)
	}
	return ln.idsReady[slot].Record(ln.stream)
}

// readIDs waits for slot's argmax of each micro-batch and copies it into
// ids. The argmax of a logits row that is not finite is -1 (10_lm_head.cu):
// it fails readIDs, naming the sequence and its position pos.
func (m *CUDAModel) readIDs(mbs []microBatch, slot, pos int, ids []int32) error {
	for _, mb := range mbs {
		ln := m.lastLane(mb, len(mbs))
		if err := ln.idsReady[slot].Synchronize(); err != nil {
			return fmt.Errorf("lfm2: argmax: %w", err)
		}
		base := slot*m.o.MaxBatch + mb.b0
		got := ids[mb.b0 : mb.b0+mb.B]
		copy(got, cuda.HostSlice[int32](ln.hostIDs)[base:base+mb.B])
		if i := slices.Index(got, -1); i >= 0 {
			return fmt.Errorf("lfm2: the CUDA engine's logits are not finite at sequence %d, position %d: a layer overflowed; the CPU reference (--device cpu) names the layer", mb.b0+i, pos)
		}
	}
	return nil
}

// Generate is GenerateBatch on the GPU: n tokens after each of the prompts
// (of equal lengths), emit getting each step's tokens, one per prompt, as
// soon as they are known (toks is reused). Greedy picks on the GPU (the
// argmax); sampling picks on the host from the last position's logits, with
// one generator seeded by s.Seed, sequence by sequence, as the CPU does. On
// one GPU, greedy decode never waits for the host: each step's argmax is the
// next step's input on the device, and the host reads it one step late.
// Logits that are not finite fail it: the sampled steps' (checkCUDALogits)
// and the greedy ones' (readIDs).
func (m *CUDAModel) Generate(prompts [][]int, n int, s Sampling, emit func(step int, toks []int) error) error {
	return m.generate(prompts, n, s, emit, nil)
}

// generate is Generate, calling prefilled (if not nil) when the prefill is
// done and decode starts.
func (m *CUDAModel) generate(prompts [][]int, n int, s Sampling, emit func(step int, toks []int) error, prefilled func()) error {
	if err := s.check(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("lfm2: generate %d tokens: want n >= 0", n)
	}
	b, l, flat, err := m.checkBatch(prompts, max(n-1, 0))
	if err != nil || n == 0 {
		return err
	}
	next, toks := make([]int32, b), make([]int, b)
	greedy := s.Temperature == 0
	var collect func(slot int, feed bool) collector
	logits := make([]float32, b*m.c.Vocab)
	pick := s.picker()
	if greedy {
		collect = m.argmaxTo
	} else {
		collect = func(int, bool) collector { return m.lastLogits(logits, nil) }
	}
	// take hands the tokens of step to emit: greedy ones from slot of the
	// pinned ids, sampled ones picked now, sequence by sequence.
	take := func(step int, mbs []microBatch, slot int) error {
		if greedy {
			if err := m.readIDs(mbs, slot, l-1+step, next); err != nil {
				return err
			}
		}
		for i := range toks {
			if !greedy {
				next[i] = int32(pick(logits[i*m.c.Vocab : (i+1)*m.c.Vocab]))
			}
			toks[i] = int(next[i])
		}
		if emit == nil {
			return nil
		}
		return emit(step, toks)
	}
	mbs, err := m.microBatches(b, l, 0, flat)
	if err != nil {
		return err
	}
	if err := m.reset(); err != nil {
		return err
	}
	if err := m.run(mbs, collect(0, false)); err != nil {
		return err
	}
	m.pos = l
	if err := take(0, mbs, 0); err != nil {
		return err
	}
	if prefilled != nil {
		prefilled()
	}
	feed := greedy && len(m.stages) == 1
	var pending []microBatch // feed: the step whose tokens are not read yet
	for i := 1; i < n; i++ {
		var tokens []int32
		if !feed || i == 1 {
			tokens = next
		}
		step := []microBatch{{b0: 0, B: b, S: 1, pos: m.pos, tokens: tokens}}
		if err := m.run(step, collect(i%2, feed)); err != nil {
			return err
		}
		m.pos++
		if !feed {
			if err := take(i, step, i%2); err != nil {
				return err
			}
			continue
		}
		if pending != nil {
			if err := take(i-1, pending, (i-1)%2); err != nil {
				return err
			}
		}
		pending = step
	}
	if pending != nil {
		return take(n-1, pending, (n-1)%2)
	}
	return nil
}
