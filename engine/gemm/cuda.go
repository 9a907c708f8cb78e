package gemm

import (
	"fmt"
	"slices"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// cudaStep is one CUDA variant: a kernel file of kernels/cuda/gemm (or a
// cuBLAS call) with its launch shape.
type cudaStep struct {
	Variant
	kernel  string               // entry point in the file; "" for cuBLAS
	block   int                  // threads per block (1D), or 32×32 when square
	square  bool                 // 2D 32×32 blocks (steps 01–03)
	rowsX   bool                 // step 01: blockIdx.x walks rows
	tileM   int                  // rows of C per block
	tileN   int                  // columns of C per block
	vecElem int                  // elements per 16 bytes when the file uses VEC (4 fp32, 8 bf16); 0: no VEC
	defines []string             // -D options of the step's parameters (step 10's tiles)
	blas    func(*cudaRun) error // cuBLAS baselines
	tuned   bool                 // step 10: parameters from Autotune
	hopper  bool                 // step 12: wgmma and TMA, sm_90a only
}

// tiledTraffic is the global traffic of a kernel whose blocks compute bm×bn
// tiles of C: A is read N/bn times, B M/bm times, C written once (esize bytes
// per input element).
func tiledTraffic(bm, bn int, esize float64) func(Shape) float64 {
	return func(s Shape) float64 {
		mnk := float64(s.M) * float64(s.N) * float64(s.K)
		return esize*mnk*(1/float64(bn)+1/float64(bm)) + 4*float64(s.M)*float64(s.N)
	}
}

func cudaSteps() []cudaStep {
	v := func(name, doc string, p Precision) Variant {
		return Variant{Name: name, Kind: engine.CUDA, Doc: doc, Precision: p}
	}
	naive := func(s Shape) float64 { return 8*float64(s.M)*float64(s.N)*float64(s.K) + 4*float64(s.M)*float64(s.N) }
	steps := []cudaStep{
		{Variant: Variant{Name: "cublas_sgemm", Kind: engine.CUDA, Doc: "cuBLAS SGEMM, FP32 (no TF32): the baseline", Precision: FP32, Baseline: true},
			blas: func(r *cudaRun) error { return r.blasH.Sgemm(r.p.M, r.p.N, r.p.K, 1, r.a, r.b, 0, r.c) }},
		{Variant: v("cublas_tf32", "cuBLAS GemmEx, TF32 tensor cores", TF32),
			blas: func(r *cudaRun) error {
				return r.blasH.GemmEx(r.p.M, r.p.N, r.p.K, r.a, r.b, cuda.R32F, r.c, cuda.Compute32FFastTF32)
			}},
		{Variant: v("cublas_bf16", "cuBLAS GemmEx, BF16 inputs, FP32 accumulate", BF16),
			blas: func(r *cudaRun) error {
				return r.blasH.GemmEx(r.p.M, r.p.N, r.p.K, r.a16, r.b16, cuda.R16BF, r.c, cuda.Compute32F)
			}},
		{Variant: v("01_naive", "one thread per element of C, threads along rows: uncoalesced", FP32),
			kernel: "sgemm", square: true, rowsX: true, tileM: 32, tileN: 32},
		{Variant: v("02_coalesced", "threads along columns: a warp reads one line of B and writes one line of C", FP32),
			kernel: "sgemm", square: true, tileM: 32, tileN: 32},
		{Variant: v("03_smem_tiling", "32×32 tiles of A and B in shared memory: each global load used 32 times", FP32),
			kernel: "sgemm", square: true, tileM: 32, tileN: 32},
		{Variant: v("04_1d_register_tiling", "8 outputs per thread: one B value in a register feeds 8 FMAs", FP32),
			kernel: "sgemm", block: 512, tileM: 64, tileN: 64},
		{Variant: v("05_2d_register_tiling", "8×8 outputs per thread: an outer product per k, 0.25 shared loads per FMA", FP32),
			kernel: "sgemm", block: 256, tileM: 128, tileN: 128},
		{Variant: v("06_vectorized", "float4 global and shared accesses, A transposed in shared memory", FP32),
			kernel: "sgemm", block: 256, tileM: 128, tileN: 128, vecElem: 4},
		{Variant: v("07_bank_conflict_free", "padded A tile, and float4 reads of neighbouring addresses: no bank conflicts", FP32),
			kernel: "sgemm", block: 256, tileM: 128, tileN: 128, vecElem: 4},
		{Variant: v("08_double_buffering", "two shared tiles: cp.async loads tile t+1 while tile t is computed", FP32),
			kernel: "sgemm", block: 256, tileM: 128, tileN: 128, vecElem: 4},
		{Variant: v("09_warp_tiling", "warp tiles of 64×32 with 4×4 lane micro-tiles, BK = 16", FP32),
			kernel: "sgemm", block: 256, tileM: 128, tileN: 128, vecElem: 4},
		{Variant: autotunedVariant(), kernel: "sgemm", tuned: true, tileM: 128, tileN: 128, vecElem: 4},
		{Variant: v("11_wmma_tf32", "tensor cores (WMMA, mma.sync) on TF32-rounded inputs", TF32),
			kernel: "wmma_tf32", block: 256, tileM: 128, tileN: 128, vecElem: 4},
		{Variant: v("11_wmma_bf16", "tensor cores (WMMA, mma.sync) on BF16 inputs", BF16),
			kernel: "wmma_bf16", block: 256, tileM: 128, tileN: 128, vecElem: 8},
		{Variant: v("12_wgmma_tma", "Hopper: wgmma on shared-memory operands fed by TMA, producer/consumer warpgroups", BF16),
			kernel: "wgmma_bf16", hopper: true, block: 384, tileM: 128, tileN: 256},
	}
	for i := range steps {
		s := &steps[i]
		switch {
		case s.blas != nil:
		case s.Name == "01_naive" || s.Name == "02_coalesced":
			s.Traffic = naive
		case s.Precision == BF16:
			s.Traffic = tiledTraffic(s.tileM, s.tileN, 2)
		default:
			s.Traffic = tiledTraffic(s.tileM, s.tileN, 4)
		}
	}
	return steps
}

func cudaVariants() []Variant {
	var out []Variant
	for _, s := range cudaSteps() {
		out = append(out, s.Variant)
	}
	return out
}

// compareWith sends tensor-core steps to the cuBLAS call of their precision.
func compareWith(p Precision) string {
	switch p {
	case TF32:
		return "cublas_tf32"
	case BF16:
		return "cublas_bf16"
	}
	return ""
}

// vecOption is -DVEC=1 when rows of every matrix start 16-byte aligned for
// elements of elem per 16 bytes, so that the kernel may use 16-byte accesses.
func vecOption(s Shape, elem int) string {
	if s.K%elem == 0 && s.N%elem == 0 {
		return "-DVEC=1"
	}
	return "-DVEC=0"
}

// options are the step's compiler options for shape s: its parameters'
// defines, -DVEC for the shape's alignment, and sm_90a for step 12.
func (st cudaStep) options(s Shape) []string {
	opts := slices.Clone(st.defines)
	if st.vecElem > 0 {
		opts = append(opts, vecOption(s, st.vecElem))
	}
	if st.hopper {
		opts = append(opts, "--gpu-architecture=sm_90a")
	}
	return opts
}

// module compiles the step's file for ctx and shape s.
func (st cudaStep) module(ctx *cuda.Context, s Shape) (*cuda.Module, error) {
	src, err := kernels.CUDA("gemm/" + st.fileName())
	if err != nil {
		return nil, err
	}
	return ctx.Compile(cuda.Source{Name: "gemm/" + st.fileName() + ".cu", Code: src,
		Headers: kernels.CUDAFamily.Headers(), Options: st.options(s)})
}

// function compiles one step's kernel for ctx and shape s.
func (st cudaStep) function(ctx *cuda.Context, s Shape) (*cuda.Function, error) {
	mod, err := st.module(ctx, s)
	if err != nil {
		return nil, err
	}
	return mod.Function(st.kernel)
}

func (st cudaStep) fileName() string {
	if st.Precision != FP32 && st.kernel != "" && !st.hopper {
		return "11_wmma"
	}
	return st.Name
}

// hopperSharedBytes is the dynamic shared memory of step 12's kernel: 4
// stages of a 128×64 tile of A and a 64×256 tile of B in BF16, the stages'
// full and empty barriers, and slack to align the tiles to 1024 bytes.
const hopperSharedBytes = 4*(128+256)*64*2 + 64 + 1024

// launch is the grid, block and dynamic shared memory for shape s.
func (st cudaStep) launch(s Shape) cuda.LaunchConfig {
	gx, gy := ceilDiv(s.N, st.tileN), ceilDiv(s.M, st.tileM)
	if st.rowsX {
		gx, gy = gy, gx
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: gy}, Block: cuda.Dim3{X: st.block}}
	if st.square {
		cfg.Block = cuda.Dim3{X: 32, Y: 32}
	}
	if st.hopper {
		cfg.SharedMem = hopperSharedBytes
	}
	return cfg
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// cudaRun holds one problem's device buffers and handles.
type cudaRun struct {
	ctx      *cuda.Context
	p        *Problem
	a, b, c  *cuda.Buffer // FP32 inputs and the output
	a16, b16 *cuda.Buffer // BF16 inputs (bfloat16 bits)
	ap, bp   *cuda.Buffer // step 12 scratch: A and B with rows padded to 16 bytes
	blasH    *cuda.BLAS
	timer    *cuda.Timer
}

func (r *cudaRun) close() {
	for _, b := range []*cuda.Buffer{r.a, r.b, r.c, r.a16, r.b16, r.ap, r.bp} {
		b.Free()
	}
	if r.blasH != nil {
		r.blasH.Destroy()
	}
	if r.timer != nil {
		r.timer.Destroy()
	}
}

func newCUDARun(ctx *cuda.Context, p *Problem) (r *cudaRun, err error) {
	r = &cudaRun{ctx: ctx, p: p}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.a, err = cuda.Upload(ctx, p.A); err != nil {
		return nil, err
	}
	if r.b, err = cuda.Upload(ctx, p.B); err != nil {
		return nil, err
	}
	if r.c, err = cuda.AllocSlice[float32](ctx, p.M*p.N); err != nil {
		return nil, err
	}
	if r.a16, err = cuda.Upload(ctx, bf16Bits(p.A)); err != nil {
		return nil, err
	}
	if r.b16, err = cuda.Upload(ctx, bf16Bits(p.B)); err != nil {
		return nil, err
	}
	if r.blasH, err = ctx.NewBLAS(nil); err != nil {
		return nil, err
	}
	r.timer, err = ctx.NewTimer(nil)
	return r, err
}

func bf16Bits(s []float32) []uint16 {
	out := make([]uint16, len(s))
	for i, v := range s {
		out[i] = ToBF16(v)
	}
	return out
}

// kernelCase makes the bench case of a kernel step.
func (r *cudaRun) kernelCase(v Variant, fn *cuda.Function, cfg cuda.LaunchConfig) bench.Case {
	a, b := r.a, r.b
	if v.Precision == BF16 {
		a, b = r.a16, r.b16
	}
	return r.newCase(v, func() error { return fn.Launch(cfg, r.p.M, r.p.N, r.p.K, a, b, r.c) })
}

func (r *cudaRun) newCase(v Variant, enqueue func() error) bench.Case {
	c := r.p.Case(v, func() ([]float32, error) { return cuda.Download[float32](r.c, r.p.M*r.p.N) })
	c.CompareWith = compareWith(v.Precision)
	c.Reset = func() error { return r.c.Memset(0xff, nil) } // NaN: a kernel that skips an element fails
	c.Run = func() (time.Duration, error) { return r.timer.Time(enqueue) }
	return c
}

func cudaCases(ctx *cuda.Context, p *Problem) (cases []bench.Case, closeAll func(), err error) {
	r, err := newCUDARun(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	for _, st := range cudaSteps() {
		switch {
		case st.blas != nil:
			cases = append(cases, r.newCase(st.Variant, func() error { return st.blas(r) }))
		case st.hopper:
			if ctx.Properties().Major != 9 {
				continue // wgmma and TMA exist on sm_90 (Hopper) only
			}
			c, err := r.hopperCase(st)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", st.Name, err)
			}
			cases = append(cases, c)
		case st.tuned:
			tuned, err := Autotune(ctx, p.Shape)
			if err != nil {
				return nil, nil, err
			}
			fn, err := tuned.function(ctx, p.Shape)
			if err != nil {
				return nil, nil, fmt.Errorf("%s (%s): %w", st.Name, tuned, err)
			}
			st.Traffic = tiledTraffic(tuned.BM, tuned.BN, 4)
			c := r.kernelCase(st.Variant, fn, tuned.launch(p.Shape))
			c.Params["tuned"] = tuned.String()
			cases = append(cases, c)
		default:
			fn, err := st.function(ctx, p.Shape)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", st.Name, err)
			}
			cases = append(cases, r.kernelCase(st.Variant, fn, st.launch(p.Shape)))
		}
	}
	return cases, r.close, nil
}

