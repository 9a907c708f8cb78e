package main

import (
	"os"
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
