package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNbrun executes a passing and a failing notebook with lab nbrun: the
// executed copies are written, the first starts with the stamp, and the
// exit status and message name the failing notebook and cell.
func TestNbrun(t *testing.T) {
	root, _ := filepath.Abs("..")
	needGonb(t, root)
	t.Setenv("GPULAB_ROOT", root)
	dir := t.TempDir()
	cell := func(src string) string {
		return `{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ` + src + `}`
	}
	setup := cell(`["%noautoget\n", "!*rm -f go.work && go work init && go work use . \"$GPULAB_ROOT\"\n", "%goworkfix"]`)
	write := func(name string, cells ...string) string {
		path := filepath.Join(dir, name)
		text := `{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# ` + name + `"]}, ` + strings.Join(cells, ", ") +
			`], "metadata": {"kernelspec": {"name": "gonb"}}, "nbformat": 4, "nbformat_minor": 5}`
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.ipynb", setup, cell(`"%%\nfmt.Println(\"sum\", 1+2)"`))
	bad := write("bad.ipynb", setup, cell(`"%%\nfmt.Println(\"fine\")"`), cell(`"%%\nvar s []int\nfmt.Println(s[3])"`))
	out := filepath.Join(dir, "executed")
	code, stdout, errs := lab("nbrun", good, bad, "--out", out, "--stamp", "--timeout", "5m")
	if code != 1 {
		t.Errorf("exit %d, want 1 (one notebook fails)", code)
	}
	for _, want := range []string{"bad.ipynb: cell #4 (counting from 1, markdown cells included) failed: the cell's program failed: exit status 2",
		"index out of range [3] with length 0", "1 of 2 notebooks failed"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if !strings.Contains(stdout, "ok   "+good) {
		t.Errorf("stdout %q", stdout)
	}
	executed, err := os.ReadFile(filepath.Join(out, "good.ipynb"))
	for _, want := range []string{`"executed by lab nbrun · gpulab commit `, `"device cpu: `, `"sum 3\n"`, `"execution_count": 2`} {
		if err != nil || !strings.Contains(string(executed), want) {
			t.Errorf("executed notebook lacks %q (%v):\n%s", want, err, executed)
		}
	}
	if failed, err := os.ReadFile(filepath.Join(out, "bad.ipynb")); err != nil || !strings.Contains(string(failed), "index out of range") {
		t.Errorf("the failing notebook's copy should hold the error (%v)", err)
	}
	// A log that cannot be written fails the command, naming it, and
	// does not stop the kernel (whose output pipe would break).
	code, stdout, errs = lab("nbrun", good, "--out", filepath.Join(dir, "logged"), "--log", "/dev/full")
	if want := "--log /dev/full: write /dev/full: no space left on device"; code != 1 || !strings.Contains(errs, want) || !strings.Contains(stdout, "ok   "+good) {
		t.Errorf("--log /dev/full: exit %d, stdout %q, stderr %q; want exit 1, the notebook run and %q", code, stdout, errs, want)
	}
}

func TestNbrunUsage(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "a.ipynb")
	os.WriteFile(nb, []byte(`{"cells": [], "nbformat": 4}`), 0o644)
	other := filepath.Join(dir, "sub", "a.ipynb")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nbrun"}, "no notebook given"},
		{[]string{"nbrun", nb, "--out", dir}, "would overwrite itself"},
		{[]string{"nbrun", nb, other, "--out", t.TempDir()}, "would both be written to"},
		{[]string{"nbrun", "--timeout", "soon", nb}, `invalid value "soon"`},
	} {
		if code, _, errs := lab(tc.args...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("lab %v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	t.Setenv("GPULAB_ROOT", dir)
	if code, _, errs := lab("nbrun", nb, "--out", t.TempDir(), "--gonb", "/no/such/gonb"); code != 1 || !strings.Contains(errs, "/no/such/gonb") {
		t.Errorf("missing kernel: exit %d, %q", code, errs)
	}
}

// TestNbrunInterrupted interrupts lab nbrun while a cell runs: a Go cell
// that loops forever (SIGINT), and a shell command that leaves a child in
// the background (SIGTERM). lab exits with 128 + the signal and leaves
// nothing behind: no GoNB, no cell program, no background child, no gopls
// (which GoNB starts in a process group of its own), no gpulab-kernel-*
// directory.
func TestNbrunInterrupted(t *testing.T) {
	root, _ := filepath.Abs("..")
	gonb := needGonb(t, root)
	bin := labBinary(t)
	cell := func(src string) string {
		return `{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ` + src + `}`
	}
	for _, tc := range []struct {
		name   string
		cells  []string
		sig    syscall.Signal
		status int
	}{
		{"endless cell, SIGINT", []string{cell(`"%%\nos.WriteFile(os.Getenv(\"GPULAB_TEST_READY\"), nil, 0o644)\nfor {\n}"`)}, syscall.SIGINT, 130},
		{"background child, SIGTERM", []string{cell(`"!sleep 1000 & touch \"$GPULAB_TEST_READY\""`), cell(`"%%\ntime.Sleep(time.Hour)"`)}, syscall.SIGTERM, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			nb := filepath.Join(dir, "nb.ipynb")
			text := `{"cells": [` + strings.Join(tc.cells, ", ") + `], "metadata": {"kernelspec": {"name": "gonb"}}, "nbformat": 4, "nbformat_minor": 5}`
			if err := os.WriteFile(nb, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			ready := filepath.Join(dir, "ready")
			r := startInterruptible(t, bin, []string{"GPULAB_TEST_READY=" + ready, "GPULAB_ROOT=" + root},
				"nbrun", nb, "--out", filepath.Join(dir, "out"), "--gonb", gonb)
			before := r.interrupt(3*time.Minute, func() bool { _, err := os.Stat(ready); return err == nil }, tc.sig, tc.status)
			t.Logf("alive at the signal: %v", before)
		})
	}
}

// needGonb is the GoNB kernel that lab nbrun finds (gonbPath: the one in
// root/.tools/bin, else gonb on PATH), or skips the test without one or
// without the go command that GoNB compiles cells with.
func needGonb(t *testing.T, root string) string {
	t.Helper()
	gonb, err := gonbPath("", root)
	if err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: GoNB compiles cells with it")
	}
	return gonb
}