// hopperCase prepares step 12: tensor maps over A and B (over zero-padded
// copies when K or N is not a multiple of 8, since TMA needs 16-byte rows),
// and a run that does the padding, if any, and the product, all timed.
func (r *cudaRun) hopperCase(st cudaStep) (bench.Case, error) {
	p := r.p
	kp, np := (p.K+7)/8*8, (p.N+7)/8*8
	mod, err := st.module(r.ctx, p.Shape)
	if err != nil {
		return bench.Case{}, err
	}
	fn, err := mod.Function(st.kernel)
	if err != nil {
		return bench.Case{}, err
	}
	pad, err := mod.Function("pad_cols")
	if err != nil {
		return bench.Case{}, err
	}
	a, b := r.a16, r.b16
	var pads []func() error // the copies into padded buffers, run before the product
	padded := func(src *cuda.Buffer, rows, cols, ld int, dst **cuda.Buffer) (*cuda.Buffer, error) {
		if ld == cols {
			return src, nil
		}
		buf, err := cuda.AllocSlice[uint16](r.ctx, rows*ld)
		if err != nil {
			return nil, err
		}
		*dst = buf
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: ceilDiv(ld, 256), Y: rows}, Block: cuda.Dim3{X: 256}}
		pads = append(pads, func() error { return pad.Launch(cfg, rows, cols, ld, src, buf) })
		return buf, nil
	}
	if a, err = padded(a, p.M, p.K, kp, &r.ap); err != nil {
		return bench.Case{}, err
	}
	if b, err = padded(b, p.K, p.N, np, &r.bp); err != nil {
		return bench.Case{}, err
	}
	tmA, err := cuda.TensorMap2D(a, cuda.TensorBFloat16, 2, p.M, kp, 128, 64, cuda.Swizzle128B)
	if err != nil {
		return bench.Case{}, err
	}
	tmB, err := cuda.TensorMap2D(b, cuda.TensorBFloat16, 2, p.K, np, 64, 64, cuda.Swizzle128B)
	if err != nil {
		return bench.Case{}, err
	}
	main := st.launch(p.Shape)
	return r.newCase(st.Variant, func() error {
		for _, f := range pads {
			if err := f(); err != nil {
				return err
			}
		}
		return fn.Launch(main, p.M, p.N, p.K, tmA, tmB, r.c)
	}), nil
}
