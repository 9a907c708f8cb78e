package sparse

import (
	"fmt"
	"math"

	"gpulab/engine/cuda"
)

// The host-side building blocks that the SpGEMM steps share: scans, product
// counts, bins of rows, dense workspaces, C's allocation and packing, and a
// launch per bin. Each is a kernel of spgemm_common.cuh (or of the step's
// own file) and the memory around it, drawn from the run's meter.

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
