package exercise

import (
	"errors"
	"strings"
	"testing"

	"gpulab/engine/sparse"
)

// skeleton is the exercise cell as a student first sees it.
const skeleton = `__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void gemm(const int M, const int N, const int K,
          const __global float* restrict A, const __global float* restrict B, __global float* restrict C)
{
    // TODO: load TS×TS tiles of A and B into __local memory, multiply, store C.
}
`

func needOpenCL(t *testing.T) {
	t.Helper()
	if _, err := openCLDevices(); err != nil {
		t.Skip(err)
	}
}

func TestTODOFails(t *testing.T) {
	r := Run("gemm/tiled", skeleton)
	if r.Correct || !strings.Contains(r.Error, "still contains TODO") || !strings.Contains(r.Error, "// EXERCISE gemm/tiled") {
		t.Errorf("%+v", r)
	}
}

func TestReferencePasses(t *testing.T) {
	needOpenCL(t)
	sol, err := Lookup("gemm/tiled")
	if err != nil {
		t.Fatal(err)
	}
	src, err := sol.Solution()
	if err != nil {
		t.Fatal(err)
	}
	r := Run("gemm/tiled", src)
	if !r.Correct || !r.Solution || r.GFLOPS <= 0 || len(r.Ladder) == 0 {
		t.Errorf("%+v", r)
	}
	t.Log(r.Markdown())
}

func TestWrongAndBroken(t *testing.T) {
	needOpenCL(t)
	// Forgets the last partial tile of K: right on multiples of TS only.
	wrong := strings.Replace(skeleton, "// TODO: load TS×TS tiles of A and B into __local memory, multiply, store C.", `
    const int n = get_global_id(0), m = get_global_id(1);
    float acc = 0.0f;
    for (int k = 0; k < (K / TS) * TS; k++)
        if (m < M && n < N) acc += A[m*K + k] * B[k*N + n];
    if (m < M && n < N) C[m*N + n] = acc;`, 1)
	r := Run("gemm/tiled", wrong)
	if r.Correct || !r.Compiled || !strings.Contains(r.Detail, "first wrong element: C[0][0]") {
		t.Errorf("wrong kernel: %+v", r)
	}
	broken := strings.Replace(skeleton, "// TODO: load TS×TS tiles of A and B into __local memory, multiply, store C.", "    float x = ;", 1)
	r = Run("gemm/tiled", broken)
	if r.Correct || r.Compiled || !strings.Contains(r.Error, "line 5") {
		t.Errorf("broken kernel: %+v", r)
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
}

func TestGustavsonExercise(t *testing.T) {
	r := RunGustavson(func(a, b *sparse.CSR) (*sparse.CSR, error) { return nil, errors.New("TODO: not written yet") })
	if r.Correct || !strings.Contains(r.Error, "TODO: not written yet") {
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
