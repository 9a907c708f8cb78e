package kmeans

import (
	"fmt"
	"time"

	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// Variants are the GPU passes, each an assignment kernel and an update:
//
//	naive            01 thread per point            + 06 sorted update
//	chunked          02 centers in shared chunks    + 06 sorted update
//	block_per_point  03 block per point             + 06 sorted update
//	gemm_atomic      04 GEMM with fused argmin      + 05 atomic update
//	gemm_sorted      04 GEMM with fused argmin      + 06 sorted update
//	fused            07 GEMM, argmin and partial sums in one kernel
//	gemm_pipelined   08 GEMM with a cp.async pipeline + 09 shared-memory update
//	tensor_3xtf32    10 the same on tensor cores (3xTF32) + 09 shared-memory update
//
// The first four compare assignments under one update; gemm_atomic,
// gemm_sorted and fused compare updates under one assignment; the last two
// pair the fastest update with the GEMM on FP32 lanes and on tensor cores.
var Variants = []string{"naive", "chunked", "block_per_point", "gemm_atomic", "gemm_sorted", "fused", "gemm_pipelined", "tensor_3xtf32"}

// GPUOptions configures FitCUDA.
type GPUOptions struct {
	Variant string // one of Variants (default "tensor_3xtf32")
	TPB     int    // threads per block of the naive, chunked and block_per_point kernels (default 256)
	// Batch, if > 0, streams X from pinned host memory in batches of this
	// many rows through two device buffers on two streams, even when X
	// would fit on the device. 0: X is resident when it fits, and streamed
	// in the largest batches that fit otherwise.
	Batch int
}

// Span is one copy or kernel of a streamed iteration, for a timeline.
type Span struct {
	Stream     int
	Kind       string // "copy" or "compute"
	Batch      int
	Start, End time.Duration // from the start of the iteration
}

// PhaseTime is the GPU time of one phase of a resident iteration.
type PhaseTime struct {
	Name string
	Time time.Duration
}

// GPUStats are the measurements of a FitCUDA run.
type GPUStats struct {
	Variant     string
	Resident    bool // X stayed on the device (else it was streamed)
	Batch       int  // rows per streamed batch
	PerIter     []time.Duration
	Timeline    []Span      // the last iteration's copies and kernels, when streamed
	Phases      []PhaseTime // the last iteration's phases, when resident
	XBytes      int64       // bytes of X moved per iteration
	DeviceBytes int         // device memory held
}

// FitCUDA runs Lloyd's algorithm with the GPU pass opt.Variant on ctx. The
// initial centers, the loop and the empty-cluster rule are those of Fit.
func FitCUDA(ctx *cuda.Context, data Data, cfg Config, opt GPUOptions) (*Result, *GPUStats, error) {
	g, err := NewGPU(ctx, data, cfg.K, opt)
	if err != nil {
		return nil, nil, err
	}
	defer g.Close()
	r, err := g.Fit(cfg)
	if err != nil {
		return nil, nil, err
	}
	return r, g.Stats(), nil
}

// GPU holds data on (or streaming to) a device, ready for any number of
// runs with K clusters: the benchmarks pay the upload once.
type GPU struct{ p *gpuPass }

// NewGPU checks the data (no NaN or Inf), compiles the variant's kernels,
// and uploads X, or pins it in host memory for streaming.
func NewGPU(ctx *cuda.Context, data Data, k int, opt GPUOptions) (*GPU, error) {
	n, d := data.Dims()
	if err := (&Config{K: k}).check(n, d); err != nil {
		return nil, err
	}
	if err := checkFinite(data); err != nil {
		return nil, err
	}
	p, err := newGPUPass(ctx, data, k, opt)
	if err != nil {
		return nil, err
	}
	return &GPU{p}, nil
}

// Fit runs Lloyd's algorithm; cfg.K must be the K the GPU was made for.
func (g *GPU) Fit(cfg Config) (*Result, error) {
	n, d := g.p.data.Dims()
	if cfg.K != g.p.k {
		return nil, fmt.Errorf("kmeans: this GPU run was prepared for K = %d, not %d", g.p.k, cfg.K)
	}
	if err := cfg.check(n, d); err != nil {
		return nil, err
	}
	centers, err := initialCenters(g.p.data, cfg)
	if err != nil {
		return nil, err
	}
	g.p.stats.PerIter = g.p.stats.PerIter[:0]
	return lloyd(g.p, cfg.K, d, centers, cfg)
}

// Assign runs one assignment pass with the given centers (no update) and
// returns the labels and the inertia.
func (g *GPU) Assign(centers []float32) ([]int32, float64, error) {
	if len(centers) != g.p.k*g.p.d {
		return nil, 0, fmt.Errorf("kmeans: %d center values for K = %d centers of %d dimensions", len(centers), g.p.k, g.p.d)
	}
	_, _, inertia, err := g.p.assign(centers)
	if err != nil {
		return nil, 0, err
	}
	labels, err := g.p.labels()
	return labels, inertia, err
}

// Stats returns the measurements of the last Fit.
func (g *GPU) Stats() *GPUStats {
	s := g.p.stats
	s.PerIter = append([]time.Duration(nil), s.PerIter...)
	s.Timeline = append([]Span(nil), s.Timeline...)
	return &s
}

// MeanIter is the mean time of an assignment-and-update pass.
func (s *GPUStats) MeanIter() time.Duration {
	if len(s.PerIter) == 0 {
		return 0
	}
	var t time.Duration
	for _, d := range s.PerIter {
		t += d
	}
	return t / time.Duration(len(s.PerIter))
}

// Close releases the device and pinned memory.
func (g *GPU) Close() { g.p.close() }

type gpuPass struct {
	ctx      *cuda.Context
	data     Data
	n, d, k  int
	opt      GPUOptions
	stats    GPUStats
	mods     map[string]*cuda.Module
	bufs     []*cuda.Buffer
	host     *cuda.HostBuffer // X in pinned memory, when streamed
	streams  [2]*cuda.Stream
	x        [2]*cuda.Buffer // X (resident: x[0] holds all of it) or the two batch buffers
	centers  *cuda.Buffer
	cn       *cuda.Buffer
	xn       *cuda.Buffer // steps 08 and 10: |x|² of every point, computed once (resident) or per batch
	lab      *cuda.Buffer
	dist     *cuda.Buffer
	sums     *cuda.Buffer
	counts   *cuda.Buffer
	inertia  *cuda.Buffer
	order    *cuda.Buffer    // sorted update: point indices by label
	cursor   [2]*cuda.Buffer // sorted update: per-stream offsets
	bcounts  [2]*cuda.Buffer // sorted update: per-batch counts
	partial  [2]*cuda.Buffer // fused: per-block partial sums, per stream
	blocks   int             // fused: persistent blocks
	lastDist []float32
	marks    []phaseMark // resident iterations: events between phases
}

type phaseMark struct {
	name string
	ev   *cuda.Event
}

func newGPUPass(ctx *cuda.Context, data Data, k int, opt GPUOptions) (p *gpuPass, err error) {
	n, d := data.Dims()
	if opt.Variant == "" {
		opt.Variant = "tensor_3xtf32"
	}
	if opt.TPB == 0 {
		opt.TPB = 256
	}
	if !contains(Variants, opt.Variant) {
		return nil, fmt.Errorf("kmeans: unknown GPU variant %q (have %v)", opt.Variant, Variants)
	}
	if opt.TPB%32 != 0 || opt.TPB < 32 || opt.TPB > 1024 {
		return nil, fmt.Errorf("kmeans: %d threads per block: want a multiple of 32 from 32 to 1024", opt.TPB)
	}
	if opt.Variant == "block_per_point" && d > 48*opt.TPB {
		return nil, fmt.Errorf("kmeans: block_per_point keeps at most 48 dimensions per thread: D = %d needs TPB >= %d", d, (d+47)/48)
	}
	if opt.Batch < 0 {
		return nil, fmt.Errorf("kmeans: batch of %d rows", opt.Batch)
	}
	q := &gpuPass{ctx: ctx, data: data, n: n, d: d, k: k, opt: opt, mods: map[string]*cuda.Module{}}
	p = q
	p.stats.Variant = opt.Variant
	defer func() {
		if err != nil {
			q.close()
		}
	}()
	alloc := func(bytes int) *cuda.Buffer {
		if err != nil {
			return nil
		}
		var b *cuda.Buffer
		if b, err = ctx.Alloc(max(bytes, 4)); err == nil {
			p.bufs = append(p.bufs, b)
			p.stats.DeviceBytes += b.Size()
		}
		return b
	}
	kd := k * d
	p.centers, p.cn, p.sums = alloc(4*kd), alloc(4*max(k, 32)), alloc(4*kd)
	p.counts, p.inertia = alloc(4*k), alloc(8)
	p.lab, p.dist = alloc(4*n), alloc(4*n)
	switch opt.Variant {
	case "gemm_pipelined", "tensor_3xtf32":
		if 2*4*32*k > ctx.Properties().SharedPerBlockOptin {
			return nil, fmt.Errorf("kmeans: %s keeps 2×K×32 floats in shared memory; K = %d is too large for %s (use gemm_sorted)", opt.Variant, k, ctx.ID())
		}
		p.xn = alloc(4 * n)
	case "gemm_atomic", "fused":
	default:
		p.order = alloc(4 * n)
	}
	for s := range 2 {
		p.cursor[s], p.bcounts[s] = alloc(4*k), alloc(4*k)
	}
	if opt.Variant == "fused" {
		f, ferr := p.function("07_fused", "assign_fused")
		if ferr != nil {
			return nil, ferr
		}
		perSM, ferr := f.MaxActiveBlocksPerSM(256, 4*k)
		if ferr != nil {
			return nil, ferr
		}
		p.blocks = max(1, perSM) * ctx.Properties().SMs
		for s := range 2 {
			p.partial[s] = alloc(4 * p.blocks * kd)
		}
	}
	if err != nil {
		return nil, err
	}
	// X: resident if it fits with room to spare, else streamed.
	free, _, err := ctx.MemInfo()
	if err != nil {
		return nil, err
	}
	rowBytes := 4 * d
	xBytes := int64(n) * int64(rowBytes)
	p.stats.XBytes = xBytes
	if opt.Batch == 0 && xBytes <= int64(free)*9/10 {
		p.stats.Resident = true
		if p.x[0] = alloc(int(xBytes)); err != nil {
			return nil, err
		}
		if err := p.uploadResident(); err != nil {
			return nil, err
		}
		if p.xn != nil { // X never changes: its norms are computed once
			return p, p.rowNorms(p.x[0].Ptr(), 0, n, nil)
		}
		return p, nil
	}
	batch := opt.Batch
	if fits := int(int64(free) * 8 / 10 / int64(2*rowBytes)); batch == 0 || batch > fits {
		if batch > fits {
			return nil, fmt.Errorf("kmeans: two batches of %d rows (%d bytes) do not fit in %d free bytes of %s; %d rows do",
				batch, 2*batch*rowBytes, free, ctx.ID(), fits)
		}
		batch = fits
	}
	batch = max(1, min(batch, n))
	p.stats.Batch = batch
	for s := range 2 {
		if p.x[s] = alloc(batch * rowBytes); err != nil {
			return nil, err
		}
		if p.streams[s], err = ctx.NewStream(); err != nil {
			return nil, err
		}
	}
	if p.host, err = ctx.AllocHost(int(xBytes)); err != nil {
		return nil, fmt.Errorf("kmeans: %d bytes of pinned host memory for streaming: %w", xBytes, err)
	}
	hx := cuda.HostSlice[float32](p.host)
	for start := 0; start < n; start += rowChunk {
		m := min(rowChunk, n-start)
		if err := data.Rows(start, m, hx[start*d:(start+m)*d]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// uploadResident copies X to the device in chunks.
func (p *gpuPass) uploadResident() error {
	buf := make([]float32, rowChunk*p.d)
	for start := 0; start < p.n; start += rowChunk {
		m := min(rowChunk, p.n-start)
		if err := p.data.Rows(start, m, buf); err != nil {
			return err
		}
		if err := cuda.CopyHtoDAt(p.x[0], 4*start*p.d, buf[:m*p.d]); err != nil {
			return err
		}
	}
	return nil
}

func (p *gpuPass) close() {
	for _, m := range p.marks {
		m.ev.Destroy()
	}
	for _, b := range p.bufs {
		b.Free()
	}
	for _, s := range p.streams {
		s.Destroy()
	}
	p.host.Free()
	for _, m := range p.mods {
		m.Unload()
	}
}

// function compiles (once) a kernel file of kernels/cuda/kmeans.
func (p *gpuPass) function(file, name string) (*cuda.Function, error) {
	mod, ok := p.mods[file]
	if !ok {
		src, err := kernels.CUDA("kmeans/" + file)
		if err != nil {
			return nil, err
		}
		var opts []string
		switch file { // specialized for this K and D
		case "08_gemm_pipelined":
			opts = []string{fmt.Sprintf("-DKT=%d", p.centerTile(4)/4)}
		case "10_tensor_3xtf32":
			opts = []string{fmt.Sprintf("-DNT=%d", p.centerTile(8)/8)}
		}
		if opts != nil {
			opts = append(opts, fmt.Sprintf("-DVEC=%d", boolInt(p.d%4 == 0)), fmt.Sprintf("-DBK=%d", pipelineBK), fmt.Sprintf("-DSTAGES=%d", pipelineStages))
		}
		mod, err = p.ctx.Compile(cuda.Source{Name: "kmeans/" + file + ".cu", Code: src, Headers: kernels.CUDAFamily.Headers(), Options: opts})
		if err != nil {
			return nil, err
		}
		p.mods[file] = mod
	}
	return mod.Function(name)
}

func (p *gpuPass) launch(file, name string, cfg cuda.LaunchConfig, args ...any) error {
	f, err := p.function(file, name)
	if err != nil {
		return err
	}
	return f.Launch(cfg, args...)
}

// assignFile is the kernel file of the variant's assignment; it also has
// common.cuh's kernels.
func (p *gpuPass) assignFile() string {
	switch p.opt.Variant {
	case "naive":
		return "01_naive"
	case "chunked":
		return "02_chunked"
	case "block_per_point":
		return "03_block_per_point"
	case "fused":
		return "07_fused"
	case "gemm_pipelined":
		return "08_gemm_pipelined"
	case "tensor_3xtf32":
		return "10_tensor_3xtf32"
	}
	return "04_gemm_argmin"
}

// centerTile is the center tile of steps 08 and 10: a multiple of unit, at
// most 32, such that the fewest tiles cover K with the least padding. K = 25:
// 28 centers for step 08 (unit 4), 32 for step 10 (unit 8).
func (p *gpuPass) centerTile(unit int) int {
	tiles := (p.k + 31) / 32
	return unit * ((p.k + unit*tiles - 1) / (unit * tiles))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The tile pipeline of steps 08 and 10 (kernels/cuda/kmeans/pipeline.cuh):
// 512 points per block, and stages of BK dimensions, each holding a row of
// BK+4 floats for each point and center of the tile.
const pipelineBM, pipelineBK, pipelineStages = 512, 32, 2

// rowNorms computes |x|² of rows [start, start+m), held in x, into xn.
func (p *gpuPass) rowNorms(x cuda.DevicePtr, start, m int, s *cuda.Stream) error {
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: (m + 7) / 8}, Block: cuda.Dim3{X: 256}, Stream: s}
	return p.launch(p.assignFile(), "row_norms", cfg, x, m, p.d, at(p.xn, 4*start))
}

// updateAtomic launches step 05 on rows [start, start+m), held in x.
func (p *gpuPass) updateAtomic(x cuda.DevicePtr, start, m int, s *cuda.Stream) error {
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: min(65535*4, (m*p.d+255)/256)}, Block: cuda.Dim3{X: 256}, Stream: s}
	return p.launch("05_update_atomic", "update_atomic", cfg, x, at(p.lab, 4*start), m, p.d, p.sums)
}

// updateShared launches step 09: blocks of up to 256 dimensions (fewer
// when K is large, so that the two K-row tables fit in 96 KiB; at least 32),
// and rows split so that the grid is one wave of as many blocks per SM as
// fit (at most 8).
func (p *gpuPass) updateShared(x cuda.DevicePtr, start, m int, s *cuda.Stream) error {
	d, k := p.d, p.k
	threads := 256
	for threads > 32 && 2*k*threads*4 > 96<<10 {
		threads /= 2
	}
	smem := 2 * k * threads * 4 // the sums and the centers, K × threads each
	gx := (d + threads - 1) / threads
	perSM := min(8, p.ctx.Properties().SharedPerSM/(smem+1024))
	gy := max(1, perSM*p.ctx.Properties().SMs/gx)
	rows := ((m+gy-1)/gy + 7) / 8 * 8
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: (m + rows - 1) / rows}, Block: cuda.Dim3{X: threads}, SharedMem: smem, Stream: s}
	return p.launch("09_update_shared", "update_shared", cfg, x, at(p.lab, 4*start), p.centers, m, d, k, rows, p.sums, p.inertia)
}

