package lfm2

// One stage's forward of one micro-batch on one lane: the kernel launches
// and cuBLAS calls of each layer, all queued on the lane's stream.

import (
	"errors"
	"fmt"
	"math"

	"gpulab/engine/cuda"
)

// lane is one stream of a stage with its own activation buffers, so that a
// stage can run two micro-batches at once.
type lane struct {
	st     *stage
	stream *cuda.Stream
	blas   *cuda.BLAS
	// Activations, for up to MaxTokens tokens and their (token, expert) pairs.
	tokens *cuda.Buffer // int32 [T]: the micro-batch's tokens (first stage)
	x      *cuda.Buffer // f32 [T, H]: the residual stream
	xn     *cuda.Buffer // elem [T, H]: normalized, the input of the next GEMM
	big    *cuda.Buffer // f32: GEMM outputs (q|k|v, B|C|x, w1|w3) and the experts' outputs
	act    *cuda.Buffer // elem: the input of the down GEMMs (attention, conv, SwiGLU outputs)
	q      *cuda.Buffer // f32 [B, NH, S, D]: queries after norm and RoPE
	gath   *cuda.Buffer // elem [pairs, H]: MoE inputs grouped by expert
	// tmGath, tmAct: TMA views of gath [pairs, H] and act [pairs, IM] for
	// step 12 (nil without it).
	tmGath, tmAct *cuda.TensorMap
	topIdx        *cuda.Buffer // int32 [pairs]: chosen experts
	topW          *cuda.Buffer // f32 [pairs]: their weights
	slotRow       *cuda.Buffer // int32 [pairs]: each pair's row in expert order
	perm          *cuda.Buffer // int32 [pairs]: each row's token
	meta          *cuda.Buffer // int32: counts | offsets | cursors | tile offsets | queues (07_moe_group.cu)
	load          *cuda.Buffer // int32 [layers, E]: tokens routed to each expert, summed over calls
	logits        *cuda.Buffer // f32 [logitRows, V] (last stage)
	ids           *cuda.Buffer // int32 [MaxBatch]: argmax of each sequence (last stage)
	// Pinned host memory for asynchronous copies.
	hostTokens *cuda.HostBuffer // int32 [T]
	hostMeta   *cuda.HostBuffer // int32 [E+1]: a MoE layer's offsets (grouped path)
	hostIDs    *cuda.HostBuffer // int32 [2][MaxBatch]: argmax results, two slots
	// Events: the pinned tokens were copied, the offsets arrived, this
	// stage's output is computed, this stage pulled its input from the
	// previous stage, and the argmax of slot i arrived on the host.
	tokensCopied, offsetsReady, computed, pulled *cuda.Event
	idsReady                                     [2]*cuda.Event
	prof                                         *profile // nil unless timing kernels
}

