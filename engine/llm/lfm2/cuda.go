package lfm2

// The CUDA engine: the same forward as forward.go, on one GPU or pipelined
// over several, in fp32 (checked against the CPU reference) or bf16 (tensor
// cores). Weights are loaded once; every activation buffer is allocated when
// the engine is made, so a forward allocates no device memory.
//
// Per layer, with T tokens (B sequences of S), H hidden, in the kernel files
// of kernels/cuda/lfm2:
//
//	x̂ = rmsnorm(x)                               02
//	attention: qkv = x̂·[Wq;Wk;Wv]ᵀ               03 norm+RoPE → q, caches
//	           o = attention(q, caches)           04
//	           x += o·Woᵀ (beta = 1)
//	conv:      bcx = x̂·Winᵀ                      05 B⊙x, conv, C⊙
//	           x += y·Woutᵀ (beta = 1)
//	x̂ = rmsnorm(x)                               02
//	dense:     h = x̂·[W1;W3]ᵀ, a = silu⊙ (09), x += a·W2ᵀ
//	MoE:       route (06), group (07), experts: GEMMs per expert (07, 09)
//	           or the persistent kernel (08), x += Σ w·y (07)
//
// then the final norm and the LM head (10). Every projection (·Wᵀ) is a
// cuBLAS GEMM, or step 11's GEMV kernel for up to gemvMaxRows rows (decode).
// The residual stream x is fp32 in both engines; "elem" (the weights and
// the GEMM inputs) is fp32 or bf16.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// CUDAOptions sizes and configures a CUDA engine. Zero fields take defaults.
type CUDAOptions struct {
	// DType is the type of the weights and of every GEMM input: "f32" (the
	// default, which matches the CPU reference within 1e-4) or "bf16" (BF16
	// tensor cores with FP32 accumulation, half the memory).
	DType string
	// MaxBatch is the most sequences run together (default 1).
	MaxBatch int
	// MaxSeq is the most positions of one sequence, prompt and generated
	// tokens together: the length of the caches (default 2048).
	MaxSeq int
	// MaxTokens is the most tokens of one micro-batch (default 8192, and at
	// least MaxBatch). A prefill of B sequences of S tokens runs as
	// micro-batches of MaxTokens/S sequences, two in flight per GPU.
	MaxTokens int
	// MoE chooses how the experts run: "grouped" (tokens grouped by expert,
	// two cuBLAS GEMMs per expert; the host reads the counts each MoE layer),
	// "wgmma" (step 12: every expert in one launch per GEMM, SwiGLU fused; bf16
	// on compute capability 9.0 only), "persistent" (step 08's kernel: no
	// host round trip, CUDA cores), or "" (auto: persistent for up to
	// PersistentMaxPairs (token, expert) pairs in a micro-batch, as in
	// decode; above, wgmma where it runs, else grouped).
	MoE string
	// RoPESignBug compiles step 03 with the sign error of the LFM2
	// development log (ROPE_SIGN_BUG in 03_rope.cu), for the lesson that
	// shows the CPU reference catching it; its CPU twin is RoPESignBug.
	RoPESignBug bool
}

// The MoE paths of CUDAOptions.MoE.
const (
	MoEAuto       = ""
	MoEGrouped    = "grouped"
	MoEWgmma      = "wgmma"
	MoEPersistent = "persistent"
)

// PersistentMaxPairs is the most (token, expert) pairs for which the auto
// MoE path runs the persistent kernel: up to 64 sequences decoding with top-4.
const PersistentMaxPairs = 256

// moeTile is the token rows of one persistent-kernel task (TILE in
// 08_moe_persistent.cu, passed to it as MOE_TILE).
const moeTile = 8

// withDefaults fills the zero fields and checks the rest.
func (o CUDAOptions) withDefaults() (CUDAOptions, error) {
	if o.DType == "" {
		o.DType = "f32"
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 1
	}
	if o.MaxSeq == 0 {
		o.MaxSeq = 2048
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = 8192
	}
	o.MaxTokens = max(o.MaxTokens, o.MaxBatch)
	switch {
	case o.DType != "f32" && o.DType != "bf16":
		return o, fmt.Errorf("lfm2: cuda dtype %q, want \"f32\" or \"bf16\"", o.DType)
	case o.MaxBatch < 0 || o.MaxSeq < 0 || o.MaxTokens < 0:
		return o, fmt.Errorf("lfm2: cuda sizes MaxBatch %d, MaxSeq %d, MaxTokens %d must be positive", o.MaxBatch, o.MaxSeq, o.MaxTokens)
	}
	return o, checkMoEPath(o.MoE)
}

