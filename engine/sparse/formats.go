package sparse

import (
	"fmt"
	"iter"
	"math"
	"slices"

	"gpulab/engine"
)

// Validate checks that the three arrays have equal lengths, that the shape is
// non-negative and that every index is in range. Errors name the first bad
// entry and its values.
func (m *COO) Validate() error {
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("sparse: COO has negative shape %d×%d", m.Rows, m.Cols)
	}
	if len(m.Row) != len(m.Val) || len(m.Col) != len(m.Val) {
		return fmt.Errorf("sparse: COO arrays have unequal lengths: %d row indices, %d column indices, %d values",
			len(m.Row), len(m.Col), len(m.Val))
	}
	for k := range m.Val {
		r, c := m.Row[k], m.Col[k]
		if r < 0 || int(r) >= m.Rows {
			return fmt.Errorf("sparse: COO entry %d (%d, %d, %g): row %d out of range [0, %d)", k, r, c, m.Val[k], r, m.Rows)
		}
		if c < 0 || int(c) >= m.Cols {
			return fmt.Errorf("sparse: COO entry %d (%d, %d, %g): column %d out of range [0, %d)", k, r, c, m.Val[k], c, m.Cols)
		}
	}
	return nil
}

// Canonical returns a copy sorted by row, then column, with duplicate
// entries summed. The receiver is not modified. Explicit zeros (including
// duplicates that cancel) are kept.
func (m *COO) Canonical() *COO {
	n := min(len(m.Row), len(m.Col), len(m.Val))
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int {
		if m.Row[a] != m.Row[b] {
			return int(m.Row[a]) - int(m.Row[b])
		}
		return int(m.Col[a]) - int(m.Col[b])
	})
	out := &COO{Rows: m.Rows, Cols: m.Cols,
		Row: make([]int32, 0, n), Col: make([]int32, 0, n), Val: make([]float32, 0, n)}
	for _, p := range perm {
		r, c, v := m.Row[p], m.Col[p], m.Val[p]
		if k := len(out.Val) - 1; k >= 0 && out.Row[k] == r && out.Col[k] == c {
			out.Val[k] += v
			continue
		}
		out.Row = append(out.Row, r)
		out.Col = append(out.Col, c)
		out.Val = append(out.Val, v)
	}
	return out
}

// ToCSR validates m and converts it to CSR, sorting columns within each row
// and summing duplicates. The row pointers are Rows+1 however few the
// entries, so it first checks that the host has the memory for them and
// for the sorted entries (engine.CheckHostMemory): a file's header can
// declare two billion empty rows in three lines.
func (m *COO) ToCSR() (*CSR, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if len(m.Val) > math.MaxInt32 {
		return nil, fmt.Errorf("sparse: %d entries do not fit int32 indices", len(m.Val))
	}
	what := fmt.Sprintf("the CSR form of a %d×%d matrix with %d entries", m.Rows, m.Cols, len(m.Val))
	if err := engine.CheckHostMemory(what, fmt.Sprintf("%d row pointers and the entries sorted", m.Rows+1), toCSRBytes(m.Rows, len(m.Val))); err != nil {
		return nil, err
	}
	return m.compress(), nil
}

// Summed validates m and returns Canonical's copy of it (sorted by row,
// then column, entries at one position summed, as ToCSR sums them) and how
// many of m's entries were summed into another, with no slot per row: what
// a matrix of billions of declared rows needs to be described. It first
// checks that the host has the memory for the copy (engine.CheckHostMemory).
func (m *COO) Summed() (*COO, int, error) {
	if err := m.Validate(); err != nil {
		return nil, 0, err
	}
	what := fmt.Sprintf("summing the duplicates of a %d×%d matrix with %d entries", m.Rows, m.Cols, len(m.Val))
	if err := engine.CheckHostMemory(what, "the entries sorted", canonicalBytes(len(m.Val))); err != nil {
		return nil, 0, err
	}
	c := m.Canonical()
	return c, len(m.Val) - len(c.Val), nil
}

// toCSRBytes is the host memory ToCSR takes for rows and nnz entries: the
// row pointers and what Canonical takes (canonicalBytes).
func toCSRBytes(rows, nnz int) uint64 {
	return 4*uint64(rows+1) + canonicalBytes(nnz)
}

// canonicalBytes is the host memory Canonical takes for nnz entries: the
// sorted copy of the entries (row, column, value) and the order it sorts
// ([]int).
func canonicalBytes(nnz int) uint64 {
	return (12 + 8) * uint64(nnz)
}

// compress is ToCSR of a valid m, unchecked.
func (m *COO) compress() *CSR {
	c := m.Canonical()
	ptr := make([]int32, m.Rows+1)
	for _, r := range c.Row {
		ptr[r+1]++
	}
	for i := range m.Rows {
		ptr[i+1] += ptr[i]
	}
	return &CSR{Rows: m.Rows, Cols: m.Cols, RowPtr: ptr, ColIdx: c.Col, Val: c.Val}
}