// newLane allocates lane number index's stream, cuBLAS handle and buffers. On error
// the lane returned holds what was made, for the caller to free.
func newLane(st *stage, index int) (*lane, error) {
	c, o := st.m.c, st.m.o
	sz := laneSizes(c, o, st.isLast)
	es := o.elemSize()
	ln := &lane{st: st}
	var err error
	// Lane 0 has the higher priority: its micro-batch gets the GPU first and
	// the other lane fills what it leaves (its waits on the host, its tails),
	// so a stage hands its first micro-batch on after one micro-batch's time,
	// not two, and a pipeline fills and drains faster.
	if ln.stream, err = st.ctx.NewStreamPriority(index); err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	if ln.blas, err = st.ctx.NewBLAS(ln.stream); err != nil {
		return ln, fmt.Errorf("lfm2: %w", err)
	}
	for _, b := range []struct {
		dst  **cuda.Buffer
		what string
		n    int64
		size int
	}{
		{&ln.tokens, "tokens", sz.tokens, 4}, {&ln.x, "residual stream", sz.x, 4}, {&ln.xn, "normalized input", sz.xn, es},
		{&ln.big, "GEMM outputs", sz.big, 4}, {&ln.act, "down-projection inputs", sz.act, es}, {&ln.q, "queries", sz.q, 4},
		{&ln.gath, "grouped MoE inputs", sz.gath, es}, {&ln.topIdx, "router choices", sz.pairs, 4},
		{&ln.topW, "router weights", sz.pairs, 4}, {&ln.slotRow, "MoE rows", sz.pairs, 4}, {&ln.perm, "MoE tokens", sz.pairs, 4},
		{&ln.meta, "MoE counts", sz.meta, 4}, {&ln.load, "expert load", sz.load, 4},
		{&ln.logits, "logits", sz.logits, 4}, {&ln.ids, "argmax", int64(o.MaxBatch), 4},
	} {
		if *b.dst, err = st.alloc(b.what, b.n, b.size); err != nil {
			return ln, err
		}
		// Zeroed once, on the lane's stream before any of its work: a read of
		// a place no kernel has written yet gives zeros, the same in every run.
		// (compute-sanitizer's initcheck on an H100 reported the short conv's
		// reads of cuBLAS's outputs here as reads of memory never written,
		// though their values were right: the tests check them against the
		// CPU reference.)
		if err = (*b.dst).Memset(0, ln.stream); err != nil {
			return ln, fmt.Errorf("lfm2: %s: %w", b.what, err)
		}
	}
	if st.k.moeGateUpWgmma != nil && st.hasMoE() {
		p := sz.gath / int64(c.Hidden)
		if ln.tmGath, err = wgmmaMap(ln.gath, p, int64(c.Hidden)); err == nil {
			ln.tmAct, err = wgmmaMap(ln.act, p, int64(c.MoEIntermediate))
		}
		if err != nil {
			return ln, fmt.Errorf("lfm2: tensor maps of the grouped MoE inputs: %w", err)
		}
	}
	for _, h := range []struct {
		dst   **cuda.HostBuffer
		bytes int
	}{{&ln.hostTokens, 4 * o.MaxTokens}, {&ln.hostMeta, 4 * (c.Experts + 1)}, {&ln.hostIDs, 4 * 2 * o.MaxBatch}} {
		if *h.dst, err = st.ctx.AllocHost(h.bytes); err != nil {
			return ln, fmt.Errorf("lfm2: %w", err)
		}
	}
	for _, e := range []**cuda.Event{&ln.tokensCopied, &ln.offsetsReady, &ln.computed, &ln.pulled, &ln.idsReady[0], &ln.idsReady[1]} {
		if *e, err = st.ctx.NewEvent(); err != nil {
			return ln, fmt.Errorf("lfm2: %w", err)
		}
	}
	if err := ln.load.Memset(0, ln.stream); err != nil {
		return ln, fmt.Errorf("lfm2: %w", err)
	}
	return ln, nil
}

// free releases the lane's stream, handle, events and pinned memory (its
// device buffers belong to the stage).
func (ln *lane) free() error {
	var errs []error
	if ln.stream != nil {
		errs = append(errs, ln.stream.Synchronize())
	}
	if ln.blas != nil {
		errs = append(errs, ln.blas.Destroy())
	}
	for _, h := range []*cuda.HostBuffer{ln.hostTokens, ln.hostMeta, ln.hostIDs} {
		errs = append(errs, h.Free())
	}
	for _, e := range []*cuda.Event{ln.tokensCopied, ln.offsetsReady, ln.computed, ln.pulled, ln.idsReady[0], ln.idsReady[1]} {
		errs = append(errs, e.Destroy())
	}
	if ln.prof != nil {
		errs = append(errs, ln.prof.free())
	}
	errs = append(errs, ln.stream.Destroy())
	return errors.Join(errs...)
}

// microBatch is B sequences (b0 .. b0+B-1 of the batch) of S new tokens each,
// at positions pos .. pos+S-1.
type microBatch struct {
	index, b0, B, S, pos int
	// tokens are the B·S tokens, sequence by sequence, or nil when the first
	// stage's lane already holds them (greedy decode on one GPU).
	tokens []int32
}

// launch queues kernel f on the lane's stream.
func (ln *lane) launch(f *cuda.Function, grid, block, smem int, args ...any) error {
	return f.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: grid}, Block: cuda.Dim3{X: block}, SharedMem: smem, Stream: ln.stream}, args...)
}

