package lfm2

// Making a CUDA engine: the stages and their layer ranges, every device
// allocation, and the weights, converted on the device from the memory-mapped
// checkpoint or generated there from a seed.

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"gpulab/engine/cuda"
)

// deviceLayer is one layer's weights and caches on its stage's device. Only
// the fields of its mixer (attention or conv) and feed-forward are set.
type deviceLayer struct {
	opNorm, ffnNorm *cuda.Buffer // f32 [H]
	qkv, o          *cuda.Buffer // elem [(NH+2·NKV)·D, H] (q|k|v rows), [H, NH·D]
	qNorm, kNorm    *cuda.Buffer // f32 [D]
	inProj, outProj *cuda.Buffer // elem [3H, H], [H, H]
	convW           *cuda.Buffer // f32 [H, L]
	// w13 is w1 and w3 stacked, w2 the down projection: dense [2I, H] and
	// [H, I]; MoE, every expert one after the other: [E, 2·IM, H], [E, H, IM].
	w13, w2 *cuda.Buffer
	// tmW13, tmW2: TMA views of a MoE layer's w13 and w2 for step 12 (nil
	// without it), as [E·2·IM, H] and [E·H, IM] in boxes of wgmmaBox.
	tmW13, tmW2 *cuda.TensorMap
	gate, bias  *cuda.Buffer // f32 router [E, H], expert_bias [E]
	k, v        *cuda.Buffer // f32 KV cache [MaxBatch, NKV, MaxSeq, D]
	conv        *cuda.Buffer // f32 conv state [MaxBatch, L-1, H]
}

// stage is one GPU's part of the model: parts [from, to) (see partsOf),
// which touch layers [first, last), plus the
// embedding on the first stage and the final norm and LM head on the last.
type stage struct {
	m           *CUDAModel
	ctx         *cuda.Context
	k           *kernelSet
	from, to    int // parts: 2l is layer l's mixer, 2l+1 its feed-forward
	first, last int // the layers the parts belong to
	isFirst     bool
	isLast      bool
	p2p         bool         // reads the previous stage's memory directly (else through the host)
	embedT      *cuda.Buffer // elem [V, H], first stage
	norm, head  *cuda.Buffer // f32 [H] and elem [V, H], last stage; head is embedT when both are here and tied
	layers      []deviceLayer
	rope        *cuda.Buffer // f32 [MaxSeq][D/2] (cos, sin)
	lanes       []*lane
	bufs        []*cuda.Buffer // every allocation, to free
}

// alloc allocates a buffer of n elements of size bytes each (at least one)
// and keeps it for free.
func (st *stage) alloc(what string, n int64, size int) (*cuda.Buffer, error) {
	b, err := st.ctx.Alloc(int(max(n, 1)) * size)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %s: %w", what, err)
	}
	st.bufs = append(st.bufs, b)
	return b, nil
}

// free releases the stage's buffers, lanes and handles.
func (st *stage) free() error {
	var errs []error
	for _, ln := range st.lanes {
		errs = append(errs, ln.free())
	}
	for _, b := range st.bufs {
		errs = append(errs, b.Free())
	}
	st.bufs, st.lanes = nil, nil
	return errors.Join(errs...)
}

// hasMoE reports whether any of the stage's layers is a mixture of experts.
func (st *stage) hasMoE() bool {
	for l := st.first; l < st.last; l++ {
		if st.hasFFN(l) && st.m.c.IsMoE(l) {
			return true
		}
	}
	return false
}

// hasMixer and hasFFN report whether layer l's mixer (with its norm and
// caches) and its feed-forward (with its norm) are on the stage.
func (st *stage) hasMixer(l int) bool { return 2*l >= st.from && 2*l < st.to }
func (st *stage) hasFFN(l int) bool   { return 2*l+1 >= st.from && 2*l+1 < st.to }

// NewCUDA loads the checkpoint onto one GPU. It checks the checkpoint
// against the config first, and that the model fits in free device memory.
func NewCUDA(ctx *cuda.Context, c *Config, ck *Checkpoint, o CUDAOptions) (*CUDAModel, error) {
	return NewPipeline([]*cuda.Context{ctx}, c, ck, o)
}

