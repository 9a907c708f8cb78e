package exercise

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/gemm"
	"gpulab/engine/sparse"
	"gpulab/kernels"
)

// Skeletons as the exercise notebooks show them, with the TODO in.
const (
	gemmOpenCLHead = "__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))\n" +
		"void gemm(const int M, const int N, const int K,\n" +
		"          const __global float* restrict A, const __global float* restrict B, __global float* restrict C)\n{\n"
	gemmCUDAHead   = "extern \"C\" __global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {\n"
	assignCUDAHead = "extern \"C\" __global__ void assign_naive(const float* x, const float* centers, int n, int d, int k,\n" +
		"                                    int* labels, float* dist) {\n"
	assignOpenCLHead = "__kernel void assign_naive(const __global float* x, const __global float* centers, const int n, const int d,\n" +
		"                           const int k, __global int* labels, __global float* dist) {\n"
	wgsizeHead = "#ifdef WG\n#define WG_HINT __attribute__((reqd_work_group_size(WG, 1, 1)))\n#else\n#define WG_HINT\n#endif\n" +
		"__kernel WG_HINT void wg_fma(int n, __global const float* restrict src, __global float* restrict dst) {\n"
	sqfdCUDAHead = "extern \"C\" __global__ void sqfd_assign(const int* index, const float* features, const float* weights,\n" +
		"                                       const float* self, int n, int dim, const int* medoids, int k, float alpha,\n" +
		"                                       int* labels, float* dist) {\n"
	sqfdOpenCLHead = "__kernel void sqfd_assign(const __global int* index, const __global float* features, const __global float* weights,\n" +
		"                          const __global float* self, const int n, const int dim, const __global int* medoids,\n" +
		"                          const int k, const float alpha, __global int* labels, __global float* dist) {\n"
	rmsnormCUDAHead   = "extern \"C\" __global__ void rmsnorm(const float* x, const float* w, int width, float eps, float* y) {\n"
	rmsnormOpenCLHead = "__kernel void rmsnorm(const __global float* x, const __global float* w, const int width, const float eps,\n" +
		"                      __global float* y) {\n"
	routerCUDAHead = "extern \"C\" __global__ void route(const float* logits, const float* bias, int tokens, int experts, int k,\n" +
		"                                 int norm_topk, float scaling, int* top_idx, float* top_w) {\n"
	routerOpenCLHead = "__kernel void route(const __global float* logits, const __global float* bias, const int tokens, const int experts,\n" +
		"                    const int k, const int norm_topk, const float scaling, __global int* top_idx, __global float* top_w) {\n"
)

// need skips a test of lang's flavour where no device runs it.
func need(t *testing.T, lang string) {
	t.Helper()
	switch lang {
	case LangCUDA:
		cudatest.Context(t)
	case LangOpenCL:
		if _, err := openCLDevices(); err != nil {
			t.Skip(err)
		}
	}
}

// needForMistakes is need for a test that runs a wrong kernel on purpose
// (a missing guard, a store past the end): under compute-sanitizer a CUDA
// one is skipped, since the tool would rightly report the mistake.
func needForMistakes(t *testing.T, lang string) {
	t.Helper()
	if lang == LangCUDA && cuda.Sanitized() {
		t.Skip("a wrong CUDA kernel on purpose, which compute-sanitizer would rightly report")
	}
	need(t, lang)
}

// TestLanguage: the language comes from declarations, never from words in
// comments or strings.
func TestLanguage(t *testing.T) {
	for src, want := range map[string]string{
		gemmOpenCLHead:                      LangOpenCL,
		"kernel void f(global float* x) {}": LangOpenCL,
		"kernel __attribute__((reqd_work_group_size(64, 1, 1))) void f(global float* x) {}": LangOpenCL,
		gemmCUDAHead:                      LangCUDA,
		"__global__ void f(float* x) {}":  LangCUDA,
		"func Gustavson() {}":             "",
		"__global float* p; // no kernel": "",
		"// unlike CUDA's __global__, OpenCL says __kernel\n" + gemmOpenCLHead:            LangOpenCL,
		"/* a __global__ kernel in CUDA */\n" + gemmOpenCLHead:                            LangOpenCL,
		gemmOpenCLHead + "  printf(\"__global__ %d\\n\", M); /* \" */\n}":                 LangOpenCL,
		"// __kernel void f() in OpenCL\n" + gemmCUDAHead:                                 LangCUDA,
		"float kernel = 1.0f; // a variable named kernel\n__global__ void f(float* x) {}": LangCUDA,
		"/* unterminated comment __global__":                                              "",
		"char c = '\\''; // __global__\n" + gemmOpenCLHead:                                LangOpenCL,
	} {
		if got := Language(src); got != want {
			t.Errorf("Language(%q) = %q, want %q", src, got, want)
		}
	}
}

