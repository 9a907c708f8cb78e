package sparse

import (
	"fmt"
	"math"
	"time"

	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// The CUDA SpGEMM ladder. Each step is one kernel file under
// kernels/cuda/sparse (spgemm_NN_*.cu) plus the host sequence below that
// drives it: the kernels do the arithmetic, the host decides how much memory
// to allocate and which rows go to which kernel.

// GPUSteps lists the ladder's steps, in order.
var GPUSteps = []string{"01_row_per_block", "02_two_phase", "03_shared_hash", "04_binned", "05_outer_product", "06_balanced"}

// HashTable is one hash-kernel configuration: a table of Slots entries per
// row, Threads per block. A row goes to the first table whose Slots/2 is at
// least its bound, so no table is more than half full; rows beyond the last
// table go to the windowed dense kernels.
type HashTable struct{ Slots, Threads int }

// The tables of step 03 (one size for all) and step 04 (binned). They must
// match the kernels that spgemm_03_shared_hash.cu, spgemm_04_binned.cu and
// spgemm_05_outer_product.cu instantiate.
var (
	SharedTables = []HashTable{{4096, 256}}
	BinnedTables = []HashTable{{64, 32}, {128, 32}, {256, 64}, {512, 128}, {1024, 256}, {2048, 256}, {4096, 256}}
)

// Phase is the GPU time of one part of a GPU SpGEMM: a kernel or a host
// round trip, or one bin of rows in the binned steps.
type Phase struct {
	Name string
	Rows int // rows the phase worked on (0: not row-based)
	Time time.Duration
}

// GPUStats describes one GPU SpGEMM run.
type GPUStats struct {
	Step      string
	Phases    []Phase
	Total     time.Duration
	PeakBytes int // device memory allocated beyond A and B, at its highest: C plus workspaces
}

// GPUSpGEMM runs the ladder on one CUDA context. Modules compile once, on
// first use.
type GPUSpGEMM struct {
	// Window is the column width of the windowed dense kernels' blocks
	// (steps 03 and 04), a multiple of 1024 up to 32768; 0 means 16384.
	// Wider windows mean fewer visits to each row of A and fewer, longer
	// blocks per row.
	Window int

	ctx     *cuda.Context
	modules map[string]*cuda.Module
	funcs   map[string]*cuda.Function
	pool    *pool
	side    *cuda.Stream // step 06's second stream (see run.alongside), made on first use
}

// NewGPUSpGEMM prepares the ladder on ctx.
func NewGPUSpGEMM(ctx *cuda.Context) *GPUSpGEMM {
	return &GPUSpGEMM{ctx: ctx, modules: map[string]*cuda.Module{}, funcs: map[string]*cuda.Function{},
		pool: &pool{ctx: ctx, free: map[int][]*cuda.Buffer{}}}
}

// Close unloads the compiled modules and frees the pooled memory.
func (g *GPUSpGEMM) Close() {
	g.side.Destroy()
	for _, m := range g.modules {
		m.Unload()
	}
	g.pool.drain()
}

// Release hands a product's arrays back to the pool for the next
// multiplication (Free would return them to the driver).
func (g *GPUSpGEMM) Release(c cuda.CSR) {
	for _, b := range []*cuda.Buffer{c.RowPtr, c.ColIdx, c.Val} {
		g.pool.put(b)
	}
}

// CuSPARSE computes C = A·B with cuSPARSE, its buffers drawn from the same
// pool and metered the same way as the ladder's, for a like-for-like
// comparison. It returns C and the peak bytes allocated.
func (g *GPUSpGEMM) CuSPARSE(sp *cuda.Sparse, a, b cuda.CSR) (cuda.CSR, int, error) {
	m := &meter{pool: g.pool}
	c, err := sp.SpGEMM(a, b, m.alloc, m.release)
	return c, m.peak, err
}

func (g *GPUSpGEMM) window() int {
	if g.Window == 0 {
		return 16384 // 16384 and 8192 were within 6% on R-MAT; 32768 was 1.5x slower
	}
	return g.Window
}

func (g *GPUSpGEMM) function(step, name string) (*cuda.Function, error) {
	w := g.window()
	if w%1024 != 0 || w < 1024 || w > 32768 {
		return nil, fmt.Errorf("sparse: window %d is not a multiple of 1024 in [1024, 32768]", w)
	}
	modKey := fmt.Sprintf("%s/window=%d", step, w)
	key := modKey + "." + name
	if f, ok := g.funcs[key]; ok {
		return f, nil
	}
	mod, ok := g.modules[modKey]
	if !ok {
		file := "sparse/spgemm_" + step
		src, err := kernels.CUDA(file)
		if err != nil {
			return nil, err
		}
		mod, err = g.ctx.Compile(cuda.Source{Name: file + ".cu", Code: src, Headers: kernels.CUDAFamily.Headers(),
			Options: []string{fmt.Sprintf("-DWINDOW=%d", w)}})
		if err != nil {
			return nil, err
		}
		g.modules[modKey] = mod
	}
	f, err := mod.Function(name)
	if err != nil {
		return nil, err
	}
	g.funcs[key] = f
	return f, nil
}

// UploadCSR copies m to the device.
func UploadCSR(ctx *cuda.Context, m *CSR) (d cuda.CSR, err error) {
	d = cuda.CSR{Rows: m.Rows, Cols: m.Cols, NNZ: m.NNZ()}
	defer func() {
		if err != nil {
			d.Free()
		}
	}()
	if d.RowPtr, err = cuda.Upload(ctx, m.RowPtr); err != nil {
		return d, err
	}
	if d.ColIdx, err = cuda.Upload(ctx, m.ColIdx); err != nil {
		return d, err
	}
	d.Val, err = cuda.Upload(ctx, m.Val)
	return d, err
}

// DownloadCSR copies a device matrix back to the host.
func DownloadCSR(d cuda.CSR) (*CSR, error) {
	m := &CSR{Rows: d.Rows, Cols: d.Cols, RowPtr: make([]int32, d.Rows+1), ColIdx: make([]int32, d.NNZ), Val: make([]float32, d.NNZ)}
	if err := cuda.CopyDtoH(m.RowPtr, d.RowPtr); err != nil {
		return nil, err
	}
	if err := cuda.CopyDtoH(m.ColIdx, d.ColIdx); err != nil {
		return nil, err
	}
	if err := cuda.CopyDtoH(m.Val, d.Val); err != nil {
		return nil, err
	}
	return m, nil
}

// pool keeps freed device buffers for reuse, by size, as the caching
// allocators of PyTorch and CuPy do: once a matrix has been multiplied, the
// next multiplication of it makes no cuMemAlloc or cuMemFree calls, which
// would otherwise cost more than the kernels on small matrices. The bench
// gives cuSPARSE's buffers the same pool.
type pool struct {
	ctx  *cuda.Context
	free map[int][]*cuda.Buffer
}

func (p *pool) get(bytes int) (*cuda.Buffer, error) {
	size := (max(bytes, 4) + 255) &^ 255
	if list := p.free[size]; len(list) > 0 {
		b := list[len(list)-1]
		p.free[size] = list[:len(list)-1]
		return b, nil
	}
	return p.ctx.Alloc(size)
}

func (p *pool) put(b *cuda.Buffer) {
	if b != nil && b.Ptr() != 0 {
		p.free[b.Size()] = append(p.free[b.Size()], b)
	}
}

// drain frees every pooled buffer.
func (p *pool) drain() {
	for _, list := range p.free {
		for _, b := range list {
			b.Free()
		}
	}
	clear(p.free)
}

// meter hands out device memory from a pool and remembers the highest total
// it had out.
type meter struct {
	pool       *pool
	live, peak int
	held       []*cuda.Buffer
}

func (m *meter) alloc(bytes int) (*cuda.Buffer, error) {
	b, err := m.pool.get(bytes)
	if err != nil {
		return nil, err
	}
	m.live += b.Size()
	m.peak = max(m.peak, m.live)
	m.held = append(m.held, b)
	return b, nil
}

func (m *meter) release(b *cuda.Buffer) {
	for i, h := range m.held {
		if h == b {
			m.live -= b.Size()
			m.held = append(m.held[:i], m.held[i+1:]...)
			m.pool.put(b)
			return
		}
	}
}

// keep takes b off the meter's list (it outlives the run).
func (m *meter) keep(b *cuda.Buffer) {
	for i, h := range m.held {
		if h == b {
			m.held = append(m.held[:i], m.held[i+1:]...)
			return
		}
	}
}

// releaseAll returns everything not kept to the pool.
func (m *meter) releaseAll() {
	for len(m.held) > 0 {
		m.release(m.held[0])
	}
}

// run is one multiplication: its step, memory meter and timeline.
type run struct {
	g      *GPUSpGEMM
	step   string
	mem    *meter
	start  *cuda.Event
	marks  []mark
	events []*cuda.Event // alongside's, destroyed with the marks
}

type mark struct {
	phase Phase
	ev    *cuda.Event
}

func (r *run) launch(name string, cfg cuda.LaunchConfig, args ...any) error {
	f, err := r.g.function(r.step, name)
	if err != nil {
		return err
	}
	return f.Launch(cfg, args...)
}

// event records a new event on s (nil: the default stream), destroyed with
// the run.
func (r *run) event(s *cuda.Stream) (*cuda.Event, error) {
	e, err := r.g.ctx.NewEvent()
	if err != nil {
		return nil, err
	}
	r.events = append(r.events, e)
	return e, e.Record(s)
}

// alongside queues dense on a second stream and rest on the default one,
// both after the work queued so far, and makes the default stream wait for
// both (step 06). The two hold different rows of C, so they can share the
// GPU: the dense windows are latency bound, and the hash bins' blocks fill
// the SMs they leave idle, instead of each waiting for the other to finish.
func (r *run) alongside(dense func(s *cuda.Stream) error, rest func() error) error {
	if r.g.side == nil {
		s, err := r.g.ctx.NewStream()
		if err != nil {
			return err
		}
		r.g.side = s
	}
	ready, err := r.event(nil)
	if err != nil {
		return err
	}
	if err := r.g.side.WaitEvent(ready); err != nil {
		return err
	}
	if err := dense(r.g.side); err != nil {
		return err
	}
	if err := rest(); err != nil {
		return err
	}
	done, err := r.event(r.g.side)
	if err != nil {
		return err
	}
	return (*cuda.Stream)(nil).WaitEvent(done)
}

// done closes a phase: everything queued since the previous mark.
func (r *run) done(name string, rows int) error {
	ev, err := r.g.ctx.NewEvent()
	if err != nil {
		return err
	}
	r.marks = append(r.marks, mark{Phase{Name: name, Rows: rows}, ev})
	return ev.Record(nil)
}

func (r *run) zeros(bytes int) (*cuda.Buffer, error) {
	b, err := r.mem.alloc(bytes)
	if err != nil {
		return nil, err
	}
	return b, b.Memset(0, nil)
}

// readInt reads the int32 at index i of b (a host round trip).
func readInt(b *cuda.Buffer, i int) (int, error) {
	v := make([]int32, 1)
	err := cuda.CopyDtoHAt(v, b, 4*i)
	return int(v[0]), err
}

// scan returns the exclusive prefix sum of in[0, n) as n+1 int32 (the last
// one the total) and the total.
func (r *run) scan(in *cuda.Buffer, n int) (*cuda.Buffer, int, error) {
	out, err := r.mem.alloc(4 * (n + 1))
	if err != nil {
		return nil, 0, err
	}
	if err := r.scanInto(in, out, n); err != nil {
		return nil, 0, err
	}
	total, err := readInt(out, n)
	if err == nil && total < 0 {
		err = fmt.Errorf("sparse: prefix sum overflowed int32 (more than %d entries)", math.MaxInt32)
	}
	return out, total, err
}

const scanTile = 4096 // values per scan_blocks block (spgemm_common.cuh)

func (r *run) scanInto(in, out *cuda.Buffer, n int) error {
	tiles := max(1, (n+scanTile-1)/scanTile)
	sums, err := r.mem.alloc(4 * tiles)
	if err != nil {
		return err
	}
	defer r.mem.release(sums)
	if err := r.launch("scan_blocks", cuda.LaunchConfig{Grid: cuda.Dim3{X: tiles}, Block: cuda.Dim3{X: 1024}}, in, out, sums, n); err != nil {
		return err
	}
	if tiles == 1 {
		return nil
	}
	offsets, err := r.mem.alloc(4 * (tiles + 1))
	if err != nil {
		return err
	}
	defer r.mem.release(offsets)
	if err := r.scanInto(sums, offsets, tiles); err != nil {
		return err
	}
	return r.launch("scan_add", cuda.Grid1D(n+1, 256), out, offsets, n, tiles)
}

// products returns the product count of every row of A·B.
func (r *run) products(a, b cuda.CSR) (*cuda.Buffer, error) {
	prod, err := r.mem.alloc(4 * a.Rows)
	if err != nil {
		return nil, err
	}
	return prod, r.launch("row_products", cuda.Grid1D(a.Rows, 256), a.Rows, a.RowPtr, a.ColIdx, b.RowPtr, prod)
}

// bins sorts the rows into len(tables)+1 bins by bound (the last bin is the
// dense kernels') and returns the device lists and their lengths.
func (r *run) bins(bound *cuda.Buffer, rows int, tables []HashTable) (*cuda.Buffer, []int, error) {
	n := len(tables) + 1
	limits := make([]int32, n)
	for i, t := range tables {
		limits[i] = int32(t.Slots / 2)
	}
	limits[n-1] = math.MaxInt32
	lim, err := r.mem.alloc(4 * n)
	if err != nil {
		return nil, nil, err
	}
	defer r.mem.release(lim)
	if err := cuda.CopyHtoD(lim, limits); err != nil {
		return nil, nil, err
	}
	count, err := r.zeros(4 * n)
	if err != nil {
		return nil, nil, err
	}
	defer r.mem.release(count)
	list, err := r.mem.alloc(4 * n * rows)
	if err != nil {
		return nil, nil, err
	}
	if err := r.launch("assign_bins", cuda.Grid1D(rows, 256), rows, bound, lim, n, count, list); err != nil {
		return nil, nil, err
	}
	counts := make([]int32, n)
	if err := cuda.CopyDtoH(counts, count); err != nil {
		return nil, nil, err
	}
	out := make([]int, n)
	for i, c := range counts {
		out[i] = int(c)
	}
	return list, out, nil
}

// dense is the dense-accumulator workspace: a bitmap per slot and, for the
// numeric kernels, a float per column per slot. Slots are as many blocks as
// the GPU runs at once (or fewer, if there are fewer rows).
type dense struct {
	slots, words    int
	bitmaps, values *cuda.Buffer
}

func (r *run) denseWorkspace(rows, cols int, numeric bool) (*dense, error) {
	kernel := "dense_symbolic"
	if numeric {
		kernel = "dense_numeric"
	}
	f, err := r.g.function(r.step, kernel)
	if err != nil {
		return nil, err
	}
	perSM, err := f.MaxActiveBlocksPerSM(1024, 0)
	if err != nil {
		return nil, err
	}
	d := &dense{slots: max(1, min(rows, perSM*r.g.ctx.Properties().SMs)), words: (cols + 31) / 32}
	if d.bitmaps, err = r.zeros(4 * d.slots * d.words); err != nil {
		return nil, err
	}
	if numeric {
		d.values, err = r.zeros(4 * d.slots * cols)
	}
	return d, err
}

// grid launches one 1024-thread block per workspace slot.
func (d *dense) grid() cuda.LaunchConfig {
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: d.slots}, Block: cuda.Dim3{X: 1024}}
}