// ToCSC validates m and converts it to CSC (rows increasing within each
// column, duplicates summed).
func (m *COO) ToCSC() (*CSC, error) {
	a, err := m.ToCSR()
	if err != nil {
		return nil, err
	}
	return a.ToCSC(), nil
}

// ToCOO expands m into coordinate form (already canonical when m is valid).
func (m *CSR) ToCOO() *COO {
	nnz := len(m.Val)
	out := &COO{Rows: m.Rows, Cols: m.Cols,
		Row: make([]int32, nnz), Col: slices.Clone(m.ColIdx), Val: slices.Clone(m.Val)}
	for i := range m.Rows {
		for k := m.RowPtr[i]; k < m.RowPtr[i+1]; k++ {
			out.Row[k] = int32(i)
		}
	}
	return out
}

// transpose turns a compressed layout with n outer slots and inner
// dimension inner into the compressed layout of its transpose, by a stable
// counting sort: inner indices of the result come out increasing.
func transpose(n, inner int, ptr, idx []int32, val []float32) ([]int32, []int32, []float32) {
	nnz := len(val)
	tp := make([]int32, inner+1)
	for _, j := range idx[:nnz] {
		tp[j+1]++
	}
	for j := range inner {
		tp[j+1] += tp[j]
	}
	next := slices.Clone(tp[:inner])
	ti := make([]int32, nnz)
	tv := make([]float32, nnz)
	for i := range n {
		for k := ptr[i]; k < ptr[i+1]; k++ {
			j := idx[k]
			d := next[j]
			next[j]++
			ti[d] = int32(i)
			tv[d] = val[k]
		}
	}
	return tp, ti, tv
}

// ToCSC converts m to CSC with the same shape.
func (m *CSR) ToCSC() *CSC {
	p, i, v := transpose(m.Rows, m.Cols, m.RowPtr, m.ColIdx, m.Val)
	return &CSC{Rows: m.Rows, Cols: m.Cols, ColPtr: p, RowIdx: i, Val: v}
}

// ToCSR converts m to CSR with the same shape.
func (m *CSC) ToCSR() *CSR {
	p, i, v := transpose(m.Cols, m.Rows, m.ColPtr, m.RowIdx, m.Val)
	return &CSR{Rows: m.Rows, Cols: m.Cols, RowPtr: p, ColIdx: i, Val: v}
}

// Transpose returns Aᵀ in CSR form (the CSC arrays of A, read as CSR).
func (m *CSR) Transpose() *CSR {
	p, i, v := transpose(m.Rows, m.Cols, m.RowPtr, m.ColIdx, m.Val)
	return &CSR{Rows: m.Cols, Cols: m.Rows, RowPtr: p, ColIdx: i, Val: v}
}

// Validate checks the CSR invariants: len(RowPtr) = Rows+1, RowPtr[0] = 0,
// RowPtr non-decreasing and ending at nnz, len(ColIdx) = len(Val), and column
// indices in range and strictly increasing within each row.
func (m *CSR) Validate() error {
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("sparse: CSR has negative shape %d×%d", m.Rows, m.Cols)
	}
	if len(m.RowPtr) != m.Rows+1 {
		return fmt.Errorf("sparse: CSR RowPtr has length %d, want Rows+1 = %d", len(m.RowPtr), m.Rows+1)
	}
	if len(m.ColIdx) != len(m.Val) {
		return fmt.Errorf("sparse: CSR has %d column indices but %d values", len(m.ColIdx), len(m.Val))
	}
	if m.RowPtr[0] != 0 {
		return fmt.Errorf("sparse: CSR RowPtr[0] = %d, want 0", m.RowPtr[0])
	}
	for i := range m.Rows {
		if m.RowPtr[i+1] < m.RowPtr[i] {
			return fmt.Errorf("sparse: CSR RowPtr not monotone: RowPtr[%d] = %d > RowPtr[%d] = %d",
				i, m.RowPtr[i], i+1, m.RowPtr[i+1])
		}
	}
	if int(m.RowPtr[m.Rows]) != len(m.Val) {
		return fmt.Errorf("sparse: CSR RowPtr[%d] = %d, want nnz = %d", m.Rows, m.RowPtr[m.Rows], len(m.Val))
	}
	for i := range m.Rows {
		for k := m.RowPtr[i]; k < m.RowPtr[i+1]; k++ {
			c := m.ColIdx[k]
			if c < 0 || int(c) >= m.Cols {
				return fmt.Errorf("sparse: CSR entry %d (row %d): column %d out of range [0, %d)", k, i, c, m.Cols)
			}
			if k > m.RowPtr[i] && c <= m.ColIdx[k-1] {
				return fmt.Errorf("sparse: CSR entry %d (row %d): column %d not greater than previous column %d",
					k, i, c, m.ColIdx[k-1])
			}
		}
	}
	return nil
}

