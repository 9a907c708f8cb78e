package nb

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"gpulab/engine/bench"
)

func TestKnobs(t *testing.T) {
	t.Setenv("GPULAB_DEVICES", " cpu, opencl:0:0 ,")
	t.Setenv("GPULAB_SIZES", "1M,4M")
	if got := DeviceIDs(); !slices.Equal(got, []string{"cpu", "opencl:0:0"}) {
		t.Errorf("DeviceIDs = %v", got)
	}
	if got := Sizes(); !slices.Equal(got, []string{"1M", "4M"}) {
		t.Errorf("Sizes = %v", got)
	}
	t.Setenv("GPULAB_DEVICES", "")
	if got := DeviceIDs(); got[0] != "cpu" {
		t.Errorf("default DeviceIDs = %v", got)
	}
}

func TestRunSaveLoad(t *testing.T) {
	t.Setenv("GPULAB_RESULTS", t.TempDir())
	recs := Run([]string{"cpu"}, []string{"copy"}, []string{"64K"}, bench.Options{MinTime: time.Millisecond})
	if len(recs) != 2 || bench.Failed(recs) != nil {
		t.Fatalf("records %+v", recs)
	}
	Save("t", recs)
	if got := Load("t"); len(got) != 2 || got[1].Variant != recs[1].Variant {
		t.Errorf("Load = %+v", got)
	}
	if got := Filter(recs, func(r bench.Record) bool { return r.Baseline == r.Variant }); len(got) != 1 {
		t.Errorf("Filter kept %d", len(got))
	}
}

// TestMustExits runs Must in a child process: it must print the error and exit 1.
func TestMustExits(t *testing.T) {
	if os.Getenv("NB_MUST_CHILD") == "1" {
		Load("never-saved")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=TestMustExits")
	cmd.Env = append(os.Environ(), "NB_MUST_CHILD=1", "GPULAB_RESULTS="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, output %s", err, out)
	}
	if !strings.Contains(string(out), "run the cell that measures them first") {
		t.Errorf("output %q", out)
	}
}

func TestRootPath(t *testing.T) {
	t.Setenv("GPULAB_ROOT", "/repo")
	if got := RootPath("docs", "x.json"); got != "/repo/docs/x.json" {
		t.Errorf("RootPath = %q", got)
	}
	t.Setenv("GPULAB_ROOT", "")
	if got := RootPath("a"); got != "a" {
		t.Errorf("RootPath without GPULAB_ROOT = %q", got)
	}
}

// TestSuitesRegistered: a notebook cell that calls Run may import nothing
// but nb and bench (GoNB drops the imports a cell does not use), and must
// still find every suite by name.
func TestSuitesRegistered(t *testing.T) {
	for _, name := range []string{"copy", "gemm", "kmeans", "kmedoids", "lfm2", "moe-schedule", "spgemm", "spmv", "sqfd", "wgsize"} {
		if _, err := bench.Lookup(name); err != nil {
			t.Error(err)
		}
	}
}
