// Package gohost is the host side of a Go exercise. Under lab grade, the
// student's marked cell is built into a program whose main calls a Serve
// function of this package; the program then runs in a sandbox and speaks
// package wire on file descriptor 3: it receives inputs drawn by the
// grader, calls the student's function on them and sends back what it
// returned. The grader, not this program, decides whether that is right,
// so nothing the student's code does to this process (it shares it) can
// change a grade, only its own outputs.
//
// The conversions between a task's arguments and the exercise's Go types
// live here too, so that a notebook's in-process check uses the same ones.
package gohost

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"

	"gpulab/engine/exercise/wire"
	"gpulab/engine/sparse"
)

// SpGEMM is the function of the sparse/gustavson exercise: C = A·B.
type SpGEMM func(a, b *sparse.CSR) (*sparse.CSR, error)

// ServeSpGEMM serves f on file descriptor 3 and exits: 0 after the
// grader's Bye, 2 when the conversation breaks.
func ServeSpGEMM(f SpGEMM) {
	conn, _, err := wire.Accept(os.NewFile(3, "grader"))
	if err == nil {
		err = wire.Serve(conn, "cpu (Go)", func(ts []wire.Task) (wire.Job, error) {
			j := &spgemmJob{f: f}
			for _, t := range ts {
				a, b, err := SpGEMMArgs(t)
				if err != nil {
					return nil, err
				}
				j.a, j.b = append(j.a, a), append(j.b, b)
			}
			return j, nil
		}, true)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gohost:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// spgemmJob is a batch of products, each A·B of its own.
type spgemmJob struct {
	f       SpGEMM
	a, b, c []*sparse.CSR
}

func (j *spgemmJob) Launch() error {
	for i := range j.a {
		c, err := CallSpGEMM(j.f, j.a[i], j.b[i])
		if err != nil {
			return err
		}
		j.c = append(j.c, c)
	}
	return nil
}

func (j *spgemmJob) Outputs() ([][][]uint32, error) {
	var outs [][][]uint32
	for _, c := range j.c {
		outs = append(outs, CSROutputs(c))
	}
	return outs, nil
}

func (j *spgemmJob) Free() {}

// CallSpGEMM calls f, turning a panic or a returned error into a RunFault
// that says which.
func CallSpGEMM(f SpGEMM, a, b *sparse.CSR) (c *sparse.CSR, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, runFault(fmt.Sprintf("your function panicked: %v\n%s", p, debug.Stack()))
		}
	}()
	c, err = f(a, b)
	if err != nil {
		return nil, runFault("your function returned an error: " + err.Error())
	}
	if c == nil {
		return nil, runFault("your function returned no matrix (nil) and no error")
	}
	return c, nil
}

func runFault(msg string) error {
	return &wire.FaultError{Fault: wire.Fault{Kind: wire.RunFault, Msg: msg}}
}

// SpGEMMTask is the task of computing A·B: the two matrices as arguments
// (rows, cols, RowPtr, ColIdx, Val of each), and a bound on C's words.
func SpGEMMTask(a, b *sparse.CSR) wire.Task {
	nnz := min(sparse.Products(a, b), int64(a.Rows)*int64(b.Cols))
	return wire.Task{
		Args:   []any{a.Rows, a.Cols, a.RowPtr, a.ColIdx, a.Val, b.Rows, b.Cols, b.RowPtr, b.ColIdx, b.Val},
		MaxOut: 2 + a.Rows + 1 + 2*int(nnz),
	}
}

// SpGEMMArgs reads A and B back from a task; they must be valid CSR
// matrices of compatible shapes.
func SpGEMMArgs(t wire.Task) (a, b *sparse.CSR, err error) {
	if len(t.Args) != 10 {
		return nil, nil, fmt.Errorf("gohost: a task of %d arguments, want 10", len(t.Args))
	}
	var ms [2]*sparse.CSR
	for i := range ms {
		args := t.Args[5*i : 5*i+5]
		rows, ok1 := args[0].(int)
		cols, ok2 := args[1].(int)
		ptr, ok3 := args[2].([]int32)
		idx, ok4 := args[3].([]int32)
		val, ok5 := args[4].([]float32)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			return nil, nil, errors.New("gohost: the task's arguments are not two CSR matrices")
		}
		ms[i] = &sparse.CSR{Rows: rows, Cols: cols, RowPtr: ptr, ColIdx: idx, Val: val}
		if err := ms[i].Validate(); err != nil {
			return nil, nil, fmt.Errorf("gohost: matrix %d: %w", i, err)
		}
	}
	if ms[0].Cols != ms[1].Rows {
		return nil, nil, fmt.Errorf("gohost: A is %s and B %s", ms[0].Shape(), ms[1].Shape())
	}
	return ms[0], ms[1], nil
}

// CSROutputs are a matrix as outputs: {rows, cols}, RowPtr, ColIdx, Val.
func CSROutputs(c *sparse.CSR) [][]uint32 {
	words := func(n int, w func(i int) uint32) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = w(i)
		}
		return out
	}
	return [][]uint32{
		{uint32(c.Rows), uint32(c.Cols)},
		words(len(c.RowPtr), func(i int) uint32 { return uint32(c.RowPtr[i]) }),
		words(len(c.ColIdx), func(i int) uint32 { return uint32(c.ColIdx[i]) }),
		words(len(c.Val), func(i int) uint32 { return math.Float32bits(c.Val[i]) }),
	}
}

// OutputsCSR reads a matrix back from outputs that anyone may have
// written: it is a valid CSR matrix (sparse.CSR.Validate) or an error.
func OutputsCSR(outs [][]uint32) (*sparse.CSR, error) {
	if len(outs) != 4 || len(outs[0]) != 2 {
		return nil, fmt.Errorf("the result is not a CSR matrix (%d outputs)", len(outs))
	}
	c := &sparse.CSR{Rows: int(int32(outs[0][0])), Cols: int(int32(outs[0][1]))}
	for _, w := range outs[1] {
		c.RowPtr = append(c.RowPtr, int32(w))
	}
	for _, w := range outs[2] {
		c.ColIdx = append(c.ColIdx, int32(w))
	}
	for _, w := range outs[3] {
		c.Val = append(c.Val, math.Float32frombits(w))
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("the product C is not a valid CSR matrix (sorted, in-range columns): %w", err)
	}
	return c, nil
}