// TestTODOFails: every kernel exercise's skeleton, with its TODO line,
// fails with a message that names the marked cell, on any machine (no
// device is needed to say so); a TODO of the student's own does not count.
func TestTODOFails(t *testing.T) {
	for _, tc := range []struct{ name, head string }{
		{"gemm/tiled", gemmOpenCLHead}, {"gemm/tiled", gemmCUDAHead}, {"gemm/register-tiled", gemmOpenCLHead},
		{"kmeans/assign", assignCUDAHead}, {"kmeans/assign", assignOpenCLHead}, {"opencl/wgsize", wgsizeHead},
		{"sqfd/assign", sqfdCUDAHead}, {"sqfd/assign", sqfdOpenCLHead}, {"lfm2/rmsnorm", rmsnormCUDAHead},
		{"lfm2/rmsnorm", rmsnormOpenCLHead}, {"lfm2/router", routerCUDAHead}, {"lfm2/router", routerOpenCLHead},
	} {
		e, _ := Lookup(tc.name)
		f, err := e.Flavor(Language(tc.head))
		if err != nil || f.TODO == "" {
			t.Fatalf("%s: %v, TODO line %q", tc.name, err, f.TODO)
		}
		r := Run(tc.name, tc.head+"    "+f.TODO+"\n    // and the rest of the skeleton's comment\n}\n")
		if r.Correct || r.Unavailable || !strings.Contains(r.Error, "still has its TODO line") || !strings.Contains(r.Error, "// EXERCISE "+tc.name) {
			t.Errorf("%s: %+v", tc.name, r)
		}
		if _, err := e.Inspect(tc.head + "    // TODO: try float4 loads next week\n}\n"); err != nil {
			t.Errorf("%s: a TODO of the student's own: %v", tc.name, err)
		}
		if err := r.Err(); err == nil || err.Error() != tc.name+": not passed yet (the report above says why)" {
			t.Errorf("%s: Err() = %v", tc.name, err)
		}
	}
}

// TestInspectRefusesNUL: a source with a NUL byte (a binary file, say) is
// refused, naming the offset and line of its first NUL, before a compiler
// sees it: OpenCL and NVRTC read a source only up to its first NUL, and
// would report a kernel missing (CL_INVALID_KERNEL_NAME).
func TestInspectRefusesNUL(t *testing.T) {
	for _, name := range Names() {
		e, _ := Lookup(name)
		for _, f := range e.Flavors {
			src, err := f.Solution()
			if err != nil {
				t.Fatalf("%s (%s): %v", name, f.Lang, err)
			}
			i := strings.Index(src, "\n") + 1
			bad := src[:i] + "\x00\x00" + src[i:]
			if e.IsGo() {
				err = e.InspectGo(bad)
			} else {
				_, err = e.Inspect(bad)
			}
			if want := fmt.Sprintf("a NUL byte at offset %d (line 2)", i); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s (%s): %v, want %q", name, f.Lang, err, want)
			}
		}
	}
}

// TestReferencePasses: each exercise's reference solution, in each of its
// kernel languages, passes on the best device for it, is recognised as the
// reference and is timed next to its ladder. Where no device runs the
// language (CUDA here without a GPU), the check reports that instead of a
// failure.
func TestReferencePasses(t *testing.T) {
	for _, name := range Names() {
		e, _ := Lookup(name)
		if e.IsGo() {
			continue
		}
		for _, f := range e.Flavors {
			t.Run(name+"/"+f.Lang, func(t *testing.T) {
				src, err := f.Solution()
				if err != nil {
					t.Fatal(err)
				}
				if Language(src) != f.Lang {
					t.Fatalf("the %s solution reads as %q", f.Lang, Language(src))
				}
				r := Run(name, src)
				if _, err := f.devices(); err != nil {
					if !r.Unavailable || r.Err() != nil || !strings.Contains(r.Markdown(), "not checked here") {
						t.Errorf("no %s device, yet: %+v", f.Lang, r)
					}
					t.Skipf("no %s device: %v", f.Lang, err)
				}
				if !r.Correct || !r.Solution || r.GFLOPS <= 0 || len(r.Ladder) == 0 || r.PctOfRef <= 0 || r.Err() != nil || r.Unit != e.Unit {
					t.Errorf("%+v", r)
				}
				t.Log(r.Markdown())
			})
		}
	}
}