func (r *run) free(d *dense) {
	r.mem.release(d.bitmaps)
	if d.values != nil {
		r.mem.release(d.values)
	}
}

// ptrAt is the device address of element i of an int32/float32 buffer.
func ptrAt(b *cuda.Buffer, i int) cuda.DevicePtr { return b.Ptr() + cuda.DevicePtr(4*i) }

// rowArgs are the kernels' RowSource parameters; symbolic passes no values.
func rowArgs(a, b cuda.CSR, values bool) []any {
	if !values {
		return []any{a.RowPtr, a.ColIdx, cuda.DevicePtr(0), b.RowPtr, b.ColIdx, cuda.DevicePtr(0)}
	}
	return []any{a.RowPtr, a.ColIdx, a.Val, b.RowPtr, b.ColIdx, b.Val}
}

// Multiply computes C = A·B with one step of the ladder. C is the caller's to
// free; stats hold the per-phase times and the peak memory.
func (g *GPUSpGEMM) Multiply(step string, a, b cuda.CSR) (c cuda.CSR, stats GPUStats, err error) {
	if a.Cols != b.Rows {
		return c, stats, fmt.Errorf("sparse: A·B needs A's columns to equal B's rows; A is %d×%d, B is %d×%d", a.Rows, a.Cols, b.Rows, b.Cols)
	}
	if a.Rows == 0 || b.Cols == 0 {
		return c, stats, fmt.Errorf("sparse: A·B with an empty dimension (A %d×%d, B %d×%d)", a.Rows, a.Cols, b.Rows, b.Cols)
	}
	r := &run{g: g, step: step, mem: &meter{pool: g.pool}}
	defer func() {
		if err == nil {
			stats, err = r.stats()
		}
		for _, m := range r.marks {
			m.ev.Destroy()
		}
		for _, e := range r.events {
			e.Destroy()
		}
		r.start.Destroy()
		if err != nil {
			r.mem.releaseAll() // C too
			c = cuda.CSR{}
			return
		}
		for _, x := range []*cuda.Buffer{c.RowPtr, c.ColIdx, c.Val} {
			r.mem.keep(x)
		}
		r.mem.releaseAll()
	}()
	if r.start, err = g.ctx.NewEvent(); err != nil {
		return c, stats, err
	}
	if err = r.start.Record(nil); err != nil {
		return c, stats, err
	}
	c = cuda.CSR{Rows: a.Rows, Cols: b.Cols}
	switch step {
	case "01_row_per_block":
		err = r.rowPerBlock(a, b, &c)
	case "02_two_phase":
		err = r.twoPhase(a, b, &c)
	case "03_shared_hash":
		err = r.hashed(a, b, &c, SharedTables)
	case "04_binned", "06_balanced":
		err = r.hashed(a, b, &c, BinnedTables)
	case "05_outer_product":
		err = r.outerProduct(a, b, &c)
	default:
		err = fmt.Errorf("sparse: unknown GPU SpGEMM step %q (have %v)", step, GPUSteps)
	}
	if err == nil {
		err = g.ctx.Synchronize()
	}
	return c, stats, err
}