func at(b *cuda.Buffer, byteOffset int) cuda.DevicePtr { return b.Ptr() + cuda.DevicePtr(byteOffset) }

// kc is how many whole centers fit in the shared memory of a block.
func (p *gpuPass) kc() int {
	return max(1, min(p.k, 32, p.ctx.Properties().SharedPerBlockOptin/(4*p.d)-1))
}

// batchPass runs the assignment and the update's per-batch work for rows
// [start, start+m) held in x, on stream s.
func (p *gpuPass) batchPass(x cuda.DevicePtr, start, m int, s *cuda.Stream, si int) error {
	d, k := p.d, p.k
	lab, dist := at(p.lab, 4*start), at(p.dist, 4*start)
	grid := func(blocks, threads, smem int) cuda.LaunchConfig {
		return cuda.LaunchConfig{Grid: cuda.Dim3{X: max(1, blocks)}, Block: cuda.Dim3{X: threads}, SharedMem: smem, Stream: s}
	}
	tpb := p.opt.TPB
	var err error
	switch p.opt.Variant {
	case "naive":
		err = p.launch("01_naive", "assign_naive", grid((m+tpb-1)/tpb, tpb, 0), x, p.centers, m, d, k, lab, dist)
	case "chunked":
		err = p.launch("02_chunked", "assign_chunked", grid((m+tpb-1)/tpb, tpb, 4*p.kc()*d), x, p.centers, m, d, k, p.kc(), lab, dist)
	case "block_per_point":
		err = p.launch("03_block_per_point", "assign_block", grid(m, tpb, 4*p.kc()*d), x, p.centers, m, d, k, p.kc(), lab, dist)
	case "gemm_atomic", "gemm_sorted":
		err = p.launch("04_gemm_argmin", "assign_gemm", grid((m+255)/256, 256, 0), x, p.centers, p.cn, m, d, k, lab, dist)
	case "fused":
		err = p.launch("07_fused", "assign_fused", grid(min(p.blocks, (m+255)/256), 256, 4*k), x, p.centers, p.cn, m, d, k, lab, dist, p.partial[si])
	case "gemm_pipelined", "tensor_3xtf32":
		if !p.stats.Resident { // a new batch: its norms
			if err := p.rowNorms(x, start, m, s); err != nil {
				return err
			}
		}
		name, unit := "assign_pipelined", 4
		if p.opt.Variant == "tensor_3xtf32" {
			name, unit = "assign_3xtf32", 8
		}
		smem := pipelineStages * (pipelineBM + p.centerTile(unit)) * (pipelineBK + 4) * 4
		err = p.launch(p.assignFile(), name, grid((m+pipelineBM-1)/pipelineBM, 256, smem), x, at(p.xn, 4*start), p.centers, p.cn, m, d, k, lab, dist)
	}
	if err != nil {
		return err
	}
	if err := p.mark("assignment ("+p.assignFile()+")", s); err != nil {
		return err
	}
	// Counts and inertia (per batch for the sorted update's offsets).
	counts := p.counts
	if p.order != nil {
		counts = p.bcounts[si]
		if err := counts.Memset(0, s); err != nil {
			return err
		}
	}
	inertia := p.inertia.Ptr()
	if p.xn != nil { // steps 08 and 10: the update measures the inertia exactly
		inertia = 0
	}
	if err := p.launch(p.assignFile(), "inertia_and_counts", grid(min(1024, (m+255)/256), 256, 4*k), dist, lab, m, k, inertia, counts); err != nil {
		return err
	}
	if err := p.mark("counts and inertia", s); err != nil {
		return err
	}
	switch p.opt.Variant {
	case "gemm_atomic":
		return p.updateAtomic(x, start, m, s)
	case "fused":
		return nil
	case "gemm_pipelined", "tensor_3xtf32":
		return p.updateShared(x, start, m, s)
	}
	// Sorted: offsets from the batch counts (and add them to the totals),
	// scatter the batch's point indices, reduce the segments.
	if err := p.launch("06_update_sorted", "batch_offsets", grid(1, 32, 0), p.bcounts[si], k, p.cursor[si], p.counts); err != nil {
		return err
	}
	order := at(p.order, 4*start)
	if err := p.launch("06_update_sorted", "order_by_label", grid((m+255)/256, 256, 0), lab, m, p.cursor[si], order); err != nil {
		return err
	}
	cfg := grid((d+255)/256, 256, 0)
	cfg.Grid.Y = (m + 1023) / 1024
	return p.launch("06_update_sorted", "segment_sums", cfg, x, order, lab, m, d, p.sums)
}

