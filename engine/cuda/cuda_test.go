package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// gpu returns the first device's context, or skips the test with the reason
// CUDA is unavailable.
func gpu(t *testing.T) *Context {
	t.Helper()
	n, err := DeviceCount()
	if err != nil {
		t.Skipf("no CUDA: %v", err)
	}
	if n == 0 {
		t.Skip("no CUDA device")
	}
	c, err := NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const vecAddSrc = `
extern "C" __global__ void vec_add(int n, const float* a, const float* b, float* c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}`

func TestResultNames(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{{0, "CUDA_SUCCESS"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
		{719, "CUDA_ERROR_LAUNCH_FAILED"}, {999, "CUDA_ERROR_UNKNOWN"}, {12345, "CUresult(12345)"}} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("Result(%d) = %q, want %q", tc.r, got, tc.want)
		}
	}
	err := check("cuMemAlloc_v2", 2)
	if !IsResult(err, 2) || !strings.Contains(err.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)") {
		t.Errorf("check: %v", err)
	}
}

func TestParseLog(t *testing.T) {
	log := "bad.cu(3): error: identifier \"y\" is undefined\n\nbad.cu(7): warning #177-D: variable \"z\" was declared but never referenced\n1 error detected in the compilation of \"bad.cu\".\n"
	got := ParseLog(log)
	want := []Diagnostic{{"bad.cu", 3, "error", `identifier "y" is undefined`},
		{"bad.cu", 7, "warning", `variable "z" was declared but never referenced`}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("diagnostic %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	e := &CompileError{Name: "bad.cu", Code: "NVRTC_ERROR_COMPILATION", Log: log, Diagnostics: got}
	if !strings.Contains(e.Error(), "bad.cu:3: error: identifier") {
		t.Errorf("CompileError = %q", e.Error())
	}
}

// TestPackArguments checks argument validation without a GPU: a Function whose
// parameter sizes are known (as cuFuncGetParamInfo reports them).
func TestPackArguments(t *testing.T) {
	f := &Function{name: "k", params: []int{4, 8, 4}}
	buf := &Buffer{ptr: 0x1000, size: 16}
	for _, tc := range []struct {
		name string
		args []any
		err  string
	}{
		{"ok", []any{7, buf, float32(1)}, ""},
		{"too few", []any{7, buf}, "2 arguments given, the kernel takes 3"},
		{"too many", []any{7, buf, float32(1), 2}, "4 arguments given"},
		{"float64 for float", []any{7, buf, 1.0}, "float64 (8 bytes) but the kernel parameter has 4 bytes"},
		{"string", []any{"x", buf, float32(1)}, "unsupported type string"},
		{"slice", []any{7, []float32{1}, float32(1)}, "unsupported type []float32"},
		{"nil buffer", []any{7, (*Buffer)(nil), float32(1)}, "nil or freed"},
		{"int overflow", []any{1 << 40, buf, float32(1)}, "does not fit"},
	} {
		_, err := f.pack(tc.args)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestNoDriverIsNotFatal(t *testing.T) {
	n, err := DeviceCount()
	if err != nil {
		if !errors.Is(err, ErrNoDriver) {
			t.Fatalf("DeviceCount error %v does not wrap ErrNoDriver", err)
		}
		if n != 0 {
			t.Fatalf("no driver but %d devices", n)
		}
		t.Logf("no driver, as expected here: %v", err)
		return
	}
	t.Logf("%d CUDA device(s), driver %s", n, DriverPath())
}

func TestDeviceProperties(t *testing.T) {
	c := gpu(t)
	p := c.Properties()
	t.Logf("%+v", p)
	if p.SMs <= 0 || p.WarpSize != 32 || p.ClockMHz <= 0 || p.MemoryBytes == 0 || p.SharedPerBlock < 48<<10 ||
		p.PeakFP32GFLOPS <= 0 || p.PeakGBps <= 0 || p.MaxThreadsPerBlock < 1024 || p.RegistersPerSM <= 0 {
		t.Errorf("implausible properties %+v", p)
	}
	if _, err := GetDevice(1 << 20); err == nil || !strings.Contains(err.Error(), "cuda:0") {
		t.Errorf("unknown device: %v", err)
	}
}

func TestVecAddEdges(t *testing.T) {
	c := gpu(t)
	mod, err := c.Compile(Source{Name: "vecadd.cu", Code: vecAddSrc})
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("vec_add")
	if err != nil {
		t.Fatal(err)
	}
	if got := fn.NumParams(); got != 4 {
		t.Errorf("NumParams = %d, want 4 (the count NVRTC's CUBIN records)", got)
	}
	for _, n := range []int{1, 255, 256, 1000, 1<<20 + 3} {
		a, b := randSlice(n, 1), randSlice(n, 2)
		da, _ := Upload(c, a)
		db, _ := Upload(c, b)
		dc, err := AllocSlice[float32](c, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn.Launch(Grid1D(n, 256), n, da, db, dc); err != nil {
			t.Fatal(err)
		}
		got, err := Download[float32](dc, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != a[i]+b[i] {
				t.Fatalf("n=%d: c[%d] = %v, want %v", n, i, got[i], a[i]+b[i])
			}
		}
		da.Free()
		db.Free()
		dc.Free()
	}
	again, err := c.Compile(Source{Name: "vecadd.cu", Code: vecAddSrc})
	if err != nil || again != mod {
		t.Errorf("second Compile returned %p (%v), want cached %p", again, err, mod)
	}
}

// Tests whose names end in APIError make a CUDA call fail on purpose, to
// check the error it gives: `.gpu/run.sh --sanitize` skips them, since
// compute-sanitizer counts that failure as an error.

func TestUnknownKernelAPIError(t *testing.T) {
	c := gpu(t)
	mod, err := c.Compile(Source{Name: "vecadd.cu", Code: vecAddSrc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Function("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown kernel: %v", err)
	}
}

// TestFastMathReachesSASS: a kernel built with --use_fast_math computes
// what its __sinf and __expf twin computes, bit for bit, and not what the
// precise build computes: the flag's approximations reach the code that
// runs (NVRTC 13.0 left them out of its CUBIN; fastMathPtxas).
func TestFastMathReachesSASS(t *testing.T) {
	c := gpu(t)
	const code = `
#ifdef INTRINSIC
#define SIN __sinf
#define EXP __expf
#else
#define SIN sinf
#define EXP expf
#endif
extern "C" __global__ void f(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = EXP(0.1f * x[i]) * SIN(x[i]);
}`
	const n = 1 << 12
	x := make([]float32, n)
	for i := range x {
		x[i] = 30 * float32(i) / n // [0, 30): several periods, where __sinf's error shows
	}
	dx, err := Upload(c, x)
	if err != nil {
		t.Fatal(err)
	}
	defer dx.Free()
	run := func(opts ...string) []float32 {
		t.Helper()
		mod, err := c.Compile(Source{Name: "fastmath.cu", Code: code, Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		fn, _ := mod.Function("f")
		dy, err := AllocSlice[float32](c, n)
		if err != nil {
			t.Fatal(err)
		}
		defer dy.Free()
		if err := fn.Launch(Grid1D(n, 256), n, dx, dy); err != nil {
			t.Fatal(err)
		}
		y, err := Download[float32](dy, n)
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	precise, fast, intrinsic := run(), run("--use_fast_math"), run("-DINTRINSIC")
	if !slices.Equal(fast, intrinsic) {
		t.Errorf("--use_fast_math computes other values than __sinf and __expf: the flag did not reach the SASS")
	}
	if slices.Equal(precise, intrinsic) {
		t.Errorf("the precise build computes what __sinf and __expf do: the test cannot tell the builds apart")
	}
}

func TestCompileOptionsAndDiskCache(t *testing.T) {
	c := gpu(t)
	t.Setenv("GPULAB_CACHE_DIR", t.TempDir())
	src := Source{Name: "scale.cu", Code: `extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= SCALE; }`,
		Options: []string{"-DSCALE=3.0f", "--use_fast_math"}}
	mod, err := c.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := mod.Function("scale")
	x, _ := Upload(c, []float32{1, 2})
	if err := fn.Launch(LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 2}}, x); err != nil {
		t.Fatal(err)
	}
	got, _ := Download[float32](x, 2)
	if got[0] != 3 || got[1] != 6 {
		t.Errorf("scale by -DSCALE=3: got %v", got)
	}
	key := cacheKey(src, c.compileOptions(src.Options))
	if readCachedCUBIN(key) == nil {
		t.Errorf("no CUBIN cached under %s", CacheDir())
	}
}

func TestCompileErrorCarriesLog(t *testing.T) {
	c := gpu(t)
	_, err := c.Compile(Source{Name: "bad.cu", Code: "extern \"C\" __global__ void k(float* x) {\n  x[0] = y;\n}\n"})
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *CompileError", err)
	}
	if len(ce.Diagnostics) == 0 || ce.Diagnostics[0].Line != 2 || ce.Diagnostics[0].File != "bad.cu" {
		t.Errorf("diagnostics %+v from log %q", ce.Diagnostics, ce.Log)
	}
	if !strings.Contains(err.Error(), "bad.cu:2: error:") {
		t.Errorf("error text %q lacks file:line", err)
	}
}

func TestLaunchBadArguments(t *testing.T) {
	c := gpu(t)
	mod, err := c.Compile(Source{Name: "vecadd.cu", Code: vecAddSrc})
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := mod.Function("vec_add")
	buf, _ := AllocSlice[float32](c, 4)
	defer buf.Free()
	cfg := Grid1D(4, 32)
	for _, tc := range []struct {
		args []any
		err  string
	}{
		{[]any{4, buf, buf}, "3 arguments given, the kernel takes 4"},
		{[]any{4.0, buf, buf, buf}, "float64"},
		{[]any{4, buf, "b", buf}, "unsupported type string"},
	} {
		if err := fn.Launch(cfg, tc.args...); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Launch(%v): %v, want %q", tc.args, err, tc.err)
		}
	}
	if err := fn.Launch(LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 4096}}, 4, buf, buf, buf); err == nil {
		t.Error("a block of 4096 threads launched")
	}
	if err := c.Synchronize(); err != nil {
		t.Fatalf("context broken after bad launches: %v", err)
	}
}

func TestAllocMoreThanFreeAPIError(t *testing.T) {
	c := gpu(t)
	free, total, err := c.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Alloc(int(total + 64<<30))
	if err == nil || !strings.Contains(err.Error(), "bytes free of") {
		t.Fatalf("alloc of %d bytes with %d free: %v", total+64<<30, free, err)
	}
	t.Log(err)
	if _, err := c.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
}

func TestCopiesAndBounds(t *testing.T) {
	c := gpu(t)
	const n = 1 << 16
	src := randSlice(n, 3)
	a, _ := Upload(c, src)
	b, _ := AllocSlice[float32](c, n)
	defer a.Free()
	defer b.Free()
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := CopyDtoD(b, a, 4*n, s); err != nil {
		t.Fatal(err)
	}
	pinned, err := c.AllocHost(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Free()
	if err := CopyDtoHAsync(pinned, 0, b, 0, 4*n, s); err != nil {
		t.Fatal(err)
	}
	s.Synchronize()
	for i, v := range HostSlice[float32](pinned) {
		if v != src[i] {
			t.Fatalf("pinned[%d] = %v, want %v", i, v, src[i])
		}
	}
	if err := b.Memset(0, s); err != nil {
		t.Fatal(err)
	}
	if err := CopyHtoDAsync(b, 4, pinned, 0, 8, s); err != nil {
		t.Fatal(err)
	}
	s.Synchronize()
	got, _ := Download[float32](b, 3)
	if got[0] != 0 || got[1] != src[0] || got[2] != src[1] {
		t.Errorf("memset+offset copy: %v", got)
	}
	if err := CopyHtoD(b, make([]float32, n+1)); err == nil || !strings.Contains(err.Error(), "outside a buffer") {
		t.Errorf("oversized copy: %v", err)
	}
	if err := CopyDtoHAsync(pinned, 4*n-4, b, 0, 8, s); err == nil {
		t.Error("host overrun accepted")
	}
}

func TestOccupancyAndTimer(t *testing.T) {
	c := gpu(t)
	mod, _ := c.Compile(Source{Name: "vecadd.cu", Code: vecAddSrc})
	fn, _ := mod.Function("vec_add")
	blocks, err := fn.MaxActiveBlocksPerSM(256, 0)
	if err != nil || blocks <= 0 {
		t.Fatalf("occupancy: %d, %v", blocks, err)
	}
	regs, err := fn.Attribute(FuncNumRegs)
	if err != nil {
		t.Fatalf("registers: %v", err)
	}
	t.Logf("vec_add: %d blocks of 256 per SM, %d registers", blocks, regs)
	n := 1 << 24
	a, _ := AllocSlice[float32](c, n)
	defer a.Free()
	if err := a.Memset(0, nil); err != nil { // initcheck: the kernel reads a
		t.Fatal(err)
	}
	tm, err := c.NewTimer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Destroy()
	d, err := tm.Time(func() error { return fn.Launch(Grid1D(n, 256), n, a, a, a) })
	if err != nil || d <= 0 {
		t.Fatalf("timer: %v, %v", d, err)
	}
	t.Logf("vec_add of %d floats: %v (%.0f GB/s)", n, d, 12*float64(n)/d.Seconds()/1e9)
}

// TestConcurrentGoroutines runs launches from many goroutines at once: the
// context must be current on whichever thread each call lands.
func TestConcurrentGoroutines(t *testing.T) {
	c := gpu(t)
	mod, _ := c.Compile(Source{Name: "vecadd.cu", Code: vecAddSrc})
	fn, _ := mod.Function("vec_add")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 1000 + g
			a := randSlice(n, uint64(g))
			da, err := Upload(c, a)
			if err != nil {
				errs <- err
				return
			}
			defer da.Free()
			for range 20 {
				if err := fn.Launch(Grid1D(n, 128), n, da, da, da); err != nil {
					errs <- err
					return
				}
			}
			got, err := Download[float32](da, n)
			if err != nil {
				errs <- err
				return
			}
			if want := a[n-1] * (1 << 20); got[n-1] != want {
				errs <- errors.New("wrong result in a goroutine")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCuBLAS(t *testing.T) {
	c := gpu(t)
	blas, err := c.NewBLAS(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blas.Destroy()
	m, n, k := 67, 45, 129
	a, b := randSlice(m*k, 5), randSlice(k*n, 6)
	want := matmul(a, b, m, n, k)
	da, _ := Upload(c, a)
	db, _ := Upload(c, b)
	dc, _ := AllocSlice[float32](c, m*n)
	if err := blas.Sgemm(m, n, k, 1, da, db, 0, dc); err != nil {
		t.Fatal(err)
	}
	got, _ := Download[float32](dc, m*n)
	if e := maxRelErr(got, want); e > 1e-5 {
		t.Errorf("Sgemm max rel err %g", e)
	}
	if err := blas.GemmEx(m, n, k, da, db, R32F, dc, Compute32FFastTF32); err != nil {
		t.Fatal(err)
	}
	got, _ = Download[float32](dc, m*n)
	if e := maxRelErr(got, want); e > 1e-2 {
		t.Errorf("TF32 GemmEx max rel err %g", e)
	}
	ha, hb := toBF16(a), toBF16(b)
	ba, _ := Upload(c, ha)
	bb, _ := Upload(c, hb)
	if err := blas.GemmEx(m, n, k, ba, bb, R16BF, dc, Compute32F); err != nil {
		t.Fatal(err)
	}
	got, _ = Download[float32](dc, m*n)
	if e := maxRelErr(got, matmul(fromBF16(ha), fromBF16(hb), m, n, k)); e > 1e-3 {
		t.Errorf("BF16 GemmEx max rel err %g", e)
	}
	if err := blas.Sgemm(m, n, k+1, 1, da, db, 0, dc); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("shape mismatch: %v", err)
	}
}

func TestPeerCopy(t *testing.T) {
	gpu(t)
	if n, _ := DeviceCount(); n < 2 {
		t.Skip("needs 2 CUDA devices")
	}
	c0, _ := NewContext(0)
	c1, _ := NewContext(1)
	if err := c1.EnablePeerAccess(c0); err != nil {
		t.Log(err)
	}
	src := randSlice(1<<20, 9)
	a, _ := Upload(c0, src)
	b, _ := AllocSlice[float32](c1, len(src))
	if err := CopyPeer(b, a, 4*len(src), nil); err != nil {
		t.Fatal(err)
	}
	c1.Synchronize()
	got, _ := Download[float32](b, len(src))
	if maxRelErr(got, src) != 0 {
		t.Error("peer copy differs")
	}
	// Bandwidth of a 256 MiB copy cuda:0 -> cuda:1, for the record.
	const big = 256 << 20
	x, err := c0.Alloc(big)
	if err != nil {
		t.Fatal(err)
	}
	y, err := c1.Alloc(big)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	defer y.Free()
	tm, _ := c1.NewTimer(nil)
	defer tm.Destroy()
	CopyPeer(y, x, big, nil)
	d, err := tm.Time(func() error { return CopyPeer(y, x, big, nil) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("P2P copy cuda:0 -> cuda:1, 256 MiB: %v, %.0f GB/s", d, big/d.Seconds()/1e9)
}

func randSlice(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 42))
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

func matmul(a, b []float32, m, n, k int) []float32 {
	c := make([]float32, m*n)
	for i := range m {
		for p := range k {
			for j := range n {
				c[i*n+j] += a[i*k+p] * b[p*n+j]
			}
		}
	}
	return c
}

// maxRelErr is max |got-want| / max(|want|, 1).
func maxRelErr(got, want []float32) float64 {
	e := 0.0
	for i := range want {
		d := math.Abs(float64(got[i]-want[i])) / math.Max(math.Abs(float64(want[i])), 1)
		e = math.Max(e, d)
	}
	return e
}

func toBF16(s []float32) []uint16 {
	out := make([]uint16, len(s))
	for i, v := range s {
		u := math.Float32bits(v)
		u += 0x7fff + (u>>16)&1 // round to nearest even
		out[i] = uint16(u >> 16)
	}
	return out
}

func fromBF16(s []uint16) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = math.Float32frombits(uint32(v) << 16)
	}
	return out
}

// TestCuSPARSESpMV multiplies a small CSR matrix with an empty row and a
// column count that differs from the row count, both cuSPARSE algorithms,
// against the product computed here; mismatched vectors are an error.
func TestCuSPARSESpMV(t *testing.T) {
	c := gpu(t)
	sp, err := c.NewSparse(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Destroy()
	rows, cols := 5, 7
	rowPtr := []int32{0, 2, 2, 5, 6, 8} // row 1 is empty
	colIdx := []int32{0, 6, 1, 3, 5, 2, 0, 4}
	val := []float32{1, -2, 3, 0.5, 4, -1, 2, 8}
	x := []float32{1, 2, 3, 4, 5, 6, 7}
	want := make([]float32, rows)
	for i := range rows {
		for p := rowPtr[i]; p < rowPtr[i+1]; p++ {
			want[i] += val[p] * x[colIdx[p]]
		}
	}
	a := CSR{Rows: rows, Cols: cols, NNZ: len(val)}
	a.RowPtr, _ = Upload(c, rowPtr)
	a.ColIdx, _ = Upload(c, colIdx)
	a.Val, _ = Upload(c, val)
	defer a.Free()
	dx, _ := Upload(c, x)
	dy, _ := AllocSlice[float32](c, rows)
	for _, alg := range []SpMVAlg{SpMVCSRAlg1, SpMVCSRAlg2} {
		p, err := sp.NewSpMV(a, dx, dy, alg)
		if err != nil {
			t.Fatal(err)
		}
		if err := dy.Memset(0xff, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		got, err := Download[float32](dy, rows)
		if err != nil {
			t.Fatal(err)
		}
		if e := maxRelErr(got, want); e > 1e-6 {
			t.Errorf("algorithm %d: got %v, want %v", alg, got, want)
		}
		p.Destroy()
	}
	if _, err := sp.NewSpMV(a, dy, dy, SpMVCSRAlg1); err == nil || !strings.Contains(err.Error(), "5×7") {
		t.Errorf("x of 5 values for 7 columns: %v", err)
	}
}
