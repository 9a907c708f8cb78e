package sparse

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"gpulab/engine/cpu"
)

// The CPU SpGEMM ladder: C = A·B for CSR matrices, every output row with
// increasing column indices and exact structure (entries that cancel to 0
// are kept, as cuSPARSE keeps them).
//
// The work is the number of intermediate products: for each entry a(i,k),
// the length of row k of B. Flops are counted as 2 per product.

// Products is the number of intermediate products of A·B.
func Products(a, b *CSR) int64 {
	var n int64
	for _, k := range a.ColIdx {
		n += int64(b.RowPtr[k+1] - b.RowPtr[k])
	}
	return n
}

// RowProducts returns, for each row i of A·B, the number of multiplications
// it needs: the sum of |row k of B| over the entries a_ik. It bounds the
// row's entries in C, and it is what the GPU steps bin rows by.
func RowProducts(a, b *CSR) []int64 {
	out := make([]int64, a.Rows)
	for i := range out {
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			k := a.ColIdx[p]
			out[i] += int64(b.RowPtr[k+1] - b.RowPtr[k])
		}
	}
	return out
}

func checkInner(a, b *CSR) error {
	if a.Cols != b.Rows {
		return fmt.Errorf("sparse: A·B: A is %d×%d but B is %d×%d: inner dimensions differ", a.Rows, a.Cols, b.Rows, b.Cols)
	}
	return nil
}

// accumulator is Gustavson's sparse accumulator for one output row: a dense
// array of values and a marker per column, plus the list of columns touched,
// so that clearing costs only what was touched.
type accumulator struct {
	val     []float32
	mark    []int32 // row+1 that last touched the column
	touched []int32
}

func newAccumulator(cols int) *accumulator {
	return &accumulator{val: make([]float32, cols), mark: make([]int32, cols)}
}

// row computes row i of A·B into cols and vals (appended), sorted by column.
func (acc *accumulator) row(a, b *CSR, i int, cols []int32, vals []float32) ([]int32, []float32) {
	acc.touched = acc.touched[:0]
	stamp := int32(i + 1)
	for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
		k, av := a.ColIdx[p], a.Val[p]
		for q := b.RowPtr[k]; q < b.RowPtr[k+1]; q++ {
			j := b.ColIdx[q]
			if acc.mark[j] != stamp {
				acc.mark[j] = stamp
				acc.val[j] = 0
				acc.touched = append(acc.touched, j)
			}
			acc.val[j] += av * b.Val[q]
		}
	}
	slices.Sort(acc.touched)
	for _, j := range acc.touched {
		cols = append(cols, j)
		vals = append(vals, acc.val[j])
	}
	return cols, vals
}

// Gustavson is row-wise SpGEMM on one goroutine: row i of C is the sum of
// the rows k of B scaled by a(i,k), gathered in a sparse accumulator.
func Gustavson(a, b *CSR) (*CSR, error) {
	if err := checkInner(a, b); err != nil {
		return nil, err
	}
	// C has at most one entry per product: reserving that much (up to 64M
	// entries) saves the copies of a slice that grows by appending.
	reserve := int(min(Products(a, b), 1<<26))
	c := &CSR{Rows: a.Rows, Cols: b.Cols, RowPtr: make([]int32, a.Rows+1),
		ColIdx: make([]int32, 0, reserve), Val: make([]float32, 0, reserve)}
	acc := newAccumulator(b.Cols)
	for i := 0; i < a.Rows; i++ {
		c.ColIdx, c.Val = acc.row(a, b, i, c.ColIdx, c.Val)
		c.RowPtr[i+1] = int32(len(c.Val))
	}
	return c, nil
}

