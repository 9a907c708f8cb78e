package exercise

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/exercise/gohost"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/sparse"
)

// gustavsonSolution is the reference solution of sparse/gustavson: the
// marked cell, filled in.
//
//go:embed solutions/sparse_gustavson.go.txt
var gustavsonSolution string

// sparse/gustavson: C = A·B row by row with a sparse accumulator, written in
// Go; the check compares it with the library's Gustavson on matrices with
// empty rows, duplicates merged by the accumulator, rectangular shapes and
// power-law rows, and in a notebook times it next to the CPU ladder of
// notebook 03. The library's SpGEMM functions are the exercise's answer, so
// the cell may not call them.
func init() {
	register(Exercise{
		Name:   "sparse/gustavson",
		Doc:    "C = A·B by rows (Gustavson) with a sparse accumulator, in Go: func Gustavson(a, b *sparse.CSR) (*sparse.CSR, error)",
		GoMain: "gohost.ServeSpGEMM(Gustavson)",
		Forbidden: []string{"Gustavson", "GustavsonParallel", "DenseAccumulator", "OuterProduct",
			"GPUSpGEMM", "NewGPUSpGEMM", "Profile"},
		Flavors: []Flavor{{
			Lang:     LangGo,
			TODO:     "// TODO: for each row i of a, accumulate a[i][k]·b[k][:] into a sparse",
			Solution: func() (string, error) { return gustavsonSolution, nil },
			devices:  func() ([]engine.Info, error) { return []engine.Info{{ID: "cpu", Name: "Go", Kind: engine.CPU}}, nil },
			check:    checkGustavson,
		}},
	})
}

// spgemmRunner runs a Go SpGEMM function in this process; the time is the
// call's wall time.
type spgemmRunner gohost.SpGEMM

func (f spgemmRunner) Run(ts []wire.Task) ([][][]uint32, time.Duration, error) {
	var outs [][][]uint32
	var took time.Duration
	for _, t := range ts {
		a, b, err := gohost.SpGEMMArgs(t)
		if err != nil {
			return nil, 0, err
		}
		start := time.Now()
		c, err := gohost.CallSpGEMM(gohost.SpGEMM(f), a, b)
		took += time.Since(start)
		if err != nil {
			return nil, 0, err
		}
		outs = append(outs, gohost.CSROutputs(c))
	}
	return outs, took, nil
}

// RunGustavson checks f for the sparse/gustavson exercise in this process,
// next to the library's CPU ladder; it never panics.
func RunGustavson(f gohost.SpGEMM) (r Result) {
	start := time.Now()
	e, _ := Lookup("sparse/gustavson")
	defer func() {
		if p := recover(); p != nil {
			r.Correct, r.Error = false, fmt.Sprintf("the check crashed: %v", p)
		}
		r.Elapsed = time.Since(start).Seconds()
	}()
	info := engine.Info{ID: "cpu", Name: "Go", Kind: engine.CPU}
	s := &session{info: info, student: spgemmRunner(f), solution: spgemmRunner(sparse.Gustavson), local: true, rng: newRand()}
	return e.finish(checkGustavson(s), info, "", "")
}

// CheckGustavson runs RunGustavson and shows the result like Check.
func CheckGustavson(f gohost.SpGEMM) Result { return show(RunGustavson(f)) }

// spgemmProblem is C = A·B; the judging side computes its own C's rows
// with the library's Gustavson when it checks them.
type spgemmProblem struct {
	name string
	a, b *sparse.CSR
}

func newSpGEMMProblem(name string, a, b *sparse.CSR) (problem, error) {
	if a.Cols != b.Rows {
		return nil, fmt.Errorf("exercise: %s: A is %s and B %s", name, a.Shape(), b.Shape())
	}
	return spgemmProblem{name: name, a: a, b: b}, nil
}

func (p spgemmProblem) String() string { return p.name }

func (p spgemmProblem) hint() string {
	var h []string
	for i := range p.a.Rows {
		if p.a.RowPtr[i] == p.a.RowPtr[i+1] {
			h = append(h, "A has empty rows: C's rows for them are empty, and C.RowPtr must still have an entry for each")
			break
		}
	}
	if p.a.Rows != p.b.Cols {
		h = append(h, fmt.Sprintf("C is %d×%d: as many rows as A, as many columns as B", p.a.Rows, p.b.Cols))
	}
	return strings.Join(h, "; ")
}
func (p spgemmProblem) task() wire.Task { return gohost.SpGEMMTask(p.a, p.b) }
func (p spgemmProblem) rows() int       { return p.a.Rows }
func (p spgemmProblem) work() float64   { return 2 * float64(sparse.Products(p.a, p.b)) }