func (r *run) stats() (GPUStats, error) {
	s := GPUStats{Step: r.step, PeakBytes: r.mem.peak}
	prev := r.start
	for _, m := range r.marks {
		d, err := cuda.Elapsed(prev, m.ev)
		if err != nil {
			return s, err
		}
		m.phase.Time = d
		s.Phases = append(s.Phases, m.phase)
		s.Total += d
		prev = m.ev
	}
	return s, nil
}

// allocC allocates C's column and value arrays for nnz entries.
func (r *run) allocC(c *cuda.CSR, nnz int) (err error) {
	c.NNZ = nnz
	if c.ColIdx, err = r.mem.alloc(4 * nnz); err != nil {
		return err
	}
	c.Val, err = r.mem.alloc(4 * nnz)
	return err
}

// upperBound allocates a slice per row sized by its product count, for the
// one-pass steps. It returns the products, their offsets and the slices.
func (r *run) upperBound(a, b cuda.CSR) (prod, offsets, col, val *cuda.Buffer, err error) {
	if prod, err = r.products(a, b); err != nil {
		return
	}
	var total int
	if offsets, total, err = r.scan(prod, a.Rows); err != nil {
		return
	}
	if col, err = r.mem.alloc(4 * total); err != nil {
		return
	}
	val, err = r.mem.alloc(4 * total)
	return
}