// NewPipeline loads the checkpoint across the GPUs of ctxs, one stage each,
// splitting the layers so that the stages take about the same time: each
// kind of layer (attention or conv, dense or MoE) is timed on the first GPU
// with random weights, and the split minimizes the slowest stage.
func NewPipeline(ctxs []*cuda.Context, c *Config, ck *Checkpoint, o CUDAOptions) (*CUDAModel, error) {
	if err := Validate(c, ck); err != nil {
		return nil, err
	}
	return newModel(ctxs, c, o, &checkpointSource{ck: ck})
}

// RandomModelCUDA builds the model of config c with seeded random weights,
// made on the devices (no host copy): N(0, 0.02²), norm weights N(1, 0.02²).
// The same seed gives the same weights in f32 and bf16 (rounded). It is for
// timing the real architecture without its checkpoint.
func RandomModelCUDA(ctxs []*cuda.Context, c *Config, seed uint64, o CUDAOptions) (*CUDAModel, error) {
	return newModel(ctxs, c, o, randomSource{seed: seed})
}

// newModel plans the split, allocates every stage and fills its weights.
func newModel(ctxs []*cuda.Context, c *Config, o CUDAOptions, src weightSource) (*CUDAModel, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkCUDAConfig(c); err != nil {
		return nil, err
	}
	if len(ctxs) == 0 {
		return nil, fmt.Errorf("lfm2: no GPU to load the model on")
	}
	bounds := []int{0, 2 * c.Layers} // in parts
	if len(ctxs) > 1 {
		costs, err := measurePartCosts(ctxs[0], c, o, len(ctxs))
		if err != nil {
			return nil, err
		}
		if bounds, err = splitCosts(costs, len(ctxs)); err != nil {
			return nil, err
		}
	}
	m := &CUDAModel{c: c, o: o}
	for i, ctx := range ctxs {
		from, to := bounds[i], bounds[i+1]
		first, last := from/2, (to+1)/2
		// A layer split between two stages counts whole on both: a little
		// more than the stage needs.
		need := stageBytes(c, o, first, last, i == 0, i == len(ctxs)-1)
		need.Weights += src.staging(c, first, last)
		what := fmt.Sprintf("the %s %s of %s", o.DType, partsString(from, to), c.ModelType)
		if err := checkFits(ctx, need, what, len(ctxs)); err != nil {
			m.Close()
			return nil, fmt.Errorf("%w%s", err, fitHint(c, o, ctxs, ctx))
		}
		st, err := newStage(m, ctx, from, to, i == 0, i == len(ctxs)-1, src)
		if st != nil {
			m.stages = append(m.stages, st)
		}
		if err != nil {
			m.Close()
			return nil, err
		}
	}
	m.enablePeers()
	return m, nil
}

// fitHint names the smallest number of GPUs like ctx whose memory would
// hold the model split by size, when that is more than are given.
func fitHint(c *Config, o CUDAOptions, ctxs []*cuda.Context, ctx *cuda.Context) string {
	free, _, err := ctx.MemInfo()
	if err != nil {
		return ""
	}
	for g := len(ctxs) + 1; g <= min(c.Layers, 16); g++ {
		bounds, err := splitCosts(sizeCosts(c, o), g)
		if err != nil {
			return ""
		}
		fits := true
		for i := range g {
			fits = fits && stageBytes(c, o, bounds[i], bounds[i+1], i == 0, i == g-1).Total() <= int64(free)
		}
		if fits {
			var parts []string
			for i := range g {
				parts = append(parts, fmt.Sprintf("layers %d-%d", bounds[i], bounds[i+1]-1))
			}
			return fmt.Sprintf("; split over %d such GPUs it would fit (%s)", g, strings.Join(parts, ", "))
		}
	}
	return ""
}

// sizeCosts is each layer's weights and caches in bytes, as split costs.
func sizeCosts(c *Config, o CUDAOptions) []float64 {
	out := make([]float64, c.Layers)
	for l := range out {
		w, cache := layerBytes(c, o, l)
		out[l] = float64(w + cache)
	}
	return out
}