func checkMoEPath(p string) error {
	if p != MoEAuto && p != MoEGrouped && p != MoEWgmma && p != MoEPersistent {
		return fmt.Errorf("lfm2: MoE path %q, want %q, %q, %q or %q (auto)", p, MoEGrouped, MoEWgmma, MoEPersistent, MoEAuto)
	}
	return nil
}

// elemSize is the bytes of one weight or GEMM input.
func (o CUDAOptions) elemSize() int {
	if o.DType == "bf16" {
		return 2
	}
	return 4
}

// gemmType is the cuBLAS type of the weights and GEMM inputs.
func (o CUDAOptions) gemmType() cuda.DataType {
	if o.DType == "bf16" {
		return cuda.R16BF
	}
	return cuda.R32F
}

// CUDAModel is an LFM2 model on one GPU or pipelined over several: a stage
// per GPU, each holding a contiguous range of layers.
type CUDAModel struct {
	c      *Config
	o      CUDAOptions
	stages []*stage
	pos    int // positions already in the caches, the same for every sequence
}

// Config returns the model's config.
func (m *CUDAModel) Config() *Config { return m.c }

// Options returns the engine's options, defaults filled in.
func (m *CUDAModel) Options() CUDAOptions { return m.o }

// SetMoE chooses the MoE path of the next calls (see CUDAOptions.MoE).
func (m *CUDAModel) SetMoE(path string) error {
	if err := checkMoEPath(path); err != nil {
		return err
	}
	m.o.MoE = path
	return nil
}

// Stages describes the pipeline: each GPU's device id and layer range.
func (m *CUDAModel) Stages() []StageInfo {
	out := make([]StageInfo, len(m.stages))
	for i, st := range m.stages {
		out[i] = StageInfo{Device: st.ctx.ID(), From: st.from, To: st.to, P2P: st.p2p}
	}
	return out
}

// StageInfo is one pipeline stage: parts [From, To) of the model on Device,
// where part 2l is layer l's mixer (attention or conv, with its norm) and
// part 2l+1 its feed-forward (dense or MoE, with its norm). A stage usually
// holds whole layers; splitting one between its mixer and its feed-forward
// balances stages finer than a layer does (the residual stream is all that
// passes between them). The first stage also embeds the tokens and the last
// computes the logits. P2P says whether the stage reads the previous one's
// output directly.
type StageInfo struct {
	Device   string
	From, To int
	P2P      bool
}

// String describes the stage as `lab lfm2 bench` prints it, e.g.
// "cuda:1: the feed-forward of layer 12 and layers 13-23, peer copy from
// the previous GPU".
func (st StageInfo) String() string {
	link := ""
	switch {
	case st.From > 0 && st.P2P:
		link = ", peer copy from the previous GPU"
	case st.From > 0:
		link = ", copy through the host"
	}
	return fmt.Sprintf("%s: %s%s", st.Device, partsString(st.From, st.To), link)
}

// partsString names parts [from, to) by layer: "layers 0-11", "layer 4",
// "layers 0-11 and the mixer of layer 12", "the feed-forward of layer 12
// and layers 13-23".
func partsString(from, to int) string {
	var out []string
	if from%2 == 1 && from < to {
		out = append(out, fmt.Sprintf("the feed-forward of layer %d", from/2))
		from++
	}
	tail := ""
	if to%2 == 1 && from < to {
		tail = fmt.Sprintf("the mixer of layer %d", to/2)
		to--
	}
	switch first, last := from/2, to/2-1; {
	case last == first:
		out = append(out, fmt.Sprintf("layer %d", first))
	case last > first:
		out = append(out, fmt.Sprintf("layers %d-%d", first, last))
	}
	if tail != "" {
		out = append(out, tail)
	}
	return strings.Join(out, " and ")
}

// Close frees every device allocation of the model.
func (m *CUDAModel) Close() error {
	var errs []error
	for _, st := range m.stages {
		errs = append(errs, st.free())
	}
	m.stages = nil
	return errors.Join(errs...)
}