// gemm queues out[rows, n] = in[rows, k]·Wᵀ (+ out when accumulate), for a
// weight W stored [n, k]; in and W are elem, out fp32; offsets in elements.
// Up to gemvMaxRows rows it is step 11's GEMV kernel, above that cuBLAS.
func (ln *lane) gemm(rows, n, k int, in *cuda.Buffer, inOff int, w *cuda.Buffer, wOff int, out *cuda.Buffer, outOff int, accumulate bool) error {
	if rows <= gemvMaxRows {
		return ln.st.k.gemv(ln.stream, ln.st.m.o.elemSize(), rows, n, k, in, inOff, w, wOff, out, outOff, accumulate)
	}
	t := ln.st.m.o.gemmType()
	beta := float32(0)
	if accumulate {
		beta = 1
	}
	return ln.blas.Gemm(rows, n, k, 1, cuda.Operand{Buf: in, Offset: inOff, Type: t, LD: k},
		cuda.Operand{Buf: w, Offset: wOff, Type: t, LD: k, Trans: true}, beta,
		cuda.Operand{Buf: out, Offset: outOff, Type: cuda.R32F, LD: n}, cuda.Compute32F)
}

// upload queues the copy of tokens to the lane's token buffer, through
// pinned memory, once the previous upload has left it.
func (ln *lane) upload(tokens []int32) error {
	if err := ln.tokensCopied.Synchronize(); err != nil {
		return fmt.Errorf("lfm2: %w", err)
	}
	copy(cuda.HostSlice[int32](ln.hostTokens), tokens)
	if err := cuda.CopyHtoDAsync(ln.tokens, 0, ln.hostTokens, 0, 4*len(tokens), ln.stream); err != nil {
		return fmt.Errorf("lfm2: upload tokens: %w", err)
	}
	return ln.tokensCopied.Record(ln.stream)
}

// embed queues x = embedding[tokens] for the micro-batch.
func (ln *lane) embed(mb microBatch) error {
	if mb.tokens != nil {
		if err := ln.upload(mb.tokens); err != nil {
			return err
		}
	}
	c := ln.st.m.c
	return ln.op("embedding", -1, func() error {
		return ln.launch(ln.st.k.embed, mb.B*mb.S, 256, 0, ln.tokens, c.Hidden, c.Vocab, ln.st.embedT, ln.x)
	})
}

// norm queues xn[0:rows] = rmsnorm(x rows first, first+stride, ...) · w.
func (ln *lane) norm(name string, layer int, w *cuda.Buffer, first, stride, rows int) error {
	c := ln.st.m.c
	return ln.op(name, layer, func() error {
		return ln.launch(ln.st.k.rmsnorm, rows, 256, 0, ln.x, first, stride, c.Hidden, w, float32(c.NormEps), ln.xn)
	})
}

// layers queues the stage's layers for the micro-batch.
func (ln *lane) layers(mb microBatch) error {
	st, c := ln.st, ln.st.m.c
	T := mb.B * mb.S
	if st.hasMoE() {
		if err := ln.meta.Memset(0, ln.stream); err != nil {
			return fmt.Errorf("lfm2: %w", err)
		}
	}
	for l := st.first; l < st.last; l++ {
		dl := &st.layers[l-st.first]
		mixer, ffn := "conv", "dense"
		if c.IsAttention(l) {
			mixer = "attention"
		}
		if c.IsMoE(l) {
			ffn = "MoE"
		}
		var err error
		if st.hasMixer(l) { // else the previous stage ran it
			err = ln.op("mixer", l, func() error {
				if err := ln.norm("rmsnorm", l, dl.opNorm, 0, 1, T); err != nil {
					return err
				}
				if c.IsAttention(l) {
					return ln.attention(dl, l, mb)
				}
				return ln.conv(dl, l, mb)
			})
		}
		if err == nil && st.hasFFN(l) { // else the next stage runs it
			err = ln.op("feed-forward", l, func() error {
				if err := ln.norm("rmsnorm", l, dl.ffnNorm, 0, 1, T); err != nil {
					return err
				}
				if c.IsMoE(l) {
					return ln.moe(dl, l, T)
				}
				return ln.dense(dl, l, T)
			})
		}
		if err != nil {
			return fmt.Errorf("lfm2: %s: layer %d (%s, %s): %w", st.ctx.ID(), l, mixer, ffn, err)
		}
	}
	return nil
}

