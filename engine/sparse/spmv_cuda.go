package sparse

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// The CUDA SpMV ladder: one row of spmvSteps per variant. A row names its
// kernel file (kernels/cuda/sparse/spmv_NN_*.cu, which opens with the step's
// idea, traffic and cost), its entry point, and a plan: how the host
// compiles and launches it on a matrix. A new step is a new file and a new
// row; TestCUDASpMVLadder checks every row against the float64 reference,
// and TestStepTablesMatchKernelFiles checks the rows against the files.

// spmvStep is one variant of the CUDA SpMV ladder.
type spmvStep struct {
	Variant string // the spmv suite's variant, as docs/results records it
	File    string // the kernel file under kernels/cuda/sparse, without ".cu"
	Kernel  string // its entry point
	plan    func(d *spmvDevice) (spmvLaunch, error)
}

// spmvLaunch is how a step runs on one matrix.
type spmvLaunch struct {
	options []string // NVRTC options (-D...)
	config  cuda.LaunchConfig
	args    []any
	params  bench.Params // what the record should carry besides the matrix
}

var spmvSteps = []spmvStep{
	{Variant: "spmv_scalar", File: "spmv_01_scalar", Kernel: "spmv_scalar", plan: lanesPlan(func(*CSR) int { return 1 })},
	{Variant: "spmv_vector", File: "spmv_02_vector", Kernel: "spmv_vector", plan: lanesPlan(func(*CSR) int { return 32 })},
	{Variant: "spmv_vector_adaptive", File: "spmv_02_vector", Kernel: "spmv_vector", plan: lanesPlan(meanLanes)},
	{Variant: "spmv_stream", File: "spmv_03_stream", Kernel: "spmv_stream", plan: streamPlan},
	{Variant: "spmv_vector_rows", File: "spmv_04_vector_rows", Kernel: "spmv_vector_rows", plan: vectorRowsPlan},
	{Variant: "spmv_sell", File: "spmv_05_sell", Kernel: "spmv_sell", plan: sellPlan},
}

// spmvDevice is one matrix, x and y on a device, as a step's plan sees them.
type spmvDevice struct {
	ctx                       *cuda.Context
	m                         *CSR
	rowPtr, colIdx, val, x, y *cuda.Buffer
	// keep hands a buffer the plan made (an upload of its own arrays) to the
	// cases' cleanup, and passes on err.
	keep func(b *cuda.Buffer, err error) (*cuda.Buffer, error)
}

// csrArgs are the arguments of a kernel that walks the CSR arrays by row:
// (rows, rowPtr, colIdx, val, x, y).
func (d *spmvDevice) csrArgs() []any {
	return []any{d.m.Rows, d.rowPtr, d.colIdx, d.val, d.x, d.y}
}

// lanesPlan runs a kernel with LANES threads per row (steps 01 and 02).
func lanesPlan(lanes func(*CSR) int) func(*spmvDevice) (spmvLaunch, error) {
	return func(d *spmvDevice) (spmvLaunch, error) {
		n := lanes(d.m)
		return spmvLaunch{options: []string{fmt.Sprintf("-DLANES=%d", n)}, config: cuda.Grid1D(d.m.Rows*n, 256),
			args: d.csrArgs(), params: bench.Params{"lanes": n}}, nil
	}
}

// meanLanes is the adaptive vector kernel's lanes per row: the mean row
// length rounded up to a power of two, from 2 to 32.
func meanLanes(m *CSR) int {
	mean := float64(m.NNZ()) / float64(max(m.Rows, 1))
	lanes := 2
	for lanes < 32 && float64(lanes) < mean {
		lanes *= 2
	}
	return lanes
}

// The shape of spmv_03_stream.cu's row blocks, passed to it as CAP and
// THREADS (the sweep that chose them is in its header): at most streamCap
// entries (unless one row has more) and streamRows rows per block, and
// streamThreads threads.
const (
	streamCap     = 2048
	streamRows    = 512
	streamThreads = 128
)

