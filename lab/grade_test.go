package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/engine/exercise"
)

// TestMain lets lab grade's child processes, which re-run this test binary,
// act as lab.
func TestMain(m *testing.M) {
	if os.Getenv(labMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// solution is the reference solution of an exercise in lang.
func solution(t *testing.T, name, lang string) string {
	t.Helper()
	e, err := exercise.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.Flavor(lang)
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.Solution()
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestGrade grades a folder with one correct, one wrong, one non-compiling
// and one endless submission, on the best OpenCL device (PoCL in CI).
func TestGrade(t *testing.T) {
	good := solution(t, "gemm/tiled", exercise.LangOpenCL)
	head := "__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))\nvoid gemm(const int M, const int N, const int K, const __global float* A, const __global float* B, __global float* C) {\n"
	dir := t.TempDir()
	subs := map[string]string{
		"alice.cl": good,
		"bob.cl":   head + "  int n = get_global_id(0), m = get_global_id(1);\n  if (m < M && n < N) C[m*N + n] = 1.0f;\n}\n",
		"carol.cl": head + "  this does not compile\n}\n",
		"dave.cl":  head + "  for (;;) { if (get_global_id(0) == 1000000000) break; }\n}\n",
	}
	for name, src := range subs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A notebook submission: the marked cell holds the source between backticks.
	nb := `{"cells": [{"cell_type": "code", "source": ["// EXERCISE gemm/tiled\n", "var src = ` + "`" + strings.ReplaceAll(strings.ReplaceAll(good, `\`, `\\`), "\n", `\n`) + "`" + `\n"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "erin.ipynb"), []byte(nb), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "frank.ipynb"), []byte(`{"cells": []}`), 0o644)
	out := t.TempDir()
	code, stdout, errs := lab("grade", "--exercise", "gemm/tiled", "--timeout", "20s",
		"--csv", filepath.Join(out, "g.csv"), "--md", filepath.Join(out, "g.md"), dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	t.Log("\n" + stdout)
	for _, want := range []string{
		"| alice | yes | yes |",
		"| bob | yes | no |",
		"| carol | no | no |",
		"| dave | no | no |",
		"did not finish within 20s",
		"| erin | yes | yes |",
		`| frank | no | no | 0.0 | 0% | no code cell marked "// EXERCISE gemm/tiled"`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(out, "g.csv")); err != nil || !strings.Contains(string(data), "student,compiled,correct") {
		t.Errorf("csv: %s %v", data, err)
	}
}

// TestExerciseFill: every committed exercise notebook fails its check with
// the TODO in, and its filled copy carries the reference solution in the
// language of its cell.
func TestExerciseFill(t *testing.T) {
	notebooks, _ := filepath.Glob(filepath.Join("..", "notebooks", "exercises", "*.ipynb"))
	if len(notebooks) < 7 {
		t.Fatalf("exercise notebooks: %v", notebooks)
	}
	for _, nb := range notebooks {
		t.Run(filepath.Base(nb), func(t *testing.T) {
			data, _ := os.ReadFile(nb)
			var name string
			for _, n := range exercise.Names() {
				if strings.Contains(string(data), "// EXERCISE "+n) {
					name = n
				}
			}
			e, err := exercise.Lookup(name)
			if err != nil {
				t.Fatalf("no exercise marker: %v", err)
			}
			src, err := submissionSource(nb, name)
			if err != nil {
				t.Fatal(err)
			}
			lang := exercise.Language(src)
			if e.IsGo() {
				lang = exercise.LangGo
			} else if r := exercise.Run(name, src); r.Correct || !strings.Contains(r.Error, "TODO") {
				t.Errorf("the TODO cell passed: %+v", r)
			}
			if !strings.Contains(src, "TODO") {
				t.Errorf("the committed cell has no TODO:\n%s", src)
			}
			out := filepath.Join(t.TempDir(), "filled.ipynb")
			if code, _, errs := lab("exercise-fill", nb, "--out", out); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			filled, err := submissionSource(out, name)
			if sol := solution(t, name, lang); err != nil || filled != sol {
				t.Errorf("filled cell is not the %s reference solution (%v):\n%s", lang, err, filled)
			}
		})
	}
	out := filepath.Join(t.TempDir(), "filled.ipynb")
	if code, _, errs := lab("exercise-fill", filepath.Join("..", "notebooks", "00-devices-and-bandwidth.ipynb"), "--out", out); code == 0 || !strings.Contains(errs, "no cell marked // EXERCISE") {
		t.Errorf("a notebook without an exercise: exit %d, %s", code, errs)
	}
}

// TestGradeGo grades Go submissions of sparse/gustavson: correct, wrong,
// not compiling (with the cell's line number), endless and panicking.
func TestGradeGo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root, _ := filepath.Abs("..")
	t.Setenv("GPULAB_ROOT", root)
	good := solution(t, "sparse/gustavson", exercise.LangGo)
	head := "// EXERCISE sparse/gustavson: complete the function.\nfunc Gustavson(a, b *sparse.CSR) (*sparse.CSR, error) {\n"
	dir := t.TempDir()
	for name, src := range map[string]string{
		"ann.go": good,
		"ben.go": head + "\treturn sparse.Gustavson(a, a)\n}\n",
		"cat.go": head + "\treturn nil, undefinedThing\n}\n",
		"dan.go": head + "\tfor {\n\t}\n}\n",
		"eve.go": head + "\tvar s []int\n\t_ = s[len(a.RowPtr)]\n\treturn nil, nil\n}\n",
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644)
	}
	out := t.TempDir()
	code, stdout, errs := lab("grade", "--exercise", "sparse/gustavson", "--timeout", "10s",
		"--csv", filepath.Join(out, "g.csv"), "--md", filepath.Join(out, "g.md"), dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	t.Log("\n" + stdout)
	for _, want := range []string{"| ann | yes | yes |", "| ben | yes | no |", "| cat | no | no |", "line 3, column 14: undefined: undefinedThing", "| dan | no | no |", "did not finish", "| eve | yes | no |", "panicked"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestGradeUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"grade", "--exercise", "nope", "x.cl"}, `no exercise "nope"`},
		{[]string{"grade", "--exercise", "gemm/tiled"}, "no submissions given"},
		{[]string{"grade", "--exercise", "gemm/tiled", "no/such/dir"}, "no/such/dir"},
		{[]string{"exercise-fill", "x.ipynb"}, "--out is required"},
		{[]string{"exercise-fill", "no/such.ipynb", "--out", "o.ipynb"}, "no/such.ipynb"},
	} {
		if code, _, errs := lab(tc.args...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("lab %v: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestGradeUnit: the table's speed column is the exercise's unit.
func TestGradeUnit(t *testing.T) {
	rows := []gradeRow{{Student: "ann", Result: exercise.Result{Compiled: true, Correct: true, GFLOPS: 812.5, PctOfRef: 97}}}
	for _, tc := range []struct{ unit, md, csv string }{
		{exercise.UnitGFLOPS, "| student | compiled | correct | GFLOP/s | % of reference | error |", "student,compiled,correct,gflops,"},
		{exercise.UnitGBps, "| student | compiled | correct | GB/s | % of reference | error |", "student,compiled,correct,gbps,"},
	} {
		if md := gradeMarkdown(rows, tc.unit); !strings.HasPrefix(md, tc.md+"\n") || !strings.Contains(md, "| ann | yes | yes | 812.5 | 97% |") {
			t.Errorf("%s: markdown\n%s", tc.unit, md)
		}
		if csv := string(gradeCSV(rows, tc.unit)); !strings.HasPrefix(csv, tc.csv) {
			t.Errorf("%s: csv\n%s", tc.unit, csv)
		}
	}
}