// attention queues the GQA mixer: x += attention(x̂)·Woᵀ.
func (ln *lane) attention(dl *deviceLayer, l int, mb microBatch) error {
	st, c, o := ln.st, ln.st.m.c, ln.st.m.o
	T, h, hd := mb.B*mb.S, c.Hidden, c.HeadDim
	if err := ln.op("q|k|v gemm", l, func() error {
		return ln.gemm(T, (c.Heads+2*c.KVHeads)*hd, h, ln.xn, 0, dl.qkv, 0, ln.big, 0, false)
	}); err != nil {
		return err
	}
	if err := ln.op("qk norm + rope", l, func() error {
		return ln.launch(st.k.qkNormRope, T, 256, 0, ln.big, mb.S, c.Heads, c.KVHeads, mb.b0, mb.pos, o.MaxSeq,
			dl.qNorm, dl.kNorm, float32(c.NormEps), st.rope, ln.q, dl.k, dl.v)
	}); err != nil {
		return err
	}
	const warps = 4 // WARPS in 04_attention.cu
	if err := ln.op("attention", l, func() error {
		return ln.launch(st.k.attention, (T*c.Heads+warps-1)/warps, 32*warps, 0, ln.q, mb.B, mb.S, c.Heads, c.KVHeads,
			mb.b0, mb.pos, o.MaxSeq, dl.k, dl.v, float32(1/math.Sqrt(float64(hd))), ln.act)
	}); err != nil {
		return err
	}
	return ln.op("out_proj gemm", l, func() error {
		return ln.gemm(T, h, c.Heads*hd, ln.act, 0, dl.o, 0, ln.x, 0, true)
	})
}

// conv queues the gated short convolution: x += conv(x̂)·Woutᵀ.
func (ln *lane) conv(dl *deviceLayer, l int, mb microBatch) error {
	st, c := ln.st, ln.st.m.c
	T, h := mb.B*mb.S, c.Hidden
	if err := ln.op("in_proj gemm", l, func() error { return ln.gemm(T, 3*h, h, ln.xn, 0, dl.inProj, 0, ln.big, 0, false) }); err != nil {
		return err
	}
	const block = 128
	if err := ln.op("short conv", l, func() error {
		return st.k.shortConv.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: (h + block - 1) / block, Y: mb.B}, Block: cuda.Dim3{X: block}, Stream: ln.stream},
			ln.big, mb.S, h, mb.b0, dl.convW, dl.conv, ln.act)
	}); err != nil {
		return err
	}
	return ln.op("out_proj gemm", l, func() error { return ln.gemm(T, h, h, ln.act, 0, dl.outProj, 0, ln.x, 0, true) })
}

// dense queues the SwiGLU feed-forward: x += (silu(x̂·W1ᵀ) ⊙ x̂·W3ᵀ)·W2ᵀ.
func (ln *lane) dense(dl *deviceLayer, l, T int) error {
	c := ln.st.m.c
	h, inter := c.Hidden, c.Intermediate
	if err := ln.op("w1|w3 gemm", l, func() error { return ln.gemm(T, 2*inter, h, ln.xn, 0, dl.w13, 0, ln.big, 0, false) }); err != nil {
		return err
	}
	if err := ln.swiglu(l, T, inter); err != nil {
		return err
	}
	return ln.op("w2 gemm", l, func() error { return ln.gemm(T, h, inter, ln.act, 0, dl.w2, 0, ln.x, 0, true) })
}

// swiglu queues act = silu(big[:, :inter]) ⊙ big[:, inter:] over rows.
func (ln *lane) swiglu(l, rows, inter int) error {
	return ln.op("swiglu", l, func() error {
		n := rows * inter
		return ln.launch(ln.st.k.swiglu, min((n+255)/256, 32*ln.st.k.sms), 256, 0, ln.big, rows, inter, ln.act)
	})
}