// streamPlan runs CSR-stream over row blocks cut once on the host.
func streamPlan(d *spmvDevice) (spmvLaunch, error) {
	blocks, err := d.keep(cuda.Upload(d.ctx, rowBlocks(d.m, streamCap, streamRows)))
	if err != nil {
		return spmvLaunch{}, err
	}
	n := blocks.Size()/4 - 1
	return spmvLaunch{
		options: []string{fmt.Sprintf("-DCAP=%d", streamCap), fmt.Sprintf("-DTHREADS=%d", streamThreads)},
		config:  cuda.LaunchConfig{Grid: cuda.Dim3{X: n}, Block: cuda.Dim3{X: streamThreads}},
		args:    []any{blocks, d.rowPtr, d.colIdx, d.val, d.x, d.y},
		params:  bench.Params{"row_blocks": n},
	}, nil
}

// rowBlocks cuts the rows into consecutive blocks of at most maxEntries
// entries (a longer row is a block of its own) and at most maxRows rows, and
// returns the first row of each block, then m.Rows.
func rowBlocks(m *CSR, maxEntries, maxRows int) []int32 {
	out := []int32{0}
	start := 0
	for i := 0; i < m.Rows; i++ {
		if i > start && (int(m.RowPtr[i+1]-m.RowPtr[start]) > maxEntries || i-start == maxRows) {
			out = append(out, int32(i))
			start = i
		}
	}
	return append(out, int32(m.Rows))
}

// vectorRows is ROWS of spmv_04_vector_rows.cu: rows in flight per group
// (2, 4 and 6 measured on an H200; 4 was fastest under the 32-register cap).
const vectorRows = 4

// vectorRowsPlan runs step 04: vectorRows rows in flight per group of lanes,
// the mean row length rounded down to a power of two (a row of 17 takes 16
// lanes twice rather than 32 lanes, 15 of them idle, once: measured faster).
func vectorRowsPlan(d *spmvDevice) (spmvLaunch, error) {
	lanes := meanLanes(d.m)
	if lanes > 2 && float64(lanes) > float64(d.m.NNZ())/float64(max(d.m.Rows, 1)) {
		lanes /= 2
	}
	perWarp := vectorRows * 32 / lanes
	return spmvLaunch{
		options: []string{fmt.Sprintf("-DLANES=%d", lanes), fmt.Sprintf("-DROWS=%d", vectorRows)},
		config:  cuda.Grid1D((d.m.Rows+perWarp-1)/perWarp*32, 256),
		args:    d.csrArgs(),
		params:  bench.Params{"lanes": lanes, "rows_in_flight": vectorRows},
	}, nil
}

// The shape of spmv_05_sell.cu's format, SELL-C-σ: chunks of sellC rows
// (C, a warp), and rows sorted by length within windows of sellSigma rows.
const sellC, sellSigma = 32, 1024

// sell is a matrix in SELL-C-σ: the rows, sorted by length within windows
// of σ, cut into chunks of C, each chunk stored column by column and as wide
// as its longest row (shorter rows padded with zeros).
type sell struct {
	chunkPtr []int32 // where each chunk starts in colIdx and val, then the end
	rowLen   []int32 // entries of the row in each slot, in sorted order
	perm     []int32 // the row of A in each slot
	colIdx   []int32 // entry j of slot s at chunkPtr[s/C] + j·C + s%C
	val      []float32
}

func newSELL(m *CSR, c, sigma int) sell {
	s := sell{perm: make([]int32, m.Rows), rowLen: make([]int32, m.Rows), chunkPtr: []int32{0}}
	length := func(r int32) int32 { return m.RowPtr[r+1] - m.RowPtr[r] }
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	for lo := 0; lo < m.Rows; lo += sigma {
		window := s.perm[lo:min(lo+sigma, m.Rows)]
		slices.SortStableFunc(window, func(a, b int32) int { return cmp.Compare(length(b), length(a)) })
	}
	for i, r := range s.perm {
		s.rowLen[i] = length(r)
	}
	for lo := 0; lo < m.Rows; lo += c {
		width := int(slices.Max(s.rowLen[lo:min(lo+c, m.Rows)]))
		start := len(s.colIdx)
		s.colIdx = append(s.colIdx, make([]int32, width*c)...)
		s.val = append(s.val, make([]float32, width*c)...)
		for lane := range min(c, m.Rows-lo) {
			r := s.perm[lo+lane]
			for j := range int(s.rowLen[lo+lane]) {
				s.colIdx[start+j*c+lane] = m.ColIdx[int(m.RowPtr[r])+j]
				s.val[start+j*c+lane] = m.Val[int(m.RowPtr[r])+j]
			}
		}
		s.chunkPtr = append(s.chunkPtr, int32(len(s.colIdx)))
	}
	return s
}

