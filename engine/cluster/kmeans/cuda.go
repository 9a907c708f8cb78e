package kmeans

import (
	"fmt"
	"time"

	"gpulab/engine/cuda"
	"gpulab/kernels"
)

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
	if err := checkHostMemory(n, d, false); err != nil {
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
	v        gpuVariant // opt.Variant's row of gpuVariants
	stats    GPUStats
	mods     map[string]*cuda.Module
	bufs     []*cuda.Buffer
	host     *cuda.HostBuffer // X in pinned memory, when streamed
	streams  [2]*cuda.Stream
	x        [2]*cuda.Buffer // X (resident: x[0] holds all of it) or the two batch buffers
	centers  *cuda.Buffer
	cn       *cuda.Buffer
	xn       *cuda.Buffer // variants with norms: |x|² of every point, computed once (resident) or per batch
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
	v, ok := variantNamed(opt.Variant)
	if !ok {
		return nil, fmt.Errorf("kmeans: unknown GPU variant %q (have %v)", opt.Variant, Variants)
	}
	if opt.TPB%32 != 0 || opt.TPB < 32 || opt.TPB > 1024 {
		return nil, fmt.Errorf("kmeans: %d threads per block: want a multiple of 32 from 32 to 1024", opt.TPB)
	}
	if opt.Batch < 0 {
		return nil, fmt.Errorf("kmeans: batch of %d rows", opt.Batch)
	}
	q := &gpuPass{ctx: ctx, data: data, n: n, d: d, k: k, opt: opt, v: v, mods: map[string]*cuda.Module{}}
	p = q
	p.stats.Variant = opt.Variant
	if v.check != nil {
		if err := v.check(p); err != nil {
			return nil, err
		}
	}
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
		b, err = p.alloc(bytes)
		return b
	}
	kd := k * d
	p.centers, p.cn, p.sums = alloc(4*kd), alloc(4*max(k, 32)), alloc(4*kd)
	p.counts, p.inertia = alloc(4*k), alloc(8)
	p.lab, p.dist = alloc(4*n), alloc(4*n)
	if v.norms {
		p.xn = alloc(4 * n)
	}
	if err != nil {
		return nil, err
	}
	if v.update.prepare != nil {
		if err := v.update.prepare(p); err != nil {
			return nil, err
		}
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

// uploadResident copies X to the device in chunks.
func (p *gpuPass) uploadResident() error {
	rows := chunkRows(p.n, p.d)
	buf := make([]float32, rows*p.d)
	for start := 0; start < p.n; start += rows {
		m := min(rows, p.n-start)
		if err := p.data.Rows(start, m, buf); err != nil {
			return err
		}
		if err := cuda.CopyHtoDAt(p.x[0], 4*start*p.d, buf[:m*p.d]); err != nil {
			return err
		}
	}
	return nil
}

// alloc allocates device memory that close frees, counted in the stats.
func (p *gpuPass) alloc(bytes int) (*cuda.Buffer, error) {
	b, err := p.ctx.Alloc(max(bytes, 4))
	if err != nil {
		return nil, err
	}
	p.bufs = append(p.bufs, b)
	p.stats.DeviceBytes += b.Size()
	return b, nil
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
		if file == p.v.assign && p.v.options != nil {
			opts = p.v.options(p) // specialized for this K and D
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

// rowNorms computes |x|² of rows [start, start+m), held in x, into xn.
func (p *gpuPass) rowNorms(x cuda.DevicePtr, start, m int, s *cuda.Stream) error {
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: (m + 7) / 8}, Block: cuda.Dim3{X: 256}, Stream: s}
	return p.launch(p.v.assign, "row_norms", cfg, x, m, p.d, at(p.xn, 4*start))
}

func at(b *cuda.Buffer, byteOffset int) cuda.DevicePtr { return b.Ptr() + cuda.DevicePtr(byteOffset) }

// batch is rows [start, start+m) of X, held at x on the device, processed
// on stream s (nil: the default stream, X resident) with the per-stream
// buffers of index si; lab and dist are its labels and distances.
type batch struct {
	x         cuda.DevicePtr
	start, m  int
	s         *cuda.Stream
	si        int
	lab, dist cuda.DevicePtr
}

// grid is a launch of blocks (at least one) of threads on the batch's
// stream.
func (b batch) grid(blocks, threads, smem int) cuda.LaunchConfig {
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: max(1, blocks)}, Block: cuda.Dim3{X: threads}, SharedMem: smem, Stream: b.s}
}

// batchPass runs the assignment and the update's per-batch work for rows
// [start, start+m) held in x, on stream s.
func (p *gpuPass) batchPass(x cuda.DevicePtr, start, m int, s *cuda.Stream, si int) error {
	b := batch{x: x, start: start, m: m, s: s, si: si, lab: at(p.lab, 4*start), dist: at(p.dist, 4*start)}
	if p.v.norms && !p.stats.Resident { // a new batch: its norms
		if err := p.rowNorms(x, start, m, s); err != nil {
			return err
		}
	}
	cfg, args := p.v.launch(p, b)
	if err := p.launch(p.v.assign, p.v.kernel, cfg, args...); err != nil {
		return err
	}
	if err := p.mark("assignment ("+p.v.assign+")", s); err != nil {
		return err
	}
	// Counts and inertia (per batch for the sorted update's offsets).
	counts := p.counts
	if p.v.update.sorted {
		counts = p.bcounts[si]
		if err := counts.Memset(0, s); err != nil {
			return err
		}
	}
	inertia := p.inertia.Ptr()
	if p.v.update.inertia { // the update measures the inertia exactly
		inertia = 0
	}
	if err := p.launch(p.v.assign, "inertia_and_counts", b.grid(min(1024, ceilDiv(m, 256)), 256, 4*p.k), b.dist, b.lab, m, p.k, inertia, counts); err != nil {
		return err
	}
	if err := p.mark("counts and inertia", s); err != nil {
		return err
	}
	if p.v.update.batch == nil {
		return nil
	}
	return p.v.update.batch(p, b)
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
	if err := p.launch(p.v.assign, "center_norms", cuda.LaunchConfig{Grid: cuda.Dim3{X: max(k, 32)}, Block: cuda.Dim3{X: 256}}, p.centers, k, max(k, 32), d, p.cn); err != nil {
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
	if p.v.update.finish != nil {
		if err := p.v.update.finish(p); err != nil {
			return nil, nil, 0, err
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
