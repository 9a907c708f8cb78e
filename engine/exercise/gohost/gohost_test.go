package gohost

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gpulab/engine/exercise/wire"
	"gpulab/engine/sparse"
)

func TestRoundTrip(t *testing.T) {
	a := sparse.Uniform(50, 4, 1)
	b := sparse.Banded(50, 2, 2)
	task := SpGEMMTask(a, b)
	p, err := wire.EncodeTask(task)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := wire.DecodeTask(p)
	if err != nil {
		t.Fatal(err)
	}
	ga, gb, err := SpGEMMArgs(decoded)
	if err != nil || !reflect.DeepEqual(ga, a) || !reflect.DeepEqual(gb, b) {
		t.Fatalf("the matrices did not survive the task: %v", err)
	}
	c, err := CallSpGEMM(sparse.Gustavson, ga, gb)
	if err != nil {
		t.Fatal(err)
	}
	outs := CSROutputs(c)
	words := 0
	for _, o := range outs {
		words += len(o)
	}
	if words > task.MaxOut {
		t.Errorf("C takes %d words, more than the task's bound %d", words, task.MaxOut)
	}
	back, err := OutputsCSR(outs)
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("C did not survive the outputs: %v", err)
	}
}

// TestCallSpGEMM: a panic, an error and a nil matrix are run faults that
// say which.
func TestCallSpGEMM(t *testing.T) {
	a := sparse.Uniform(5, 2, 1)
	for _, tc := range []struct {
		f    SpGEMM
		want string
	}{
		{func(a, b *sparse.CSR) (*sparse.CSR, error) { panic("boom") }, "your function panicked: boom"},
		{func(a, b *sparse.CSR) (*sparse.CSR, error) { return nil, errors.New("not yet") }, "returned an error: not yet"},
		{func(a, b *sparse.CSR) (*sparse.CSR, error) { return nil, nil }, "no matrix"},
	} {
		_, err := CallSpGEMM(tc.f, a, a)
		var fe *wire.FaultError
		if !errors.As(err, &fe) || fe.Kind != wire.RunFault || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want a run fault with %q", err, tc.want)
		}
	}
}

// TestHostileOutputs: what a student's process sends back is a valid CSR
// matrix or an error, never a panic.
func TestHostileOutputs(t *testing.T) {
	for name, outs := range map[string][][]uint32{
		"nothing":          nil,
		"no shape":         {{}, {0}, {}, {}},
		"negative rows":    {{0xffffffff, 1}, {0}, {}, {}},
		"short RowPtr":     {{3, 3}, {0, 1}, {0}, {0}},
		"RowPtr past nnz":  {{1, 3}, {0, 5}, {0}, {0}},
		"column too big":   {{1, 3}, {0, 1}, {7}, {0}},
		"unsorted columns": {{1, 3}, {0, 2}, {2, 1}, {0, 0}},
		"huge rows":        {{0x7fffffff, 1}, {0}, {}, {}},
	} {
		if _, err := OutputsCSR(outs); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, err := SpGEMMArgs(wire.Task{Args: []any{1, 2}}); err == nil {
		t.Error("a task of two arguments")
	}
	bad := SpGEMMTask(sparse.Uniform(4, 2, 1), sparse.Uniform(5, 2, 1))
	if _, _, err := SpGEMMArgs(bad); err == nil || !strings.Contains(err.Error(), "A is 4×4, 8 entries and B 5×5") {
		t.Errorf("mismatched shapes: %v", err)
	}
}

func FuzzOutputsCSR(f *testing.F) {
	f.Add(uint32(2), uint32(3), []byte{0, 1, 2}, []byte{0, 2}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, rows, cols uint32, ptr, idx, val []byte) {
		widen := func(b []byte) []uint32 {
			out := make([]uint32, len(b))
			for i, v := range b {
				out[i] = uint32(v)
			}
			return out
		}
		c, err := OutputsCSR([][]uint32{{rows, cols}, widen(ptr), widen(idx), widen(val)})
		if err == nil && c.Validate() != nil {
			t.Errorf("an invalid matrix passed: %+v", c)
		}
	})
}
