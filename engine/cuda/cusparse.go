package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// cuSPARSE entry points (generic API, CUDA 12 and 13), bound by loadCUSPARSE.
// Descriptors and handles are opaque pointers (uintptr).
var (
	cusparseCreate           func(h *uintptr) int32
	cusparseDestroy          func(h uintptr) int32
	cusparseSetStream        func(h uintptr, s uintptr) int32
	cusparseCreateCsr        func(m *uintptr, rows, cols, nnz int64, rowPtr, colIdx, val uint64, rowType, colType, base, valType int32) int32
	cusparseDestroySpMat     func(m uintptr) int32
	cusparseSpMatGetSize     func(m uintptr, rows, cols, nnz *int64) int32
	cusparseCsrSetPointers   func(m uintptr, rowPtr, colIdx, val uint64) int32
	cusparseSpGEMMCreate     func(d *uintptr) int32
	cusparseSpGEMMDestroy    func(d uintptr) int32
	cusparseSpGEMMWorkEstim  func(h uintptr, opA, opB int32, alpha unsafe.Pointer, a, b uintptr, beta unsafe.Pointer, c uintptr, compute, alg int32, d uintptr, size *uint64, buf uint64) int32
	cusparseSpGEMMCompute    func(h uintptr, opA, opB int32, alpha unsafe.Pointer, a, b uintptr, beta unsafe.Pointer, c uintptr, compute, alg int32, d uintptr, size *uint64, buf uint64) int32
	cusparseSpGEMMCopy       func(h uintptr, opA, opB int32, alpha unsafe.Pointer, a, b uintptr, beta unsafe.Pointer, c uintptr, compute, alg int32, d uintptr) int32
	cusparseCreateDnVec      func(v *uintptr, size int64, values uint64, valType int32) int32
	cusparseDestroyDnVec     func(v uintptr) int32
	cusparseSpMVBufferSize   func(h uintptr, opA int32, alpha unsafe.Pointer, a, x uintptr, beta unsafe.Pointer, y uintptr, compute, alg int32, size *uint64) int32
	cusparseSpMVPreprocess   func(h uintptr, opA int32, alpha unsafe.Pointer, a, x uintptr, beta unsafe.Pointer, y uintptr, compute, alg int32, buf uint64) int32
	cusparseSpMVRun          func(h uintptr, opA int32, alpha unsafe.Pointer, a, x uintptr, beta unsafe.Pointer, y uintptr, compute, alg int32, buf uint64) int32
	cusparseGetErrorString   func(code int32) string
	cusparseGetVersionNumber func(h uintptr, v *int32) int32
)

var (
	cusparseOnce sync.Once
	cusparseErr  error
)

func loadCUSPARSE() error {
	cusparseOnce.Do(func() {
		if err := Load(); err != nil {
			cusparseErr = err
			return
		}
		lib, err := openLibrary("libcusparse", libDirs(), []string{"libcusparse.so.*[0-9]"},
			[]string{"libcusparse.so.12", "libcusparse.so.13", "libcusparse.so"})
		if err != nil {
			cusparseErr = fmt.Errorf("cusparse: %v", err)
			return
		}
		cusparseErr = lib.bind(map[string]any{
			"cusparseCreate": &cusparseCreate, "cusparseDestroy": &cusparseDestroy, "cusparseSetStream": &cusparseSetStream,
			"cusparseCreateCsr": &cusparseCreateCsr, "cusparseDestroySpMat": &cusparseDestroySpMat,
			"cusparseSpMatGetSize": &cusparseSpMatGetSize, "cusparseCsrSetPointers": &cusparseCsrSetPointers,
			"cusparseSpGEMM_createDescr": &cusparseSpGEMMCreate, "cusparseSpGEMM_destroyDescr": &cusparseSpGEMMDestroy,
			"cusparseSpGEMM_workEstimation": &cusparseSpGEMMWorkEstim, "cusparseSpGEMM_compute": &cusparseSpGEMMCompute,
			"cusparseSpGEMM_copy": &cusparseSpGEMMCopy, "cusparseGetErrorString": &cusparseGetErrorString,
			"cusparseCreateDnVec": &cusparseCreateDnVec, "cusparseDestroyDnVec": &cusparseDestroyDnVec,
			"cusparseSpMV_bufferSize": &cusparseSpMVBufferSize, "cusparseSpMV_preprocess": &cusparseSpMVPreprocess,
			"cusparseSpMV":       &cusparseSpMVRun,
			"cusparseGetVersion": &cusparseGetVersionNumber,
		})
	})
	return cusparseErr
}