// TestWrongAndBroken: a wrong kernel fails with the first wrong element,
// a kernel that does not compile with the compiler's error at the
// student's line.
func TestWrongAndBroken(t *testing.T) {
	for _, tc := range []struct {
		name, lang, exercise, src string
		compiled                  bool
		want                      string // in Error or Detail
	}{
		{"OpenCL GEMM forgets the last partial tile of K", LangOpenCL, "gemm/tiled", gemmOpenCLHead + `
    const int n = get_global_id(0), m = get_global_id(1);
    float acc = 0.0f;
    for (int k = 0; k < (K / TS) * TS; k++)
        if (m < M && n < N) acc += A[m*K + k] * B[k*N + n];
    if (m < M && n < N) C[m*N + n] = acc;
}
`, true, "first wrong element: C[0][0] (index 0) is 0, expected"},
		{"OpenCL GEMM does not compile", LangOpenCL, "gemm/tiled", gemmOpenCLHead + "    float x = ;\n}\n", false, "line 5, column 15: error: expected expression"},
		{"CUDA GEMM forgets the last partial tile of K", LangCUDA, "gemm/tiled", gemmCUDAHead + `
    int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 32 + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < (K / 32) * 32; k++) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
`, true, "first wrong element: C[0][0] (index 0) is 0, expected"},
		{"CUDA GEMM does not compile", LangCUDA, "gemm/tiled", gemmCUDAHead + "    float x = ;\n}\n", false, "does not compile: line 2: error"},
		{"OpenCL k-means labels every point 0", LangOpenCL, "kmeans/assign", assignOpenCLHead + `
    const int i = get_global_id(0);
    if (i >= n) return;
    float s = 0.0f;
    for (int j = 0; j < d; j++) s += (x[i*d + j] - centers[j]) * (x[i*d + j] - centers[j]);
    labels[i] = 0;
    dist[i] = s;
}
`, true, "is nearer"},
		{"OpenCL k-means forgets the squares", LangOpenCL, "kmeans/assign", strings.Replace(mustOpenCL(t, assignStep), "s += t * t;", "s += t * t; if (c == k - 1) s = 1.0f;", 1), true, "dist["},
		{"OpenCL k-means does not compile", LangOpenCL, "kmeans/assign", assignOpenCLHead + "    int i = get_global_id(0)\n}\n", false, "line 3, column 29: error: expected ';'"},
		{"CUDA k-means labels every point 0", LangCUDA, "kmeans/assign", assignCUDAHead + `
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    for (int j = 0; j < d; j++) s += (x[i*d + j] - centers[j]) * (x[i*d + j] - centers[j]);
    labels[i] = 0;
    dist[i] = s;
}
`, true, "is nearer"},
		{"wgsize copies instead of computing", LangOpenCL, "opencl/wgsize", wgsizeHead + "    int i = get_global_id(0);\n    if (i < n) dst[i] = src[i];\n}\n", true, "first wrong element: dst[0]"},
		{"wgsize ignores WG", LangOpenCL, "opencl/wgsize", strings.Replace(mustOpenCL(t, wgsizeFile), "__kernel WG_HINT void wg_fma", "__kernel void wg_fma", 1), true, "declare __attribute__((reqd_work_group_size(WG, 1, 1)))"},
		{"OpenCL SQFD sends ties to the higher index", LangOpenCL, "sqfd/assign", replaced(t, mustOpenCL(t, sqfdAssignFile), "d2 < best", "d2 <= best"), true, "ties go to the lower index"},
		{"OpenCL SQFD forgets the factor 2", LangOpenCL, "sqfd/assign", replaced(t, mustOpenCL(t, sqfdAssignFile), "2.0f * cross", "cross"), true, "signature 0: dist[0] is"},
		{"OpenCL SQFD forgets the weights", LangOpenCL, "sqfd/assign", replaced(t, mustOpenCL(t, sqfdAssignFile), "fma(weights[b], exp(-alpha * d2), term)", "term + exp(-alpha * d2)"), true, "signature "},
		{"OpenCL SQFD does not compile", LangOpenCL, "sqfd/assign", sqfdOpenCLHead + "    const int i = get_global_id(0)\n}\n", false, "line 4, column 35: error: expected ';'"},
		{"CUDA SQFD sends ties to the higher index", LangCUDA, "sqfd/assign", replaced(t, mustCUDA(t, sqfdAssignFile), "d2 < best", "d2 <= best"), true, "ties go to the lower index"},
		{"OpenCL RMSNorm forgets eps", LangOpenCL, "lfm2/rmsnorm", replaced(t, mustOpenCL(t, rmsnormFile), "(float)width + eps)", "(float)width)"), true, "first wrong element: y[0][0] (index 0) is"},
		{"OpenCL RMSNorm uses its own partial sum", LangOpenCL, "lfm2/rmsnorm", replaced(t, mustOpenCL(t, rmsnormFile), "sqrt(partial[0]", "sqrt(partial[lid]"), true, "first wrong element: y["},
		{"OpenCL RMSNorm does not compile", LangOpenCL, "lfm2/rmsnorm", rmsnormOpenCLHead + "    flot s = 0.0f;\n}\n", false, "line 3, column 5: error: use of undeclared identifier 'flot'"},
		{"CUDA RMSNorm forgets the mean", LangCUDA, "lfm2/rmsnorm", replaced(t, mustCUDA(t, rmsnormFile), "partial[0] / (float)width", "partial[0]"), true, "first wrong element: y[0][0] (index 0) is"},
		{"OpenCL router chooses without the bias", LangOpenCL, "lfm2/router", replaced(t, mustOpenCL(t, routerFile), "sigmoid(z[e]) + bias[e]", "sigmoid(z[e])"), true, "expected expert"},
		{"OpenCL router sends ties to the higher index", LangOpenCL, "lfm2/router",
			replaced(t, replaced(t, mustOpenCL(t, routerFile), "e > prev", "e < prev"), "score > pick_score", "score >= pick_score"), true, "ties go to the lower index"},
		{"OpenCL router weights with the bias", LangOpenCL, "lfm2/router", replaced(t, mustOpenCL(t, routerFile), "const float s = sigmoid(z[pick]);", "const float s = pick_score;"), true, "without the bias"},
		{"CUDA router chooses without the bias", LangCUDA, "lfm2/router", replaced(t, mustCUDA(t, routerFile), "sigmoid(z[e]) + bias[e]", "sigmoid(z[e])"), true, "expected expert"},
		{"CUDA router does not compile", LangCUDA, "lfm2/router", routerCUDAHead + "    int t = blockIdx.x * blockDim.x + threadIdx.x\n}\n", false, "does not compile: line 4: error"},
		{"neither CUDA nor OpenCL", "", "gemm/tiled", "void gemm() {}", false, "neither a CUDA kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need(t, tc.lang)
			r := Run(tc.exercise, tc.src)
			if r.Correct || r.Compiled != tc.compiled || !strings.Contains(r.Error+" "+r.Detail, tc.want) || r.Err() == nil {
				t.Errorf("got %+v\nwant compiled=%v and %q", r, tc.compiled, tc.want)
			}
		})
	}
}