// kernelSet is every compiled kernel of one engine on one device.
type kernelSet struct {
	convertElem, convertF32, fillElem, fillF32       *cuda.Function
	embed, rmsnorm, qkNormRope, attention, shortConv *cuda.Function
	route, moeOffsets, moeScatter, moeCombine        *cuda.Function
	moeGateUp, moeDown, swiglu, argmax               *cuda.Function
	gemv1, gemv8                                     *cuda.Function
	sms, gateUpBlocks, downBlocks                    int // persistent grids, see persistentGrid
	// Step 12, the grouped wgmma GEMMs: nil where they cannot run (see hasWgmma).
	moeGateUpWgmma, moeDownWgmma *cuda.Function
}

// hasWgmma reports whether step 12's kernels run for c in dtype on a device
// with props: wgmma and TMA need sm_90a exactly, the kernels read bf16, and
// TMA needs rows of a multiple of 16 bytes (H and IM multiples of 8).
func hasWgmma(props cuda.Properties, c *Config, dtype string) bool {
	return props.Major == 9 && props.Minor == 0 && dtype == "bf16" && c.Hidden%8 == 0 && c.MoEIntermediate%8 == 0
}

// compileKernels builds the lfm2 kernels for c's shapes and dtype on ctx.
func compileKernels(ctx *cuda.Context, c *Config, o CUDAOptions) (*kernelSet, error) {
	opts := append(elemOptions(o.DType), fmt.Sprintf("-DHEAD_DIM=%d", c.HeadDim), fmt.Sprintf("-DCONV_L=%d", c.ConvL))
	if o.RoPESignBug { // read by 03_rope.cu alone
		opts = append(opts, "-DROPE_SIGN_BUG=1")
	}
	props := ctx.Properties()
	k := &kernelSet{sms: props.SMs}
	type kernelFile struct {
		file  string
		names []string
		dst   []**cuda.Function
		arch  string // --gpu-architecture, if not the device's own
	}
	files := []kernelFile{
		{"00_weights", []string{"convert_elem", "convert_f32", "fill_normal_elem", "fill_normal_f32"},
			[]**cuda.Function{&k.convertElem, &k.convertF32, &k.fillElem, &k.fillF32}, ""},
		{"01_embedding", []string{"embed"}, []**cuda.Function{&k.embed}, ""},
		{"02_rmsnorm", []string{"rmsnorm"}, []**cuda.Function{&k.rmsnorm}, ""},
		{"03_rope", []string{"qk_norm_rope"}, []**cuda.Function{&k.qkNormRope}, ""},
		{"04_attention", []string{"attention"}, []**cuda.Function{&k.attention}, ""},
		{"05_conv", []string{"short_conv"}, []**cuda.Function{&k.shortConv}, ""},
		{"06_router", []string{"route"}, []**cuda.Function{&k.route}, ""},
		{"07_moe_group", []string{"moe_offsets", "moe_scatter", "moe_combine"},
			[]**cuda.Function{&k.moeOffsets, &k.moeScatter, &k.moeCombine}, ""},
		{"08_moe_persistent", []string{"moe_gate_up", "moe_down"}, []**cuda.Function{&k.moeGateUp, &k.moeDown}, ""},
		{"09_swiglu", []string{"swiglu"}, []**cuda.Function{&k.swiglu}, ""},
		{"10_lm_head", []string{"argmax_rows"}, []**cuda.Function{&k.argmax}, ""},
		{"11_gemv", []string{"gemv_1", "gemv_8"}, []**cuda.Function{&k.gemv1, &k.gemv8}, ""},
	}
	if hasWgmma(props, c, o.DType) {
		files = append(files, kernelFile{"12_moe_wgmma", []string{"moe_gate_up_wgmma", "moe_down_wgmma"},
			[]**cuda.Function{&k.moeGateUpWgmma, &k.moeDownWgmma}, "--gpu-architecture=sm_90a"})
	}
	for _, f := range files {
		fileOpts := opts
		if f.arch != "" {
			fileOpts = append(slices.Clone(opts), f.arch)
		}
		mod, err := compileFile(ctx, f.file, fileOpts)
		if err != nil {
			return nil, err
		}
		for i, n := range f.names {
			if *f.dst[i], err = mod.Function(n); err != nil {
				return nil, fmt.Errorf("lfm2: %w", err)
			}
		}
	}
	var err error
	if k.gateUpBlocks, err = persistentGrid(k.moeGateUp, k.sms); err != nil {
		return nil, err
	}
	if k.downBlocks, err = persistentGrid(k.moeDown, k.sms); err != nil {
		return nil, err
	}
	return k, nil
}