// pack turns per-row counts into C's row pointers and gathers the rows from
// their slices.
func (r *run) pack(c *cuda.CSR, count, offsets, col, val *cuda.Buffer) (err error) {
	var nnz int
	if c.RowPtr, nnz, err = r.scan(count, c.Rows); err != nil {
		return err
	}
	if err = r.allocC(c, nnz); err != nil {
		return err
	}
	if err = r.launch("gather_rows", cuda.Grid1D(c.Rows*32, 256), c.Rows, offsets, c.RowPtr, col, val, c.ColIdx, c.Val); err != nil {
		return err
	}
	return r.done("pack C", c.Rows)
}

// Step 01: one pass into upper-bound slices, dense accumulator per row.
func (r *run) rowPerBlock(a, b cuda.CSR, c *cuda.CSR) error {
	_, offsets, col, val, err := r.upperBound(a, b)
	if err != nil {
		return err
	}
	if err := r.done("products and upper bound", a.Rows); err != nil {
		return err
	}
	count, err := r.mem.alloc(4 * a.Rows)
	if err != nil {
		return err
	}
	ws, err := r.denseWorkspace(a.Rows, b.Cols, true)
	if err != nil {
		return err
	}
	args := append([]any{cuda.DevicePtr(0), a.Rows}, rowArgs(a, b, true)...)
	args = append(args, ws.bitmaps, ws.words, ws.values, b.Cols, offsets, col, val, count)
	if err := r.launch("dense_numeric", ws.grid(), args...); err != nil {
		return err
	}
	if err := r.done("numeric (dense)", a.Rows); err != nil {
		return err
	}
	r.free(ws)
	return r.pack(c, count, offsets, col, val)
}