// Dense returns m as a row-major Rows×Cols slice (for tests and small
// examples; it allocates Rows·Cols values). Repeated entries are summed.
func (m *CSR) Dense() []float32 {
	d := make([]float32, m.Rows*m.Cols)
	for i := range m.Rows {
		for k := m.RowPtr[i]; k < m.RowPtr[i+1]; k++ {
			d[i*m.Cols+int(m.ColIdx[k])] += m.Val[k]
		}
	}
	return d
}

// FromDense builds a CSR from a row-major rows×cols slice, keeping the
// non-zero values. It panics if len(d) != rows·cols.
func FromDense(rows, cols int, d []float32) (*CSR, error) {
	if rows < 0 || cols < 0 || len(d) != rows*cols {
		return nil, fmt.Errorf("sparse: FromDense: %d values for a %d×%d matrix", len(d), rows, cols)
	}
	m := &CSR{Rows: rows, Cols: cols, RowPtr: make([]int32, rows+1)}
	for i := range rows {
		for j, v := range d[i*cols : (i+1)*cols] {
			if v != 0 {
				m.ColIdx = append(m.ColIdx, int32(j))
				m.Val = append(m.Val, v)
			}
		}
		m.RowPtr[i+1] = int32(len(m.Val))
	}
	return m, nil
}

// Footprint is the memory a sparse format needs, with 4-byte indices (int32)
// and 4-byte values (float32).
type Footprint struct {
	Format     string
	IndexBytes int // index arrays: row/column indices and pointers
	ValueBytes int // the value array
	Total      int // IndexBytes + ValueBytes
}

func (f Footprint) String() string {
	return fmt.Sprintf("%s: %d B indices + %d B values = %d B", f.Format, f.IndexBytes, f.ValueBytes, f.Total)
}

func footprint(format string, indexEntries, valueEntries int) Footprint {
	return Footprint{Format: format, IndexBytes: 4 * indexEntries, ValueBytes: 4 * valueEntries,
		Total: 4 * (indexEntries + valueEntries)}
}

// Footprint of COO: 3E entries (row, column, value for each of E entries).
func (m *COO) Footprint() Footprint { return footprint("COO", 2*m.NNZ(), m.NNZ()) }

// Footprint of CSR: N+1+2E entries (row pointers, column indices, values).
func (m *CSR) Footprint() Footprint { return footprint("CSR", m.Rows+1+m.NNZ(), m.NNZ()) }

// Footprint of CSC: N+1+2E entries with N the number of columns.
func (m *CSC) Footprint() Footprint { return footprint("CSC", m.Cols+1+m.NNZ(), m.NNZ()) }

// RowLengths returns the number of entries in each row.
func (m *CSR) RowLengths() []int {
	l := make([]int, m.Rows)
	for i := range l {
		l[i] = int(m.RowPtr[i+1] - m.RowPtr[i])
	}
	return l
}

// RowStats returns the minimum, maximum, mean and (population) standard
// deviation of the row lengths of m; all zero for a matrix with no rows.
func RowStats(m *CSR) (minLen, maxLen int, mean, stddev float64) {
	s := rowLengthStats(m.Rows, func(yield func(int) bool) {
		for i := range m.Rows {
			if l := int(m.RowPtr[i+1] - m.RowPtr[i]); l > 0 && !yield(l) {
				return
			}
		}
	})
	return s.Min, s.Max, s.Mean, s.Stddev
}

// RowLengthStats summarizes the number of entries in each row of a matrix.
type RowLengthStats struct {
	Rows         int // rows, empty or not
	Empty        int // rows without an entry
	Min, Max     int
	Mean, Stddev float64 // the population's
}

// RowLengthStats counts the entries of each row of m (repeated entries
// count each time), in memory that grows with the entries and not with the
// rows: a header's billions of empty rows are one count.
func (m *COO) RowLengthStats() RowLengthStats {
	rows := slices.Clone(m.Row)
	slices.Sort(rows)
	return rowLengthStats(m.Rows, func(yield func(int) bool) {
		for start := 0; start < len(rows); {
			end := start + 1
			for end < len(rows) && rows[end] == rows[start] {
				end++
			}
			if !yield(end - start) {
				return
			}
			start = end
		}
	})
}

// rowLengthStats summarizes rows row lengths, of which lengths yields the
// nonzero ones (it is read twice); the other rows are empty.
func rowLengthStats(rows int, lengths iter.Seq[int]) RowLengthStats {
	s := RowLengthStats{Rows: rows, Empty: rows}
	if rows == 0 {
		return s
	}
	var sum float64
	for l := range lengths {
		if s.Empty == rows {
			s.Min = l
		}
		s.Empty--
		s.Min, s.Max = min(s.Min, l), max(s.Max, l)
		sum += float64(l)
	}
	if s.Empty > 0 {
		s.Min = 0
	}
	s.Mean = sum / float64(rows)
	ss := float64(s.Empty) * s.Mean * s.Mean
	for l := range lengths {
		d := float64(l) - s.Mean
		ss += d * d
	}
	s.Stddev = math.Sqrt(ss / float64(rows))
	return s
}