// mark ends a phase of a resident iteration (streams: no marks; their
// timeline has the copies and kernels instead).
func (p *gpuPass) mark(name string, s *cuda.Stream) error {
	if s != nil {
		return nil
	}
	ev, err := p.ctx.NewEvent()
	if err != nil {
		return err
	}
	p.marks = append(p.marks, phaseMark{name, ev})
	return ev.Record(nil)
}

// phases turns the marks of an iteration into PhaseTimes and frees them.
func (p *gpuPass) phases() ([]PhaseTime, error) {
	defer func() {
		for _, m := range p.marks {
			m.ev.Destroy()
		}
		p.marks = p.marks[:0]
	}()
	var out []PhaseTime
	for i := 1; i < len(p.marks); i++ {
		d, err := cuda.Elapsed(p.marks[i-1].ev, p.marks[i].ev)
		if err != nil {
			return nil, err
		}
		out = append(out, PhaseTime{p.marks[i].name, d})
	}
	return out, nil
}

func (p *gpuPass) assign(centers []float32) ([]float64, []int64, float64, error) {
	n, d, k := p.n, p.d, p.k
	start := time.Now()
	if err := p.mark("start", nil); err != nil {
		return nil, nil, 0, err
	}
	if err := cuda.CopyHtoD(p.centers, centers); err != nil {
		return nil, nil, 0, err
	}
	for _, b := range []*cuda.Buffer{p.sums, p.counts, p.inertia, p.partial[0], p.partial[1]} {
		if b != nil {
			if err := b.Memset(0, nil); err != nil {
				return nil, nil, 0, err
			}
		}
	}
	if err := p.launch(p.assignFile(), "center_norms", cuda.LaunchConfig{Grid: cuda.Dim3{X: max(k, 32)}, Block: cuda.Dim3{X: 256}}, p.centers, k, max(k, 32), d, p.cn); err != nil {
		return nil, nil, 0, err
	}
	if err := p.ctx.Synchronize(); err != nil {
		return nil, nil, 0, err
	}
	if err := p.mark("centers up, sums cleared, |c|²", nil); err != nil {
		return nil, nil, 0, err
	}
	if p.stats.Resident {
		if err := p.batchPass(p.x[0].Ptr(), 0, n, nil, 0); err != nil {
			return nil, nil, 0, err
		}
		if err := p.mark("update", nil); err != nil {
			return nil, nil, 0, err
		}
	} else if err := p.stream(); err != nil {
		return nil, nil, 0, err
	}
	if p.opt.Variant == "fused" {
		for s := range 2 {
			if err := p.launch("07_fused", "reduce_partials", cuda.Grid1D(k*d, 256), p.partial[s], p.blocks, k*d, p.sums); err != nil {
				return nil, nil, 0, err
			}
			if p.stats.Resident {
				break
			}
		}
	}
	if err := p.ctx.Synchronize(); err != nil {
		return nil, nil, 0, err
	}
	sums32, err := cuda.Download[float32](p.sums, k*d)
	if err != nil {
		return nil, nil, 0, err
	}
	counts32, err := cuda.Download[int32](p.counts, k)
	if err != nil {
		return nil, nil, 0, err
	}
	in, err := cuda.Download[float64](p.inertia, 1)
	if err != nil {
		return nil, nil, 0, err
	}
	if err := p.mark("reduce, download sums", nil); err != nil {
		return nil, nil, 0, err
	}
	if p.stats.Resident {
		if p.stats.Phases, err = p.phases(); err != nil {
			return nil, nil, 0, err
		}
	} else if _, err := p.phases(); err != nil {
		return nil, nil, 0, err
	}
	p.stats.PerIter = append(p.stats.PerIter, time.Since(start))
	p.lastDist = nil
	sums := make([]float64, k*d)
	for i, v := range sums32 {
		sums[i] = float64(v)
	}
	counts := make([]int64, k)
	for i, v := range counts32 {
		counts[i] = int64(v)
	}
	return sums, counts, in[0], nil
}