// Step 02: symbolic count, exact C, numeric fill; dense accumulator per row.
func (r *run) twoPhase(a, b cuda.CSR, c *cuda.CSR) error {
	nnz, err := r.mem.alloc(4 * a.Rows)
	if err != nil {
		return err
	}
	ws, err := r.denseWorkspace(a.Rows, b.Cols, false)
	if err != nil {
		return err
	}
	args := append([]any{cuda.DevicePtr(0), a.Rows}, rowArgs(a, b, false)...)
	if err := r.launch("dense_symbolic", ws.grid(), append(args, ws.bitmaps, ws.words, nnz)...); err != nil {
		return err
	}
	if err := r.done("symbolic (dense)", a.Rows); err != nil {
		return err
	}
	r.free(ws)
	if err := r.exactC(c, nnz); err != nil {
		return err
	}
	if ws, err = r.denseWorkspace(a.Rows, b.Cols, true); err != nil {
		return err
	}
	args = append([]any{cuda.DevicePtr(0), a.Rows}, rowArgs(a, b, true)...)
	args = append(args, ws.bitmaps, ws.words, ws.values, b.Cols, c.RowPtr, c.ColIdx, c.Val, cuda.DevicePtr(0))
	// The numeric workspace's own grid: its slot count comes from the
	// numeric kernel's occupancy, which may differ from the symbolic one's.
	if err := r.launch("dense_numeric", ws.grid(), args...); err != nil {
		return err
	}
	r.free(ws)
	return r.done("numeric (dense)", a.Rows)
}

