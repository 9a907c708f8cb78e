package main

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGradeQuotesNamesAndRefusesBinaries: a submission whose file name
// holds a newline is named quoted in the log, the Markdown table and the
// CSV, so that no line of them splits; a source with a NUL byte is refused
// naming the file and the offset, before a compiler sees it (OpenCL would
// say CL_INVALID_KERNEL_NAME). Neither gets as far as running, so no
// device is needed.
func TestGradeQuotesNamesAndRefusesBinaries(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	odd := filepath.Join(dir, "a\nb.cl")
	nul := filepath.Join(dir, "nul.cl")
	if err := os.WriteFile(odd, []byte("not a kernel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nul, []byte("\x00\x00__kernel void gemm(int M) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	csvPath, mdPath := filepath.Join(out, "g.csv"), filepath.Join(out, "g.md")
	code, stdout, errs := lab("grade", "--exercise", "gemm/tiled", "--csv", csvPath, "--md", mdPath, dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "grading " + strconv.Quote(odd) + " ...\n"; !strings.Contains(errs, want) {
		t.Errorf("the log does not say %q:\n%s", want, errs)
	}
	for _, l := range strings.Split(errs, "\n") {
		if strings.HasPrefix(l, "b.cl") {
			t.Errorf("a file name split the log's line: %q", l)
		}
	}
	if want := `| "a\\nb" | no | no |`; !strings.Contains(stdout, want) {
		t.Errorf("the Markdown table has no row %q:\n%s", want, stdout)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var students []string
	for _, r := range rows[1:] {
		students = append(students, r[0])
	}
	if want := []string{strconv.Quote("a\nb"), "nul"}; strings.Join(students, "|") != strings.Join(want, "|") {
		t.Fatalf("CSV students %q, want %q", students, want)
	}
	if want := nul + ": a NUL byte at offset 0 (line 1)"; !strings.HasPrefix(rows[2][5], want) {
		t.Errorf("the CSV's error for nul.cl is %q, want %q", rows[2][5], want)
	}
}

// TestGoBuilderNeedsGoimports: grading a Go exercise without goimports
// (neither in the checkout's .tools/bin nor on PATH) is an error that says
// so and how to install it, before anything is built: without it the
// reference solution's own imports stay missing ("undefined: fmt").
func TestGoBuilderNeedsGoimports(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module gpulab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPULAB_ROOT", root)
	t.Setenv("PATH", filepath.Dir(goCmd))
	if _, err := exec.LookPath("goimports"); err == nil {
		t.Skip("goimports is next to the go command")
	}
	_, err = goBuilder()
	for _, want := range []string{"goimports", "make deps", ".tools/bin"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("goBuilder without goimports: %v; want an error saying %q", err, want)
		}
	}
}
