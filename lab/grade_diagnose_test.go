package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gpulab/engine/cuda"
	"gpulab/engine/exercise"
)

// TestGradeDiagnosisCUDA grades, in the sandbox, six gemm/tiled kernels
// that each fail in one of the ways students' kernels fail on a GPU, and
// checks what the grade and the diagnosis under compute-sanitizer say of
// each: a race, an out-of-bounds read, a write through NULL, an
// out-of-bounds write, a trap and a hang. Each kernel is the reference
// solution with one edit. It needs an NVIDIA GPU and compute-sanitizer.
func TestGradeDiagnosisCUDA(t *testing.T) {
	e, _ := exercise.Lookup("gemm/tiled")
	f, _ := e.Flavor(exercise.LangCUDA)
	if _, err := f.Devices(); err != nil {
		t.Skip(err)
	}
	if _, err := cuda.Tool("compute-sanitizer"); err != nil {
		t.Skipf("needs compute-sanitizer: %v", err)
	}
	if cuda.Sanitized() {
		t.Skip("wrong CUDA kernels on purpose, which the outer compute-sanitizer would rightly report")
	}
	sandboxed := needSandbox(t)
	ref := solution(t, "gemm/tiled", exercise.LangCUDA)
	edit := func(old, new string) string {
		if !strings.Contains(ref, old) {
			t.Fatalf("the reference solution has no %q:\n%s", old, ref)
		}
		return strings.Replace(ref, old, new, 1)
	}
	const (
		loadA     = "(row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.f"
		loadB     = "(k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.f"
		store     = "if (row < M && col < N) C[(size_t)row * N + col] = acc;"
		firstLine = "    float acc = 0.f;"
	)
	barrier := "        __syncthreads();\n    }"
	oobRead := strings.Replace(edit(loadA, "row < M ? A[(size_t)row * K + k0 + tx] : 0.f"), loadB, "col < N ? B[(size_t)(k0 + ty) * N + col] : 0.f", 1)
	trap := edit(firstLine, firstLine+"\n    if (row >= M) __trap();")
	cases := []struct {
		file, src string
		row       []string // in the grade's row
		diagnosis []string // in the diagnosis
	}{
		{"race.cu", edit(barrier, "    }"), []string{"wrong"}, []string{"compute-sanitizer (racecheck)", "a race on `", "a missing __syncthreads()?"}},
		{"oobread.cu", oobRead, []string{"wrong", "NaN"}, []string{"compute-sanitizer (memcheck)", " read `", "past the end of"}},
		{"nullwrite.cu", edit(store, "float* scratch = (float*)malloc((size_t)1 << 42);\n    scratch[threadIdx.x] = acc;\n    "+store),
			[]string{"running it failed"}, []string{"compute-sanitizer (memcheck)", "wrote address 0x0, through a NULL pointer", "at your line"}},
		{"oobwrite.cu", edit(store, "if (col < N) C[(size_t)row * N + col] = acc;"),
			[]string{"wrote outside its outputs for M=1 N=1 K=1", "wrote 31 elements past the end of C (rows 1–31 of a 1-row C)"},
			[]string{"compute-sanitizer (memcheck)", "wrote `C[", "past the end of C"}},
		{"trap.cu", trap, []string{"running it failed"},
			[]string{fmt.Sprintf("the kernel stopped at a trap or assert at your line %d: `if (row >= M) __trap();`", lineOf(trap, "__trap()"))}},
		{"hang.cu", edit(firstLine, firstLine+"\n    while (row >= M) { asm volatile(\"\"); }"), []string{"did not finish within"},
			[]string{"compute-sanitizer (memcheck)", "the kernel did not finish: it was still running", "not measured"}},
	}
	var attacks []attack
	for _, c := range cases {
		attacks = append(attacks, attack{file: c.file, src: c.src, want: c.row[0]})
	}
	g := newGradeRun(t)
	start := time.Now()
	rows, _ := g.grade("gemm/tiled", 40*time.Second, attacks)
	t.Logf("graded and diagnosed in %v", time.Since(start))
	g.check(rows, attacks, sandboxed)
	md, err := os.ReadFile(g.gradesMD)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		student := strings.TrimSuffix(c.file, ".cu")
		for _, want := range c.row {
			if !strings.Contains(strings.Join(splitRow(rows[student]), " | "), want) {
				t.Errorf("%s: the row lacks %q: %s", student, want, rows[student])
			}
		}
		d := diagnosisOf(string(md), student)
		for _, want := range c.diagnosis {
			if !strings.Contains(d, want) {
				t.Errorf("%s: the diagnosis lacks %q:\n%s", student, want, d)
			}
		}
		t.Logf("%s: %s", student, d)
	}
}

// diagnosisOf is the diagnosis grades.md shows for student.
func diagnosisOf(md, student string) string {
	m := regexp.MustCompile("(?s)\\*\\*" + regexp.QuoteMeta(student) + ", diagnosed under compute-sanitizer:\\*\\*\n\n```+\n(.*?)\n```").FindStringSubmatch(md)
	if m == nil {
		return ""
	}
	return m[1]
}

// lineOf is the line (from 1) of src that holds s.
func lineOf(src, s string) int {
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}
