package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpulab/engine/proctree"
)

func lab(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// labAllocating is lab, with the bytes the process allocated meanwhile.
func labAllocating(args ...string) (code int, stdout, stderr string, allocated uint64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, stdout, stderr = lab(args...)
	runtime.ReadMemStats(&after)
	return code, stdout, stderr, after.TotalAlloc - before.TotalAlloc
}

func TestDevicesJSON(t *testing.T) {
	code, out, errs := lab("devices", "--json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var devs []map[string]any
	if err := json.Unmarshal([]byte(out), &devs); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if devs[0]["id"] != "cpu" {
		t.Errorf("first device %v", devs[0])
	}
	for _, d := range devs {
		for _, key := range []string{"id", "name", "kind", "peak_gflops", "peak_gbps"} {
			if _, ok := d[key]; !ok {
				t.Errorf("device %v lacks %q", d["id"], key)
			}
		}
	}
	if !strings.Contains(errs, "peaks:") {
		t.Errorf("--verbose printed %q", errs)
	}
	t.Log(out, errs)
}

func TestBenchCopyWritesJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "copy.json")
	code, out, errs := lab("bench", "copy", "--device", "cpu", "--size", "1M,4100", "--min-time", "1ms", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "go_parallel") || !strings.Contains(out, "(baseline)") {
		t.Errorf("table:\n%s", out)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"suite": "copy"`) {
		t.Errorf("json %s %v", data, err)
	}
	code, out, errs = lab("report", path)
	if code != 0 || !strings.Contains(out, "| copy | cpu | 1M | go_parallel |") || !strings.Contains(out, "- cpu (") {
		t.Errorf("report: exit %d\n%s%s", code, out, errs)
	}
	png := filepath.Join(t.TempDir(), "copy.png")
	if code, out, errs := lab("plot", "--x", "bytes", "--y", "gbps", "--series", "device,variant", "--where", "device=cpu", "--logx", "--title", "copy", "--out", png, path); code != 0 || !strings.Contains(out, "wrote") {
		t.Errorf("plot: exit %d %s %s", code, out, errs)
	}
	if code, _, errs := lab("plot", "--bars", "--title", "speedups", "--out", png, path); code != 0 {
		t.Errorf("plot --bars: exit %d %s", code, errs)
	}
	if info, err := os.Stat(png); err != nil || info.Size() < 1000 {
		t.Errorf("plot wrote %v %v", info, err)
	}
	if code, _, errs := lab("plot", "--x", "bytes", "--where", "device=cuda:9", "--out", png, path); code == 0 || !strings.Contains(errs, `parameter "bytes"`) {
		t.Errorf("plot with nothing left after --where: exit %d, %s", code, errs)
	}
	if code, _, errs := lab("plot", "--x", "nope", "--out", png, path); code == 0 || !strings.Contains(errs, `parameter "nope"`) {
		t.Errorf("plot of a missing parameter: exit %d, %s", code, errs)
	}
	if code, _, errs := lab("report", filepath.Join(t.TempDir(), "missing.json")); code == 0 || !strings.Contains(errs, "missing.json") {
		t.Errorf("report of a missing file: exit %d, %s", code, errs)
	}
}

func TestBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"bench", "nope"}, "unknown suite"},
		{[]string{"bench", "copy", "--device", "cuda:42"}, "valid ids: cpu"},
		{[]string{"bench", "copy", "--size", "huge"}, "size \"huge\""},
		{[]string{"bench"}, "no suite"},
		{[]string{"devices", "extra"}, "unexpected"},
		{[]string{"p2p", "--size", "lots"}, `size "lots"`},
		{[]string{"p2p", "extra"}, "unexpected"},
	} {
		code, _, errs := lab(tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want %q", tc.args, code, errs, tc.want)
		}
	}
	if code, out, _ := lab("bench", "--list"); code != 0 || !strings.Contains(out, "copy") {
		t.Errorf("--list: %d %s", code, out)
	}
}

// TestOutputToDevice: an output named by a symbolic link to /dev/null is
// written into the device, the link and the device node kept; one to
// /dev/full fails the command with the device's error. The links lie in
// the test's directory, so that a lab that renamed its output over them
// could not replace a real device node.
func TestOutputToDevice(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		device string
		code   int
		want   string // in stderr
	}{
		{"/dev/null", 0, ""},
		{"/dev/full", 1, "/dev/full: no space left on device"},
	} {
		link := filepath.Join(dir, filepath.Base(tc.device)+".json")
		if err := os.Symlink(tc.device, link); err != nil {
			t.Fatal(err)
		}
		code, _, errs := lab("bench", "copy", "--device", "cpu", "--size", "1M", "--min-time", "1ms", "--json", link)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("--json %s (a link to %s): exit %d, stderr %q; want exit %d and %q", link, tc.device, code, errs, tc.code, tc.want)
		}
		if target, err := os.Readlink(link); err != nil || target != tc.device {
			t.Errorf("%s is no longer a link to %s: %q, %v", link, tc.device, target, err)
		}
		if info, err := os.Lstat(tc.device); err != nil || info.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
			t.Errorf("%s is no longer a character device: %v %v", tc.device, info, err)
		}
	}
}

// labBinary builds the lab command into a directory of the test's: the
// tests that send lab a signal need a process of its own, running main.
func labBinary(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build lab with")
	}
	bin := filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command(goCmd, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building lab: %v\n%s", err, out)
	}
	return bin
}

// testMarker is the environment variable that marks every process a test
// of interruption starts, down to the grandchildren of lab's children.
const testMarker = "GPULAB_TEST_MARKER"

// interruptRun is lab started with a marker in its environment, to be
// interrupted.
type interruptRun struct {
	t      *testing.T
	marker string // the value of testMarker in the environment of everything lab starts
	tmp    string // lab's TMPDIR
	cmd    *exec.Cmd
	stderr *cappedBuffer // read while lab writes it
}

// startInterruptible starts the lab binary bin with args, a TMPDIR of its
// own and a fresh marker, and env added to its environment. What is alive
// of the run is killed when the test ends.
func startInterruptible(t *testing.T, bin string, env []string, args ...string) *interruptRun {
	t.Helper()
	r := &interruptRun{t: t, marker: fmt.Sprintf("gpulab-interrupt-%d", time.Now().UnixNano()), stderr: &cappedBuffer{limit: 1 << 20}}
	// Reachable by the sandbox's user, which t.TempDir() is not.
	tmp, err := os.MkdirTemp("", "gpulab-interrupt-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r.tmp = tmp
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp, testMarker+"="+r.marker), env...)
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		for _, p := range r.alive() {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	return r
}

// markedProcess is a live process of the run's.
type markedProcess struct {
	pid  int
	name string
}

func (p markedProcess) String() string { return fmt.Sprintf("%s (pid %d)", p.name, p.pid) }

// alive lists the live (not zombie) processes of the run, lab itself left
// out: those that carry the marker, and those that run a program from
// lab's TMPDIR or name a path in it (a sandboxed worker has an environment
// of its own, without the marker).
func (r *interruptRun) alive() []markedProcess {
	procs, err := proctree.List()
	if err != nil {
		r.t.Fatal(err)
	}
	var out []markedProcess
	for pid, info := range procs {
		if pid == r.cmd.Process.Pid || info.Zombie() {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if proctree.Env(pid, testMarker) == r.marker || strings.Contains(string(cmdline), r.tmp+"/") {
			name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			out = append(out, markedProcess{pid, strings.TrimSpace(string(name))})
		}
	}
	return out
}

// interrupt waits (at most limit) until ready is true, sends sig, and
// checks that lab exits within a minute with status, having said why in
// one line, and leaves no marked process behind and nothing in its TMPDIR.
// It returns the processes that were alive when the signal was sent.
func (r *interruptRun) interrupt(limit time.Duration, ready func() bool, sig syscall.Signal, status int) []markedProcess {
	t := r.t
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	for deadline := time.Now().Add(limit); !ready(); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("lab ended before it was interrupted (%v):\n%s", err, r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within %v:\n%s", limit, r.stderr.String())
		}
	}
	before := r.alive()
	r.cmd.Process.Signal(sig)
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("lab did not exit within a minute of %v:\n%s", sig, r.stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != status {
		t.Errorf("lab ended with %v after %v, want exit status %d", err, sig, status)
	}
	if want := "lab: stopped by " + map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]; !strings.Contains(r.stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr.String())
	}
	if left := r.alive(); len(left) > 0 {
		t.Errorf("processes left running: %v (alive at the signal: %v)", left, before)
	}
	if entries, _ := os.ReadDir(r.tmp); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left in TMPDIR: %v", names)
	}
	return before
}

// TestGradeInterrupted interrupts lab grade while a submission's endless
// loop runs in its worker: lab exits with 130, its worker killed and its
// gpulab-grade-* directory removed. (Both signals take one path, which
// TestNbrunInterrupted sends each of.)
func TestGradeInterrupted(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command: grading a Go exercise builds it")
	}
	root, _ := filepath.Abs("..")
	dir := t.TempDir()
	endless := filepath.Join(dir, "endless.go")
	if err := os.WriteFile(endless, []byte(goHead+"\tfor {\n\t}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startInterruptible(t, labBinary(t), []string{"GPULAB_ROOT=" + root}, "grade", "--exercise", "sparse/gustavson", "--timeout", "10m",
		"--csv", filepath.Join(dir, "grades.csv"), "--md", filepath.Join(dir, "grades.md"), endless)
	// The worker runs the submission's program, built into lab's TMPDIR.
	running := func() bool {
		if !strings.Contains(r.stderr.String(), "grading "+endless) {
			return false // the reference solution's worker
		}
		for _, p := range r.alive() {
			if p.name == "submission" {
				return true
			}
		}
		return false
	}
	before := r.interrupt(5*time.Minute, running, syscall.SIGINT, 130)
	t.Logf("alive at the signal: %v", before)
}