// sellPlan converts the matrix to SELL-C-σ once, on the host, and runs step
// 05 with a thread per row.
func sellPlan(d *spmvDevice) (spmvLaunch, error) {
	s := newSELL(d.m, sellC, sellSigma)
	if len(s.colIdx) > math.MaxInt32 {
		return spmvLaunch{}, fmt.Errorf("SELL-%d-%d of %d×%d holds %d entries with its padding, more than 32-bit offsets reach", sellC, sellSigma, d.m.Rows, d.m.Cols, len(s.colIdx))
	}
	var args []any
	for _, up := range []func() (*cuda.Buffer, error){
		func() (*cuda.Buffer, error) { return cuda.Upload(d.ctx, s.chunkPtr) },
		func() (*cuda.Buffer, error) { return cuda.Upload(d.ctx, s.rowLen) },
		func() (*cuda.Buffer, error) { return cuda.Upload(d.ctx, s.perm) },
		func() (*cuda.Buffer, error) { return cuda.Upload(d.ctx, append(s.colIdx, 0)) }, // never empty
		func() (*cuda.Buffer, error) { return cuda.Upload(d.ctx, append(s.val, 0)) },
	} {
		b, err := d.keep(up())
		if err != nil {
			return spmvLaunch{}, err
		}
		args = append(args, b)
	}
	return spmvLaunch{
		options: []string{fmt.Sprintf("-DCHUNK=%d", sellC)},
		config:  cuda.Grid1D(d.m.Rows, 256),
		args:    append(append([]any{d.m.Rows}, args...), d.x, d.y),
		params:  bench.Params{"chunk_rows": sellC, "sigma": sellSigma, "padded_entries": len(s.colIdx)},
	}, nil
}