func mustCUDA(t *testing.T, name string) string {
	t.Helper()
	src, err := kernels.CUDA(name)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// replaced is src with old replaced by new, which must occur in it.
func replaced(t *testing.T, src, old, new string) string {
	t.Helper()
	if !strings.Contains(src, old) {
		t.Fatalf("the source has no %q", old)
	}
	return strings.Replace(src, old, new, 1)
}

func mustOpenCL(t *testing.T, name string) string {
	t.Helper()
	src, err := kernels.OpenCL(name)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestStudentLines maps compiler positions to the student's lines for each
// compiler's log format (NVRTC's as engine/cuda reports it).
func TestStudentLines(t *testing.T) {
	for _, tc := range []struct{ log, want string }{
		{"opencl: build program: CL_BUILD_PROGRAM_FAILURE (-11)\nerror: /root/.cache/pocl/kcache/tempfile_ab.cl:5:19: expected expression",
			"does not compile: line 5, column 19: error: expected expression"},
		{"opencl: build program: CL_BUILD_PROGRAM_FAILURE\n<kernel>:3:1: error: unknown type name 'flot'",
			"does not compile: line 3, column 1: error: unknown type name 'flot'"},
		{"nvrtc: compile exercise.cu: NVRTC_ERROR_COMPILATION\nexercise.cu:7: error: expected a \";\"",
			"does not compile: line 7: error: expected a \";\""},
	} {
		if got := buildError(tc.log); !strings.HasPrefix(got, tc.want+"\n") {
			t.Errorf("buildError(%q) =\n%s\nwant it to start with %q", tc.log, got, tc.want)
		}
	}
}

func TestResultErr(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Result{Exercise: "x", Correct: true}, ""},
		{Result{Exercise: "x", Unavailable: true, Error: "no CUDA device"}, ""},
		{Result{Exercise: "x", Error: "wrong result for M=1", Detail: "first wrong element: C[0][0]"}, "x: not passed yet (the report above says why)"},
	} {
		err := tc.r.Err()
		if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
			t.Errorf("%+v: Err() = %v, want %q", tc.r, err, tc.want)
		}
	}
}

