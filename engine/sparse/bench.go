package sparse

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// The "spmv" suite: y = A·x on the CPU (serial baseline, goroutines) and on
// CUDA (the four CSR steps and cuSPARSE's two CSR algorithms). On CUDA the
// baseline is a device copy of exactly the bytes an SpMV must move, so "vs
// baseline" reads as the share of the bandwidth bound reached; next to it,
// x_gather_probe times only the reads of the column indices and of the x
// they name, the floor under any CSR kernel on that matrix. Sizes are
// generator specs (see Generate).

func init() {
	bench.Register(bench.Suite{
		Name:  "spmv",
		Doc:   "sparse matrix × vector, CSR: CPU serial/parallel, CUDA scalar (thread per row), vector (warp per row), stream (row blocks of equal work), vector with rows in flight, and cuSPARSE, against the bandwidth bound and the x-gather floor",
		Sizes: spmvSizes,
		Cases: spmvCases,
	})
}

func spmvSizes(dev engine.Info) []string {
	if dev.Kind == engine.CUDA {
		return []string{"uniform:n=4194304,k=16", "banded:n=4194304,w=8", "poisson:k=2048", "rmat:scale=22,ef=8,a=0.57,b=0.19,c=0.19"}
	}
	return []string{"uniform:n=65536,k=16", "rmat:scale=16,ef=8,a=0.57,b=0.19,c=0.19"}
}

// spmvBytes is what an SpMV must move at least: the matrix (row pointers,
// column indices, values), x once and y once.
func spmvBytes(m *CSR) float64 {
	return float64(4*(m.Rows+1) + 8*m.NNZ() + 4*m.Cols + 4*m.Rows)
}

func spmvCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	m, err := LoadMatrix(size)
	if err != nil {
		return nil, nil, err
	}
	x := make([]float32, m.Cols)
	for i := range x {
		x[i] = float32(i%17)/8 - 1
	}
	want := spmvReference(m, x)
	// Float32 sums of a row of L entries differ from the float64 reference by
	// up to about L·2^-23 relative to the row's magnitude.
	_, longest, _, _ := RowStats(m)
	tol := max(1e-5, float64(longest)*math.Ldexp(1, -23))
	base := func(name string) bench.Case {
		return bench.Case{Variant: name, Params: bench.Params{"matrix": size, "rows": m.Rows, "nnz": m.NNZ()},
			Flops: 2 * float64(m.NNZ()), Bytes: spmvBytes(m), Tol: tol}
	}
	switch dev.Kind {
	case engine.CUDA:
		return spmvCUDA(dev.CUDA, m, x, want, base)
	case engine.CPU:
		var cases []bench.Case
		for _, v := range []struct {
			name string
			f    func(*CSR, []float32, []float32) error
		}{{"cpu_serial", SpMV}, {"cpu_parallel", SpMVParallel}} {
			y := make([]float32, m.Rows)
			c := base(v.name)
			c.Baseline = v.name == "cpu_serial"
			c.Reset = func() error { clear(y); return nil }
			c.Run = func() (time.Duration, error) {
				t := time.Now()
				err := v.f(m, x, y)
				return time.Since(t), err
			}
			c.Check = func() (bench.Checked, error) { return bench.Compare(y, want), nil }
			cases = append(cases, c)
		}
		return cases, nil, nil
	}
	return nil, nil, fmt.Errorf("sparse: spmv runs on the CPU and CUDA devices, not %s", dev.ID)
}

// spmvReference is y = A·x accumulated in float64, rounded to float32.
func spmvReference(m *CSR, x []float32) []float32 {
	y := make([]float32, m.Rows)
	for i := 0; i < m.Rows; i++ {
		var sum float64
		for p := m.RowPtr[i]; p < m.RowPtr[i+1]; p++ {
			sum += float64(m.Val[p]) * float64(x[m.ColIdx[p]])
		}
		y[i] = float32(sum)
	}
	return y
}

