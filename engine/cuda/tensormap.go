package cuda

import (
	"fmt"
	"unsafe"
)

// TensorMap is a CUtensorMap: the 128-byte description of a tiled view of a
// global array that Hopper's tensor memory accelerator (TMA) copies from.
// Pass a *TensorMap to Launch for a `const __grid_constant__` parameter.
type TensorMap [128]byte

// TensorMapType is a CUtensorMapDataType.
type TensorMapType uint32

// Element types for tensor maps (cuda.h).
const (
	TensorFloat32  TensorMapType = 7
	TensorBFloat16 TensorMapType = 9
)

// Swizzle is a CUtensorMapSwizzle: how TMA permutes 16-byte chunks within
// each row of the box in shared memory, to avoid bank conflicts.
type Swizzle uint32

// Swizzle modes.
const (
	SwizzleNone Swizzle = 0
	Swizzle128B Swizzle = 3
)

var cuTensorMapEncodeTiled func(tm unsafe.Pointer, dtype uint32, rank uint32, addr uint64, dims, strides *uint64,
	box, elemStrides *uint32, interleave, swizzle, l2promo, oobFill uint32) int32

// TensorMap2D describes a row-major rows×cols matrix in b, of elements of
// type dt and size esize bytes, read in boxes of boxRows×boxCols. Reads
// outside the matrix return zeros. TMA needs rows that start 16-byte
// aligned (cols·esize a multiple of 16).
func TensorMap2D(b *Buffer, dt TensorMapType, esize, rows, cols, boxRows, boxCols int, sw Swizzle) (*TensorMap, error) {
	if cuTensorMapEncodeTiled == nil {
		return nil, fmt.Errorf("cuda: this driver has no cuTensorMapEncodeTiled (needs CUDA 12 and a Hopper GPU)")
	}
	if (cols*esize)%16 != 0 {
		return nil, fmt.Errorf("cuda: tensor map of %d×%d: rows of %d bytes are not a multiple of 16", rows, cols, cols*esize)
	}
	if err := b.span("tensor map", 0, rows*cols*esize); err != nil {
		return nil, err
	}
	tm := new(TensorMap)
	dims := [2]uint64{uint64(cols), uint64(rows)}
	strides := [1]uint64{uint64(cols * esize)}
	box := [2]uint32{uint32(boxCols), uint32(boxRows)}
	elem := [2]uint32{1, 1}
	err := b.ctx.Do(func() error {
		return check("cuTensorMapEncodeTiled", cuTensorMapEncodeTiled(unsafe.Pointer(tm), uint32(dt), 2, uint64(b.ptr),
			&dims[0], &strides[0], &box[0], &elem[0], 0, uint32(sw), 2 /* L2 promotion 128B */, 0))
	})
	if err != nil {
		return nil, fmt.Errorf("tensor map %d×%d, box %d×%d: %w", rows, cols, boxRows, boxCols, err)
	}
	return tm, nil
}