func TestExtract(t *testing.T) {
	cell := "// EXERCISE gemm/tiled: write the kernel between the backticks\nvar src = `kernel body`\n"
	if got, err := Extract(cell, "gemm/tiled"); err != nil || got != "kernel body" {
		t.Errorf("%q %v", got, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"var src = `x`", `no cell marked "// EXERCISE gemm/tiled"`},
		{"// EXERCISE gemm/tiled\nnothing", "no source between backticks"},
		{"// EXERCISE gemm/tiled\n`open", "never closes"},
	} {
		if _, err := Extract(tc.text, "gemm/tiled"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "gemm/tiled") {
		t.Errorf("Lookup: %v", err)
	}
	e, _ := Lookup("opencl/wgsize")
	if _, err := e.Flavor(LangCUDA); err == nil || !strings.Contains(err.Error(), "opencl/wgsize has no cuda version (it has: opencl)") {
		t.Errorf("Flavor: %v", err)
	}
}

func TestGustavsonExercise(t *testing.T) {
	r := RunGustavson(func(a, b *sparse.CSR) (*sparse.CSR, error) { return nil, errors.New("TODO: not written yet") })
	if r.Correct || !strings.Contains(r.Error, "your function returned an error: TODO: not written yet") {
		t.Errorf("TODO: %+v", r)
	}
	r = RunGustavson(sparse.Gustavson)
	if !r.Correct || len(r.Ladder) != 4 {
		t.Errorf("library Gustavson: %+v", r)
	}
	// Changes one value: the check names the element.
	r = RunGustavson(func(a, b *sparse.CSR) (*sparse.CSR, error) {
		c, err := sparse.Gustavson(a, b)
		if err != nil || c.NNZ() == 0 {
			return c, err
		}
		c.Val[0] += 1
		return c, nil
	})
	if r.Correct || !strings.Contains(r.Detail, "expected") {
		t.Errorf("wrong value: %+v", r)
	}
	r = RunGustavson(func(a, b *sparse.CSR) (*sparse.CSR, error) { panic("boom") })
	if r.Correct || !strings.Contains(r.Error, "panicked: boom") {
		t.Errorf("panic: %+v", r)
	}
}

// TestServeJudge runs a worker (Serve) and the judging side (Judge) over
// an in-memory connection, as lab grade does across its sandbox: the
// reference passes, a wrong kernel fails with its first wrong element, a
// kernel that does not compile fails with the compiler's line.
func TestServeJudge(t *testing.T) {
	need(t, LangOpenCL)
	e, _ := Lookup("gemm/tiled")
	f, _ := e.Flavor(LangOpenCL)
	infos, _ := f.Devices()
	good := mustOpenCL(t, "gemm/02_local_tiling")
	for _, tc := range []struct {
		src, want string
		correct   bool
	}{
		{good, "", true},
		{gemmOpenCLHead + "    const int n = get_global_id(0), m = get_global_id(1);\n    if (m < M && n < N) C[m*N + n] = 2.0f;\n}\n", "is 2, expected", false},
		{gemmOpenCLHead + "    float x = ;\n}\n", "line 5, column 15: error: expected expression", false},
	} {
		g, w := net.Pipe()
		served := make(chan error, 1)
		go func() { served <- Serve(w) }()
		conn, err := wire.Dial(g, wire.Setup{Exercise: e.Name, Lang: f.Lang, Device: infos[0].ID, Source: tc.src})
		if err != nil {
			t.Fatal(err)
		}
		client, err := wire.NewClient(conn, false)
		if err != nil {
			t.Fatal(err)
		}
		r := e.Judge(f, tc.src, infos[0], client)
		client.Close()
		if err := <-served; err != nil {
			t.Errorf("the worker: %v", err)
		}
		g.Close()
		if r.Correct != tc.correct || !strings.Contains(r.Error+" "+r.Detail, tc.want) || r.Solution != (tc.src == good) {
			t.Errorf("got %+v, want correct=%v and %q", r, tc.correct, tc.want)
		}
		if tc.correct && (r.GFLOPS <= 0 || r.Size == "" || len(r.Ladder) != 0) {
			t.Errorf("a pass under Judge: %+v (no ladder: lab grade times the reference)", r)
		}
	}
}

// TestServeRefuses: a worker asked for an exercise, language or device it
// does not have says so in a Failure instead of Ready.
func TestServeRefuses(t *testing.T) {
	for _, tc := range []struct {
		setup wire.Setup
		want  string
	}{
		{wire.Setup{Exercise: "nope", Lang: LangOpenCL}, `no exercise "nope"`},
		{wire.Setup{Exercise: "sparse/gustavson", Lang: LangGo}, "no go kernel"},
		{wire.Setup{Exercise: "opencl/wgsize", Lang: LangCUDA}, "no cuda kernel"},
		{wire.Setup{Exercise: "gemm/tiled", Lang: LangOpenCL, Device: "tpu:9"}, "tpu:9"},
	} {
		g, w := net.Pipe()
		go Serve(w)
		conn, err := wire.Dial(g, tc.setup)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wire.NewClient(conn, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.setup, err, tc.want)
		}
		g.Close()
	}
}