// moe queues the mixture of experts: route, group, run the experts by the
// chosen path, and add their weighted outputs to x.
func (ln *lane) moe(dl *deviceLayer, l, T int) error {
	st, c := ln.st, ln.st.m.c
	h, e, k, im := c.Hidden, c.Experts, c.ExpertsPerToken, c.MoEIntermediate
	pairs := T * k
	if err := ln.op("router", l, func() error {
		norm := 0
		if c.NormTopK {
			norm = 1
		}
		return ln.launch(st.k.route, (T+routeTokens-1)/routeTokens, routeThreads, routeSmem(h, e), ln.xn, T, h, dl.gate, dl.bias, e, k,
			norm, float32(c.RoutedScaling), ln.topIdx, ln.topW, ln.meta)
	}); err != nil {
		return err
	}
	load := ln.load.Ptr() + cuda.DevicePtr(4*l*e)
	if err := ln.op("moe group", l, func() error { return ln.launch(st.k.moeOffsets, 1, 32, 0, e, moeTile, ln.meta, load) }); err != nil {
		return err
	}
	path := st.moePath(pairs)
	if path == MoEPersistent {
		err := ln.op("moe group", l, func() error {
			return ln.launch(st.k.moeScatter, pairs, 32, 0, ln.xn, h, k, ln.topIdx, ln.meta, e, ln.perm, ln.slotRow, 0, ln.gath)
		})
		if err != nil {
			return err
		}
		if err := ln.op("experts (persistent)", l, func() error {
			if err := ln.launch(st.k.moeGateUp, st.k.gateUpBlocks, persistentThreads, 0,
				ln.xn, h, im, dl.w13, ln.perm, ln.meta, e, ln.act); err != nil {
				return err
			}
			return ln.launch(st.k.moeDown, st.k.downBlocks, persistentThreads, 0, ln.act, h, im, dl.w2, ln.meta, e, ln.big)
		}); err != nil {
			return err
		}
	} else if path == MoEWgmma {
		if err := ln.groupedWgmma(dl, l, T); err != nil {
			return err
		}
	} else if err := ln.grouped(dl, l, T); err != nil {
		return err
	}
	return ln.op("moe combine", l, func() error {
		return ln.launch(st.k.moeCombine, T, 256, 0, ln.big, h, k, ln.slotRow, ln.topW, ln.x)
	})
}

// routeTokens is the tokens of one router block (TOKENS in 06_router.cu),
// and routeThreads its threads (ROUTE_WARPS·32).
const (
	routeTokens  = 4
	routeThreads = 1024
)

// routeSmem is the router's dynamic shared memory for hidden h and e experts.
func routeSmem(h, e int) int { return 4 * routeTokens * (h + 2*e) }

// The GEMV kernel of step 11: up to gemvMaxRows input rows (GEMV_MAX_ROWS),
// blocks of gemvThreads threads (GEMV_WARPS·32) computing gemvBlockRows
// outputs (GEMV_WARPS·GEMV_ROWS).
const (
	gemvMaxRows   = 8
	gemvThreads   = 128
	gemvBlockRows = 8
)