// mismatch describes the first difference from the judging side's C:
// shape, a row's columns, or a value beyond float32 rounding. Only the
// checked rows of C are computed: row i of A·B is row i of A times B.
func (p spgemmProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	got, err := gohost.OutputsCSR(out)
	if err != nil {
		return err.Error(), nil
	}
	if got.Rows != p.a.Rows || got.Cols != p.b.Cols {
		return fmt.Sprintf("C is %d×%d, expected %d×%d", got.Rows, got.Cols, p.a.Rows, p.b.Cols), nil
	}
	checked := rows
	if checked == nil {
		checked = make([]int, p.a.Rows)
		for i := range checked {
			checked[i] = i
		}
	}
	want, err := sparse.Gustavson(selectRows(p.a, checked), p.b)
	if err != nil {
		return "", err
	}
	for r, i := range checked {
		g := got.ColIdx[got.RowPtr[i]:got.RowPtr[i+1]]
		w := want.ColIdx[want.RowPtr[r]:want.RowPtr[r+1]]
		if !slices.Equal(g, w) {
			return fmt.Sprintf("row %d has columns %v, expected %v", i, g, w), nil
		}
		for q := range w {
			gv, wv := got.Val[int(got.RowPtr[i])+q], want.Val[int(want.RowPtr[r])+q]
			if d := wrongValue(gv, float64(wv), 1e-5); d != "" {
				return fmt.Sprintf("C[%d][%d] %s", i, w[q], d), nil
			}
		}
	}
	return "", nil
}

// selectRows is the matrix of m's rows in order.
func selectRows(m *sparse.CSR, rows []int) *sparse.CSR {
	s := &sparse.CSR{Rows: len(rows), Cols: m.Cols, RowPtr: make([]int32, 1, len(rows)+1)}
	for _, i := range rows {
		lo, hi := m.RowPtr[i], m.RowPtr[i+1]
		s.ColIdx, s.Val = append(s.ColIdx, m.ColIdx[lo:hi]...), append(s.Val, m.Val[lo:hi]...)
		s.RowPtr = append(s.RowPtr, int32(len(s.Val)))
	}
	return s
}

// gustavsonShapes: a rectangular product with empty rows, uniform, banded
// and R-MAT (power-law rows) matrices, each with its own random seed.
var gustavsonShapes = []draw{
	func(rng *rand.Rand) (problem, error) {
		val := func(n int) []float32 { return randomMatrix(rng, n) }
		a, err := (&sparse.COO{Rows: 5, Cols: 3, Row: []int32{0, 0, 2, 4}, Col: []int32{1, 2, 0, 2}, Val: val(4)}).ToCSR()
		if err != nil {
			return nil, err
		}
		b, err := (&sparse.COO{Rows: 3, Cols: 6, Row: []int32{0, 1, 2, 2}, Col: []int32{5, 0, 0, 3}, Val: val(4)}).ToCSR()
		if err != nil {
			return nil, err
		}
		return newSpGEMMProblem("rectangular 5×3 · 3×6 with empty rows", a, b)
	},
	func(rng *rand.Rand) (problem, error) {
		return newSpGEMMProblem("uniform 300×300, 6 per row", sparse.Uniform(300, 6, rng.Uint64()), sparse.Uniform(300, 6, rng.Uint64()))
	},
	func(rng *rand.Rand) (problem, error) {
		return newSpGEMMProblem("banded 200×200, half-width 3", sparse.Banded(200, 3, rng.Uint64()), sparse.Banded(200, 3, rng.Uint64()))
	},
	rmatDraw(10),
}

// rmatDraw is A² for an R-MAT matrix of 2^scale rows, 8 entries per row on
// average.
func rmatDraw(scale int) draw {
	return func(rng *rand.Rand) (problem, error) {
		a := sparse.RMAT(scale, 8, 0.57, 0.19, 0.19, rng.Uint64())
		return newSpGEMMProblem("C = A², A = R-MAT scale "+strconv.Itoa(scale)+", 8 per row", a, a)
	}
}

func checkGustavson(s *session) Result {
	return s.judge(gustavsonShapes, rmatDraw(13), "gustavson_serial (the library's)", func(pr problem) []Rung {
		p := pr.(spgemmProblem)
		var rungs []Rung
		for _, step := range []struct {
			name string
			f    gohost.SpGEMM
		}{{"gustavson_parallel", sparse.GustavsonParallel}, {"dense_accumulator", sparse.DenseAccumulator}, {"outer_product", sparse.OuterProduct}} {
			t, err := best(func() (time.Duration, error) {
				start := time.Now()
				_, err := step.f(p.a, p.b)
				return time.Since(start), err
			})
			if err == nil {
				rungs = append(rungs, Rung{Name: step.name, GFLOPS: p.work() / t.Seconds() / 1e9})
			}
		}
		return rungs
	})
}

// InspectGo reads a Go exercise's cell without building it: it must be
// text (CheckText), it must not hold the skeleton's TODO line, nor be the
// course's public solution, and InspectGoFile must accept it as the file
// lab's build starts from (the cell in package main, importing package
// sparse by its name; cgo is refused, naming the line). That
// file's imports are not yet goimports': the build inspects its file
// again once they are. A cell that does not parse is left to the
// compiler, which says where.
func (e Exercise) InspectGo(cell string) error {
	if !e.IsGo() {
		return fmt.Errorf("%s is a kernel exercise", e.Name)
	}
	if err := CheckText(cell); err != nil {
		return err
	}
	if todo := e.Flavors[0].TODO; unfinished(cell, todo) {
		return fmt.Errorf("%s", errUnfinished(e.Name, todo))
	}
	if e.refuse != nil {
		if err := e.refuse(e.Flavors[0], cell); err != nil {
			return err
		}
	}
	fset, f, err := withSparse(cell)
	if err != nil {
		return nil
	}
	return e.inspectFile(fset, f, cell)
}