// exactC scans the symbolic counts into C's row pointers and allocates C.
func (r *run) exactC(c *cuda.CSR, nnz *cuda.Buffer) error {
	var total int
	var err error
	if c.RowPtr, total, err = r.scan(nnz, c.Rows); err != nil {
		return err
	}
	if err := r.allocC(c, total); err != nil {
		return err
	}
	return r.done("scan and allocate C", c.Rows)
}

// binLaunch runs one bin's rows through a hash kernel (block per row) or,
// for the last bin, a dense kernel.
type binLaunch struct {
	r      *run
	tables []HashTable
	list   *cuda.Buffer
	counts []int
	rows   int  // rows of C, the stride between the bins' lists
	quiet  bool // no phase per bin: the caller closes one for them all
}

// each calls hash(table, list, n) for every non-empty hash bin and
// dense(list, n) for the dense bin, and closes a phase per bin. A nil dense
// leaves the dense bin to the caller.
func (bl binLaunch) each(pass string, hash func(t HashTable, list cuda.DevicePtr, n int) error, dense func(list cuda.DevicePtr, n int) error) error {
	for i, n := range bl.counts {
		if n == 0 || (i == len(bl.tables) && dense == nil) {
			continue
		}
		list := ptrAt(bl.list, i*bl.rows)
		name := ""
		var err error
		if i < len(bl.tables) {
			t := bl.tables[i]
			name = fmt.Sprintf("%s: hash %d slots, %d threads", pass, t.Slots, t.Threads)
			err = hash(t, list, n)
		} else {
			name = pass + ": dense"
			err = dense(list, n)
		}
		if err != nil {
			return err
		}
		if bl.quiet {
			continue
		}
		if err := bl.r.done(name, n); err != nil {
			return err
		}
	}
	return nil
}

func hashGrid(t HashTable, n, bytesPerSlot int) cuda.LaunchConfig {
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: n}, Block: cuda.Dim3{X: t.Threads}, SharedMem: bytesPerSlot * t.Slots}
}