// TestInspectGo: the library's answer, however it is reached, and the
// imports that reach past the language are refused before anything is
// built; a cell of the student's own passes, whatever its comments say.
// TestInspectGoRoutes tries every route to the answer.
func TestInspectGo(t *testing.T) {
	needGo(t)
	e, _ := Lookup("sparse/gustavson")
	head := "// EXERCISE sparse/gustavson: complete the function.\nfunc Gustavson(a, b *sparse.CSR) (*sparse.CSR, error) {\n"
	for _, tc := range []struct{ cell, want string }{
		{gustavsonSolution, ""},
		{strings.Replace(gustavsonSolution, "{\n", "{\n\t// TODO: use sparse.GustavsonParallel's blocks here\n", 1), ""},
		{head + "\treturn sparse.Gustavson(a, b)\n}\n", "uses sparse.Gustavson,"},
		{head + "\tf := sparse.OuterProduct\n\treturn f(a, b)\n}\n", "uses sparse.OuterProduct"},
		{"import s \"gpulab/engine/sparse\"\n\n" + strings.ReplaceAll(head, "sparse.", "s.") + "\treturn s.GustavsonParallel(a, b)\n}\n", "uses sparse.GustavsonParallel"},
		{"import . \"gpulab/engine/sparse\"\n\n" + strings.ReplaceAll(head, "sparse.", "") + "\treturn DenseAccumulator(a, b)\n}\n", "uses sparse.DenseAccumulator"},
		{"import g \"gpulab/engine/sparse\"\n\n" + head + "\tgpu := g.NewGPUSpGEMM(nil)\n\t_ = gpu\n\treturn nil, nil\n}\n", "uses sparse.NewGPUSpGEMM"},
		{"import \"gpulab/engine/exercise\"\n\n" + head + "\treturn nil, nil\n}\n", `imports "gpulab/engine/exercise"`},
		{"import \"unsafe\"\n\n" + head + "\treturn nil, nil\n}\n", `imports "unsafe"`},
		{"import _ \"unsafe\"\n\n//go:linkname g gpulab/engine/sparse.Gustavson\nfunc g(a, b *sparse.CSR) (*sparse.CSR, error)\n\n" + head + "\treturn g(a, b)\n}\n", "go:linkname"},
		{head + "\t" + e.Flavors[0].TODO + "\n\treturn nil, nil\n}\n", "still has its TODO line"},
		{head + "\treturn nil, nil // does not parse: {\n", ""},
	} {
		err := e.InspectGo(tc.cell)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v, want %q for\n%s", err, tc.want, tc.cell)
		}
	}
}

