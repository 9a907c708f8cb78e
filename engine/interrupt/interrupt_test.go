package interrupt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv names the directory of a child process of TestCatch: the test
// binary re-executed to be interrupted (see TestMain).
const childEnv = "GPULAB_INTERRUPT_TEST_CHILD"

// toolChildEnv names the directory of a child process of TestRunKilled.
const toolChildEnv = "GPULAB_INTERRUPT_TEST_TOOL"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		child(dir)
	}
	if dir := os.Getenv(toolChildEnv); dir != "" {
		toolChild(dir)
	}
	os.Exit(m.Run())
}

// child catches signals, registers cleanups that note in dir/order that
// they ran (the second unregistered again), and says it is ready. Its
// newest cleanup makes the main goroutine fail and exit with status 3
// (Exit), which must wait for the other cleanups. Its oldest cleanup tries
// to register something new, which must never be made (note "late"), and,
// with "block" in dir, never ends.
func child(dir string) {
	Catch("child", os.Stderr)
	note := func(s string) {
		f, err := os.OpenFile(filepath.Join(dir, "order"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
	}
	_, blocks := os.Stat(filepath.Join(dir, "block"))
	fail := make(chan struct{})
	for i := 1; i <= 3; i++ {
		unregister, _ := Register(func() (func(), error) {
			return func() {
				note(fmt.Sprint(i))
				if i == 3 {
					close(fail)
				}
				if i != 1 {
					return
				}
				go Register(func() (func(), error) {
					note("late")
					return nil, nil
				})
				time.Sleep(200 * time.Millisecond)
				if blocks == nil {
					select {}
				}
			}, nil
		})
		if i == 2 {
			unregister()
		}
	}
	if _, err := Register(func() (func(), error) { return nil, errors.New("made nothing") }); err == nil || err.Error() != "made nothing" {
		note("Register lost the error: " + fmt.Sprint(err))
	}
	os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
	<-fail
	Exit(3)
}

// TestCatch interrupts a child with each signal: it says so in one line,
// runs the registered cleanups newest first (the unregistered one not at
// all), makes nothing new meanwhile, and exits with 128 + the signal, also
// when its main goroutine fails meanwhile. A second signal ends a cleanup
// that hangs.
func TestCatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sigs    []syscall.Signal
		block   bool
		status  int
		order   string
		message string
	}{
		{"SIGINT", []syscall.Signal{syscall.SIGINT}, false, 130, "3\n1\n", "child: stopped by SIGINT"},
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, false, 143, "3\n1\n", "child: stopped by SIGTERM"},
		{"second signal", []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, true, 130, "3\n1\n", "child: stopped by SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.block {
				os.WriteFile(filepath.Join(dir, "block"), nil, 0o644)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitFor(t, filepath.Join(dir, "ready"))
			cmd.Process.Signal(tc.sigs[0])
			if len(tc.sigs) > 1 {
				// The cleanups run, the last of them (1) hangs: noted, it
				// sleeps a while, then blocks for good.
				waitForText(t, filepath.Join(dir, "order"), tc.order)
				cmd.Process.Signal(tc.sigs[1])
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("the child did not exit; stderr:\n%s", stderr.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.status {
				t.Errorf("the child ended with %v, want exit status %d", err, tc.status)
			}
			if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], tc.message+": ") {
				t.Errorf("stderr %q, want one line starting %q", stderr.String(), tc.message)
			}
			if order, err := os.ReadFile(filepath.Join(dir, "order")); string(order) != tc.order {
				t.Errorf("the cleanups ran as %q (%v), want %q", order, err, tc.order)
			}
		})
	}
}

// waitForText waits until the file at path holds text.
func waitForText(t *testing.T, path, text string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(path); string(b) == text {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not hold %q", path, text)
		}
	}
}

// waitFor waits until path exists.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
	}
}

// toolChild catches signals, makes a temporary directory (TempDir) whose
// name it writes to dir/tmp, and runs a shell (Run) that starts a
// background sleep, says it is ready and sleeps. The sleeps' argument is
// the marker in dir/marker, a number of seconds that no other process has
// on its command line.
func toolChild(dir string) {
	Catch("tool", os.Stderr)
	tmp, remove, err := TempDir("gpulab-interrupt-test-*")
	if err != nil {
		os.Exit(4)
	}
	defer remove()
	os.WriteFile(filepath.Join(dir, "tmp"), []byte(tmp), 0o644)
	marker, _ := os.ReadFile(filepath.Join(dir, "marker"))
	Run(exec.Command("sh", "-c", `sleep $1 & touch "$0/ready"; sleep $1`, dir, string(marker)))
	Exit(5)
}

// TestRunKilled interrupts a command while a tool it runs (Run) and the
// tool's own child are alive: both die with it, and its TempDir is gone.
func TestRunKilled(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			marker := fmt.Sprintf("1000.%09d", rand.IntN(1e9))
			if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(marker), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), toolChildEnv+"="+dir)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitFor(t, filepath.Join(dir, "ready"))
			cmd.Process.Signal(sig)
			var exit *exec.ExitError
			if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Errorf("the child ended with %v, want exit status %d", err, 128+int(sig))
			}
			// SIGKILL is delivered before kill returns, but a killed
			// process leaves the table a moment later.
			var left []string
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if left = processesNaming(marker); len(left) == 0 {
					break
				}
			}
			if len(left) > 0 {
				t.Errorf("processes of the tool still alive: %v", left)
			}
			tmp, err := os.ReadFile(filepath.Join(dir, "tmp"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(string(tmp)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the temporary directory %s is still there (%v)", tmp, err)
			}
		})
	}
}

// processesNaming lists the command lines, with their pids, of the live
// processes whose command line holds s.
func processesNaming(s string) []string {
	var found []string
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range pids {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		stat, _ := os.ReadFile(filepath.Join(p, "stat"))
		if err == nil && strings.Contains(string(cmdline), s) && !strings.Contains(string(stat), ") Z ") {
			found = append(found, filepath.Base(p)+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}