// Steps 03 and 04: two phases, rows binned to shared-memory hash tables by
// their bound (products, then exact counts). Rows with more products than
// the largest table holds go to the windowed dense kernels, on chip as well
// and spread over a block per window; they keep the same list in both
// passes, so their per-window counts line up.
func (r *run) hashed(a, b cuda.CSR, c *cuda.CSR, tables []HashTable) error {
	prod, err := r.products(a, b)
	if err != nil {
		return err
	}
	list, counts, err := r.bins(prod, a.Rows, tables)
	if err != nil {
		return err
	}
	if err := r.done("products and bins", a.Rows); err != nil {
		return err
	}
	nnz, err := r.zeros(4 * a.Rows)
	if err != nil {
		return err
	}
	window := r.g.window()
	windows := (b.Cols + window - 1) / window
	dense, denseList := counts[len(tables)], ptrAt(list, len(tables)*a.Rows)
	winCount, err := r.mem.alloc(4 * max(dense, 1) * windows)
	if err != nil {
		return err
	}
	windowGrid := func(n, y, smem int, s *cuda.Stream) cuda.LaunchConfig {
		return cuda.LaunchConfig{Grid: cuda.Dim3{X: n, Y: y}, Block: cuda.Dim3{X: window / 32}, SharedMem: smem, Stream: s}
	}
	// Step 06 runs each pass's dense bin alongside its hash bins (run.alongside),
	// and closes one phase for them all.
	together := r.step == "06_balanced" && dense > 0
	span := symbolicSpan(r.step)
	bl := binLaunch{r: r, tables: tables, list: list, counts: counts, rows: a.Rows, quiet: together}
	symbolicHash := func(t HashTable, rows cuda.DevicePtr, n int) error {
		args := append(append([]any{rows}, rowArgs(a, b, false)...), nnz)
		return r.launch(fmt.Sprintf("hash_symbolic_%d", t.Slots), hashGrid(t, n, 4), args...)
	}
	symbolicDense := func(s *cuda.Stream) error {
		args := append(append([]any{denseList}, rowArgs(a, b, false)...), windows, winCount, nnz)
		return r.launch("window_symbolic", windowGrid(dense, (windows+span-1)/span, span*window/8, s), args...)
	}
	if together {
		err = r.alongside(symbolicDense, func() error { return bl.each("symbolic", symbolicHash, nil) })
		if err == nil {
			err = r.done("symbolic: hash bins alongside the dense windows", a.Rows)
		}
	} else {
		err = bl.each("symbolic", symbolicHash, func(cuda.DevicePtr, int) error { return symbolicDense(nil) })
	}
	if err != nil {
		return err
	}
	if err := r.exactC(c, nnz); err != nil {
		return err
	}
	// The dense rows keep their list; the others are binned again by their
	// exact entry counts (the dense ones, zeroed, go nowhere).
	if dense > 0 {
		if err := r.launch("clear_rows", cuda.Grid1D(dense, 256), denseList, dense, nnz); err != nil {
			return err
		}
	}
	numeric := binLaunch{r: r, tables: tables, rows: a.Rows, quiet: together}
	if numeric.list, numeric.counts, err = r.bins(nnz, a.Rows, tables); err != nil {
		return err
	}
	if err := r.done("bins by entries", a.Rows); err != nil {
		return err
	}
	out := []any{c.RowPtr, c.ColIdx, c.Val}
	numericHash := func() error { // the dense rows were zeroed: they are in no bin here
		return numeric.each("numeric", func(t HashTable, rows cuda.DevicePtr, n int) error {
			args := append(append([]any{rows}, rowArgs(a, b, true)...), append(out, cuda.DevicePtr(0))...)
			return r.launch(fmt.Sprintf("hash_numeric_%d", t.Slots), hashGrid(t, n, 8), args...)
		}, nil)
	}
	numericDense := func(s *cuda.Stream) error {
		args := append(append([]any{denseList}, rowArgs(a, b, true)...), winCount)
		return r.launch("window_numeric", windowGrid(dense, windows, 4*window+window/8, s), append(args, out...)...)
	}
	switch {
	case together:
		if err := r.alongside(numericDense, numericHash); err != nil {
			return err
		}
		return r.done("numeric: hash bins alongside the dense windows", a.Rows)
	case dense == 0:
		return numericHash()
	default:
		if err := numericHash(); err != nil {
			return err
		}
		if err := numericDense(nil); err != nil {
			return err
		}
		return r.done("numeric: dense windows", dense)
	}
}

// symbolicSpan is how many windows one block of the symbolic pass counts:
// SYMBOLIC_SPAN of the step's kernel file (16 in spgemm_06_balanced.cu).
func symbolicSpan(step string) int {
	if step == "06_balanced" {
		return 16
	}
	return 1
}