// elemOptions are the defines every kernel file reads: the element type
// (LFM2_BF16) and the MoE token tile (MOE_TILE).
func elemOptions(dtype string) []string {
	bf16 := 0
	if dtype == "bf16" {
		bf16 = 1
	}
	return []string{fmt.Sprintf("-DLFM2_BF16=%d", bf16), fmt.Sprintf("-DMOE_TILE=%d", moeTile)}
}

// compileFile compiles kernels/cuda/lfm2/<file>.cu with opts.
func compileFile(ctx *cuda.Context, file string, opts []string) (*cuda.Module, error) {
	name := "lfm2/" + file
	src, err := kernels.CUDA(name)
	if err != nil {
		return nil, err
	}
	mod, err := ctx.Compile(cuda.Source{Name: name + ".cu", Code: src, Headers: kernels.CUDAFamily.Headers(), Options: opts})
	if err != nil {
		return nil, fmt.Errorf("lfm2: compile %s for %s: %w", name, ctx.ID(), err)
	}
	return mod, nil
}

// persistentGrid is how many blocks of a persistent kernel fit on the GPU at
// once: that many and no more, so that no block waits for a free SM. The
// driver's occupancy query gives the limit of threads and registers (the
// kernels use no shared memory).
func persistentGrid(f *cuda.Function, sms int) (int, error) {
	per, err := f.MaxActiveBlocksPerSM(persistentThreads, 0)
	if err != nil {
		return 0, fmt.Errorf("lfm2: %w", err)
	}
	return sms * max(1, per), nil
}

// persistentThreads is the block of the persistent kernels (WARPS·32).
const persistentThreads = 256

// Bytes is a device memory budget, split by what it holds.
type Bytes struct {
	Weights, Caches, Activations int64
}

// Total is the sum of the parts.
func (b Bytes) Total() int64 { return b.Weights + b.Caches + b.Activations }

func (b Bytes) String() string {
	return fmt.Sprintf("%s (weights %s, caches %s, activations %s)", gib(b.Total()), gib(b.Weights), gib(b.Caches), gib(b.Activations))
}

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// layerWeightBytes is the device memory of layer l's weights.
func layerWeightBytes(c *Config, o CUDAOptions, l int) int64 {
	es, f32 := int64(o.elemSize()), int64(4)
	h, hd := int64(c.Hidden), int64(c.HeadDim)
	n := 2 * h * f32 // operator_norm, ffn_norm
	if c.IsAttention(l) {
		n += (int64(c.Heads+2*c.KVHeads)*hd*h+h*int64(c.Heads)*hd)*es + 2*hd*f32
	} else {
		n += 4*h*h*es + h*int64(c.ConvL)*f32
	}
	if c.IsMoE(l) {
		e, im := int64(c.Experts), int64(c.MoEIntermediate)
		n += e*3*im*h*es + e*h*f32 + e*f32
	} else {
		n += 3 * int64(c.Intermediate) * h * es
	}
	return n
}

// layerBytes is the device memory of layer l's weights and caches.
func layerBytes(c *Config, o CUDAOptions, l int) (weights, caches int64) {
	f32 := int64(4)
	if c.IsAttention(l) {
		caches = 2 * int64(o.MaxBatch) * int64(c.KVHeads) * int64(o.MaxSeq) * int64(c.HeadDim) * f32
	} else {
		caches = int64(o.MaxBatch) * int64(c.ConvL-1) * int64(c.Hidden) * f32
	}
	return layerWeightBytes(c, o, l), caches
}

// stageBytes is the device memory of a stage holding layers [first, last).
func stageBytes(c *Config, o CUDAOptions, first, last int, embed, head bool) Bytes {
	es, f32 := int64(o.elemSize()), int64(4)
	h, v := int64(c.Hidden), int64(c.Vocab)
	var b Bytes
	for l := first; l < last; l++ {
		w, cache := layerBytes(c, o, l)
		b.Weights += w
		b.Caches += cache
	}
	b.Caches += int64(o.MaxSeq) * int64(c.HeadDim) * f32 // the RoPE table
	if embed {
		b.Weights += v * h * es
	}
	if head {
		b.Weights += h * f32
		if !embed || !c.TiedEmbeddings {
			b.Weights += v * h * es
		}
	}
	b.Activations = lanes * laneSizes(c, o, head).bytes(es)
	return b
}