// newStage allocates a stage of parts [from, to) on ctx and fills its
// weights from src. On error the stage returned (if any) holds what was
// allocated, for the caller to free.
func newStage(m *CUDAModel, ctx *cuda.Context, from, to int, isFirst, isLast bool, src weightSource) (*stage, error) {
	c, o := m.c, m.o
	k, err := compileKernels(ctx, c, o)
	if err != nil {
		return nil, err
	}
	if o.MoE == MoEWgmma && k.moeGateUpWgmma == nil {
		p := ctx.Properties()
		return nil, fmt.Errorf("lfm2: MoE path %q needs bf16, compute capability 9.0 and hidden and expert sizes that are multiples of 8; "+
			"%s is %s, dtype %s, hidden %d, expert width %d", MoEWgmma, ctx.ID(), p.ComputeCapability, o.DType, c.Hidden, c.MoEIntermediate)
	}
	st := &stage{m: m, ctx: ctx, k: k, from: from, to: to, first: from / 2, last: (to + 1) / 2, isFirst: isFirst, isLast: isLast}
	pieces, err := st.allocWeights()
	if err != nil {
		return st, err
	}
	if err := src.load(st, pieces); err != nil {
		return st, err
	}
	if st.rope, err = st.alloc("RoPE table", int64(o.MaxSeq*c.HeadDim), 4); err != nil {
		return st, err
	}
	if err := cuda.CopyHtoD(st.rope, ropeTable(c, o.MaxSeq)); err != nil {
		return st, fmt.Errorf("lfm2: RoPE table: %w", err)
	}
	for i := range lanes {
		ln, err := newLane(st, i)
		if ln != nil {
			st.lanes = append(st.lanes, ln)
		}
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// piece is one checkpoint tensor's place on the device: n values from
// element off of dst, as fp32 or as the engine's element type.
type piece struct {
	name string
	dst  *cuda.Buffer
	off  int64
	n    int64
	f32  bool
}

// allocWeights allocates the stage's weights and caches and returns where
// each checkpoint tensor goes.
func (st *stage) allocWeights() ([]piece, error) {
	c, o := st.m.c, st.m.o
	es := o.elemSize()
	h, hd, e := int64(c.Hidden), int64(c.HeadDim), int64(c.Experts)
	var pieces []piece
	var err error
	// buf allocates a buffer for the given tensors, placed one after the other.
	buf := func(dst **cuda.Buffer, f32 bool, what string, parts ...struct {
		name string
		n    int64
	}) {
		if err != nil {
			return
		}
		size, total := es, int64(0)
		if f32 {
			size = 4
		}
		for _, p := range parts {
			total += p.n
		}
		if *dst, err = st.alloc(what, total, size); err != nil {
			return
		}
		off := int64(0)
		for _, p := range parts {
			pieces = append(pieces, piece{name: p.name, dst: *dst, off: off, n: p.n, f32: f32})
			off += p.n
		}
	}
	type part = struct {
		name string
		n    int64
	}
	v := int64(c.Vocab)
	if st.isFirst {
		buf(&st.embedT, false, "embedding", part{"model.embed_tokens.weight", v * h})
	}
	if st.isLast {
		buf(&st.norm, true, "final norm", part{"model.embedding_norm.weight", h})
		switch {
		case !c.TiedEmbeddings:
			buf(&st.head, false, "LM head", part{"lm_head.weight", v * h})
		case st.isFirst:
			st.head = st.embedT
		default:
			buf(&st.head, false, "LM head (tied embedding)", part{"model.embed_tokens.weight", v * h})
		}
	}
	st.layers = make([]deviceLayer, st.last-st.first)
	for l := st.first; l < st.last; l++ {
		dl, p := &st.layers[l-st.first], fmt.Sprintf("model.layers.%d.", l)
		what := func(s string) string { return fmt.Sprintf("layer %d %s", l, s) }
		if st.hasMixer(l) { // else on the previous stage
			buf(&dl.opNorm, true, what("operator_norm"), part{p + "operator_norm.weight", h})
			if c.IsAttention(l) {
				a, q, kv := p+"self_attn.", int64(c.Heads)*hd, int64(c.KVHeads)*hd
				buf(&dl.qkv, false, what("q|k|v"), part{a + "q_proj.weight", q * h}, part{a + "k_proj.weight", kv * h}, part{a + "v_proj.weight", kv * h})
				buf(&dl.o, false, what("out_proj"), part{a + "out_proj.weight", h * q})
				buf(&dl.qNorm, true, what("q_layernorm"), part{a + "q_layernorm.weight", hd})
				buf(&dl.kNorm, true, what("k_layernorm"), part{a + "k_layernorm.weight", hd})
				if err == nil {
					cache := int64(o.MaxBatch) * kv * int64(o.MaxSeq)
					if dl.k, err = st.alloc(what("K cache"), cache, 4); err == nil {
						dl.v, err = st.alloc(what("V cache"), cache, 4)
					}
				}
			} else {
				buf(&dl.inProj, false, what("in_proj"), part{p + "conv.in_proj.weight", 3 * h * h})
				buf(&dl.outProj, false, what("out_proj"), part{p + "conv.out_proj.weight", h * h})
				buf(&dl.convW, true, what("conv"), part{p + "conv.conv.weight", h * int64(c.ConvL)})
				if err == nil {
					dl.conv, err = st.alloc(what("conv state"), int64(o.MaxBatch)*int64(c.ConvL-1)*h, 4)
				}
			}
		}
		if !st.hasFFN(l) { // on the next stage
			continue
		}
		buf(&dl.ffnNorm, true, what("ffn_norm"), part{p + "ffn_norm.weight", h})
		ff := p + "feed_forward."
		if !c.IsMoE(l) {
			i := int64(c.Intermediate)
			buf(&dl.w13, false, what("w1|w3"), part{ff + "w1.weight", i * h}, part{ff + "w3.weight", i * h})
			buf(&dl.w2, false, what("w2"), part{ff + "w2.weight", h * i})
			continue
		}
		im := int64(c.MoEIntermediate)
		var w13, w2 []part
		for x := range e {
			ex := fmt.Sprintf("%sexperts.%d.", ff, x)
			w13 = append(w13, part{ex + "w1.weight", im * h}, part{ex + "w3.weight", im * h})
			w2 = append(w2, part{ex + "w2.weight", h * im})
		}
		buf(&dl.w13, false, what("experts' w1|w3"), w13...)
		buf(&dl.w2, false, what("experts' w2"), w2...)
		if err == nil && st.k.moeGateUpWgmma != nil {
			if dl.tmW13, err = wgmmaMap(dl.w13, e*2*im, h); err == nil {
				dl.tmW2, err = wgmmaMap(dl.w2, e*h, im)
			}
			if err != nil {
				err = fmt.Errorf("lfm2: %s: %w", what("experts' tensor maps"), err)
			}
		}
		buf(&dl.gate, true, what("router"), part{ff + "gate.weight", e * h})
		if c.ExpertBias {
			buf(&dl.bias, true, what("expert_bias"), part{ff + "expert_bias", e})
		} else if err == nil { // no bias: zeros, which leave the choice to the sigmoid
			if dl.bias, err = st.alloc(what("zero expert_bias"), e, 4); err == nil {
				err = dl.bias.Memset(0, nil)
			}
		}
	}
	return pieces, err
}

// weightSource fills a stage's weights.
type weightSource interface {
	// staging is the extra device memory loading layers [first, last) needs.
	staging(c *Config, first, last int) int64
	load(st *stage, pieces []piece) error
}

// checkpointSource copies each tensor's raw bytes from the memory-mapped
// checkpoint to a staging buffer, and converts them on the device.
type checkpointSource struct{ ck *Checkpoint }

// sourceDTypes numbers the checkpoint dtypes as 00_weights.cu does.
var sourceDTypes = map[string]int{"F32": 0, "BF16": 1, "F16": 2}

func (s *checkpointSource) staging(c *Config, first, last int) int64 {
	biggest := 0
	for name, t := range s.ck.Tensors {
		if n := stageLayer(name); n < 0 || (n >= first && n < last) {
			biggest = max(biggest, len(t.Bytes()))
		}
	}
	return int64(biggest)
}

// stageLayer is the layer a tensor name belongs to, or -1 for the
// embedding, final norm and LM head.
func stageLayer(name string) int {
	var l int
	if _, err := fmt.Sscanf(name, "model.layers.%d.", &l); err != nil {
		return -1
	}
	return l
}

func (s *checkpointSource) load(st *stage, pieces []piece) error {
	biggest := 0
	for _, p := range pieces {
		biggest = max(biggest, len(s.ck.Tensors[p.name].Bytes()))
	}
	staging, err := st.ctx.Alloc(biggest)
	if err != nil {
		return fmt.Errorf("lfm2: staging buffer for the checkpoint: %w", err)
	}
	defer staging.Free()
	for _, p := range pieces {
		t := s.ck.Tensors[p.name]
		code, ok := sourceDTypes[t.DType]
		if !ok || int64(t.Len()) != p.n {
			return fmt.Errorf("lfm2: %s: tensor %s is %s %v, want %d values of F32, BF16 or F16", s.ck.Dir, p.name, t.DType, t.Shape, p.n)
		}
		if err := cuda.CopyHtoD(staging, t.Bytes()); err != nil {
			return fmt.Errorf("lfm2: upload %s: %w", p.name, err)
		}
		f := st.k.convertElem
		if p.f32 {
			f = st.k.convertF32
		}
		dst, err := p.ptr(st.m.o)
		if err != nil {
			return err
		}
		if err := f.Launch(gridStride(p.n), staging, code, int(p.n), dst); err != nil {
			return fmt.Errorf("lfm2: convert %s: %w", p.name, err)
		}
		// The staging buffer is reused by the next tensor.
		if err := st.ctx.Synchronize(); err != nil {
			return fmt.Errorf("lfm2: convert %s: %w", p.name, err)
		}
	}
	return nil
}

// ptr is the device address of the piece, checked against its buffer.
func (p piece) ptr(o CUDAOptions) (cuda.DevicePtr, error) {
	size := int64(o.elemSize())
	if p.f32 {
		size = 4
	}
	ptr, err := devicePtr(p.name, p.dst, p.off, p.n, size)
	if err != nil {
		return 0, fmt.Errorf("lfm2: %w", err)
	}
	return ptr, nil
}

// devicePtr is the address of n values of size bytes from element off of b,
// checked against b's size.
func devicePtr(what string, b *cuda.Buffer, off, n, size int64) (cuda.DevicePtr, error) {
	if off < 0 || n < 0 || (off+n)*size > int64(b.Size()) {
		return 0, fmt.Errorf("%s: %d values at element %d overrun a buffer of %d bytes", what, n, off, b.Size())
	}
	return b.Ptr() + cuda.DevicePtr(off*size), nil
}

// gridStride is a launch for a grid-stride loop over n elements.
func gridStride(n int64) cuda.LaunchConfig {
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: int(min((n+255)/256, 8192))}, Block: cuda.Dim3{X: 256}}
}

// randomSource generates every tensor on the device from a seed.
type randomSource struct{ seed uint64 }

func (randomSource) staging(*Config, int, int) int64 { return 0 }

func (s randomSource) load(st *stage, pieces []piece) error {
	for _, p := range pieces {
		mean, std := randomInit(p.name)
		f := st.k.fillElem
		if p.f32 {
			f = st.k.fillF32
		}
		dst, err := p.ptr(st.m.o)
		if err != nil {
			return err
		}
		h := fnv.New64a()
		h.Write([]byte(p.name))
		if err := f.Launch(gridStride(p.n), s.seed, h.Sum64(), int(p.n), mean, std, dst); err != nil {
			return fmt.Errorf("lfm2: random %s: %w", p.name, err)
		}
	}
	if err := st.ctx.Synchronize(); err != nil {
		return fmt.Errorf("lfm2: random weights on %s: %w", st.ctx.ID(), err)
	}
	return nil
}

// randomInit is the mean and standard deviation of a random tensor.
func randomInit(name string) (mean, std float32) {
	if strings.HasSuffix(name, "norm.weight") {
		return 1, 0.02
	}
	return 0, 0.02
}
