package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/datasets"
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
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", x, "--k", "4", "--out", out}, "K = 4 exceeds the 3 points"},
		{[]string{"--data", x, "--k", "0", "--out", out}, "give --k or --init"},
		{[]string{"--data", nan, "--k", "2", "--out", out}, "point 1, dimension 1 is NaN"},
		{[]string{"--data", x, "--init", c3, "--out", out}, "centers have 3 dimensions but"},
		{[]string{"--data", short, "--k", "2", "--out", out}, "short.npy"},
		{[]string{"--data", x, "--k", "2"}, "--data and --out are required"},
	} {
		code, _, errs := lab(append([]string{"kmeans"}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("lab kmeans %v: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "labels.npy")); err == nil {
		t.Error("a failed run left labels.npy behind")
	}
}
