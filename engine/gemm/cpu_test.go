package gemm

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// cpuTestShapes cover the degenerate (1×1×1, a single row, a single column),
// tiny shapes below every block size, a power of two and odd sizes that leave
// partial blocks and partial register tiles everywhere.
var cpuTestShapes = []Shape{
	{1, 1, 1}, {7, 5, 3}, {64, 64, 64}, {255, 257, 129}, {130, 1, 70}, {1, 200, 33},
}

// cpuExported is every exported step, by variant name.
var cpuExported = map[string]CPUFunc{
	"gonum_sgemm":          GonumSgemm,
	"01_naive_ijk":         NaiveIJK,
	"02_loop_order_ikj":    LoopOrderIKJ,
	"03_transposed_b":      TransposedB,
	"04_cache_blocking":    CacheBlocking,
	"05_parallel_blocking": ParallelBlocking,
	"06_register_kernel":   RegisterKernel,
}

func TestCPUStepsMatchReference(t *testing.T) {
	for _, s := range cpuTestShapes {
		p, err := NewProblem(s, 7)
		if err != nil {
			t.Fatal(err)
		}
		want := p.Reference(FP32)
		tol := FP32.Tolerance(s.K)
		for _, name := range CPUSteps() {
			f, err := CPUStep(name)
			if err != nil {
				t.Fatal(err)
			}
			c := make([]float32, s.M*s.N)
			for i := range c {
				c[i] = 12345 // C is overwritten, not accumulated into
			}
			if err := f(s, p.A, p.B, c); err != nil {
				t.Fatalf("%s %s: %v", name, s, err)
			}
			if chk := bench.Compare(c, want); !(chk.MaxRelErr <= tol) {
				t.Errorf("%s %s: max relative error %.3g at %d (got %v, want %v), tolerance %.3g",
					name, s, chk.MaxRelErr, chk.Worst, chk.Got, chk.Want, tol)
			}
		}
	}
}

// The exported functions are the steps CPUStep returns, with the same checks.
func TestCPUExportedFunctions(t *testing.T) {
	if got, want := len(cpuExported), len(CPUSteps())-len(optionalCPUSteps); got != want {
		t.Fatalf("%d exported step functions, %d steps", got, want)
	}
	s := Shape{19, 23, 17}
	p, _ := NewProblem(s, 3)
	want := p.Reference(FP32)
	for name, f := range cpuExported {
		c := make([]float32, s.M*s.N)
		if err := f(s, p.A, p.B, c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if chk := bench.Compare(c, want); !(chk.MaxRelErr <= FP32.Tolerance(s.K)) {
			t.Errorf("%s: max relative error %.3g", name, chk.MaxRelErr)
		}
		if err := f(s, p.A, p.B, c[1:]); err == nil || !strings.Contains(err.Error(), "C has") {
			t.Errorf("%s with a short C: err = %v, want one naming C", name, err)
		}
	}
}

func TestCPUStepBadInputs(t *testing.T) {
	good := Shape{4, 5, 6}
	a, b, c := make([]float32, 4*6), make([]float32, 6*5), make([]float32, 4*5)
	cases := []struct {
		name    string
		s       Shape
		a, b, c []float32
		want    string
	}{
		{"short A", good, a[1:], b, c, "A has 23 elements, want 4×6 = 24"},
		{"long B", good, a, append(slices.Clone(b), 0), c, "B has 31 elements, want 6×5 = 30"},
		{"short C", good, a, b, c[:19], "C has 19 elements, want 4×5 = 20"},
		{"nil C", good, a, b, nil, "C has 0 elements"},
		{"zero M", Shape{0, 5, 6}, nil, b, nil, "must be positive"},
		{"zero K", Shape{4, 5, 0}, nil, nil, c, "must be positive"},
		{"negative N", Shape{4, -5, 6}, a, nil, nil, "must be positive"},
	}
	for _, name := range CPUSteps() {
		f, err := CPUStep(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			for i := range tc.c {
				tc.c[i] = 1
			}
			err := f(tc.s, tc.a, tc.b, tc.c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, %s: err = %v, want one containing %q", name, tc.name, err, tc.want)
			}
			for _, v := range tc.c {
				if v != 1 {
					t.Errorf("%s, %s: C was written despite the error", name, tc.name)
					break
				}
			}
		}
	}
}

func TestCPUStepUnknownName(t *testing.T) {
	_, err := CPUStep("07_magic")
	if err == nil {
		t.Fatal("CPUStep(07_magic) succeeded")
	}
	for _, name := range CPUSteps() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %s", err, name)
		}
	}
}

