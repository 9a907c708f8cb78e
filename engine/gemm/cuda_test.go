package gemm

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda/cudatest"
)

// runOnce measures every case once and fails the test for each one that
// does not match its reference.
func runOnce(t *testing.T, what string, cases []bench.Case) []bench.Record {
	t.Helper()
	var recs []bench.Record
	for _, c := range cases {
		r := bench.Measure(c, bench.Options{Warmup: 1, MinReps: 1, MaxReps: 1, MinTime: time.Nanosecond})
		if !r.OK {
			t.Errorf("%s %s: %s", what, c.Variant, r.Error)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestCUDALadder checks every CUDA variant (steps 01–11, the autotuned step
// and the cuBLAS calls) against the float64 reference, on shapes that are
// not multiples of any tile, skinny shapes, and K not a multiple of 4.
func TestCUDALadder(t *testing.T) {
	ctx := cudatest.Context(t)
	// Under compute-sanitizer the largest is 300x323x299: still several tiles of every step.
	big := fmt.Sprintf("%dx%dx%d", cudatest.Size(1000, 300), cudatest.Size(1023, 323), cudatest.Size(999, 299))
	for _, size := range []string{"1x1x1", "7x5x3", "64", "255x257x129", "130x1x70", "1x200x33", big, "256x128x260"} {
		p := mustProblem(t, size, 3)
		cases, closeAll, err := cudaCases(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", size, err)
		}
		want := len(cudaVariants())
		if ctx.Properties().Major != 9 {
			want-- // step 12 runs on Hopper only
		}
		if len(cases) != want {
			t.Errorf("%d cases, want %d", len(cases), want)
		}
		runOnce(t, size, cases)
		closeAll()
	}
}

// TestCUDANaNPropagates puts a NaN in A: every variant must produce NaN in
// exactly the rows of C that the reference has NaN in.
func TestCUDANaNPropagates(t *testing.T) {
	ctx := cudatest.Context(t)
	s := Shape{M: 130, N: 70, K: 33}
	p, _ := NewProblem(s, 5)
	p.A[2*s.K+7] = float32(math.NaN())
	cases, closeAll, err := cudaCases(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	for _, r := range runOnce(t, "NaN", cases) {
		if r.NonFinite != s.N {
			t.Errorf("%s: %d non-finite outputs, want the %d of row 2", r.Variant, r.NonFinite, s.N)
		}
	}
}

func TestAutotuneCaches(t *testing.T) {
	ctx := cudatest.Context(t)
	t.Setenv("GPULAB_CACHE_DIR", t.TempDir())
	n := cudatest.Size(512, 160) // under compute-sanitizer, 160: the cache is what is tested
	s := Shape{M: n, N: n, K: n}
	first, err := Autotune(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Autotune(ctx, s)
	if err != nil || again != first {
		t.Errorf("second Autotune = %v (%v), want cached %v", again, err, first)
	}
	t.Logf("best for %s: %s", s, first)
}

func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shape
		err  string
	}{
		{"4096", Shape{4096, 4096, 4096}, ""},
		{"1000x1023x999", Shape{1000, 1023, 999}, ""},
		{" 7X5x3 ", Shape{7, 5, 3}, ""},
		{"0", Shape{}, "must be positive"},
		{"-4x4x4", Shape{}, "must be positive"},
		{"4x4", Shape{}, "want N or MxNxK"},
		{"abc", Shape{}, "want N or MxNxK"},
		{"65536x65536x1", Shape{}, "more than 2^31"},
		{"4294967296x4294967296x4294967296", Shape{}, "more than 2^31"}, // 2^64 elements: 0 in int arithmetic
	} {
		got, err := ParseShape(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseShape(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseShape(%q) = %v, %v", tc.in, got, err)
		}
	}
	s := Shape{2, 3, 4}
	if err := CheckOperands(s, make([]float32, 8), make([]float32, 12), make([]float32, 6)); err != nil {
		t.Error(err)
	}
	if err := CheckOperands(s, make([]float32, 8), make([]float32, 11), make([]float32, 6)); err == nil || !strings.Contains(err.Error(), "B has 11 elements, want 4×3 = 12") {
		t.Errorf("CheckOperands: %v", err)
	}
}

func TestReference(t *testing.T) {
	s := Shape{3, 2, 4}
	a := []float32{1, 2, 3, 4, 0, 1, 0, 1, -1, 0.5, 0, 2}
	b := []float32{1, 0, 0, 1, 1, 1, 2, -1}
	c, err := Reference(s, a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1 + 3 + 8, 2 + 3 - 4, 2, 0, -1 + 4, 0.5 - 2} // rows of A times B, by hand (the fourth: 1 - 1)
	for i := range want {
		if c[i] != want[i] {
			t.Errorf("c[%d] = %v, want %v", i, c[i], want[i])
		}
	}
	if _, err := Reference(Shape{2, 2, 2}, a, b); err == nil {
		t.Error("Reference accepted mismatched lengths")
	}
	if got := RoundBF16([]float32{1.00390625, float32(math.NaN())}); got[0] != 1 || got[1] == got[1] {
		t.Errorf("RoundBF16 = %v", got)
	}
}

func TestSourceOfEveryStep(t *testing.T) {
	for _, kind := range []engine.Kind{engine.CPU, engine.OpenCL, engine.CUDA} {
		for _, v := range Variants(kind) {
			file, code, err := Source(v)
			library := v.Baseline && kind != engine.OpenCL || strings.HasPrefix(v.Name, "cublas")
			if library {
				if err == nil {
					t.Errorf("%s %s: library call has source %s", kind, v.Name, file)
				}
				continue
			}
			if err != nil || len(code) < 100 {
				t.Errorf("%s %s: %s %v", kind, v.Name, file, err)
			}
		}
	}
}
