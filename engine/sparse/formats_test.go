package sparse

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomCOOForFormats returns an unsorted COO with about nnz entries, some of
// them repeated so that Canonical has duplicates to sum.
func randomCOOForFormats(rows, cols, nnz int, seed uint64) *COO {
	r := rand.New(rand.NewPCG(seed, 7))
	m := &COO{Rows: rows, Cols: cols}
	for range nnz {
		i, j := int32(r.IntN(rows)), int32(r.IntN(cols))
		m.Row, m.Col, m.Val = append(m.Row, i), append(m.Col, j), append(m.Val, float32(r.IntN(9)-4))
		if r.IntN(5) == 0 { // a duplicate
			m.Row, m.Col, m.Val = append(m.Row, i), append(m.Col, j), append(m.Val, 0.5)
		}
	}
	return m
}

// seedExample4x4 is the 4×4 matrix of the May 2020 post:
//
//	0 0 0 0
//	5 8 0 0
//	0 0 3 0
//	0 6 0 0
func seedExample4x4() *COO {
	return &COO{Rows: 4, Cols: 4,
		Row: []int32{1, 1, 2, 3}, Col: []int32{0, 1, 2, 1}, Val: []float32{5, 8, 3, 6}}
}

func TestFormatRoundTrip(t *testing.T) {
	cases := []struct {
		name            string
		rows, cols, nnz int
		seed            uint64
	}{
		{"empty", 5, 7, 0, 1},
		{"square", 50, 50, 300, 2},
		{"wide", 10, 200, 500, 3},
		{"tall", 300, 3, 200, 4},
		{"dense-ish", 8, 8, 200, 5},
		{"zero-rows", 0, 4, 0, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			coo := randomCOOForFormats(tc.rows, tc.cols, tc.nnz, tc.seed)
			want := coo.Canonical()
			csr, err := coo.ToCSR()
			if err != nil {
				t.Fatal(err)
			}
			if err := csr.Validate(); err != nil {
				t.Fatalf("ToCSR gave an invalid CSR: %v", err)
			}
			csc := csr.ToCSC()
			csr2 := csc.ToCSR()
			if err := csr2.Validate(); err != nil {
				t.Fatalf("CSC.ToCSR gave an invalid CSR: %v", err)
			}
			got := csr2.ToCOO()
			if !fmtCOOEqual(got, want) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, want)
			}
			csc2, err := coo.ToCSC()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(csc2, csc) {
				t.Fatalf("COO.ToCSC differs from CSR.ToCSC")
			}
			// Transpose twice is the identity; once, it matches the dense transpose.
			tr := csr.Transpose()
			if err := tr.Validate(); err != nil {
				t.Fatalf("Transpose invalid: %v", err)
			}
			d, dt := csr.Dense(), tr.Dense()
			for i := range tc.rows {
				for j := range tc.cols {
					if d[i*tc.cols+j] != dt[j*tc.rows+i] {
						t.Fatalf("Transpose(%d,%d) = %g, want %g", j, i, dt[j*tc.rows+i], d[i*tc.cols+j])
					}
				}
			}
			if !reflect.DeepEqual(tr.Transpose(), csr) {
				t.Fatalf("Transpose twice differs")
			}
			// FromDense∘Dense keeps the non-zero entries.
			fd, err := FromDense(tc.rows, tc.cols, d)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fd.Dense(), d) {
				t.Fatalf("FromDense(Dense) differs")
			}
		})
	}
}

func fmtCOOEqual(a, b *COO) bool {
	return a.Rows == b.Rows && a.Cols == b.Cols && reflect.DeepEqual(a.Row, b.Row) &&
		reflect.DeepEqual(a.Col, b.Col) && reflect.DeepEqual(a.Val, b.Val)
}