// GustavsonParallel hands out blocks of 64 rows to one goroutine per core,
// each with its own accumulator, then concatenates the blocks' rows. Blocks
// are taken from a shared counter rather than split evenly up front, so a
// goroutine that draws the heavy rows of a power-law matrix does not hold up
// the others (load balancing).
func GustavsonParallel(a, b *CSR) (*CSR, error) {
	if err := checkInner(a, b); err != nil {
		return nil, err
	}
	const block = 64
	type part struct {
		lens []int32
		cols []int32
		vals []float32
	}
	parts := make([]part, (a.Rows+block-1)/block)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range cpu.Workers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := newAccumulator(b.Cols)
			for {
				n := int(next.Add(1)) - 1
				if n >= len(parts) {
					return
				}
				lo, hi := n*block, min((n+1)*block, a.Rows)
				p := &parts[n]
				p.lens = make([]int32, hi-lo)
				var products int64 // an upper bound of the block's entries: reserve it (up to 16M)
				for q := a.RowPtr[lo]; q < a.RowPtr[hi]; q++ {
					k := a.ColIdx[q]
					products += int64(b.RowPtr[k+1] - b.RowPtr[k])
				}
				reserve := int(min(products, 1<<24))
				p.cols, p.vals = make([]int32, 0, reserve), make([]float32, 0, reserve)
				for i := lo; i < hi; i++ {
					before := len(p.vals)
					p.cols, p.vals = acc.row(a, b, i, p.cols, p.vals)
					p.lens[i-lo] = int32(len(p.vals) - before)
				}
			}
		}()
	}
	wg.Wait()
	// Row pointers first, then each block's entries copied into place.
	c := &CSR{Rows: a.Rows, Cols: b.Cols, RowPtr: make([]int32, a.Rows+1)}
	for n, p := range parts {
		for r, l := range p.lens {
			i := n*block + r
			c.RowPtr[i+1] = c.RowPtr[i] + l
		}
	}
	c.ColIdx, c.Val = make([]int32, c.RowPtr[a.Rows]), make([]float32, c.RowPtr[a.Rows])
	for n, p := range parts {
		at := c.RowPtr[n*block]
		copy(c.ColIdx[at:], p.cols)
		copy(c.Val[at:], p.vals)
	}
	return c, nil
}

// DenseAccumulator is Gustavson with a dense row: every output row scans all
// b.Cols columns to collect its nonzeros, O(rows·cols) on top of the
// products. It shows why the sparse accumulator's touched list matters.
func DenseAccumulator(a, b *CSR) (*CSR, error) {
	if err := checkInner(a, b); err != nil {
		return nil, err
	}
	c := &CSR{Rows: a.Rows, Cols: b.Cols, RowPtr: make([]int32, a.Rows+1)}
	row := make([]float32, b.Cols)
	hit := make([]bool, b.Cols)
	for i := 0; i < a.Rows; i++ {
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			k, av := a.ColIdx[p], a.Val[p]
			for q := b.RowPtr[k]; q < b.RowPtr[k+1]; q++ {
				row[b.ColIdx[q]] += av * b.Val[q]
				hit[b.ColIdx[q]] = true
			}
		}
		for j := range row {
			if hit[j] {
				c.ColIdx = append(c.ColIdx, int32(j))
				c.Val = append(c.Val, row[j])
				row[j], hit[j] = 0, false
			}
		}
		c.RowPtr[i+1] = int32(len(c.Val))
	}
	return c, nil
}

// OuterProduct is the expand-sort-compress (ESC) formulation: for each k,
// column k of A times row k of B contributes a rank-1 block of products
// (i, j, a(i,k)·b(k,j)). All products are expanded, sorted by (i, j), and
// equal positions are summed. It needs memory for every product.
func OuterProduct(a, b *CSR) (*CSR, error) {
	if err := checkInner(a, b); err != nil {
		return nil, err
	}
	// Group A's entries by column (a counting sort): the columns of A.
	colStart := make([]int32, a.Cols+1)
	for _, k := range a.ColIdx {
		colStart[k+1]++
	}
	for k := 0; k < a.Cols; k++ {
		colStart[k+1] += colStart[k]
	}
	next := slices.Clone(colStart[:a.Cols])
	rowOf := make([]int32, len(a.ColIdx))
	valOf := make([]float32, len(a.ColIdx))
	for i := 0; i < a.Rows; i++ {
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			k := a.ColIdx[p]
			rowOf[next[k]], valOf[next[k]] = int32(i), a.Val[p]
			next[k]++
		}
	}
	// Expand.
	type product struct {
		i, j int32
		v    float32
	}
	prods := make([]product, 0, Products(a, b))
	for k := 0; k < a.Cols; k++ {
		for p := colStart[k]; p < colStart[k+1]; p++ {
			for q := b.RowPtr[k]; q < b.RowPtr[k+1]; q++ {
				prods = append(prods, product{rowOf[p], b.ColIdx[q], valOf[p] * b.Val[q]})
			}
		}
	}
	// Sort, then compress.
	slices.SortStableFunc(prods, func(x, y product) int {
		if x.i != y.i {
			return int(x.i - y.i)
		}
		return int(x.j - y.j)
	})
	c := &CSR{Rows: a.Rows, Cols: b.Cols, RowPtr: make([]int32, a.Rows+1)}
	for n := 0; n < len(prods); {
		p := prods[n]
		sum := float32(0)
		for ; n < len(prods) && prods[n].i == p.i && prods[n].j == p.j; n++ {
			sum += prods[n].v
		}
		c.ColIdx = append(c.ColIdx, p.j)
		c.Val = append(c.Val, sum)
		c.RowPtr[p.i+1]++
	}
	for i := 0; i < a.Rows; i++ {
		c.RowPtr[i+1] += c.RowPtr[i]
	}
	return c, nil
}
