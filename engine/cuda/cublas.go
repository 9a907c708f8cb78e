package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// cuBLAS entry points, bound by loadCUBLAS.
var (
	cublasCreate      func(h *uintptr) int32
	cublasDestroy     func(h uintptr) int32
	cublasSetStream   func(h uintptr, s uintptr) int32
	cublasSetMathMode func(h uintptr, mode int32) int32
	cublasSgemm       func(h uintptr, ta, tb int32, m, n, k int32, alpha *float32, a uint64, lda int32,
		b uint64, ldb int32, beta *float32, c uint64, ldc int32) int32
	cublasGemmEx func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, atype int32, lda int32,
		b uint64, btype int32, ldb int32, beta unsafe.Pointer, c uint64, ctype int32, ldc int32,
		compute int32, algo int32) int32
)

var (
	cublasOnce sync.Once
	cublasErr  error
)

func loadCUBLAS() error {
	cublasOnce.Do(func() {
		if err := Load(); err != nil {
			cublasErr = err
			return
		}
		// libcublas needs libcublasLt from the same directory; opening it first
		// (RTLD_GLOBAL) works whatever the loader's search path is.
		openLibrary("libcublasLt", libDirs(), []string{"libcublasLt.so.*[0-9]"}, []string{"libcublasLt.so.13", "libcublasLt.so.12"})
		lib, err := openLibrary("libcublas", libDirs(), []string{"libcublas.so.*[0-9]"},
			[]string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
		if err != nil {
			cublasErr = fmt.Errorf("cublas: %v", err)
			return
		}
		cublasErr = lib.bind(map[string]any{
			"cublasCreate_v2": &cublasCreate, "cublasDestroy_v2": &cublasDestroy,
			"cublasSetStream_v2": &cublasSetStream, "cublasSetMathMode": &cublasSetMathMode,
			"cublasSgemm_v2": &cublasSgemm, "cublasGemmEx": &cublasGemmEx,
		})
	})
	return cublasErr
}

var cublasStatusNames = map[int32]string{
	0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func cublasCheck(call string, code int32) error {
	if code == 0 {
		return nil
	}
	name, ok := cublasStatusNames[code]
	if !ok {
		name = fmt.Sprintf("cublasStatus(%d)", code)
	}
	return fmt.Errorf("%s: %s", call, name)
}

// BLAS is a cuBLAS handle bound to one context and stream. Matrices are
// row-major, as everywhere in gpulab; the wrapper swaps operands so that
// column-major cuBLAS computes the same product (C^T = B^T A^T).
type BLAS struct {
	ctx *Context
	h   uintptr
}

// NewBLAS creates a cuBLAS handle whose work goes to stream s (nil: default).
// Its math mode is CUBLAS_DEFAULT_MATH: Sgemm is true FP32, no TF32.
func (c *Context) NewBLAS(s *Stream) (*BLAS, error) {
	if err := loadCUBLAS(); err != nil {
		return nil, err
	}
	b := &BLAS{ctx: c}
	err := c.Do(func() error {
		if err := cublasCheck("cublasCreate_v2", cublasCreate(&b.h)); err != nil {
			return err
		}
		if err := cublasCheck("cublasSetMathMode", cublasSetMathMode(b.h, 0)); err != nil {
			return err
		}
		return cublasCheck("cublasSetStream_v2", cublasSetStream(b.h, s.handle()))
	})
	if err != nil {
		return nil, fmt.Errorf("cublas on %s: %w", c.ID(), err)
	}
	return b, nil
}

// Destroy releases the handle.
func (b *BLAS) Destroy() error {
	return b.ctx.Do(func() error { return cublasCheck("cublasDestroy_v2", cublasDestroy(b.h)) })
}

// DataType is a cudaDataType.
type DataType int32

// Data types for GemmEx.
const (
	R32F  DataType = 0  // CUDA_R_32F
	R16F  DataType = 2  // CUDA_R_16F
	R16BF DataType = 14 // CUDA_R_16BF
)

// ComputeType is a cublasComputeType_t.
type ComputeType int32

// Compute types for GemmEx.
const (
	Compute32F         ComputeType = 68 // CUBLAS_COMPUTE_32F
	Compute32FFastTF32 ComputeType = 77 // CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores, TF32 inputs
)

func elemSize(t DataType) int {
	if t == R32F {
		return 4
	}
	return 2
}

func checkGemm(op string, m, n, k int, a, bm, c *Buffer, sa, sb, sc int) error {
	if m <= 0 || n <= 0 || k <= 0 {
		return fmt.Errorf("%s: sizes m=%d n=%d k=%d must be positive", op, m, n, k)
	}
	for _, x := range []struct {
		name       string
		buf        *Buffer
		rows, cols int
		esize      int
	}{{"A", a, m, k, sa}, {"B", bm, k, n, sb}, {"C", c, m, n, sc}} {
		if err := x.buf.span(fmt.Sprintf("%s: %s (%dx%d)", op, x.name, x.rows, x.cols), 0, x.rows*x.cols*x.esize); err != nil {
			return err
		}
	}
	return nil
}

// Sgemm computes C = alpha·A·B + beta·C for row-major A (m×k), B (k×n) and C (m×n) in FP32.
func (b *BLAS) Sgemm(m, n, k int, alpha float32, a, bm *Buffer, beta float32, c *Buffer) error {
	if err := checkGemm("cublasSgemm", m, n, k, a, bm, c, 4, 4, 4); err != nil {
		return err
	}
	return b.ctx.Do(func() error {
		// Row-major C = A·B is column-major C^T = B^T·A^T: pass B first.
		return cublasCheck("cublasSgemm_v2", cublasSgemm(b.h, 0, 0, int32(n), int32(m), int32(k),
			&alpha, uint64(bm.ptr), int32(n), uint64(a.ptr), int32(k), &beta, uint64(c.ptr), int32(n)))
	})
}

// GemmEx computes row-major C = A·B with inputs of type in (R32F, R16F, R16BF),
// an FP32 output and the given compute type, e.g. R16BF with Compute32F for
// BF16 tensor cores, or R32F with Compute32FFastTF32 for TF32.
func (b *BLAS) GemmEx(m, n, k int, a, bm *Buffer, in DataType, c *Buffer, compute ComputeType) error {
	return b.Gemm(m, n, k, 1, Operand{Buf: a, Type: in, LD: k}, Operand{Buf: bm, Type: in, LD: n},
		0, Operand{Buf: c, Type: R32F, LD: n}, compute)
}

// Operand is one matrix of Gemm: the row-major matrix that starts Offset
// elements into Buf, of type Type, with rows LD elements apart. Trans makes
// Gemm use its transpose, e.g. a weight stored [out, in] in y = x·Wᵀ.
type Operand struct {
	Buf    *Buffer
	Offset int // in elements
	Type   DataType
	LD     int // elements from one row to the next
	Trans  bool
}

// check verifies that the stored rows×cols matrix lies inside the buffer.
func (o Operand) check(op, name string, rows, cols int) error {
	if o.Offset < 0 || o.LD < cols {
		return fmt.Errorf("%s: %s (%dx%d): offset %d and row stride %d, want offset >= 0 and stride >= %d",
			op, name, rows, cols, o.Offset, o.LD, cols)
	}
	es := elemSize(o.Type)
	return o.Buf.span(fmt.Sprintf("%s: %s (%dx%d at element %d, stride %d)", op, name, rows, cols, o.Offset, o.LD),
		o.Offset*es, ((rows-1)*o.LD+cols)*es)
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, op(A)
// m×k, op(B) k×n and C m×n, each a view into a larger buffer. A and B share a
// type (R32F, R16F or R16BF); C is R32F or that type. beta = 1 accumulates
// into C, e.g. a residual connection. Every operand is bounds-checked.
func (b *BLAS) Gemm(m, n, k int, alpha float32, a, bm Operand, beta float32, c Operand, compute ComputeType) error {
	const op = "cublasGemmEx"
	if m <= 0 || n <= 0 || k <= 0 {
		return fmt.Errorf("%s: sizes m=%d n=%d k=%d must be positive", op, m, n, k)
	}
	if a.Type != bm.Type || (c.Type != R32F && c.Type != a.Type) || c.Trans {
		return fmt.Errorf("%s: types A %d, B %d, C %d (transposed %v): want A and B alike and C FP32 or the same, not transposed",
			op, a.Type, bm.Type, c.Type, c.Trans)
	}
	shape := func(o Operand, rows, cols int) (int, int) {
		if o.Trans {
			return cols, rows
		}
		return rows, cols
	}
	ar, ac := shape(a, m, k)
	br, bc := shape(bm, k, n)
	for _, x := range []struct {
		name       string
		o          Operand
		rows, cols int
	}{{"A", a, ar, ac}, {"B", bm, br, bc}, {"C", c, m, n}} {
		if err := x.o.check(op, x.name, x.rows, x.cols); err != nil {
			return err
		}
	}
	trans := func(o Operand) int32 {
		if o.Trans {
			return 1 // CUBLAS_OP_T
		}
		return 0
	}
	addr := func(o Operand) uint64 { return uint64(o.Buf.ptr) + uint64(o.Offset*elemSize(o.Type)) }
	return b.ctx.Do(func() error {
		// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a
		// row-major matrix read column-major is its transpose: pass B first.
		return cublasCheck(op, cublasGemmEx(b.h, trans(bm), trans(a), int32(n), int32(m), int32(k),
			unsafe.Pointer(&alpha), addr(bm), int32(bm.Type), int32(bm.LD), addr(a), int32(a.Type), int32(a.LD),
			unsafe.Pointer(&beta), addr(c), int32(c.Type), int32(c.LD), int32(compute), -1))
	})
}
