package sparse

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomCSR builds a rows×cols CSR with about density·cols entries per row,
// sorted columns, values in [-1, 1), from a seed; skew > 0 makes a few rows long.
func randomCSR(rows, cols int, density float64, skew int, seed uint64) *CSR {
	r := rand.New(rand.NewPCG(seed, 1))
	m := &CSR{Rows: rows, Cols: cols, RowPtr: make([]int32, rows+1)}
	for i := 0; i < rows; i++ {
		d := density
		if skew > 0 && i%skew == 0 {
			d = min(1, density*10)
		}
		for j := 0; j < cols; j++ {
			if r.Float64() < d {
				m.ColIdx = append(m.ColIdx, int32(j))
				m.Val = append(m.Val, r.Float32()*2-1)
			}
		}
		m.RowPtr[i+1] = int32(len(m.Val))
	}
	return m
}

// denseProduct is the float64 reference of A·B as a dense row-major array.
func denseProduct(a, b *CSR) []float64 {
	c := make([]float64, a.Rows*b.Cols)
	for i := 0; i < a.Rows; i++ {
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			k := a.ColIdx[p]
			for q := b.RowPtr[k]; q < b.RowPtr[k+1]; q++ {
				c[i*b.Cols+int(b.ColIdx[q])] += float64(a.Val[p]) * float64(b.Val[q])
			}
		}
	}
	return c
}

// structure is the set of positions a product can fill: (i, j) with some k
// such that a(i,k) and b(k,j) are stored.
func structure(a, b *CSR) map[[2]int32]bool {
	s := map[[2]int32]bool{}
	for i := 0; i < a.Rows; i++ {
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			k := a.ColIdx[p]
			for q := b.RowPtr[k]; q < b.RowPtr[k+1]; q++ {
				s[[2]int32{int32(i), b.ColIdx[q]}] = true
			}
		}
	}
	return s
}

func TestSpGEMMLadder(t *testing.T) {
	ladder := map[string]func(a, b *CSR) (*CSR, error){
		"Gustavson": Gustavson, "GustavsonParallel": GustavsonParallel,
		"DenseAccumulator": DenseAccumulator, "OuterProduct": OuterProduct,
	}
	for _, tc := range []struct {
		name string
		a, b *CSR
	}{
		{"empty", &CSR{Rows: 3, Cols: 4, RowPtr: make([]int32, 4)}, randomCSR(4, 5, 0.5, 0, 1)},
		{"1x1", randomCSR(1, 1, 1, 0, 2), randomCSR(1, 1, 1, 0, 3)},
		{"square", randomCSR(50, 50, 0.1, 0, 4), randomCSR(50, 50, 0.1, 0, 5)},
		{"rectangular", randomCSR(37, 61, 0.08, 0, 6), randomCSR(61, 23, 0.2, 0, 7)},
		{"skewed rows", randomCSR(300, 300, 0.01, 17, 8), randomCSR(300, 300, 0.02, 13, 9)},
	} {
		want := denseProduct(tc.a, tc.b)
		shape := structure(tc.a, tc.b)
		for name, f := range ladder {
			c, err := f(tc.a, tc.b)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.name, name, err)
			}
			if c.Rows != tc.a.Rows || c.Cols != tc.b.Cols || len(c.RowPtr) != c.Rows+1 || c.NNZ() != len(shape) {
				t.Errorf("%s %s: %d×%d with %d entries, want %d×%d with %d", tc.name, name, c.Rows, c.Cols, c.NNZ(), tc.a.Rows, tc.b.Cols, len(shape))
				continue
			}
			for i := 0; i < c.Rows; i++ {
				row := c.ColIdx[c.RowPtr[i]:c.RowPtr[i+1]]
				if !slices.IsSorted(row) {
					t.Errorf("%s %s: row %d columns not sorted: %v", tc.name, name, i, row)
				}
				for p := c.RowPtr[i]; p < c.RowPtr[i+1]; p++ {
					j := c.ColIdx[p]
					if !shape[[2]int32{int32(i), j}] {
						t.Errorf("%s %s: entry (%d,%d) outside the product's structure", tc.name, name, i, j)
					}
					w := want[i*c.Cols+int(j)]
					if math.Abs(float64(c.Val[p])-w) > 1e-5*math.Max(1, math.Abs(w)) {
						t.Errorf("%s %s: c(%d,%d) = %v, want %v", tc.name, name, i, j, c.Val[p], w)
					}
				}
			}
		}
	}
}

func TestSpGEMMInnerDimensions(t *testing.T) {
	a, b := randomCSR(3, 4, 0.5, 0, 1), randomCSR(5, 2, 0.5, 0, 2)
	for _, f := range []func(a, b *CSR) (*CSR, error){Gustavson, GustavsonParallel, DenseAccumulator, OuterProduct} {
		if _, err := f(a, b); err == nil || !strings.Contains(err.Error(), "A is 3×4 but B is 5×2") {
			t.Errorf("mismatched inner dimensions: %v", err)
		}
	}
}

func TestProducts(t *testing.T) {
	// Full m×k times full k×n has m·k·n products; an empty A has none.
	for _, tc := range []struct{ m, k, n int }{{2, 2, 3}, {5, 1, 4}, {1, 7, 1}} {
		a, b := randomCSR(tc.m, tc.k, 1, 0, 1), randomCSR(tc.k, tc.n, 1, 0, 2)
		if got := Products(a, b); got != int64(tc.m*tc.k*tc.n) {
			t.Errorf("%v: Products = %d, want %d", tc, got, tc.m*tc.k*tc.n)
		}
	}
	if got := Products(&CSR{Rows: 3, Cols: 2, RowPtr: make([]int32, 4)}, randomCSR(2, 2, 1, 0, 3)); got != 0 {
		t.Errorf("empty A: %d products", got)
	}
}

func TestRowProducts(t *testing.T) {
	for _, spec := range []string{"uniform:n=500,k=6", "rmat:scale=9,ef=4", "banded:n=7,w=0"} {
		m, err := Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		per := RowProducts(m, m)
		var sum int64
		for i, n := range per {
			var want int64
			for p := m.RowPtr[i]; p < m.RowPtr[i+1]; p++ {
				k := m.ColIdx[p]
				want += int64(m.RowPtr[k+1] - m.RowPtr[k])
			}
			if n != want {
				t.Fatalf("%s: row %d has %d products, want %d", spec, i, n, want)
			}
			sum += n
		}
		if sum != Products(m, m) {
			t.Errorf("%s: rows sum to %d products, Products says %d", spec, sum, Products(m, m))
		}
	}
}