func cusparseCheck(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (cusparseStatus %d)", call, cusparseGetErrorString(code), code)
}

// CSR is a sparse matrix in device memory: row pointers (Rows+1 int32),
// column indices and values (NNZ int32 and float32), zero-based.
type CSR struct {
	Rows, Cols, NNZ     int
	RowPtr, ColIdx, Val *Buffer
}

// Free releases the three arrays.
func (m CSR) Free() {
	m.RowPtr.Free()
	m.ColIdx.Free()
	m.Val.Free()
}

// Sparse is a cuSPARSE handle bound to one context and stream.
type Sparse struct {
	ctx *Context
	h   uintptr
}

// NewSparse creates a cuSPARSE handle whose work goes to stream s (nil: default).
func (c *Context) NewSparse(s *Stream) (*Sparse, error) {
	if err := loadCUSPARSE(); err != nil {
		return nil, err
	}
	sp := &Sparse{ctx: c}
	err := c.Do(func() error {
		if err := cusparseCheck("cusparseCreate", cusparseCreate(&sp.h)); err != nil {
			return err
		}
		return cusparseCheck("cusparseSetStream", cusparseSetStream(sp.h, s.handle()))
	})
	if err != nil {
		return nil, fmt.Errorf("cusparse on %s: %w", c.ID(), err)
	}
	return sp, nil
}

// Version is cuSPARSE's version number (major·1000 + minor·100 + patch).
func (sp *Sparse) Version() (int, error) {
	var v int32
	err := sp.ctx.Do(func() error { return cusparseCheck("cusparseGetVersion", cusparseGetVersionNumber(sp.h, &v)) })
	return int(v), err
}

// Destroy releases the handle.
func (sp *Sparse) Destroy() error {
	return sp.ctx.Do(func() error { return cusparseCheck("cusparseDestroy", cusparseDestroy(sp.h)) })
}

// cuSPARSE enum values used here.
const (
	cusparseIndex32I   = 2 // CUSPARSE_INDEX_32I
	cusparseIndexBase0 = 0 // CUSPARSE_INDEX_BASE_ZERO
	cusparseOpNone     = 0 // CUSPARSE_OPERATION_NON_TRANSPOSE
	cusparseSpGEMMAlg  = 0 // CUSPARSE_SPGEMM_DEFAULT
)

func (sp *Sparse) describe(m CSR, name string) (uintptr, error) {
	var d uintptr
	ptr := func(b *Buffer) uint64 {
		if b == nil {
			return 0
		}
		return uint64(b.ptr)
	}
	code := cusparseCreateCsr(&d, int64(m.Rows), int64(m.Cols), int64(m.NNZ), ptr(m.RowPtr), ptr(m.ColIdx), ptr(m.Val),
		cusparseIndex32I, cusparseIndex32I, cusparseIndexBase0, int32(R32F))
	return d, cusparseCheck("cusparseCreateCsr ("+name+")", code)
}