// gemv queues out[rows, n] = in[rows, k]·Wᵀ (+ out when accumulate) with
// step 11's kernel on stream s, for 1 to gemvMaxRows rows; in and W are
// elements of es bytes, out fp32, offsets in elements. Each view is checked
// against its buffer first.
func (ks *kernelSet) gemv(s *cuda.Stream, es, rows, n, k int, in *cuda.Buffer, inOff int, w *cuda.Buffer, wOff int,
	out *cuda.Buffer, outOff int, accumulate bool) error {
	if rows < 1 || rows > gemvMaxRows || n < 1 || k < 1 {
		return fmt.Errorf("lfm2: gemv of %d rows, %d outputs, %d inputs: want 1 to %d rows and positive sizes", rows, n, k, gemvMaxRows)
	}
	inPtr, err := devicePtr("input", in, int64(inOff), int64(rows*k), int64(es))
	var wPtr, outPtr cuda.DevicePtr
	if err == nil {
		wPtr, err = devicePtr("weight", w, int64(wOff), int64(n*k), int64(es))
	}
	if err == nil {
		outPtr, err = devicePtr("output", out, int64(outOff), int64(rows*n), 4)
	}
	if err != nil {
		return fmt.Errorf("lfm2: gemv [%d, %d]·[%d, %d]ᵀ: %w", rows, k, n, k, err)
	}
	f, acc := ks.gemv8, 0
	if rows == 1 {
		f = ks.gemv1
	}
	if accumulate {
		acc = 1
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: (n + gemvBlockRows - 1) / gemvBlockRows}, Block: cuda.Dim3{X: gemvThreads}, Stream: s}
	if err := f.Launch(cfg, inPtr, rows, k, wPtr, n, outPtr, acc); err != nil {
		return fmt.Errorf("lfm2: gemv [%d, %d]·[%d, %d]ᵀ: %w", rows, k, n, k, err)
	}
	return nil
}

// grouped runs the experts as dense GEMMs over their grouped rows (cuBLAS,
// or step 11's GEMV for an expert with few rows): the host waits for the
// per-expert offsets, then queues two GEMMs per expert with tokens and one
// SwiGLU pass over all rows.
func (ln *lane) grouped(dl *deviceLayer, l, T int) error {
	st, c := ln.st, ln.st.m.c
	h, e, k, im := c.Hidden, c.Experts, c.ExpertsPerToken, c.MoEIntermediate
	pairs := T * k
	var offs []int32
	err := ln.op("moe group", l, func() error {
		if err := cuda.CopyDtoHAsync(ln.hostMeta, 0, ln.meta, 4*e, 4*(e+1), ln.stream); err != nil {
			return err
		}
		if err := ln.offsetsReady.Record(ln.stream); err != nil {
			return err
		}
		if err := ln.launch(st.k.moeScatter, pairs, 256, 0, ln.xn, h, k, ln.topIdx, ln.meta, e, ln.perm, ln.slotRow, 1, ln.gath); err != nil {
			return err
		}
		if err := ln.offsetsReady.Synchronize(); err != nil {
			return err
		}
		offs = cuda.HostSlice[int32](ln.hostMeta)[:e+1]
		if int(offs[e]) != pairs {
			return fmt.Errorf("the router assigned %d (token, expert) pairs, want %d", offs[e], pairs)
		}
		return nil
	})
	if err != nil {
		return err
	}
	experts := func(f func(x, off, n int) error) error {
		for x := range e {
			if n := int(offs[x+1] - offs[x]); n > 0 {
				if err := f(x, int(offs[x]), n); err != nil {
					return fmt.Errorf("expert %d (%d rows): %w", x, n, err)
				}
			}
		}
		return nil
	}
	if err := ln.op("expert w1|w3 gemms", l, func() error {
		return experts(func(x, off, n int) error {
			return ln.gemm(n, 2*im, h, ln.gath, off*h, dl.w13, x*2*im*h, ln.big, off*2*im, false)
		})
	}); err != nil {
		return err
	}
	if err := ln.swiglu(l, pairs, im); err != nil {
		return err
	}
	return ln.op("expert w2 gemms", l, func() error {
		return experts(func(x, off, n int) error {
			return ln.gemm(n, h, im, ln.act, off*im, dl.w2, x*h*im, ln.big, off*h, false)
		})
	})
}

// The tiles of step 12 (12_moe_wgmma.cu): BM rows of A, and W in TMA boxes
// of wgmmaBox rows by BK columns, two per 256-column tile.
const (
	wgmmaBM      = 128
	wgmmaBN      = 256
	wgmmaBox     = 128
	wgmmaBK      = 64
	wgmmaThreads = 384
	// 4 stages of A and W tiles; the barriers and the tile's place in the
	// struct's last 1 KiB (it is 1024-aligned); 1 KiB to align its start.
	wgmmaSmem = 4*(wgmmaBM+wgmmaBN)*wgmmaBK*2 + 1024 + 1024
)