// stream runs one iteration over X in batches: batch b is copied on stream
// b%2 into buffer b%2 and processed there, so one stream's copy overlaps the
// other's kernels (the seed's two halves).
func (p *gpuPass) stream() error {
	origin, err := p.ctx.NewEvent()
	if err != nil {
		return err
	}
	defer origin.Destroy()
	if err := origin.Record(nil); err != nil {
		return err
	}
	type mark struct {
		span   Span
		events [3]*cuda.Event
	}
	var marks []mark
	defer func() {
		for _, m := range marks {
			for _, e := range m.events {
				e.Destroy()
			}
		}
	}()
	rowBytes := 4 * p.d
	for b, start := 0, 0; start < p.n; b, start = b+1, start+p.stats.Batch {
		m := min(p.stats.Batch, p.n-start)
		si := b % 2
		s := p.streams[si]
		var ev [3]*cuda.Event
		for i := range ev {
			if ev[i], err = p.ctx.NewEvent(); err != nil {
				return err
			}
		}
		marks = append(marks, mark{Span{Stream: si, Batch: b}, ev})
		if err := ev[0].Record(s); err != nil {
			return err
		}
		if err := cuda.CopyHtoDAsync(p.x[si], 0, p.host, start*rowBytes, m*rowBytes, s); err != nil {
			return err
		}
		if err := ev[1].Record(s); err != nil {
			return err
		}
		if err := p.batchPass(p.x[si].Ptr(), start, m, s, si); err != nil {
			return err
		}
		if err := ev[2].Record(s); err != nil {
			return err
		}
	}
	for _, s := range p.streams {
		if err := s.Synchronize(); err != nil {
			return err
		}
	}
	p.stats.Timeline = p.stats.Timeline[:0]
	for _, m := range marks {
		var t [3]time.Duration
		for i, e := range m.events {
			if t[i], err = cuda.Elapsed(origin, e); err != nil {
				return err
			}
		}
		c := m.span
		c.Kind, c.Start, c.End = "copy", t[0], t[1]
		k := m.span
		k.Kind, k.Start, k.End = "compute", t[1], t[2]
		p.stats.Timeline = append(p.stats.Timeline, c, k)
	}
	return nil
}

func (p *gpuPass) farthest(taken map[int]bool) (int, []float32, error) {
	if p.lastDist == nil {
		var err error
		if p.lastDist, err = cuda.Download[float32](p.dist, p.n); err != nil {
			return 0, nil, err
		}
	}
	best := -1
	for i, v := range p.lastDist {
		if !taken[i] && (best < 0 || v > p.lastDist[best]) {
			best = i
		}
	}
	row := make([]float32, p.d)
	return best, row, p.data.Rows(best, 1, row)
}

func (p *gpuPass) labels() ([]int32, error) { return cuda.Download[int32](p.lab, p.n) }
