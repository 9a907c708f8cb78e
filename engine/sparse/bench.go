package sparse

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda"
)

// The "spmv" suite: y = A·x on the CPU (serial baseline, goroutines) and on
// CUDA (the steps of spmvSteps, spmv_cuda.go, and cuSPARSE's two CSR
// algorithms). On CUDA the
// baseline is a device copy of exactly the bytes an SpMV must move, so "vs
// baseline" reads as the share of the bandwidth bound reached; next to it,
// x_gather_probe times only the reads of the column indices and of the x
// they name, the floor under any CSR kernel on that matrix. Sizes are
// generator specs (see Generate).

func init() {
	bench.Register(bench.Suite{
		Name:  "spmv",
		Doc:   "sparse matrix × vector: CPU serial/parallel; the CUDA ladder (kernels/cuda/sparse/spmv_NN_*.cu) and cuSPARSE, against the bandwidth bound and the x-gather floor",
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
	m, err := LoadMatrix(size)
	if err != nil {
		return nil, nil, err
	}
	// x, the reference y, and the variants' y (on CUDA, the one read back).
	need := 4*uint64(m.Cols) + 3*4*uint64(m.Rows)
	if err := engine.CheckHostMemory("spmv of "+size, "x, the reference y and the variants' y", need); err != nil {
		return nil, nil, err
	}
	p := newSpMVProblem(m, size)
	switch dev.Kind {
	case engine.CUDA:
		return spmvCUDA(dev.CUDA, p)
	case engine.CPU:
		var cases []bench.Case
		for _, v := range []struct {
			name string
			f    func(*CSR, []float32, []float32) error
		}{{"cpu_serial", SpMV}, {"cpu_parallel", SpMVParallel}} {
			y := make([]float32, m.Rows)
			c := p.base(v.name)
			c.Baseline = v.name == "cpu_serial"
			c.Reset = func() error { clear(y); return nil }
			c.Run = func() (time.Duration, error) {
				t := time.Now()
				err := v.f(m, p.x, y)
				return time.Since(t), err
			}
			c.Check = func() (bench.Checked, error) { return bench.Compare(y, p.want), nil }
			cases = append(cases, c)
		}
		return cases, nil, nil
	}
	return nil, nil, fmt.Errorf("sparse: spmv runs on the CPU and CUDA devices, not %s", dev.ID)
}

// spmvProblem is one matrix of the spmv suite: x, the reference y, and the
// case every variant starts from.
type spmvProblem struct {
	m       *CSR
	x, want []float32
	size    string // the suite's size that named m
	tol     float64
}

func newSpMVProblem(m *CSR, size string) spmvProblem {
	x := make([]float32, m.Cols)
	for i := range x {
		x[i] = float32(i%17)/8 - 1
	}
	// Float32 sums of a row of L entries differ from the float64 reference by
	// up to about L·2^-23 relative to the row's magnitude.
	_, longest, _, _ := RowStats(m)
	return spmvProblem{m: m, x: x, want: spmvReference(m, x), size: size,
		tol: max(1e-5, float64(longest)*math.Ldexp(1, -23))}
}

// base is the case of variant before its Run, Reset and Check.
func (p spmvProblem) base(variant string) bench.Case {
	return bench.Case{Variant: variant, Params: bench.Params{"matrix": p.size, "rows": p.m.Rows, "nnz": p.m.NNZ()},
		Flops: 2 * float64(p.m.NNZ()), Bytes: spmvBytes(p.m), Tol: p.tol}
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

// The "spgemm" suite: C = A² for a square A (a generator spec, a .mtx file
// or a SuiteSparse name). On the CPU the baseline is Gustavson on one
// goroutine; on CUDA it is cuSPARSE's SpGEMM, in the same run, against the
// steps of the GPU ladder (GPUSteps). Every variant's C must match the CPU
// Gustavson result: the same rows and columns, values within float32
// rounding. flops = 2 × products; peak_bytes is the device memory a run had
// allocated at its highest beyond A (C, buffers, workspaces).
func init() {
	bench.Register(bench.Suite{
		Name:  "spgemm",
		Doc:   "sparse × sparse, C = A²: CPU Gustavson (serial, parallel), dense accumulator, outer product; CUDA ladder 01–06 against cuSPARSE; flops = 2 × products",
		Sizes: spgemmSizes,
		Cases: spgemmCases,
	})
}

func spgemmSizes(dev engine.Info) []string {
	if dev.Kind == engine.CUDA {
		return []string{"uniform:n=262144,k=16", "banded:n=262144,w=8", "poisson:k=512",
			"rmat:scale=18,ef=8,a=0.57,b=0.19,c=0.19", "rmat:scale=16,ef=16,a=0.65,b=0.15,c=0.15"}
	}
	return []string{"uniform:n=16384,k=8", "rmat:scale=14,ef=8,a=0.57,b=0.19,c=0.19"}
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

// spgemmTolerance bounds the float32 disagreement between two summation
// orders of A·B's longest row: about (products in the row) · 2^-23 relative.
func spgemmTolerance(a, b *CSR) float64 {
	longest := 0
	for i := 0; i < a.Rows; i++ {
		n := 0
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			k := a.ColIdx[p]
			n += int(b.RowPtr[k+1] - b.RowPtr[k])
		}
		longest = max(longest, n)
	}
	return max(1e-5, float64(longest)*math.Ldexp(1, -23))
}

func spgemmCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	if dev.Kind != engine.CPU && dev.Kind != engine.CUDA {
		return nil, nil, fmt.Errorf("sparse: spgemm runs on the CPU and CUDA devices, not %s", dev.ID)
	}
	a, err := LoadMatrix(size)
	if err != nil {
		return nil, nil, err
	}
	if a.Rows != a.Cols {
		return nil, nil, fmt.Errorf("sparse: spgemm computes A², but %s is %d×%d", size, a.Rows, a.Cols)
	}
	// The parts sized by A's shape: row pointers of the reference C and of a
	// variant's, the reference's row lengths, and a sparse accumulator
	// (a value and a mark per column) for each goroutine.
	need := 2*4*uint64(a.Rows+1) + 4*uint64(a.Rows) + 8*uint64(a.Cols)*uint64(cpu.Workers())
	if err := engine.CheckHostMemory("spgemm of "+size, fmt.Sprintf("the row pointers of C and its reference, and %d accumulators of a row", cpu.Workers()), need); err != nil {
		return nil, nil, err
	}
	products := Products(a, a)
	if products > math.MaxInt32 {
		return nil, nil, fmt.Errorf("sparse: A² of %s needs %d products; the 32-bit offsets allow %d", size, products, math.MaxInt32)
	}
	want, err := GustavsonParallel(a, a)
	if err != nil {
		return nil, nil, err
	}
	// Two flops per product, each product a hash insert or a dense update,
	// not an FMA at the device's peak rate, and no bytes counted: no roof.
	base := func(variant string) bench.Case {
		return bench.Case{Variant: variant, Flops: 2 * float64(products), NoRoof: true, Tol: spgemmTolerance(a, a),
			Params: bench.Params{"matrix": size, "rows": a.Rows, "nnz": a.NNZ(), "products": products, "nnz_c": want.NNZ()}}
	}
	if dev.Kind == engine.CUDA {
		return spgemmCUDA(dev.CUDA, a, want, base)
	}
	var cases []bench.Case
	for _, v := range []struct {
		name string
		f    func(a, b *CSR) (*CSR, error)
	}{{"gustavson_serial", Gustavson}, {"gustavson_parallel", GustavsonParallel},
		{"dense_accumulator", DenseAccumulator}, {"outer_product", OuterProduct}} {
		var got *CSR
		c := base(v.name)
		c.Baseline = v.name == "gustavson_serial"
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

// spgemmCUDA prepares cuSPARSE (the baseline) and the ladder's steps. Each
// case keeps its latest C for the check and releases it before the next run;
// the timer spans the whole call, for cuSPARSE and the ladder alike, and both
// draw memory from the same caching pool.
func spgemmCUDA(ctx *cuda.Context, a, want *CSR, base func(string) bench.Case) (cases []bench.Case, closeAll func(), err error) {
	da, err := UploadCSR(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	g := NewGPUSpGEMM(ctx)
	sp, err := ctx.NewSparse(nil)
	if err != nil {
		da.Free()
		return nil, nil, err
	}
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		da.Free()
		sp.Destroy()
		return nil, nil, err
	}
	results := map[string]cuda.CSR{}
	closeAll = func() {
		for _, c := range results {
			g.Release(c)
		}
		timer.Destroy()
		sp.Destroy()
		g.Close()
		da.Free()
	}
	add := func(variant string, multiply func() (cuda.CSR, int, error)) {
		c := base(variant)
		c.Baseline = variant == "cusparse"
		c.Reset = func() error {
			g.Release(results[variant])
			delete(results, variant)
			return nil
		}
		c.Run = func() (time.Duration, error) {
			g.Release(results[variant])
			delete(results, variant)
			var out cuda.CSR
			var peak int
			d, err := timer.Time(func() error {
				var err error
				out, peak, err = multiply()
				return err
			})
			if err != nil {
				return 0, err
			}
			results[variant] = out
			c.Params["peak_bytes"] = peak
			return d, nil
		}
		c.Check = func() (bench.Checked, error) {
			out, ok := results[variant]
			if !ok {
				return bench.Checked{}, fmt.Errorf("%s produced no result", variant)
			}
			got, err := DownloadCSR(out)
			if err != nil {
				return bench.Checked{}, err
			}
			return sameStructure(got, want), nil
		}
		cases = append(cases, c)
	}
	add("cusparse", func() (cuda.CSR, int, error) { return g.CuSPARSE(sp, da, da) })
	for _, step := range GPUSteps {
		add(step, func() (cuda.CSR, int, error) {
			c, stats, err := g.Multiply(step, da, da)
			return c, stats.PeakBytes, err
		})
	}
	return cases, closeAll, nil
}