func TestCanonicalSumsDuplicates(t *testing.T) {
	m := &COO{Rows: 3, Cols: 3,
		Row: []int32{2, 0, 2, 0, 1, 2},
		Col: []int32{1, 2, 1, 0, 1, 1},
		Val: []float32{1, 2, 3, 4, 5, 6}}
	orig := *m
	orig.Row = append([]int32(nil), m.Row...)
	got := m.Canonical()
	want := &COO{Rows: 3, Cols: 3,
		Row: []int32{0, 0, 1, 2}, Col: []int32{0, 2, 1, 1}, Val: []float32{4, 2, 5, 10}}
	if !fmtCOOEqual(got, want) {
		t.Fatalf("Canonical = %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(m.Row, orig.Row) {
		t.Fatalf("Canonical modified its receiver")
	}
	csr, err := m.ToCSR()
	if err != nil {
		t.Fatal(err)
	}
	if csr.NNZ() != 4 || csr.Dense()[2*3+1] != 10 {
		t.Fatalf("ToCSR did not sum duplicates: %+v", csr)
	}
}

func TestSeedExampleFootprint(t *testing.T) {
	// The post's 4×4 example: N = 4, E = 4, 4-byte indices and values.
	//   COO: 3E = 12 entries: indices 2E = 8 (32 B), values E = 4 (16 B) -> 48 B.
	//   CSR: N+1+2E = 5+8 = 13 entries: RowPtr 5 + ColIdx 4 = 9 (36 B),
	//        values 4 (16 B) -> 52 B (the post's N+2E, plus RowPtr's final slot).
	//   CSC: Cols+1+2E = 13 entries, the same 52 B.
	coo := seedExample4x4()
	csr, err := coo.ToCSR()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 0, 2, 3, 4}; !reflect.DeepEqual(csr.RowPtr, want) {
		t.Fatalf("RowPtr = %v, want the post's %v", csr.RowPtr, want)
	}
	if want := []int32{0, 1, 2, 1}; !reflect.DeepEqual(csr.ColIdx, want) {
		t.Fatalf("ColIdx = %v, want the post's %v", csr.ColIdx, want)
	}
	csc := csr.ToCSC()
	if want := []int32{0, 1, 3, 4, 4}; !reflect.DeepEqual(csc.ColPtr, want) {
		t.Fatalf("ColPtr = %v, want %v", csc.ColPtr, want)
	}
	cases := []struct {
		got  Footprint
		want Footprint
	}{
		{coo.Footprint(), Footprint{"COO", 32, 16, 48}},
		{csr.Footprint(), Footprint{"CSR", 36, 16, 52}},
		{csc.Footprint(), Footprint{"CSC", 36, 16, 52}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s footprint = %+v, want %+v", c.want.Format, c.got, c.want)
		}
	}
	if s := coo.Footprint().String(); !strings.Contains(s, "48 B") {
		t.Errorf("Footprint.String() = %q", s)
	}
	if got, want := csr.RowLengths(), []int{0, 2, 1, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("RowLengths = %v, want %v", got, want)
	}
	mn, mx, mean, sd := RowStats(csr)
	// lengths 0,2,1,1: mean 1, variance (1+1+0+0)/4 = 0.5.
	if mn != 0 || mx != 2 || mean != 1 || math.Abs(sd-math.Sqrt(0.5)) > 1e-12 {
		t.Errorf("RowStats = %d %d %g %g, want 0 2 1 %g", mn, mx, mean, sd, math.Sqrt(0.5))
	}
}

func TestCOOValidate(t *testing.T) {
	cases := []struct {
		name string
		m    COO
		want string // substring of the error; "" for none
	}{
		{"ok", *seedExample4x4(), ""},
		{"row out of range", COO{Rows: 2, Cols: 2, Row: []int32{0, 2}, Col: []int32{0, 1}, Val: []float32{1, 7}}, "entry 1 (2, 1, 7): row 2 out of range"},
		{"negative col", COO{Rows: 2, Cols: 2, Row: []int32{0}, Col: []int32{-1}, Val: []float32{3}}, "entry 0 (0, -1, 3): column -1 out of range"},
		{"col out of range", COO{Rows: 2, Cols: 2, Row: []int32{1}, Col: []int32{2}, Val: []float32{3}}, "column 2 out of range [0, 2)"},
		{"unequal lengths", COO{Rows: 2, Cols: 2, Row: []int32{0, 1}, Col: []int32{0}, Val: []float32{1, 2}}, "2 row indices, 1 column indices, 2 values"},
		{"negative shape", COO{Rows: -1, Cols: 2}, "negative shape"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			fmtCheckErr(t, err, tc.want)
			if _, err2 := tc.m.ToCSR(); (err2 == nil) != (err == nil) {
				t.Errorf("ToCSR error %v disagrees with Validate %v", err2, err)
			}
		})
	}
}

func TestCSRValidate(t *testing.T) {
	good := func() CSR {
		return CSR{Rows: 3, Cols: 3, RowPtr: []int32{0, 1, 3, 3}, ColIdx: []int32{2, 0, 1}, Val: []float32{1, 2, 3}}
	}
	cases := []struct {
		name   string
		modify func(m *CSR)
		want   string
	}{
		{"ok", func(*CSR) {}, ""},
		{"non-monotone RowPtr", func(m *CSR) { m.RowPtr = []int32{0, 2, 1, 3} }, "not monotone: RowPtr[1] = 2 > RowPtr[2] = 1"},
		{"RowPtr length", func(m *CSR) { m.RowPtr = m.RowPtr[:3] }, "RowPtr has length 3, want Rows+1 = 4"},
		{"RowPtr start", func(m *CSR) { m.RowPtr[0] = 1 }, "RowPtr[0] = 1"},
		{"RowPtr end", func(m *CSR) { m.RowPtr[3] = 2; m.RowPtr[2] = 2 }, "RowPtr[3] = 2, want nnz = 3"},
		{"unequal lengths", func(m *CSR) { m.Val = m.Val[:2] }, "3 column indices but 2 values"},
		{"col out of range", func(m *CSR) { m.ColIdx[0] = 3 }, "entry 0 (row 0): column 3 out of range"},
		{"cols not increasing", func(m *CSR) { m.ColIdx[1], m.ColIdx[2] = 1, 1 }, "entry 2 (row 1): column 1 not greater"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.modify(&m)
			fmtCheckErr(t, m.Validate(), tc.want)
		})
	}
}

func fmtCheckErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func TestFromDense(t *testing.T) {
	d := []float32{
		0, 0, 0, 0,
		5, 8, 0, 0,
		0, 0, 3, 0,
		0, 6, 0, 0,
	}
	m, err := FromDense(4, 4, d)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := seedExample4x4().ToCSR()
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("FromDense = %+v, want %+v", m, want)
	}
	if _, err := FromDense(3, 3, d); err == nil || !strings.Contains(err.Error(), "16 values for a 3×3 matrix") {
		t.Errorf("FromDense with the wrong length: %v", err)
	}
}