// Step 05: transpose A, expand column × row products into per-row slices,
// compress each slice in place (binned), pack.
func (r *run) outerProduct(a, b cuda.CSR, c *cuda.CSR) error {
	// A by columns: histogram, scan, scatter.
	colCount, err := r.zeros(4 * a.Cols)
	if err != nil {
		return err
	}
	if err := r.launch("column_counts", cuda.Grid1D(a.NNZ, 256), a.NNZ, a.ColIdx, colCount); err != nil {
		return err
	}
	cscPtr, _, err := r.scan(colCount, a.Cols)
	if err != nil {
		return err
	}
	cursor, err := r.mem.alloc(4 * (a.Cols + 1))
	if err != nil {
		return err
	}
	if err := cuda.CopyDtoD(cursor, cscPtr, 4*(a.Cols+1), nil); err != nil {
		return err
	}
	cscRow, err := r.mem.alloc(4 * a.NNZ)
	if err != nil {
		return err
	}
	cscVal, err := r.mem.alloc(4 * a.NNZ)
	if err != nil {
		return err
	}
	if err := r.launch("scatter_columns", cuda.Grid1D(a.Rows*32, 256), a.Rows, a.RowPtr, a.ColIdx, a.Val, cursor, cscRow, cscVal); err != nil {
		return err
	}
	r.mem.release(cursor)
	r.mem.release(colCount)
	if err := r.done("transpose A", a.Rows); err != nil {
		return err
	}
	// Expand.
	prod, offsets, col, val, err := r.upperBound(a, b)
	if err != nil {
		return err
	}
	if cursor, err = r.mem.alloc(4 * (a.Rows + 1)); err != nil {
		return err
	}
	if err := cuda.CopyDtoD(cursor, offsets, 4*(a.Rows+1), nil); err != nil {
		return err
	}
	if err := r.launch("expand_outer", cuda.LaunchConfig{Grid: cuda.Dim3{X: a.Cols}, Block: cuda.Dim3{X: 256}},
		cscPtr, cscRow, cscVal, b.RowPtr, b.ColIdx, b.Val, cursor, col, val); err != nil {
		return err
	}
	for _, x := range []*cuda.Buffer{cursor, cscPtr, cscRow, cscVal} {
		r.mem.release(x)
	}
	if err := r.done("expand", a.Cols); err != nil {
		return err
	}
	// Compress each row's slice in place.
	list, counts, err := r.bins(prod, a.Rows, BinnedTables)
	if err != nil {
		return err
	}
	count, err := r.zeros(4 * a.Rows)
	if err != nil {
		return err
	}
	bl := binLaunch{r: r, tables: BinnedTables, list: list, counts: counts, rows: a.Rows}
	src := []any{offsets, col, val}
	out := []any{offsets, col, val, count}
	err = bl.each("compress", func(t HashTable, rows cuda.DevicePtr, n int) error {
		return r.launch(fmt.Sprintf("hash_numeric_%d", t.Slots), hashGrid(t, n, 8), append(append([]any{rows}, src...), out...)...)
	}, func(rows cuda.DevicePtr, n int) error {
		ws, err := r.denseWorkspace(n, b.Cols, true)
		if err != nil {
			return err
		}
		defer r.free(ws)
		args := append(append([]any{rows, n}, src...), ws.bitmaps, ws.words, ws.values, b.Cols)
		return r.launch("dense_numeric", ws.grid(), append(args, out...)...)
	})
	if err != nil {
		return err
	}
	r.mem.release(list)
	return r.pack(c, count, offsets, col, val)
}

// Profile multiplies a·b on ctx with cuSPARSE and each of steps (nil: all of
// GPUSteps), with the given GPUSpGEMM.Window (0: the default), each once to compile and fill the memory pool and once more to
// measure, and returns the measured runs' stats. cuSPARSE's entry has a single
// phase. Every result is checked against CPU Gustavson first.
func Profile(ctx *cuda.Context, a, b *CSR, steps []string, window int) (out []GPUStats, err error) {
	if steps == nil {
		steps = GPUSteps
	}
	want, err := GustavsonParallel(a, b)
	if err != nil {
		return nil, err
	}
	da, err := UploadCSR(ctx, a)
	if err != nil {
		return nil, err
	}
	defer da.Free()
	db, err := UploadCSR(ctx, b)
	if err != nil {
		return nil, err
	}
	defer db.Free()
	g := NewGPUSpGEMM(ctx)
	g.Window = window
	defer g.Close()
	sp, err := ctx.NewSparse(nil)
	if err != nil {
		return nil, err
	}
	defer sp.Destroy()
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		return nil, err
	}
	defer timer.Destroy()
	checked := func(name string, c cuda.CSR) error {
		defer g.Release(c)
		got, err := DownloadCSR(c)
		if err != nil {
			return err
		}
		if r := sameStructure(got, want); !(r.MaxRelErr <= spgemmTolerance(a, b)) {
			return fmt.Errorf("sparse: %s: result differs from CPU Gustavson (max rel err %g)", name, r.MaxRelErr)
		}
		return nil
	}
	for _, step := range append([]string{"cusparse"}, steps...) {
		var s GPUStats
		for range 2 {
			var c cuda.CSR
			if step == "cusparse" {
				var peak int
				var d time.Duration
				d, err = timer.Time(func() error {
					var err error
					c, peak, err = g.CuSPARSE(sp, da, db)
					return err
				})
				s = GPUStats{Step: step, Total: d, PeakBytes: peak, Phases: []Phase{{Name: "cusparseSpGEMM", Rows: a.Rows, Time: d}}}
			} else {
				c, s, err = g.Multiply(step, da, db)
			}
			if err != nil {
				return nil, err
			}
			if err := checked(step, c); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}
