package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpulab/engine/exercise"
)

// TestGradeCourse grades puzzles/map under an instructor's course file
// (lab grade --course) on the best OpenCL device, in the sandbox: a
// kernel specialised to the public sizes fails the course's hidden shape,
// the public reference solution as published is refused, an honest
// kernel passes against the instructor's own reference, and no
// submission can read the course's files.
func TestGradeCourse(t *testing.T) {
	e, _ := exercise.Lookup("puzzles/map")
	f, _ := e.Flavor(exercise.LangOpenCL)
	if _, err := f.Devices(); err != nil {
		t.Skip(err)
	}
	sandboxed := needSandbox(t)
	g := newGradeRun(t)
	dir, err := os.MkdirTemp(g.tmp, "course-*") // where the grader's own files lie
	if err != nil {
		t.Fatal(err)
	}
	public := solution(t, "puzzles/map", exercise.LangOpenCL)
	mine := filepath.Join(dir, "map.cl")
	course := filepath.Join(dir, "course.json")
	if err := os.WriteFile(mine, []byte("// the instructor's reference\n"+public), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(course, []byte(`{"seed": 5, "exercises": {"puzzles/map": {"shapes": ["n=4321"], "solutions": {"opencl": "map.cl"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	head := "__kernel void add_ten(const __global float* x, __global float* out)\n{\n    const int i = get_global_id(0);\n"
	attacks := []attack{
		{file: "honest.cl", src: head + "    const float v = x[i];\n    STORE(out, i, v + 10.0f);\n}\n", correct: true},
		{file: "published.cl", src: public, want: "this is the public reference solution, as published"},
		// The public check's sizes are all below 4000 or at least 2^20
		// (its timing sizes): right there, wrong at the hidden n=4321.
		{file: "specialised.cl", src: head + "    const int n = get_global_size(0);\n    STORE(out, i, n < 4000 || n >= (1 << 20) ? x[i] + 10.0f : 0.0f);\n}\n",
			want: "wrong result for n=4321 (one of the course's hidden shapes)"},
		{file: "peek.cl", src: "#include \"" + mine + "\"\n__kernel void unused(void) {}\n", want: "does not compile", sandboxed: true},
	}
	rows, _ := g.grade("puzzles/map", time.Minute, attacks, "--course", course)
	g.check(rows, attacks, sandboxed)
	if !strings.Contains(rows["honest"], "| yes | yes |") {
		t.Errorf("honest: %s", rows["honest"])
	}
	if code, _, errs := lab("grade", "--exercise", "puzzles/map", "--course", filepath.Join(dir, "none.json"), g.dir); code == 0 || !strings.Contains(errs, "none.json") {
		t.Errorf("a missing course file: exit %d, %s", code, errs)
	}
}

// TestGradeBrokenReference: a reference solution that does not pass on the
// grading machine (here a course's own: a wrong kernel, an endless one
// under a short --timeout, a Go function that returns nothing) is the
// machine's problem, never a student's: lab grade times it before any
// submission runs, then stops with an error that says so, exits non-zero
// and writes no grade files.
func TestGradeBrokenReference(t *testing.T) {
	head := "__kernel void add_ten(const __global float* x, __global float* out)\n{\n    const int i = get_global_id(0);\n"
	for _, tc := range []struct {
		name, exercise, lang, file, solution, timeout, want string
	}{
		{"wrong", "puzzles/map", exercise.LangOpenCL, "map.cl", head + "    STORE(out, i, x[i]);\n}\n", "10m", ": wrong result"},
		{"endless", "puzzles/map", exercise.LangOpenCL, "map.cl",
			head + "    for (;;) { if (get_global_id(0) == 1000000000) break; }\n    STORE(out, i, x[i] + 10.0f);\n}\n", "5s",
			": it did not finish within --timeout 5s: raise --timeout, or grade on a machine that runs it faster"},
		{"go", "sparse/gustavson", exercise.LangGo, "gustavson.go", goHead + "\treturn nil, nil\n}\n", "10m", ": your function returned no matrix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := exercise.Lookup(tc.exercise)
			f, err := e.Flavor(tc.lang)
			if err != nil {
				t.Fatal(err)
			}
			if tc.lang == exercise.LangGo {
				if _, err := exec.LookPath("go"); err != nil {
					t.Skip("no go command")
				}
			} else if _, err := f.Devices(); err != nil {
				t.Skip(err)
			}
			g := newGradeRun(t)
			dir, err := os.MkdirTemp(g.tmp, "course-*")
			if err != nil {
				t.Fatal(err)
			}
			course := filepath.Join(dir, "course.json")
			os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.solution), 0o644)
			os.WriteFile(course, []byte(`{"exercises": {"`+tc.exercise+`": {"solutions": {"`+tc.lang+`": "`+tc.file+`"}}}}`), 0o644)
			// An honest submission, which a working reference would pass.
			g.write([]attack{{file: "honest" + filepath.Ext(tc.file), src: "// my own\n" + solution(t, tc.exercise, tc.lang)}})
			start := time.Now()
			code, stdout, errs := lab("grade", "--exercise", tc.exercise, "--course", course, "--timeout", tc.timeout, "--csv", g.grades, "--md", g.gradesMD, g.dir)
			t.Logf("exit %d in %v:\n%s", code, time.Since(start), errs)
			want := "the reference solution of " + tc.exercise + " (" + tc.lang + ") did not pass on this machine"
			if code == 0 || !strings.Contains(errs, want+tc.want) || !strings.Contains(errs, ": no submission was graded") || stdout != "" {
				t.Errorf("exit %d, stdout %q; want an error with %q, %q", code, stdout, want+tc.want, "no submission was graded")
			}
			if strings.Contains(errs, "grading "+g.dir) {
				t.Errorf("a submission was graded")
			}
			for _, file := range []string{g.grades, g.gradesMD} {
				if data, _ := os.ReadFile(file); string(data) != "the previous run's grades\n" {
					t.Errorf("%s was written: %s", file, data)
				}
			}
		})
	}
}