// lanes is the micro-batches a stage runs at once, each with its own
// activations and stream, so that one's copies and host waits overlap the
// other's kernels.
const lanes = 2

// laneElems is the element counts of one lane's buffers.
type laneElems struct {
	tokens, x, xn, big, act, q, gath, pairs, meta, logits, load int64
}

// laneSizes is the buffer sizes of one lane for micro-batches of up to
// MaxTokens tokens.
func laneSizes(c *Config, o CUDAOptions, head bool) laneElems {
	t, h, hd := int64(o.MaxTokens), int64(c.Hidden), int64(c.HeadDim)
	qkv, attn := int64(c.Heads+2*c.KVHeads)*hd, int64(c.Heads)*hd
	p := t * int64(c.ExpertsPerToken)
	im := int64(c.MoEIntermediate)
	s := laneElems{tokens: t, x: t * h, xn: t * h, q: t * attn,
		big:  max(t*qkv, t*3*h, t*2*int64(c.Intermediate), p*2*im, p*h),
		act:  max(t*attn, t*h, t*int64(c.Intermediate), p*im),
		gath: p * h, pairs: max(p, 1), meta: int64(4*c.Experts + 2), load: int64(c.Layers * max(c.Experts, 1))}
	if head {
		s.logits = int64(logitRows(o)) * int64(c.Vocab)
	}
	return s
}

// bytes is the lane's total device memory.
func (s laneElems) bytes(es int64) int64 {
	f32 := int64(4)
	return (s.tokens+s.pairs*4+s.meta+s.load)*4 + (s.x+s.big+s.q+s.logits)*f32 + (s.xn+s.act+s.gath)*es
}

// headRows is the most rows of logits computed at once when every position's
// logits are wanted (they go to the host in slices of this many rows).
const headRows = 256

// logitRows is the rows of a lane's logits buffer: every sequence's last
// position, or a slice of all positions.
func logitRows(o CUDAOptions) int { return max(o.MaxBatch, min(o.MaxTokens, headRows)) }

// checkFits returns an error if the stage's memory exceeds what is free on
// its device, saying how much is needed and what would help.
func checkFits(ctx *cuda.Context, need Bytes, layers string, gpus int) error {
	free, total, err := ctx.MemInfo()
	if err != nil {
		return fmt.Errorf("lfm2: %w", err)
	}
	if uint64(need.Total()) <= free {
		return nil
	}
	hint := "lower MaxTokens, MaxBatch or MaxSeq, or use bf16"
	if gpus == 1 {
		hint = "run it as a pipeline over several GPUs (NewPipeline, lab --device all-gpus), or " + hint
	}
	return fmt.Errorf("lfm2: %s on %s needs %s but %s of %s are free: %s",
		layers, ctx.ID(), need, gib(int64(free)), gib(int64(total)), hint)
}

// ropeTable is cos and sin of every position and frequency, [maxSeq][d/2]
// pairs, computed exactly as forward.go's rope does.
func ropeTable(c *Config, maxSeq int) []float32 {
	d, half := c.HeadDim, c.HeadDim/2
	out := make([]float32, 0, maxSeq*d)
	for pos := range maxSeq {
		for i := range half {
			invFreq := float32(1 / math.Pow(c.RopeTheta, float64(2*i)/float64(d)))
			ang := float64(float32(pos) * invFreq)
			out = append(out, float32(math.Cos(ang)), float32(math.Sin(ang)))
		}
	}
	return out
}

// maxExperts is the most experts the router's selection handles (each lane
// of a warp marks its chosen experts in a 32-bit mask: 06_router.cu).
const maxExperts = 32 * 32

// checkCUDAConfig rejects configs the kernels cannot run.
func checkCUDAConfig(c *Config) error {
	var bad []string
	if c.HeadDim%2 != 0 || c.HeadDim > 256 {
		bad = append(bad, fmt.Sprintf("head_dim %d (want even, at most 256)", c.HeadDim))
	}
	if c.ConvL < 1 || c.ConvL > 16 {
		bad = append(bad, fmt.Sprintf("conv_L_cache %d (want 1 to 16)", c.ConvL))
	}
	if c.Experts > maxExperts {
		bad = append(bad, fmt.Sprintf("num_experts %d (want at most %d)", c.Experts, maxExperts))
	}
	if len(bad) > 0 {
		return fmt.Errorf("lfm2: the CUDA engine cannot run this config: %s", strings.Join(bad, ", "))
	}
	return nil
}
