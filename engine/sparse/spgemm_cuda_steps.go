package sparse

import (
	"fmt"

	"gpulab/engine/cuda"
)

// The SpGEMM ladder's steps, in order: one row each. A row names its kernel
// file (kernels/cuda/sparse/spgemm_<Name>.cu, which opens with the step's
// idea, traffic and cost) and the host sequence below that drives it. A new
// step is a new file and a new row; TestGPUSpGEMM checks every row against
// CPU Gustavson, and TestStepTablesMatchKernelFiles checks the rows against
// the files.

// spgemmStep is one step of the CUDA SpGEMM ladder.
type spgemmStep struct {
	Name     string // the spgemm suite's variant and docs/results' name: "04_binned"
	multiply func(r *run, a, b cuda.CSR, c *cuda.CSR) error

	// The hashed steps' configuration (see run.hashed).
	tables       []HashTable // bins of rows, by bound; rows beyond the last table go to the windowed dense kernels
	symbolicSpan int         // windows one block of the symbolic dense pass counts: SYMBOLIC_SPAN of the file (0: 1)
	alongside    bool        // each pass runs its dense bin on a second stream, beside its hash bins
}

var spgemmSteps = []spgemmStep{
	{Name: "01_row_per_block", multiply: (*run).rowPerBlock},
	{Name: "02_two_phase", multiply: (*run).twoPhase},
	{Name: "03_shared_hash", multiply: (*run).hashed, tables: SharedTables},
	{Name: "04_binned", multiply: (*run).hashed, tables: BinnedTables},
	{Name: "05_outer_product", multiply: (*run).outerProduct},
	{Name: "06_balanced", multiply: (*run).hashed, tables: BinnedTables, symbolicSpan: 16, alongside: true},
}

// GPUSteps lists the ladder's steps, in order.
var GPUSteps = spgemmStepNames()

func spgemmStepNames() []string {
	names := make([]string, len(spgemmSteps))
	for i, st := range spgemmSteps {
		names[i] = st.Name
	}
	return names
}

// spgemmStepNamed returns the step called name.
func spgemmStepNamed(name string) (spgemmStep, bool) {
	for _, st := range spgemmSteps {
		if st.Name == name {
			return st, true
		}
	}
	return spgemmStep{}, false
}

// file is the step's kernel file, as kernels.CUDA names it.
func (st spgemmStep) file() string { return "sparse/spgemm_" + st.Name }

// HashTable is one hash-kernel configuration: a table of Slots entries per
// row, Threads per block. A row goes to the first table whose Slots/2 is at
// least its bound, so no table is more than half full; rows beyond the last
// table go to the windowed dense kernels.
type HashTable struct{ Slots, Threads int }

// The tables of step 03 (one size for all) and steps 04 to 06 (binned). They
// must match the kernels that spgemm_03_shared_hash.cu, spgemm_04_binned.cu,
// spgemm_05_outer_product.cu and spgemm_06_balanced.cu instantiate.
var (
	SharedTables = []HashTable{{4096, 256}}
	BinnedTables = []HashTable{{64, 32}, {128, 32}, {256, 64}, {512, 128}, {1024, 256}, {2048, 256}, {4096, 256}}
)

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

// Steps 03, 04 and 06: two phases, rows binned to shared-memory hash tables
// (the step's tables) by their bound (products, then exact counts). Rows with
// more products than the largest table holds go to the windowed dense
// kernels, on chip as well and spread over a block per window; they keep the
// same list in both passes, so their per-window counts line up.
func (r *run) hashed(a, b cuda.CSR, c *cuda.CSR) error {
	tables := r.step.tables
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
	// A step with alongside set (06) runs each pass's dense bin beside its hash
	// bins (run.alongside), and closes one phase for them all.
	together := r.step.alongside && dense > 0
	span := max(1, r.step.symbolicSpan)
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