// wgmmaMap is the TMA view of a row-major rows×cols bf16 matrix in b that
// step 12 reads, in 128-byte swizzled boxes of wgmmaBox rows by wgmmaBK columns.
func wgmmaMap(b *cuda.Buffer, rows, cols int64) (*cuda.TensorMap, error) {
	return cuda.TensorMap2D(b, cuda.TensorBFloat16, 2, int(rows), int(cols), wgmmaBox, wgmmaBK, cuda.Swizzle128B)
}

// wgmmaGrid is step 12's grid for a product of cols output columns over
// pairs rows grouped among e experts: 256 columns per block, and a row of
// blocks for each of the most 128-row tiles the pairs can make (each expert
// with rows has at most one partial tile).
func wgmmaGrid(cols, pairs, e int) cuda.Dim3 {
	return cuda.Dim3{X: (cols + wgmmaBN - 1) / wgmmaBN, Y: (pairs+wgmmaBM-1)/wgmmaBM + min(e, pairs)}
}

// moePath is the MoE path for a micro-batch of pairs (token, expert) pairs:
// the one the options ask for, or the auto choice (see CUDAOptions.MoE).
func (st *stage) moePath(pairs int) string {
	switch p := st.m.o.MoE; {
	case p != MoEAuto:
		return p
	case pairs <= PersistentMaxPairs:
		return MoEPersistent
	case st.k.moeGateUpWgmma != nil:
		return MoEWgmma
	default:
		return MoEGrouped
	}
}

// groupedWgmma runs the experts with step 12: the grouped inputs gathered
// (no host wait), then one launch for every expert's w1|w3 with the SwiGLU,
// and one for every expert's w2. The grids have a row of blocks for each of
// the most 128-row tiles the pairs can make; the blocks past the real tiles
// return at once.
func (ln *lane) groupedWgmma(dl *deviceLayer, l, T int) error {
	st, c := ln.st, ln.st.m.c
	h, e, k, im := c.Hidden, c.Experts, c.ExpertsPerToken, c.MoEIntermediate
	pairs := T * k
	if err := ln.op("moe group", l, func() error {
		return ln.launch(st.k.moeScatter, pairs, 256, 0, ln.xn, h, k, ln.topIdx, ln.meta, e, ln.perm, ln.slotRow, 1, ln.gath)
	}); err != nil {
		return err
	}
	grid := func(cols int) cuda.LaunchConfig {
		return cuda.LaunchConfig{Grid: wgmmaGrid(cols, pairs, e), Block: cuda.Dim3{X: wgmmaThreads}, SharedMem: wgmmaSmem, Stream: ln.stream}
	}
	if err := ln.op("expert w1|w3 gemms", l, func() error {
		// Each block's 256 columns are 128 outputs: their w1 rows and w3 rows.
		return st.k.moeGateUpWgmma.Launch(grid(2*im), h, im, ln.meta, e, ln.tmGath, dl.tmW13, ln.act)
	}); err != nil {
		return err
	}
	return ln.op("expert w2 gemms", l, func() error {
		return st.k.moeDownWgmma.Launch(grid(h), h, im, ln.meta, e, ln.tmAct, dl.tmW2, ln.big)
	})
}

// finalNorm queues the final norm of rows first, first+stride, ... (rows of
// them) into xn, the start of the LM head.
func (ln *lane) finalNorm(first, stride, rows int) error {
	return ln.norm("final norm", -1, ln.st.norm, first, stride, rows)
}

// lmHead queues logits[0:n] = xn[r0:r0+n]·headᵀ.
func (ln *lane) lmHead(r0, n int) error {
	c := ln.st.m.c
	return ln.op("lm head", -1, func() error {
		return ln.gemm(n, c.Vocab, c.Hidden, ln.xn, r0*c.Hidden, ln.st.head, 0, ln.logits, 0, false)
	})
}

// argmax queues dst[0:n] = the argmax of logits rows 0..n-1.
func (ln *lane) argmax(n int, dst *cuda.Buffer) error {
	return ln.op("argmax", -1, func() error { return ln.launch(ln.st.k.argmax, n, 1024, 0, ln.logits, ln.st.m.c.Vocab, dst) })
}
