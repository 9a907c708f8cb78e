package exercise

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gpulab/engine/sparse"
)

// sparse/gustavson: C = A·B row by row with a sparse accumulator, written in
// Go; the check compares it with the library's Gustavson on matrices with
// empty rows, duplicates merged by the accumulator, rectangular shapes and
// power-law rows, and times it next to the CPU ladder of notebook 03.
func init() {
	register(Exercise{
		Name: "sparse/gustavson",
		Doc:  "C = A·B by rows (Gustavson) with a sparse accumulator, in Go: func Gustavson(a, b *sparse.CSR) (*sparse.CSR, error)",
		Flavors: []Flavor{{
			Lang: LangGo,
			// The filled-in cell that make test runs calls the library: it
			// exercises the check, not the student's algorithm.
			Solution: func() (string, error) {
				return "// EXERCISE sparse/gustavson: complete the function.\nfunc Gustavson(a, b *sparse.CSR) (*sparse.CSR, error) {\n\treturn sparse.Gustavson(a, b)\n}\n", nil
			},
		}},
	})
}

// GustavsonFunc is the signature of the sparse/gustavson exercise.
type GustavsonFunc func(a, b *sparse.CSR) (*sparse.CSR, error)

// RunGustavson checks f for the sparse/gustavson exercise; it never panics.
func RunGustavson(f GustavsonFunc) (r Result) {
	start := time.Now()
	r.Exercise, r.Device = "sparse/gustavson", "cpu"
	defer func() {
		if p := recover(); p != nil {
			r.Correct, r.Error = false, fmt.Sprintf("your function panicked: %v", p)
		}
		r.Elapsed = time.Since(start).Seconds()
	}()
	r.Compiled = true
	gen := func(spec string) *sparse.CSR {
		m, err := sparse.Generate(spec)
		if err != nil {
			panic(err)
		}
		return m
	}
	rect := &sparse.COO{Rows: 5, Cols: 3, Row: []int32{0, 0, 2, 4}, Col: []int32{1, 2, 0, 2}, Val: []float32{1, -2, 3, 0.5}}
	rb := &sparse.COO{Rows: 3, Cols: 6, Row: []int32{0, 1, 2, 2}, Col: []int32{5, 0, 0, 3}, Val: []float32{2, 1, -1, 4}}
	ra, _ := rect.ToCSR()
	rbm, _ := rb.ToCSR()
	cases := []struct {
		name string
		a, b *sparse.CSR
	}{
		{"rectangular 5×3 · 3×6 with empty rows", ra, rbm},
		{"uniform 300, 6 per row, squared", gen("uniform:n=300,k=6"), gen("uniform:n=300,k=6")},
		{"banded 200, w=3, squared", gen("banded:n=200,w=3"), gen("banded:n=200,w=3")},
		{"R-MAT scale 10, squared", gen("rmat:scale=10,ef=8"), gen("rmat:scale=10,ef=8")},
	}
	for _, tc := range cases {
		want, _ := sparse.Gustavson(tc.a, tc.b)
		got, err := f(tc.a, tc.b)
		if err != nil {
			r.Error = fmt.Sprintf("%s: your function returned an error: %v", tc.name, err)
			return r
		}
		if d := csrMismatch(got, want); d != "" {
			r.Error, r.Detail = "wrong result for "+tc.name, d
			return r
		}
	}
	r.Correct = true
	a := gen("rmat:scale=13,ef=8")
	r.Size = "C = A², A = rmat:scale=13,ef=8"
	flops := 2 * float64(sparse.Products(a, a))
	best := func(g GustavsonFunc) float64 {
		t := time.Duration(math.MaxInt64)
		for range 3 {
			s := time.Now()
			if _, err := g(a, a); err != nil {
				return 0
			}
			t = min(t, time.Since(s))
		}
		return flops / t.Seconds() / 1e9
	}
	r.GFLOPS = best(f)
	for _, step := range []struct {
		name string
		f    GustavsonFunc
	}{{"gustavson_serial", sparse.Gustavson}, {"gustavson_parallel", sparse.GustavsonParallel}, {"dense_accumulator", sparse.DenseAccumulator}, {"outer_product", sparse.OuterProduct}} {
		g := best(step.f)
		r.Ladder = append(r.Ladder, Rung{Name: step.name, GFLOPS: g})
		if step.name == "gustavson_serial" && g > 0 {
			r.PctOfRef = 100 * r.GFLOPS / g
		}
	}
	return r
}

// CheckGustavson runs RunGustavson and shows the result like Check.
func CheckGustavson(f GustavsonFunc) Result { return show(RunGustavson(f)) }

// csrMismatch describes the first difference between two CSR matrices:
// shape, a row's length or columns, or a value beyond float32 rounding.
func csrMismatch(got, want *sparse.CSR) string {
	if got == nil {
		return "your function returned no matrix"
	}
	if got.Rows != want.Rows || got.Cols != want.Cols {
		return fmt.Sprintf("C is %d×%d, expected %d×%d", got.Rows, got.Cols, want.Rows, want.Cols)
	}
	if err := got.Validate(); err != nil {
		return "C is not a valid CSR matrix (sorted, in-range columns): " + err.Error()
	}
	for i := range want.Rows {
		g := got.ColIdx[got.RowPtr[i]:got.RowPtr[i+1]]
		w := want.ColIdx[want.RowPtr[i]:want.RowPtr[i+1]]
		if !slices.Equal(g, w) {
			return fmt.Sprintf("row %d has columns %v, expected %v", i, g, w)
		}
		for p := range w {
			gv, wv := got.Val[int(got.RowPtr[i])+p], want.Val[int(want.RowPtr[i])+p]
			if math.Abs(float64(gv-wv)) > 1e-5*max(math.Abs(float64(wv)), 1) {
				return fmt.Sprintf("C[%d][%d] is %g, expected %g", i, w[p], gv, wv)
			}
		}
	}
	return ""
}
