package sparse

import (
	"math"
	"testing"
)

func TestSpMV(t *testing.T) {
	rect, _ := FromDense(3, 5, []float32{
		1, 0, 2, 0, 0,
		0, 0, 0, 0, 0,
		0, -3, 0, 4, 5,
	})
	cases := []struct {
		name string
		m    *CSR
	}{
		{"rect", rect},
		{"uniform", Uniform(300, 7, 1)},
		{"banded", Banded(257, 3, 2)},
		{"poisson", Poisson2D(12)},
		{"rmat", RMAT(8, 8, 0.57, 0.19, 0.19, 3)},
		{"empty", &CSR{Rows: 0, Cols: 0, RowPtr: []int32{0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			x := make([]float32, m.Cols)
			for j := range x {
				x[j] = float32(j%7) - 3
			}
			d := m.Dense()
			want := make([]float64, m.Rows)
			for i := range m.Rows {
				for j := range m.Cols {
					want[i] += float64(d[i*m.Cols+j]) * float64(x[j])
				}
			}
			y, yp := make([]float32, m.Rows), make([]float32, m.Rows)
			for i := range yp {
				yp[i] = 99 // must be overwritten
			}
			if err := SpMV(m, x, y); err != nil {
				t.Fatal(err)
			}
			if err := SpMVParallel(m, x, yp); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Abs(float64(y[i])-want[i]) > 1e-4*(1+math.Abs(want[i])) {
					t.Fatalf("y[%d] = %g, want %g", i, y[i], want[i])
				}
				if y[i] != yp[i] {
					t.Fatalf("parallel y[%d] = %g, serial %g", i, yp[i], y[i])
				}
			}
		})
	}
}

func TestSpMVBadLengths(t *testing.T) {
	m := Uniform(10, 3, 1)
	m.Cols = 12 // make it rectangular in the check
	cases := []struct {
		name   string
		m      *CSR
		nx, ny int
		want   string
	}{
		{"short x", m, 11, 10, "len(x) = 11, want Cols = 12"},
		{"long y", m, 12, 11, "len(y) = 11, want Rows = 10"},
		{"nil", nil, 0, 0, "nil matrix"},
		{"bad RowPtr", &CSR{Rows: 2, Cols: 2, RowPtr: []int32{0}}, 2, 2, "len(RowPtr) = 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, y := make([]float32, tc.nx), make([]float32, tc.ny)
			fmtCheckErr(t, SpMV(tc.m, x, y), tc.want)
			fmtCheckErr(t, SpMVParallel(tc.m, x, y), tc.want)
		})
	}
}

func TestRowBlocks(t *testing.T) {
	const maxEntries, maxRows = 64, 20
	for _, spec := range []string{"uniform:n=3000,k=7", "rmat:scale=11,ef=8", "poisson:k=33", "banded:n=10,w=0", "banded:n=100,w=0"} {
		m, err := Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		b := rowBlocks(m, maxEntries, maxRows)
		if b[0] != 0 || int(b[len(b)-1]) != m.Rows {
			t.Fatalf("%s: blocks %v do not span the rows", spec, b[:min(len(b), 5)])
		}
		for i := 0; i+1 < len(b); i++ {
			r0, r1 := b[i], b[i+1]
			entries := m.RowPtr[r1] - m.RowPtr[r0]
			if r1 <= r0 || r1-r0 > maxRows || (entries > maxEntries && r1-r0 != 1) {
				t.Errorf("%s: block %d = rows [%d, %d) with %d entries", spec, i, r0, r1, entries)
			}
			// Blocks are maximal: the next row would not have fitted.
			if i+2 < len(b) && r1-r0 < maxRows && m.RowPtr[r1+1]-m.RowPtr[r0] <= maxEntries {
				t.Errorf("%s: block %d = rows [%d, %d) could take row %d", spec, i, r0, r1, r1)
			}
		}
	}
}
