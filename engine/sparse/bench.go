package sparse

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// The "spmv" suite: y = A·x on the CPU (serial baseline, goroutines) and on
// CUDA (scalar and vector CSR kernels). On CUDA the baseline is a device copy
// of exactly the bytes an SpMV must move, so "vs baseline" reads as the share
// of the bandwidth bound reached. Sizes are generator specs (see Generate).

func init() {
	bench.Register(bench.Suite{
		Name:  "spmv",
		Doc:   "sparse matrix × vector, CSR: CPU serial/parallel, CUDA scalar (thread per row) and vector (warp per row), against the bandwidth bound",
		Sizes: spmvSizes,
		Cases: spmvCases,
	})
}

func spmvSizes(dev engine.Info) []string {
	if dev.Kind == engine.CUDA {
		return []string{"uniform:n=4194304,k=16", "banded:n=4194304,w=8", "poisson:k=2048", "rmat:scale=22,ef=8,a=0.57,b=0.19,c=0.19"}
	}
	return []string{"uniform:n=65536,k=16", "rmat:scale=16,ef=8,a=0.57,b=0.19,c=0.19"}
}

// spmvBytes is what an SpMV must move at least: the matrix (row pointers,
// column indices, values), x once and y once.
func spmvBytes(m *CSR) float64 {
	return float64(4*(m.Rows+1) + 8*m.NNZ() + 4*m.Cols + 4*m.Rows)
}

func spmvCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	m, err := Generate(size)
	if err != nil {
		return nil, nil, err
	}
	x := make([]float32, m.Cols)
	for i := range x {
		x[i] = float32(i%17)/8 - 1
	}
	want := spmvReference(m, x)
	// Float32 sums of a row of L entries differ from the float64 reference by
	// up to about L·2^-23 relative to the row's magnitude.
	_, longest, _, _ := RowStats(m)
	tol := max(1e-5, float64(longest)*math.Ldexp(1, -23))
	base := func(name string) bench.Case {
		return bench.Case{Variant: name, Params: bench.Params{"matrix": size, "rows": m.Rows, "nnz": m.NNZ()},
			Flops: 2 * float64(m.NNZ()), Bytes: spmvBytes(m), Tol: tol}
	}
	switch dev.Kind {
	case engine.CUDA:
		return spmvCUDA(dev.CUDA, m, x, want, base)
	case engine.CPU:
		var cases []bench.Case
		for _, v := range []struct {
			name string
			f    func(*CSR, []float32, []float32) error
		}{{"cpu_serial", SpMV}, {"cpu_parallel", SpMVParallel}} {
			y := make([]float32, m.Rows)
			c := base(v.name)
			c.Baseline = v.name == "cpu_serial"
			c.Reset = func() error { clear(y); return nil }
			c.Run = func() (time.Duration, error) {
				t := time.Now()
				err := v.f(m, x, y)
				return time.Since(t), err
			}
			c.Check = func() (bench.Checked, error) { return bench.Compare(y, want), nil }
			cases = append(cases, c)
		}
		return cases, nil, nil
	}
	return nil, nil, fmt.Errorf("sparse: spmv runs on the CPU and CUDA devices, not %s", dev.ID)
}

// spmvReference is y = A·x accumulated in float64, rounded to float32.
func spmvReference(m *CSR, x []float32) []float32 {
	y := make([]float32, m.Rows)
	for i := 0; i < m.Rows; i++ {
		var sum float64
		for p := m.RowPtr[i]; p < m.RowPtr[i+1]; p++ {
			sum += float64(m.Val[p]) * float64(x[m.ColIdx[p]])
		}
		y[i] = float32(sum)
	}
	return y
}