// spmvCUDA prepares the spmv suite's CUDA cases for p: the copy bound (the
// baseline), the x-gather probe, every step of spmvSteps, and cuSPARSE's
// two CSR algorithms.
func spmvCUDA(ctx *cuda.Context, p spmvProblem) (_ []bench.Case, _ func(), err error) {
	m := p.m
	var undo []func() // what cleanup releases, newest first
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	hold := func(b *cuda.Buffer, e error) (*cuda.Buffer, error) {
		if b != nil {
			undo = append(undo, func() { b.Free() })
		}
		return b, e
	}
	keep := func(b *cuda.Buffer, e error) *cuda.Buffer {
		b, e = hold(b, e)
		if e != nil && err == nil {
			err = e
		}
		return b
	}
	half := int(spmvBytes(m)) / 2 // the copy baseline reads half and writes half
	d := &spmvDevice{ctx: ctx, m: m, keep: hold}
	d.rowPtr = keep(cuda.Upload(ctx, m.RowPtr))
	d.colIdx = keep(cuda.Upload(ctx, append(m.ColIdx, 0))) // one spare element: never empty
	d.val = keep(cuda.Upload(ctx, append(m.Val, 0)))
	d.x = keep(cuda.Upload(ctx, p.x))
	d.y = keep(cuda.AllocSlice[float32](ctx, m.Rows))
	probeOut := keep(cuda.AllocSlice[float32](ctx, m.NNZ()/128+8)) // a float per warp of the probe
	from := keep(ctx.Alloc(half))
	to := keep(ctx.Alloc(half))
	if err != nil {
		return nil, nil, err
	}
	// The baseline copies from; written once, so that it copies data (compute-sanitizer's initcheck
	// reports a copy of memory never written).
	if err = from.Memset(0, nil); err != nil {
		return nil, nil, err
	}
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, timer.Destroy)
	check := func() (bench.Checked, error) {
		got, err := cuda.Download[float32](d.y, m.Rows)
		return bench.Compare(got, p.want), err
	}
	reset := func() error { return d.y.Memset(0xff, nil) }

	bound := p.base("copy_bound")
	bound.Baseline = true
	bound.Run = func() (time.Duration, error) {
		return timer.Time(func() error { return cuda.CopyDtoD(to, from, half, nil) })
	}
	bound.Check = func() (bench.Checked, error) { return bench.Checked{Worst: -1}, nil }
	bound.Params = bench.Params{"matrix": bound.Params["matrix"], "bytes": 2 * half}
	bound.Flops = 0
	cases := []bench.Case{bound}

	compile := func(file, name string, options ...string) (*cuda.Function, error) {
		src, err := kernels.CUDA("sparse/" + file)
		if err != nil {
			return nil, err
		}
		mod, err := ctx.Compile(cuda.Source{Name: "sparse/" + file + ".cu", Code: src, Headers: kernels.CUDAFamily.Headers(), Options: options})
		if err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", file, err)
		}
		return mod.Function(name)
	}
	kernel := func(variant string, fn *cuda.Function, cfg cuda.LaunchConfig, args ...any) bench.Case {
		c := p.base(variant)
		c.Reset, c.Check = reset, check
		c.Run = func() (time.Duration, error) {
			return timer.Time(func() error { return fn.Launch(cfg, args...) })
		}
		return c
	}

	// The probe reads only the column indices and the x they name (see
	// spmv_gather_probe.cu): the floor under any CSR kernel on this matrix.
	fn, err := compile("spmv_gather_probe", "spmv_gather_probe")
	if err != nil {
		return nil, nil, err
	}
	probe := kernel("x_gather_probe", fn, cuda.Grid1D((m.NNZ()+3)/4, 256), m.NNZ(), d.colIdx, d.x, probeOut)
	probeBytes := 4*m.NNZ() + 4*m.Cols
	probe.Params["bytes"] = probeBytes
	probe.Flops, probe.Bytes = 0, float64(probeBytes)
	probe.Check = bound.Check
	probe.Reset = nil
	cases = append(cases, probe)

	for _, st := range spmvSteps {
		l, err := st.plan(d)
		if err != nil {
			return nil, nil, fmt.Errorf("sparse: %s: %w", st.Variant, err)
		}
		fn, err := compile(st.File, st.Kernel, l.options...)
		if err != nil {
			return nil, nil, err
		}
		c := kernel(st.Variant, fn, l.config, l.args...)
		for k, v := range l.params {
			c.Params[k] = v
		}
		c.Params["regs"], _ = fn.Attribute(cuda.FuncNumRegs)
		cases = append(cases, c)
	}

	// cuSPARSE's two CSR algorithms, prepared once (buffer, preprocessing).
	sp, err := ctx.NewSparse(nil)
	if err != nil {
		return nil, nil, err
	}
	a := cuda.CSR{Rows: m.Rows, Cols: m.Cols, NNZ: m.NNZ(), RowPtr: d.rowPtr, ColIdx: d.colIdx, Val: d.val}
	undo = append(undo, func() { sp.Destroy() })
	for _, alg := range []struct {
		variant string
		alg     cuda.SpMVAlg
	}{{"cusparse_csr_alg1", cuda.SpMVCSRAlg1}, {"cusparse_csr_alg2", cuda.SpMVCSRAlg2}} {
		prep, err := sp.NewSpMV(a, d.x, d.y, alg.alg)
		if err != nil {
			return nil, nil, err
		}
		undo = append(undo, prep.Destroy)
		c := p.base(alg.variant)
		c.Reset, c.Check = reset, check
		c.Run = func() (time.Duration, error) { return timer.Time(prep.Run) }
		cases = append(cases, c)
	}
	return cases, cleanup, nil
}