func spmvCUDA(ctx *cuda.Context, m *CSR, x, want []float32, base func(string) bench.Case) (_ []bench.Case, _ func(), err error) {
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
	keep := func(b *cuda.Buffer, e error) *cuda.Buffer {
		if e != nil && err == nil {
			err = e
		}
		if b != nil {
			undo = append(undo, func() { b.Free() })
		}
		return b
	}
	half := int(spmvBytes(m)) / 2 // the copy baseline reads half and writes half
	rowPtr := keep(cuda.Upload(ctx, m.RowPtr))
	colIdx := keep(cuda.Upload(ctx, append(m.ColIdx, 0))) // one spare element: never empty
	val := keep(cuda.Upload(ctx, append(m.Val, 0)))
	xs := keep(cuda.Upload(ctx, x))
	y := keep(cuda.AllocSlice[float32](ctx, m.Rows))
	probeOut := keep(cuda.AllocSlice[float32](ctx, m.NNZ()/128+8)) // a float per warp of the probe
	from := keep(ctx.Alloc(half))
	to := keep(ctx.Alloc(half))
	if err != nil {
		return nil, nil, err
	}
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, timer.Destroy)
	check := func() (bench.Checked, error) {
		got, err := cuda.Download[float32](y, m.Rows)
		return bench.Compare(got, want), err
	}
	reset := func() error { return y.Memset(0xff, nil) }

	bound := base("copy_bound")
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
		mod, err := ctx.Compile(cuda.Source{Name: "sparse/" + file + ".cu", Code: src, Options: options})
		if err != nil {
			return nil, err
		}
		return mod.Function(name)
	}
	kernel := func(variant string, fn *cuda.Function, cfg cuda.LaunchConfig, args ...any) bench.Case {
		c := base(variant)
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
	probe := kernel("x_gather_probe", fn, cuda.Grid1D((m.NNZ()+3)/4, 256), m.NNZ(), colIdx, xs, probeOut)
	probeBytes := 4*m.NNZ() + 4*m.Cols
	probe.Params["bytes"] = probeBytes
	probe.Flops, probe.Bytes = 0, float64(probeBytes)
	probe.Check = bound.Check
	probe.Reset = nil
	cases = append(cases, probe)

	// The adaptive vector kernels give each row as many lanes as its mean
	// length, rounded up to a power of two.
	mean := float64(m.NNZ()) / float64(max(m.Rows, 1))
	lanes := 2
	for lanes < 32 && float64(lanes) < mean {
		lanes *= 2
	}
	for _, k := range []struct {
		variant, file, name string
		lanes               int // threads per row
	}{{"spmv_scalar", "spmv_01_scalar", "spmv_scalar", 1}, {"spmv_vector", "spmv_02_vector", "spmv_vector", 32},
		{"spmv_vector_adaptive", "spmv_02_vector", "spmv_vector", lanes}} {
		fn, err := compile(k.file, k.name, fmt.Sprintf("-DLANES=%d", k.lanes))
		if err != nil {
			return nil, nil, err
		}
		c := kernel(k.variant, fn, cuda.Grid1D(m.Rows*k.lanes, 256), m.Rows, rowPtr, colIdx, val, xs, y)
		c.Params["lanes"] = k.lanes
		cases = append(cases, c)
	}

	// CSR-stream runs over row blocks cut once on the host.
	blocks := keep(cuda.Upload(ctx, rowBlocks(m, streamCap, streamRows)))
	if err != nil {
		return nil, nil, err
	}
	if fn, err = compile("spmv_03_stream", "spmv_stream", fmt.Sprintf("-DCAP=%d", streamCap), fmt.Sprintf("-DTHREADS=%d", streamThreads)); err != nil {
		return nil, nil, err
	}
	nBlocks := blocks.Size()/4 - 1
	stream := kernel("spmv_stream", fn, cuda.LaunchConfig{Grid: cuda.Dim3{X: nBlocks}, Block: cuda.Dim3{X: streamThreads}}, blocks, rowPtr, colIdx, val, xs, y)
	stream.Params["row_blocks"] = nBlocks
	cases = append(cases, stream)

	// Step 04: vectorRows rows in flight per group of lanes, the mean row
	// length rounded down to a power of two (a row of 17 takes 16 lanes
	// twice rather than 32 lanes, 15 of them idle, once: measured faster).
	down := lanes
	if down > 2 && float64(down) > mean {
		down /= 2
	}
	if fn, err = compile("spmv_04_vector_rows", "spmv_vector_rows", fmt.Sprintf("-DLANES=%d", down), fmt.Sprintf("-DROWS=%d", vectorRows)); err != nil {
		return nil, nil, err
	}
	perWarp := vectorRows * 32 / down
	rows := kernel("spmv_vector_rows", fn, cuda.Grid1D((m.Rows+perWarp-1)/perWarp*32, 256), m.Rows, rowPtr, colIdx, val, xs, y)
	rows.Params["lanes"], rows.Params["rows_in_flight"] = down, vectorRows
	rows.Params["regs"], _ = fn.Attribute(cuda.FuncNumRegs)
	cases = append(cases, rows)

	// cuSPARSE's two CSR algorithms, prepared once (buffer, preprocessing).
	sp, err := ctx.NewSparse(nil)
	if err != nil {
		return nil, nil, err
	}
	a := cuda.CSR{Rows: m.Rows, Cols: m.Cols, NNZ: m.NNZ(), RowPtr: rowPtr, ColIdx: colIdx, Val: val}
	undo = append(undo, func() { sp.Destroy() })
	for _, alg := range []struct {
		variant string
		alg     cuda.SpMVAlg
	}{{"cusparse_csr_alg1", cuda.SpMVCSRAlg1}, {"cusparse_csr_alg2", cuda.SpMVCSRAlg2}} {
		p, err := sp.NewSpMV(a, xs, y, alg.alg)
		if err != nil {
			return nil, nil, err
		}
		undo = append(undo, p.Destroy)
		c := base(alg.variant)
		c.Reset, c.Check = reset, check
		c.Run = func() (time.Duration, error) { return timer.Time(p.Run) }
		cases = append(cases, c)
	}
	return cases, cleanup, nil
}