// A NaN in row i of A makes all of row i of C NaN in the reference (every
// term of C[i][j] has a factor A[i][p]); every step must give NaN in exactly
// those rows, and finite values elsewhere: no skipped zeros, no NaN leaking
// from padding or block edges into other rows.
func TestCPUStepsPropagateNaN(t *testing.T) {
	s := Shape{37, 41, 29}
	p, _ := NewProblem(s, 11)
	a := slices.Clone(p.A)
	for _, i := range []int{0, 3, 35, 36} { // first rows, edge of a 3-row tile, last row
		a[i*s.K+(i*7)%s.K] = float32(math.NaN())
	}
	want, err := Reference(s, a, p.B)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range CPUSteps() {
		f, _ := CPUStep(name)
		c := make([]float32, s.M*s.N)
		if err := f(s, a, p.B, c); err != nil {
			t.Fatal(err)
		}
		for i := range c {
			if math.IsNaN(float64(c[i])) != math.IsNaN(float64(want[i])) {
				t.Errorf("%s: C[%d][%d] = %v, reference %v", name, i/s.N, i%s.N, c[i], want[i])
				break
			}
		}
		if chk := bench.Compare(c, want); !(chk.MaxRelErr <= FP32.Tolerance(s.K)) {
			t.Errorf("%s: max relative error %.3g against the reference with NaNs", name, chk.MaxRelErr)
		}
	}
}

func TestCPUVariants(t *testing.T) {
	vs := Variants(engine.CPU)
	if len(vs) == 0 || vs[0].Name != "gonum_sgemm" || !vs[0].Baseline {
		t.Fatalf("the first CPU variant must be the gonum_sgemm baseline, got %+v", vs)
	}
	want := []string{"gonum_sgemm", "01_naive_ijk", "02_loop_order_ikj",
		"03_transposed_b", "04_cache_blocking", "05_parallel_blocking", "06_register_kernel"}
	for _, st := range optionalCPUSteps { // step 07 in GOEXPERIMENT=simd builds
		want = append(want, st.Name)
	}
	if got := CPUSteps(); !slices.Equal(got, want) {
		t.Errorf("CPUSteps() = %v, want %v", got, want)
	}
	seen := map[string]bool{}
	for i, v := range vs {
		if seen[v.Name] {
			t.Errorf("duplicate variant %s", v.Name)
		}
		seen[v.Name] = true
		if v.Kind != engine.CPU || v.Precision != FP32 || v.Doc == "" || v.Traffic == nil || (i > 0) == v.Baseline {
			t.Errorf("variant %+v: want kind CPU, FP32, a doc, a traffic model, and only the first a baseline", v)
		}
		for _, s := range append(slices.Clone(cpuTestShapes), Shape{1024, 1024, 1024}, Shape{1000, 1023, 999}) {
			// No algorithm moves less than the compulsory traffic.
			if tr := v.Traffic(s); !(tr >= s.MinBytes()) || math.IsInf(tr, 0) {
				t.Errorf("%s: traffic %g bytes for %s, below the minimum %g", v.Name, tr, s, s.MinBytes())
			}
		}
	}
}

// The bench cases reset, run and check like the harness does.
func TestCPUCases(t *testing.T) {
	p, _ := NewProblem(Shape{33, 18, 21}, 5)
	cases := cpuCases(p)
	if len(cases) != len(cpuSteps) {
		t.Fatalf("%d cases for %d steps", len(cases), len(cpuSteps))
	}
	for i, c := range cases {
		if c.Variant != cpuSteps[i].Name || c.Baseline != (i == 0) || c.Flops != p.Flops() || c.Bytes <= 0 {
			t.Errorf("case %d: %+v", i, c)
		}
		if err := c.Reset(); err != nil {
			t.Fatal(err)
		}
		if chk, err := c.Check(); err != nil || chk.MaxRelErr <= c.Tol {
			t.Errorf("%s passes its check before running (err %v)", c.Variant, err)
		}
		if d, err := c.Run(); err != nil || d <= 0 {
			t.Fatalf("%s: run: %v, %v", c.Variant, d, err)
		}
		if chk, err := c.Check(); err != nil || !(chk.MaxRelErr <= c.Tol) {
			t.Errorf("%s: check: %+v, %v", c.Variant, chk, err)
		}
	}
}