func spmvCUDA(ctx *cuda.Context, m *CSR, x, want []float32, base func(string) bench.Case) (cases []bench.Case, closeAll func(), err error) {
	var bufs []*cuda.Buffer
	closeAll = func() {
		for _, b := range bufs {
			b.Free()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	keep := func(b *cuda.Buffer, e error) *cuda.Buffer {
		if e != nil && err == nil {
			err = e
		}
		if b != nil {
			bufs = append(bufs, b)
		}
		return b
	}
	half := int(spmvBytes(m)) / 2 // the copy baseline reads half and writes half
	rowPtr := keep(cuda.Upload(ctx, m.RowPtr))
	colIdx := keep(cuda.Upload(ctx, append(m.ColIdx, 0))) // one spare element: never empty
	val := keep(cuda.Upload(ctx, append(m.Val, 0)))
	xs := keep(cuda.Upload(ctx, x))
	y := keep(cuda.AllocSlice[float32](ctx, m.Rows))
	from := keep(ctx.Alloc(half))
	to := keep(ctx.Alloc(half))
	if err != nil {
		return nil, nil, err
	}
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		return nil, nil, err
	}
	closeBufs := closeAll
	closeAll = func() { timer.Destroy(); closeBufs() }
	check := func() (bench.Checked, error) {
		got, err := cuda.Download[float32](y, m.Rows)
		return bench.Compare(got, want), err
	}
	reset := func() error { return y.Memset(0xff, nil) }

	bound := base("copy_bound")
	bound.Baseline = true
	bound.Run = func() (time.Duration, error) {
		return timer.Time(func() error { return cuda.CopyDtoD(to, from, half, nil) })
	}
	bound.Check = func() (bench.Checked, error) { return bench.Checked{Worst: -1}, nil }
	bound.Params = bench.Params{"matrix": bound.Params["matrix"], "bytes": 2 * half}
	bound.Flops = 0
	cases = append(cases, bound)

	// The adaptive vector kernel gives each row as many lanes as its mean
	// length, rounded up to a power of two.
	lanes := 2
	for lanes < 32 && float64(lanes) < float64(m.NNZ())/float64(max(m.Rows, 1)) {
		lanes *= 2
	}
	for _, k := range []struct {
		variant, file, name string
		lanes               int // threads per row
	}{{"spmv_scalar", "spmv_01_scalar", "spmv_scalar", 1}, {"spmv_vector", "spmv_02_vector", "spmv_vector", 32},
		{"spmv_vector_adaptive", "spmv_02_vector", "spmv_vector", lanes}} {
		src, err := kernels.CUDA("sparse/" + k.file)
		if err != nil {
			return nil, nil, err
		}
		mod, err := ctx.Compile(cuda.Source{Name: "sparse/" + k.file + ".cu", Code: src, Options: []string{fmt.Sprintf("-DLANES=%d", k.lanes)}})
		if err != nil {
			return nil, nil, err
		}
		fn, err := mod.Function(k.name)
		if err != nil {
			return nil, nil, err
		}
		cfg := cuda.Grid1D(m.Rows*k.lanes, 256)
		c := base(k.variant)
		c.Params["lanes"] = k.lanes
		c.Reset, c.Check = reset, check
		c.Run = func() (time.Duration, error) {
			return timer.Time(func() error { return fn.Launch(cfg, m.Rows, rowPtr, colIdx, val, xs, y) })
		}
		cases = append(cases, c)
	}
	return cases, closeAll, nil
}

// The "spgemm" suite: C = A² for a generated A. This session has the CPU
// ladder; the baseline is Gustavson on one goroutine.
func init() {
	bench.Register(bench.Suite{
		Name: "spgemm",
		Doc:  "sparse × sparse, C = A²: Gustavson (serial, parallel), dense accumulator, outer product (ESC); flops = 2 × products",
		Sizes: func(engine.Info) []string {
			return []string{"uniform:n=16384,k=8", "rmat:scale=14,ef=8,a=0.57,b=0.19,c=0.19"}
		},
		Cases: spgemmCases,
	})
}

// sameStructure compares two CSR results: rows and columns exactly, values
// with bench.Compare; a structural difference is an infinite error at the
// first differing entry.
func sameStructure(got, want *CSR) bench.Checked {
	if got.Rows != want.Rows || got.Cols != want.Cols || !slices.Equal(got.RowPtr, want.RowPtr) || !slices.Equal(got.ColIdx, want.ColIdx) {
		return bench.Checked{MaxRelErr: math.Inf(1), Worst: -1}
	}
	return bench.Compare(got.Val, want.Val)
}

func spgemmCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	if dev.Kind != engine.CPU {
		return nil, nil, fmt.Errorf("sparse: spgemm has only the CPU ladder so far, not %s", dev.ID)
	}
	a, err := Generate(size)
	if err != nil {
		return nil, nil, err
	}
	if a.Rows != a.Cols {
		return nil, nil, fmt.Errorf("sparse: spgemm computes A², but %s is %d×%d", size, a.Rows, a.Cols)
	}
	want, err := Gustavson(a, a)
	if err != nil {
		return nil, nil, err
	}
	var cases []bench.Case
	for _, v := range []struct {
		name string
		f    func(a, b *CSR) (*CSR, error)
	}{{"gustavson_serial", Gustavson}, {"gustavson_parallel", GustavsonParallel},
		{"dense_accumulator", DenseAccumulator}, {"outer_product", OuterProduct}} {
		var got *CSR
		c := bench.Case{Variant: v.name, Baseline: v.name == "gustavson_serial",
			Params: bench.Params{"matrix": size, "rows": a.Rows, "nnz": a.NNZ(), "products": Products(a, a)},
			Flops:  2 * float64(Products(a, a)), Tol: 1e-5}
		c.Reset = func() error { got = nil; return nil }
		c.Run = func() (time.Duration, error) {
			t := time.Now()
			var err error
			got, err = v.f(a, a)
			return time.Since(t), err
		}
		c.Check = func() (bench.Checked, error) {
			if got == nil {
				return bench.Checked{}, fmt.Errorf("%s produced no result", v.name)
			}
			return sameStructure(got, want), nil
		}
		cases = append(cases, c)
	}
	return cases, nil, nil
}
