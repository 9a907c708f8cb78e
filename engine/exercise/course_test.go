package exercise

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/exercise/wire"
)

// writeCourse writes a course file and the named solution files into a
// fresh folder and returns the course file's path.
func writeCourse(t *testing.T, course string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "course.json")
	if err := os.WriteFile(path, []byte(course), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// publicOnly is an OpenCL solution of puzzles/map that is right only at
// the sizes the public check uses (its shapes and its timing sizes) and
// stores 0 elsewhere: the public answers hard-coded.
func publicOnly() string {
	pz := puzzles[0]
	var sizes []string
	for _, s := range append(slices.Clone(pz.shapes), pz.timing[:]...) {
		sizes = append(sizes, fmt.Sprintf("n == %d", s[0]))
	}
	return "__kernel void add_ten(const __global float* x, __global float* out)\n{\n" +
		"    const int i = get_global_id(0), n = get_global_size(0);\n" +
		"    if (" + strings.Join(sizes, " || ") + ") STORE(out, i, x[i] + 10.0f);\n" +
		"    else STORE(out, i, 0.0f);\n}\n"
}

// TestCourseHiddenShapes: a submission that is right only at the public
// shapes passes the public check and fails the course's hidden shape,
// which the failure names as hidden; the reference solution passes both.
func TestCourseHiddenShapes(t *testing.T) {
	need(t, LangOpenCL)
	e, _ := Lookup("puzzles/map")
	f, _ := e.Flavor(LangOpenCL)
	infos, _ := f.Devices()
	dev, err := engine.Open(infos[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	c, err := ReadCourse(writeCourse(t, `{"seed": 11, "exercises": {"puzzles/map": {"shapes": ["n=4321"]}}}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	graded := c.Apply(e)
	gf, _ := graded.Flavor(LangOpenCL)
	sol, _ := f.Solution()
	for _, tc := range []struct {
		name, src string
		ex        Exercise
		fl        Flavor
		correct   bool
		wantError string
	}{
		{"hard-coded, public check", publicOnly(), e, f, true, ""},
		{"hard-coded, the course", publicOnly(), graded, gf, false, "wrong result for n=4321 (one of the course's hidden shapes)"},
		{"the reference, the course", sol, graded, gf, true, ""},
	} {
		r := tc.ex.Judge(tc.fl, tc.src, infos[0], newKernelRunner(dev, "", tc.src))
		if r.Correct != tc.correct || !strings.Contains(r.Error, tc.wantError) {
			t.Errorf("%s: %+v, want correct=%v and %q", tc.name, r, tc.correct, tc.wantError)
		}
		if !tc.correct && !strings.Contains(r.Detail, "first wrong element: out[0] (index 0) is 0, expected") {
			t.Errorf("%s: detail %q", tc.name, r.Detail)
		}
	}
}

// mapInputs is a Runner that computes puzzles/map on the CPU, keeping
// every input it is given, and stops the check at its timing runs.
type mapInputs struct{ got []float32 }

func (r *mapInputs) Run(ts []wire.Task) ([][][]uint32, time.Duration, error) {
	if len(ts) > 1 {
		return nil, 0, errors.New("no timing here")
	}
	x := ts[0].Args[0].([]float32)
	r.got = append(r.got, x...)
	out := make([]uint32, ts[0].OutSizes()[0])
	for i := range out {
		out[i] = unsetBits
		if i < len(x) {
			out[i] = math.Float32bits(x[i] + 10)
		}
	}
	return [][][]uint32{{out}}, time.Millisecond, nil
}

// TestCourseSeed: with a seed the inputs of a grading run, hidden shapes
// included, repeat exactly; without one they are drawn afresh.
func TestCourseSeed(t *testing.T) {
	e, _ := Lookup("puzzles/map")
	seeded, err := ReadCourse(writeCourse(t, `{"seed": 7, "exercises": {"puzzles/map": {"shapes": ["n=33"]}}}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	inputs := func(e Exercise) []float32 {
		f, _ := e.Flavor(LangOpenCL)
		r := &mapInputs{}
		if res := e.Judge(f, "", engine.Info{ID: "opencl:0:0"}, r); res.Error != "no timing here" {
			t.Fatalf("the check did not reach its timing runs: %+v", res)
		}
		return r.got
	}
	a, b, free := inputs(seeded.Apply(e)), inputs(seeded.Apply(e)), inputs(e)
	public := 0
	for _, s := range puzzles[0].shapes {
		public += s[0]
	}
	if len(a) != public+33 || len(free) != public || !slices.Equal(a, b) {
		t.Errorf("the same seed drew %d inputs, then %d, different ones; %d without the course", len(a), len(b), len(free))
	}
	if slices.Equal(a[:public], free) {
		t.Errorf("without a seed the inputs repeat")
	}
}

// TestCourseSolutions: the instructor's solution replaces the public one
// in its language, the other keeps the public one, and a submission
// identical to a public solution (whitespace aside) is refused, while the
// instructor's is not.
func TestCourseSolutions(t *testing.T) {
	e, _ := Lookup("puzzles/map")
	cl, _ := e.Flavor(LangOpenCL)
	cu, _ := e.Flavor(LangCUDA)
	public, _ := cl.Solution()
	publicCUDA, _ := cu.Solution()
	mine := "// the instructor's own\n" + public
	path := writeCourse(t, `{"exercises": {"puzzles/map": {"solutions": {"opencl": "map.cl"}}}}`, map[string]string{"map.cl": mine})
	c, err := ReadCourse(path)
	if err != nil {
		t.Fatal(err)
	}
	graded := c.Apply(e)
	gcl, _ := graded.Flavor(LangOpenCL)
	gcu, _ := graded.Flavor(LangCUDA)
	if got, _ := gcl.Solution(); got != mine {
		t.Errorf("the OpenCL reference is not the instructor's: %q", got)
	}
	if got, _ := gcu.Solution(); got != publicCUDA {
		t.Errorf("the CUDA reference is not the public one")
	}
	for _, tc := range []struct {
		src     string
		refused bool
	}{
		{public, true},
		{strings.ReplaceAll(public, "\n", "\n  "), true},
		{publicCUDA, true},
		{mine, false},
		{strings.Replace(public, "x[i] + 10.0f", "10.0f + x[i]", 1), false},
	} {
		_, err := graded.Inspect(tc.src)
		if refused := err != nil && strings.Contains(err.Error(), "this is the public reference solution, as published"); refused != tc.refused {
			t.Errorf("refused=%v (%v), want %v for\n%s", refused, err, tc.refused, tc.src)
		}
		if _, err := e.Inspect(tc.src); err != nil {
			t.Errorf("without the course: %v", err)
		}
	}
	goCourse, err := ReadCourse(writeCourse(t, `{"exercises": {}}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	gustavson, _ := Lookup("sparse/gustavson")
	if err := goCourse.Apply(gustavson).InspectGo(gustavsonSolution); err == nil || !strings.Contains(err.Error(), "public reference solution") {
		t.Errorf("the Go exercise's public solution: %v", err)
	}
	if got, want := c.Paths(), []string{path, filepath.Join(filepath.Dir(path), "map.cl")}; !slices.Equal(got, want) {
		t.Errorf("Paths: %v, want %v", got, want)
	}
}

// TestReadCourse: a course file with a mistake fails to load with the
// file, the exercise and the mistake named.
func TestReadCourse(t *testing.T) {
	cuda, _ := Lookup("puzzles/map")
	cu, _ := cuda.Flavor(LangCUDA)
	cudaSrc, _ := cu.Solution()
	files := map[string]string{"k.cu": cudaSrc, "todo.cl": "__kernel void add_ten(__global float* x, __global float* out) {\n    " + puzzles[0].todo[LangOpenCL] + "\n}\n"}
	for _, tc := range []struct{ course, want string }{
		{`{"exercises": {"nope": {}}}`, `nope: exercise: no exercise "nope"`},
		{`{"exercises": {"puzzles/map": {"shape": ["n=5"]}}}`, `unknown field "shape"`},
		{`{"seed": -1}`, "cannot unmarshal number -1"},
		{`{} {}`, "more than one JSON value"},
		{`{"exercises": {"puzzles/map": {"shapes": ["n=0"]}}}`, `puzzles/map: shape "n=0": n=0: puzzles/map takes n from 1`},
		{`{"exercises": {"puzzles/2d-map": {"shapes": ["rows=3"]}}}`, `shape "rows=3": no cols (want rows, cols)`},
		{`{"exercises": {"gemm/tiled": {"shapes": ["M=0 N=1 K=1"]}}}`, `gemm/tiled: shape "M=0 N=1 K=1": M=0: want at least 1`},
		{`{"exercises": {"gemm/tiled": {"shapes": ["M=70000 N=70000 K=70000"]}}}`, "too large to judge"},
		{`{"exercises": {"kmeans/assign": {"shapes": ["n=10 d=x k=2"]}}}`, `d="x" is not an integer`},
		{`{"exercises": {"lfm2/router": {"shapes": ["tokens=5 experts=4 k=5 norm_topk=true scaling=1 bias=true"]}}}`, "k=5: want 1 to experts=4"},
		{`{"exercises": {"sqfd/assign": {"shapes": ["n=5 k=2 min=3 max=2 dim=2"]}}}`, "min=3: want 1 to max=2 centroids"},
		{`{"exercises": {"opencl/wgsize": {"shapes": ["n=5"]}}}`, "opencl/wgsize: this exercise takes no hidden shapes"},
		{`{"exercises": {"opencl/wgsize": {"solutions": {"cuda": "k.cu"}}}}`, "opencl/wgsize has no cuda version"},
		{`{"exercises": {"puzzles/map": {"solutions": {"opencl": "missing.cl"}}}}`, "missing.cl: no such file"},
		{`{"exercises": {"puzzles/map": {"solutions": {"opencl": "k.cu"}}}}`, "the opencl solution k.cu declares no opencl kernel"},
		{`{"exercises": {"puzzles/map": {"solutions": {"opencl": "todo.cl"}}}}`, "todo.cl still has the skeleton's TODO line"},
	} {
		path := writeCourse(t, tc.course, files)
		_, err := ReadCourse(path)
		// Solutions are named by their path, the course's folder joined.
		if err == nil || !strings.HasPrefix(err.Error(), "course "+path+": ") || !strings.Contains(strings.ReplaceAll(err.Error(), filepath.Dir(path)+"/", ""), tc.want) {
			t.Errorf("%s: %v, want %q", tc.course, err, tc.want)
		}
	}
	ok := `{"seed": 3, "exercises": {"gemm/tiled": {"shapes": ["M=300 N=200 K=77", "M=1,N=513,K=2"]}, "lfm2/router": {"shapes": ["tokens=5 experts=4 k=2 norm_topk=false scaling=2.5 bias=true"]},
		"kmeans/assign": {"shapes": ["n=10 d=3 k=2"]}, "sqfd/assign": {"shapes": ["n=5 k=2 min=1 max=3 dim=2"]}, "lfm2/rmsnorm": {"shapes": ["rows=3 width=300"]}}}`
	c, err := ReadCourse(writeCourse(t, ok, nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.hidden["gemm/tiled"][LangOpenCL]) + len(c.hidden["gemm/tiled"][LangCUDA]); n != 4 || *c.Seed != 3 {
		t.Errorf("gemm/tiled: %d hidden draws, seed %v", n, c.Seed)
	}
}