// TestFeedbackOnce: a check's report says everything once: the compiler's
// first error at the student's line, the whole log folded, no second copy
// of it; a wrong result with its first wrong element and a hint about the
// shape; a pass naming the reference it is compared with.
func TestFeedbackOnce(t *testing.T) {
	need(t, LangOpenCL)
	broken := Run("gemm/tiled", gemmOpenCLHead+"    float x = ;\n}\n")
	md := broken.Markdown()
	if !strings.HasPrefix(md, "**gemm/tiled: FAIL**, it does not compile: line 5, column 15: error: expected expression") ||
		!strings.Contains(md, "<details><summary>▸ the compiler's whole message</summary>") {
		t.Errorf("compile error report:\n%s", md)
	}
	head, _, _ := strings.Cut(md, "<details>")
	if strings.Count(md, "expected expression") != 2 || strings.Count(head, "expected expression") != 1 || strings.Contains(md, "generated") || strings.Contains(md, "02_local_tiling") {
		t.Errorf("the error should stand once above the fold and once in the folded log, with no lab step name:\n%s", md)
	}
	wrong := Run("gemm/tiled", gemmOpenCLHead+`
    const int n = get_global_id(0), m = get_global_id(1);
    float acc = 0.0f;
    for (int k = 0; k < (K / TS) * TS; k++)
        if (m < M && n < N) acc += A[m*K + k] * B[k*N + n];
    if (m < M && n < N) C[m*N + n] = acc;
}
`)
	if md := wrong.Markdown(); !strings.Contains(md, "first wrong element: C[0][0]") ||
		!strings.Contains(md, "*Hint:* K=1 is less than one slice along K (16): that one slice is partial") {
		t.Errorf("wrong result report:\n%s", md)
	}
	if err := wrong.Err(); err == nil || strings.Contains(err.Error(), "C[0][0]") {
		t.Errorf("Err repeats the report: %v", err)
	}
	pass := Run("gemm/tiled", mustOpenCL(t, "gemm/02_local_tiling"))
	if md := pass.Markdown(); !strings.Contains(md, "of the reference solution's speed (`step 02_local_tiling`)") {
		t.Errorf("pass report:\n%s", md)
	}
}

func TestHints(t *testing.T) {
	for _, tc := range []struct {
		h    hinter
		want string
	}{
		{gemmProblem{s: gemm.Shape{M: 64, N: 48, K: 33}, tiles: tiles{mn: 32, k: 32}}, "K=33 is not a multiple of the slice along K (32)"},
		{gemmProblem{s: gemm.Shape{M: 64, N: 48, K: 64}, tiles: tiles{mn: 32, k: 32}}, "M=64 and N=48 are not multiples of the 32×32 tile of C"},
		{assignProblem{n: 777}, "n=777 is not a multiple of the block (256)"},
		{assignProblem{n: 5}, "n=5 is less than one block of 256 threads"},
		{rmsnormProblem{n: 3, width: 37}, "width=37 is less than the block's 256 threads"},
		{routerProblem{routerShape: routerShape{tokens: 1000, experts: 32, k: 32, bias: true}}, "k = experts = 32"},
	} {
		if got := tc.h.hint(); !strings.Contains(got, tc.want) {
			t.Errorf("%T: hint %q, want %q", tc.h, got, tc.want)
		}
	}
	if got := (gemmProblem{s: gemm.Shape{M: 64, N: 64, K: 64}, tiles: tiles{mn: 32, k: 32}}).hint(); got != "" {
		t.Errorf("a shape of whole tiles has a hint: %q", got)
	}
}
