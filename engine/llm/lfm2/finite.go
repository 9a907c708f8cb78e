package lfm2

// NaN and infinity, which no valid model computes: weights that hold them
// are refused at load (checkFinite), and values that become them on the way
// through the model fail the forward where they first appear, so that no
// command reports a run over NaN logits as a success.

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	"gpulab/engine/cpu"
)

// exponentMask is, for each stored dtype, the bytes per element and the
// exponent bits of four (16-bit) or two (32-bit) elements packed in a
// little-endian uint64: an element is NaN or an infinity exactly when all
// its exponent bits are set. ones is 1 in each element's lowest bit and
// high its highest, for finding an element of a word that is zero.
var exponentMask = map[string]struct {
	size             int
	mask, ones, high uint64
}{
	"F32":  {4, 0x7f800000_7f800000, 0x00000001_00000001, 0x80000000_80000000},
	"BF16": {2, 0x7f80_7f80_7f80_7f80, 0x0001_0001_0001_0001, 0x8000_8000_8000_8000},
	"F16":  {2, 0x7c00_7c00_7c00_7c00, 0x0001_0001_0001_0001, 0x8000_8000_8000_8000},
}

// firstNonFinite is the index of t's first NaN or infinity, or -1, read
// from the bits of its dtype without converting them: eight bytes at a
// time, an element of the word x&mask^mask being zero where the element's
// exponent bits are all set (the sign bit, never in mask, keeps the
// zero-element test exact).
func (t *Tensor) firstNonFinite() int {
	m, b := exponentMask[t.DType], t.data
	i := 0
	for ; i+8 <= len(b); i += 8 {
		v := binary.LittleEndian.Uint64(b[i:])&m.mask ^ m.mask
		if (v-m.ones)&^v&m.high != 0 {
			break
		}
	}
	lane := m.mask & (1<<(8*m.size) - 1)
	for ; i+m.size <= len(b); i += m.size {
		var bits uint64
		for k := m.size - 1; k >= 0; k-- {
			bits = bits<<8 | uint64(b[i+k])
		}
		if bits&lane == lane {
			return i / m.size
		}
	}
	return -1
}

// at converts element i of t to float32.
func (t *Tensor) at(i int) float32 {
	size := itemSize[t.DType]
	one := Tensor{DType: t.DType, Shape: []int{1}, data: t.data[i*size : (i+1)*size]}
	return one.Float32()[0]
}

// checkFinite returns an error naming the first tensor of ck, by name,
// that holds a NaN or an infinity, with the element's index in its shape
// and its value. The tensors are scanned in parallel.
func checkFinite(ck *Checkpoint) error {
	names := slices.Sorted(maps.Keys(ck.Tensors))
	bad := make([]int, len(names))
	cpu.Parallel(len(names), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			bad[i] = ck.Tensors[names[i]].firstNonFinite()
		}
	})
	for i, at := range bad {
		if at >= 0 {
			t := ck.Tensors[names[i]]
			return fmt.Errorf("lfm2: %s: tensor %s holds %s at %v (element %d of %d): a checkpoint's weights must be finite",
				ck.Dir, t.Name, valueName(t.at(at)), unravel(at, t.Shape), at, t.Len())
		}
	}
	return nil
}

// unravel is the index in shape of element i of its row-major order.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d], i = i%shape[d], i/shape[d]
		}
	}
	return idx
}

// finite reports whether v is neither NaN nor an infinity.
func finite(v float32) bool { return math.Float32bits(v)&0x7f800000 != 0x7f800000 }

// valueName writes a value that is not finite: NaN, +Inf or -Inf.
func valueName(v float32) string {
	if v != v {
		return "NaN"
	}
	return fmt.Sprintf("%+g", v)
}

// firstNonFiniteRow is the first row of rows that holds a value that is
// not finite, and that value's index in the row; -1, -1 if there is none.
func firstNonFiniteRow(rows [][]float32) (row, i int) {
	for t, r := range rows {
		for i, v := range r {
			if !finite(v) {
				return t, i
			}
		}
	}
	return -1, -1
}

// checkRows returns an error unless every value of rows, the rows of
// positions pos, pos+1, ..., is finite: it says what the rows are (what,
// as "layer 3 (conv) output is"), the first position that is not finite,
// and where in its row (unit: "channel", or "token" for logits).
func checkRows(rows [][]float32, pos int, what, unit string) error {
	t, i := firstNonFiniteRow(rows)
	if t < 0 {
		return nil
	}
	return fmt.Errorf("lfm2: %s not finite at position %d (%s %d is %s)", what, pos+t, unit, i, valueName(rows[t][i]))
}