// SpGEMM computes C = A·B with cusparseSpGEMM (CUSPARSE_SPGEMM_DEFAULT, FP32,
// 32-bit indices), following the documented sequence: work estimation and
// compute, each asked for its buffer size first, then C's size, then copy.
// Every device allocation, C's arrays and cuSPARSE's two work buffers, comes
// from alloc, so the caller can count peak memory; the work buffers go back
// through release before SpGEMM returns. C belongs to the caller.
func (sp *Sparse) SpGEMM(a, b CSR, alloc func(bytes int) (*Buffer, error), release func(*Buffer)) (c CSR, err error) {
	if a.Cols != b.Rows {
		return CSR{}, fmt.Errorf("cusparse SpGEMM: A is %d×%d but B is %d×%d: inner dimensions differ", a.Rows, a.Cols, b.Rows, b.Cols)
	}
	c = CSR{Rows: a.Rows, Cols: b.Cols}
	var work []*Buffer
	defer func() {
		for _, w := range work {
			release(w)
		}
		if err != nil {
			for _, x := range []*Buffer{c.RowPtr, c.ColIdx, c.Val} {
				if x != nil {
					release(x)
				}
			}
			c = CSR{}
		}
	}()
	grab := func(bytes int) (*Buffer, error) {
		w, err := alloc(max(bytes, 4))
		if err == nil {
			work = append(work, w)
		}
		return w, err
	}
	if c.RowPtr, err = alloc(4 * (c.Rows + 1)); err != nil {
		return c, err
	}
	alpha, beta := float32(1), float32(0)
	var da, db, dc, desc uintptr
	err = sp.ctx.Do(func() error {
		for _, x := range []struct {
			d    *uintptr
			m    CSR
			name string
		}{{&da, a, "A"}, {&db, b, "B"}, {&dc, CSR{Rows: c.Rows, Cols: c.Cols, RowPtr: c.RowPtr}, "C"}} {
			d, err := sp.describe(x.m, x.name)
			if err != nil {
				return err
			}
			*x.d = d
		}
		return cusparseCheck("cusparseSpGEMM_createDescr", cusparseSpGEMMCreate(&desc))
	})
	defer sp.ctx.Do(func() error {
		for _, d := range []uintptr{da, db, dc} {
			if d != 0 {
				cusparseDestroySpMat(d)
			}
		}
		if desc != 0 {
			cusparseSpGEMMDestroy(desc)
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	// Each phase is called twice: with a nil buffer to learn its size, then with the buffer.
	phase := func(name string, f func(size *uint64, buf uint64) int32) error {
		var size uint64
		if err := sp.ctx.Do(func() error { return cusparseCheck(name, f(&size, 0)) }); err != nil {
			return err
		}
		buf, err := grab(int(size))
		if err != nil {
			return fmt.Errorf("%s: work buffer: %w", name, err)
		}
		return sp.ctx.Do(func() error { return cusparseCheck(name, f(&size, uint64(buf.ptr))) })
	}
	if err = phase("cusparseSpGEMM_workEstimation", func(size *uint64, buf uint64) int32 {
		return cusparseSpGEMMWorkEstim(sp.h, cusparseOpNone, cusparseOpNone, unsafe.Pointer(&alpha), da, db,
			unsafe.Pointer(&beta), dc, int32(R32F), cusparseSpGEMMAlg, desc, size, buf)
	}); err != nil {
		return c, err
	}
	if err = phase("cusparseSpGEMM_compute", func(size *uint64, buf uint64) int32 {
		return cusparseSpGEMMCompute(sp.h, cusparseOpNone, cusparseOpNone, unsafe.Pointer(&alpha), da, db,
			unsafe.Pointer(&beta), dc, int32(R32F), cusparseSpGEMMAlg, desc, size, buf)
	}); err != nil {
		return c, err
	}
	var rows, cols, nnz int64
	if err = sp.ctx.Do(func() error {
		return cusparseCheck("cusparseSpMatGetSize", cusparseSpMatGetSize(dc, &rows, &cols, &nnz))
	}); err != nil {
		return c, err
	}
	c.NNZ = int(nnz)
	if c.ColIdx, err = alloc(4 * max(c.NNZ, 1)); err != nil {
		return c, err
	}
	if c.Val, err = alloc(4 * max(c.NNZ, 1)); err != nil {
		return c, err
	}
	err = sp.ctx.Do(func() error {
		if err := cusparseCheck("cusparseCsrSetPointers", cusparseCsrSetPointers(dc, uint64(c.RowPtr.ptr), uint64(c.ColIdx.ptr), uint64(c.Val.ptr))); err != nil {
			return err
		}
		return cusparseCheck("cusparseSpGEMM_copy", cusparseSpGEMMCopy(sp.h, cusparseOpNone, cusparseOpNone, unsafe.Pointer(&alpha),
			da, db, unsafe.Pointer(&beta), dc, int32(R32F), cusparseSpGEMMAlg, desc))
	})
	return c, err
}

// SpMVAlg picks cusparseSpMV's algorithm for a CSR matrix.
type SpMVAlg int32

const (
	SpMVCSRAlg1 SpMVAlg = 2 // CUSPARSE_SPMV_CSR_ALG1: the default for CSR
	SpMVCSRAlg2 SpMVAlg = 3 // CUSPARSE_SPMV_CSR_ALG2: equal work per thread block, deterministic
)

// SpMV is y = A·x prepared for cusparseSpMV: the descriptors of A, x and y,
// the algorithm's work buffer, and its one-time preprocessing done, so that
// Run times the product alone (as a solver calling it again and again sees it).
type SpMV struct {
	sp      *Sparse
	a, x, y uintptr
	alg     SpMVAlg
	work    *Buffer
}

// NewSpMV prepares y = A·x in float32: x holds A.Cols values, y A.Rows.
func (sp *Sparse) NewSpMV(a CSR, x, y *Buffer, alg SpMVAlg) (p *SpMV, err error) {
	if x == nil || y == nil {
		return nil, fmt.Errorf("cusparse SpMV: x or y is nil")
	}
	if x.Size() < 4*a.Cols || y.Size() < 4*a.Rows {
		return nil, fmt.Errorf("cusparse SpMV: A is %d×%d but x has %d bytes and y %d (want %d and %d)",
			a.Rows, a.Cols, x.Size(), y.Size(), 4*a.Cols, 4*a.Rows)
	}
	p = &SpMV{sp: sp, alg: alg}
	defer func() {
		if err != nil {
			p.Destroy()
			p = nil
		}
	}()
	var size uint64
	err = sp.ctx.Do(func() error {
		var err error
		if p.a, err = sp.describe(a, "A"); err != nil {
			return err
		}
		if err := cusparseCheck("cusparseCreateDnVec (x)", cusparseCreateDnVec(&p.x, int64(a.Cols), uint64(x.ptr), int32(R32F))); err != nil {
			return err
		}
		if err := cusparseCheck("cusparseCreateDnVec (y)", cusparseCreateDnVec(&p.y, int64(a.Rows), uint64(y.ptr), int32(R32F))); err != nil {
			return err
		}
		alpha, beta := float32(1), float32(0)
		return cusparseCheck("cusparseSpMV_bufferSize", cusparseSpMVBufferSize(sp.h, cusparseOpNone, unsafe.Pointer(&alpha), p.a, p.x,
			unsafe.Pointer(&beta), p.y, int32(R32F), int32(alg), &size))
	})
	if err != nil {
		return p, err
	}
	if p.work, err = sp.ctx.Alloc(max(int(size), 4)); err != nil {
		return p, fmt.Errorf("cusparse SpMV: work buffer: %w", err)
	}
	return p, p.call("cusparseSpMV_preprocess", cusparseSpMVPreprocess)
}

func (p *SpMV) call(name string, f func(h uintptr, opA int32, alpha unsafe.Pointer, a, x uintptr, beta unsafe.Pointer, y uintptr, compute, alg int32, buf uint64) int32) error {
	alpha, beta := float32(1), float32(0) // host scalars: read before the call returns
	return p.sp.ctx.Do(func() error {
		return cusparseCheck(name, f(p.sp.h, cusparseOpNone, unsafe.Pointer(&alpha), p.a, p.x, unsafe.Pointer(&beta), p.y,
			int32(R32F), int32(p.alg), uint64(p.work.ptr)))
	})
}

// Run enqueues y = A·x on the handle's stream.
func (p *SpMV) Run() error { return p.call("cusparseSpMV", cusparseSpMVRun) }

// Destroy releases the descriptors and the work buffer.
func (p *SpMV) Destroy() {
	p.sp.ctx.Do(func() error {
		if p.a != 0 {
			cusparseDestroySpMat(p.a)
		}
		for _, v := range []uintptr{p.x, p.y} {
			if v != 0 {
				cusparseDestroyDnVec(v)
			}
		}
		return nil
	})
	p.work.Free()
}
