package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/engine"
)

// TestBenchRejectsFlags: repetition counts and times that no run can
// follow, and variants the suite does not have, are errors that say so
// before anything is measured.
func TestBenchRejectsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--reps", "-1"}, 2, `invalid value "-1" for flag -reps: want a whole number from 1 to 1000000`},
		{[]string{"--reps", "0"}, 2, `invalid value "0" for flag -reps: want a whole number from 1 to 1000000`},
		{[]string{"--min-time", "-1s"}, 2, `invalid value "-1s" for flag -min-time: want a duration above 0 and at most 24h`},
		{[]string{"--min-time", "0s"}, 2, `invalid value "0s" for flag -min-time: want a duration above 0`},
		{[]string{"--warmup", "-2"}, 2, `invalid value "-2" for flag -warmup: want a whole number from 1 to 1000000`},
		{[]string{"--variants", "nosuch"}, 1, `unknown variant "nosuch" (have: gonum_sgemm, 01_naive_ijk,`},
		{[]string{"--variants", "01_naive_ijk,nosuch,other"}, 1, `unknown variants "nosuch", "other"`},
		{[]string{"--json", os.TempDir()}, 2, "--json " + os.TempDir() + " is a directory: want the file to write, such as " + filepath.Join(os.TempDir(), "records.json")},
		{[]string{"--json", filepath.Join(t.TempDir(), "no", "r.json")}, 2, "there is no directory"},
	} {
		args := append([]string{"bench", "gemm", "--device", "cpu", "--size", "16"}, tc.args...)
		code, out, errs := lab(args...)
		if code != tc.code || !strings.Contains(errs, tc.want) || strings.Contains(out, "gonum_sgemm") {
			t.Errorf("lab %v: exit %d, stdout %q, stderr %q; want exit %d, %q and no records", args, code, out, errs, tc.code, tc.want)
		}
	}
}

// TestBenchGemmChecksMemory: a GEMM within the 2^31-element limit that the
// host cannot hold is refused with what it needs and what is available
// (the host's memory capped at 4 GB for the test).
func TestBenchGemmChecksMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "4000000000")
	code, _, errs := lab("bench", "gemm", "--device", "cpu", "--size", "30000")
	for _, want := range []string{"gemm 30000x30000x30000 needs ", " GB of host memory for A, B, a transposed B, the reference and a C for each of the ", "; 4.0 GB is available"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, %s; want exit 1 and %q", code, errs, want)
		}
	}
}
