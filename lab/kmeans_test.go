package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/datasets"
	"gpulab/engine"
)

// TestKmeansFromInit runs the worked example of the kmeans tests through the
// command: points 0, 1, 10, 11 from centers 0 and 10 end at 0.5 and 10.5,
// inertia 1.
func TestKmeansFromInit(t *testing.T) {
	dir := t.TempDir()
	x, c := filepath.Join(dir, "x.npy"), filepath.Join(dir, "c.npy")
	if err := datasets.WriteNPYFloat32(x, []float32{0, 1, 10, 11}, 4, 1); err != nil {
		t.Fatal(err)
	}
	if err := datasets.WriteNPYFloat32(c, []float32{0, 10}, 2, 1); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, errs := lab("kmeans", "--data", x, "--init", c, "--iters", "3", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Inertia float64 `json:"inertia"`
		Iters   int     `json:"iters"`
		MS      float64 `json:"ms_per_iter"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Inertia != 1 || res.Iters != 3 || math.IsNaN(res.MS) {
		t.Errorf("json %s (%v)", stdout, err)
	}
	labels, err := datasets.ReadNPYInt32(filepath.Join(out, "labels.npy"))
	if err != nil || len(labels) != 4 || labels[0] != 0 || labels[3] != 1 {
		t.Errorf("labels %v %v", labels, err)
	}
	centers, rows, cols, err := datasets.ReadNPYFloat32(filepath.Join(out, "centers.npy"))
	if err != nil || rows != 2 || cols != 1 || centers[0] != 0.5 || centers[1] != 10.5 {
		t.Errorf("centers %v (%d×%d) %v", centers, rows, cols, err)
	}
}

func TestKmeansErrors(t *testing.T) {
	dir := t.TempDir()
	x, nan, c3 := filepath.Join(dir, "x.npy"), filepath.Join(dir, "nan.npy"), filepath.Join(dir, "c3.npy")
	datasets.WriteNPYFloat32(x, []float32{0, 1, 2, 3, 4, 5}, 3, 2)
	datasets.WriteNPYFloat32(nan, []float32{0, 1, 2, float32(math.NaN()), 4, 5}, 3, 2)
	datasets.WriteNPYFloat32(c3, []float32{0, 1, 2}, 1, 3)
	full, _ := os.ReadFile(x)
	short := filepath.Join(dir, "short.npy")
	os.WriteFile(short, full[:len(full)-4], 0o644)
	inf := filepath.Join(dir, "inf.fvecs")
	datasets.WriteFvecs(inf, []float32{0, 1, 2, 3, float32(math.Inf(-1)), 5}, 3, 2)
	cNaN := filepath.Join(dir, "cnan.npy")
	datasets.WriteNPYFloat32(cNaN, []float32{0, float32(math.NaN())}, 1, 2)
	// float64 values beyond float32's range would become infinite.
	huge := filepath.Join(dir, "huge.npy")
	os.WriteFile(huge, npyFloat64(3, 1, 0, 1e300, 2), 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--data", x, "--k", "4", "--out", out}, "k-means of " + x + ": kmeans: K = 4 exceeds the 3 points", 1},
		{[]string{"--data", x, "--k", "0", "--out", out}, `invalid value "0" for flag -k: want a whole number from 1`, 2},
		{[]string{"--data", nan, "--k", "2", "--out", out}, "k-means of " + nan + ": kmeans: point 1, dimension 1 is NaN", 1},
		{[]string{"--data", inf, "--k", "2", "--out", out}, "k-means of " + inf + ": kmeans: point 2, dimension 0 is -Inf", 1},
		{[]string{"--data", huge, "--k", "2", "--out", out}, huge + ": row 1, column 0: 1e+300 is beyond float32's range", 1},
		{[]string{"--data", x, "--init", cNaN, "--out", out}, "from the centers in " + cNaN + ": kmeans: initial center 0, dimension 1 is NaN", 1},
		{[]string{"--data", x, "--init", c3, "--out", out}, "centers have 3 dimensions but", 1},
		{[]string{"--data", short, "--k", "2", "--out", out}, "short.npy", 1},
		{[]string{"--data", dir, "--k", "2", "--out", out}, dir + ": is a directory", 1},
		{[]string{"--data", x, "--k", "2"}, "--data and --out are required", 2},
		{[]string{"--data", x, "--k", "2", "--iters", "0", "--out", out}, `invalid value "0" for flag -iters: want a whole number from 1`, 2},
		{[]string{"--data", x, "--k", "2", "--iters", "-5", "--out", out}, `invalid value "-5" for flag -iters`, 2},
		{[]string{"--data", x, "--k", "2", "--stream-batch", "-1", "--out", out}, `invalid value "-1" for flag -stream-batch: want a whole number from 0`, 2},
		{[]string{"--data", x, "--k", "2", "--out", file}, "--out " + file + " is a file, want a directory", 2},
	} {
		code, _, errs := lab(append([]string{"kmeans"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("lab kmeans %v: exit %d, %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run left its output directory behind")
	}
}

// npyFloat64 is a version 1.0 .npy file of float64 values, rows×cols.
func npyFloat64(rows, cols int, v ...float64) []byte {
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols)
	dict += strings.Repeat(" ", 63-(10+len(dict))%64) + "\n" // the data starts at a multiple of 64
	b := binary.LittleEndian.AppendUint16([]byte("\x93NUMPY\x01\x00"), uint16(len(dict)))
	b = append(b, dict...)
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// TestKmeansOutputsAsASet: labels.npy and centers.npy are written both or
// neither; a directory where one should go is named before either is
// written, and older outputs stay as they were.
func TestKmeansOutputsAsASet(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "x.npy")
	datasets.WriteNPYFloat32(x, []float32{0, 1, 10, 11}, 4, 1)
	for _, blocked := range []string{"labels.npy", "centers.npy"} {
		out := filepath.Join(t.TempDir(), "out")
		os.MkdirAll(filepath.Join(out, blocked), 0o755)
		other := map[string]string{"labels.npy": "centers.npy", "centers.npy": "labels.npy"}[blocked]
		old := []byte("an older run's " + other)
		os.WriteFile(filepath.Join(out, other), old, 0o644)
		code, _, errs := lab("kmeans", "--data", x, "--k", "2", "--out", out)
		if code == 0 || !strings.Contains(errs, filepath.Join(out, blocked)+": is a directory") {
			t.Errorf("%s a directory: exit %d, %q", blocked, code, errs)
		}
		if b, err := os.ReadFile(filepath.Join(out, other)); err != nil || !bytes.Equal(b, old) {
			t.Errorf("%s a directory: %s was rewritten (%v)", blocked, other, err)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 2 {
			t.Errorf("%s a directory: the output directory holds %v", blocked, entries)
		}
	}
	// --iters 1 runs one iteration.
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, errs := lab("kmeans", "--data", x, "--k", "2", "--iters", "1", "--out", out, "--json")
	var res struct{ Iters int }
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.Iters != 1 {
		t.Errorf("--iters 1: exit %d, %s %s", code, stdout, errs)
	}
}

// TestKmeansChecksHostMemory: a sparse .npy (made with os.Truncate, so it
// has its size without the disk behind it) whose header gives 10^8 points
// of 100 dimensions, 40 GB of float32 (and 2 GB more for Fit), is refused on
// the CPU before its points are allocated, saying what it needs and what
// the host has: under
// ulimit -v 4000000 with no cap of the lab's own (the rlimit refuses, not a
// fatal error of the runtime), and under $GPULAB_HOST_MEMORY.
func TestKmeansChecksHostMemory(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "x.npy")
	if err := datasets.WriteNPYFloat32(x, make([]float32, 100), 1, 100); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(x)
	if err != nil {
		t.Fatal(err)
	}
	// The header leaves room for the first dimension to grow (as np.save's).
	head := strings.Replace(string(b[:len(b)-400]), "(1, 100), }        ", "(100000000, 100), }", 1)
	if err := os.WriteFile(x, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(x, int64(len(head))+4*100_000_000*100); err != nil {
		t.Fatal(err)
	}
	args := []string{"kmeans", "--data", x, "--k", "3", "--device", "cpu", "--out", filepath.Join(dir, "out")}
	// 4·N·D bytes of X, then 4·N of labels, 8·N of k-means++'s permutation,
	// 12·N of labels and distances in the passes and 4·65536·D of
	// candidates: 42.43 GB.
	const want = "k-means of %s needs 42.4 GB of host memory for its 100000000×100 points as float32, a label and a distance each, and k-means++'s candidates; "
	cmd := exec.Command("bash", append([]string{"-c", `ulimit -v 4000000 && exec "$0" "$@"`, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), labMainEnv+"=1", engine.HostMemoryEnv+"=")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), fmt.Sprintf(want, x)) {
		t.Fatalf("under ulimit -v 4000000: %v, %.2000s\nwant exit 1 and %q", err, out, fmt.Sprintf(want, x))
	}
	t.Setenv(engine.HostMemoryEnv, "1000000000")
	code, _, errs := lab(args...)
	if code != 1 || !strings.Contains(errs, fmt.Sprintf(want, x)+"1.0 GB is available") {
		t.Errorf("exit %d, %s; want exit 1 and %q", code, errs, fmt.Sprintf(want, x)+"1.0 GB is available")
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("the refused run made its output directory (%v)", err)
	}
}