// vectorRows is ROWS of spmv_04_vector_rows.cu: rows in flight per group
// (2, 4 and 6 measured on an H200; 4 was fastest under the 32-register cap).
const vectorRows = 4

// The shape of spmv_03_stream.cu's row blocks, passed to it as CAP and
// THREADS (the sweep that chose them is in its header): at most streamCap
// entries (unless one row has more) and streamRows rows per block, and
// streamThreads threads.
const (
	streamCap     = 2048
	streamRows    = 512
	streamThreads = 128
)

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

// The "spgemm" suite: C = A² for a square A (a generator spec, a .mtx file
// or a SuiteSparse name). On the CPU the baseline is Gustavson on one
// goroutine; on CUDA it is cuSPARSE's SpGEMM, in the same run, against the
// five steps of the GPU ladder. Every variant's C must match the CPU
// Gustavson result: the same rows and columns, values within float32
// rounding. flops = 2 × products; peak_bytes is the device memory a run had
// allocated at its highest beyond A (C, buffers, workspaces).
func init() {
	bench.Register(bench.Suite{
		Name:  "spgemm",
		Doc:   "sparse × sparse, C = A²: CPU Gustavson (serial, parallel), dense accumulator, outer product; CUDA ladder 01–06 against cuSPARSE; flops = 2 × products",
		Sizes: spgemmSizes,
		Cases: spgemmCases,
	})
}

func spgemmSizes(dev engine.Info) []string {
	if dev.Kind == engine.CUDA {
		return []string{"uniform:n=262144,k=16", "banded:n=262144,w=8", "poisson:k=512",
			"rmat:scale=18,ef=8,a=0.57,b=0.19,c=0.19", "rmat:scale=16,ef=16,a=0.65,b=0.15,c=0.15"}
	}
	return []string{"uniform:n=16384,k=8", "rmat:scale=14,ef=8,a=0.57,b=0.19,c=0.19"}
}

// sameStructure compares two CSR results: rows and columns exactly, values
// with bench.Compare; a structural difference is an infinite error at the
// first differing entry.
func sameStructure(got, want *CSR) bench.Checked {
	if got.Rows != want.Rows || got.Cols != want.Cols || !slices.Equal(got.RowPtr, want.RowPtr) || !slices.Equal(got.ColIdx, want.ColIdx) {
		return bench.Checked{MaxRelErr: math.Inf(1), Worst: -1}
	}
	return bench.Compare(got.Val, want.Val)
}

// spgemmTolerance bounds the float32 disagreement between two summation
// orders of A·B's longest row: about (products in the row) · 2^-23 relative.
func spgemmTolerance(a, b *CSR) float64 {
	longest := 0
	for i := 0; i < a.Rows; i++ {
		n := 0
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			k := a.ColIdx[p]
			n += int(b.RowPtr[k+1] - b.RowPtr[k])
		}
		longest = max(longest, n)
	}
	return max(1e-5, float64(longest)*math.Ldexp(1, -23))
}

func spgemmCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	if dev.Kind != engine.CPU && dev.Kind != engine.CUDA {
		return nil, nil, fmt.Errorf("sparse: spgemm runs on the CPU and CUDA devices, not %s", dev.ID)
	}
	a, err := LoadMatrix(size)
	if err != nil {
		return nil, nil, err
	}
	if a.Rows != a.Cols {
		return nil, nil, fmt.Errorf("sparse: spgemm computes A², but %s is %d×%d", size, a.Rows, a.Cols)
	}
	products := Products(a, a)
	if products > math.MaxInt32 {
		return nil, nil, fmt.Errorf("sparse: A² of %s needs %d products; the 32-bit offsets allow %d", size, products, math.MaxInt32)
	}
	want, err := GustavsonParallel(a, a)
	if err != nil {
		return nil, nil, err
	}
	base := func(variant string) bench.Case {
		return bench.Case{Variant: variant, Flops: 2 * float64(products), Tol: spgemmTolerance(a, a),
			Params: bench.Params{"matrix": size, "rows": a.Rows, "nnz": a.NNZ(), "products": products, "nnz_c": want.NNZ()}}
	}
	if dev.Kind == engine.CUDA {
		return spgemmCUDA(dev.CUDA, a, want, base)
	}
	var cases []bench.Case
	for _, v := range []struct {
		name string
		f    func(a, b *CSR) (*CSR, error)
	}{{"gustavson_serial", Gustavson}, {"gustavson_parallel", GustavsonParallel},
		{"dense_accumulator", DenseAccumulator}, {"outer_product", OuterProduct}} {
		var got *CSR
		c := base(v.name)
		c.Baseline = v.name == "gustavson_serial"
		c.Reset = func() error { got = nil; return nil }
		c.Run = func() (time.Duration, error) {
			t := time.Now()
			var err error
			got, err = v.f(a, a)
			return time.Since(t), err
		}
		c.Check = func() (bench.Checked, error) {
			if got == nil {
				return bench.Checked{}, fmt.Errorf("%s produced no result", v.name)
			}
			return sameStructure(got, want), nil
		}
		cases = append(cases, c)
	}
	return cases, nil, nil
}

// spgemmCUDA prepares cuSPARSE (the baseline) and the ladder's steps. Each
// case keeps its latest C for the check and releases it before the next run;
// the timer spans the whole call, for cuSPARSE and the ladder alike, and both
// draw memory from the same caching pool.
func spgemmCUDA(ctx *cuda.Context, a, want *CSR, base func(string) bench.Case) (cases []bench.Case, closeAll func(), err error) {
	da, err := UploadCSR(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	g := NewGPUSpGEMM(ctx)
	sp, err := ctx.NewSparse(nil)
	if err != nil {
		da.Free()
		return nil, nil, err
	}
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		da.Free()
		sp.Destroy()
		return nil, nil, err
	}
	results := map[string]cuda.CSR{}
	closeAll = func() {
		for _, c := range results {
			g.Release(c)
		}
		timer.Destroy()
		sp.Destroy()
		g.Close()
		da.Free()
	}
	add := func(variant string, multiply func() (cuda.CSR, int, error)) {
		c := base(variant)
		c.Baseline = variant == "cusparse"
		c.Reset = func() error {
			g.Release(results[variant])
			delete(results, variant)
			return nil
		}
		c.Run = func() (time.Duration, error) {
			g.Release(results[variant])
			delete(results, variant)
			var out cuda.CSR
			var peak int
			d, err := timer.Time(func() error {
				var err error
				out, peak, err = multiply()
				return err
			})
			if err != nil {
				return 0, err
			}
			results[variant] = out
			c.Params["peak_bytes"] = peak
			return d, nil
		}
		c.Check = func() (bench.Checked, error) {
			out, ok := results[variant]
			if !ok {
				return bench.Checked{}, fmt.Errorf("%s produced no result", variant)
			}
			got, err := DownloadCSR(out)
			if err != nil {
				return bench.Checked{}, err
			}
			return sameStructure(got, want), nil
		}
		cases = append(cases, c)
	}
	add("cusparse", func() (cuda.CSR, int, error) { return g.CuSPARSE(sp, da, da) })
	for _, step := range GPUSteps {
		add(step, func() (cuda.CSR, int, error) {
			c, stats, err := g.Multiply(step, da, da)
			return c, stats.PeakBytes, err
		})
	}
	return cases, closeAll, nil
}
