package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpulab/engine/interrupt"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := WriteBytes(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old content and no temporary file.
	boom := errors.New("boom")
	if err := Write(path, func(w *bufio.Writer) error { w.WriteString("half"); return boom }); err != boom {
		t.Fatalf("error %v, want boom", err)
	}
	data, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(data) != "one" || len(entries) != 1 {
		t.Errorf("content %q, %d files", data, len(entries))
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", info.Mode())
	}
	if err := WriteBytes(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("a file in a missing directory was written")
	}
}

// TestWriteDirectory: a directory where the file should be is an error that
// says so, before anything is written.
func TestWriteDirectory(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out.npy")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	called := false
	err := Write(target, func(w *bufio.Writer) error { called = true; return nil })
	if err == nil || !strings.Contains(err.Error(), target+": is a directory") || called {
		t.Errorf("Write over a directory: %v (writer called: %v)", err, called)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"out.npy"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestWriteSet: the set appears whole; a failure while writing any member
// leaves every target as it was, and nothing else behind.
func TestWriteSet(t *testing.T) {
	text := func(s string) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error { _, err := w.WriteString(s); return err }
	}
	boom := errors.New("boom")
	fail := func(w *bufio.Writer) error { w.WriteString("half"); return boom }

	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := WriteSet(File{a, text("A1")}, File{b, text("B1")}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, map[string]string{"a": "A1", "b": "B1"})
	if info, _ := os.Stat(b); info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", info.Mode())
	}

	// The second member fails: the first keeps its old content, the new c
	// never appears.
	c := filepath.Join(dir, "c")
	if err := WriteSet(File{a, text("A2")}, File{c, text("C2")}, File{b, fail}); !errors.Is(err, boom) || !strings.Contains(err.Error(), "writing "+b+": boom") {
		t.Fatalf("error %v, want boom, naming %s", err, b)
	}
	wantFiles(t, dir, map[string]string{"a": "A1", "b": "B1"})

	// A directory in the way is named before anything is written.
	if err := os.Mkdir(c, 0o755); err != nil {
		t.Fatal(err)
	}
	called := false
	err := WriteSet(File{a, func(w *bufio.Writer) error { called = true; return nil }}, File{c, text("C3")})
	if err == nil || !strings.Contains(err.Error(), c+": is a directory") || called {
		t.Errorf("a set with a directory in it: %v (writer called: %v)", err, called)
	}
	os.Remove(c)

	if err := WriteSet(File{a, text("x")}, File{filepath.Join(dir, ".", "a"), text("y")}); err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Errorf("one path twice: %v", err)
	}
	wantFiles(t, dir, map[string]string{"a": "A1", "b": "B1"})
}

// TestWriteSetUndo: a rename that fails after others succeeded puts the
// renamed targets back: an old file restored, a new one removed. The last
// member's writer removes its own temporary file, so that its rename, after
// the others, finds nothing to rename.
func TestWriteSetUndo(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	if err := WriteBytes(a, []byte("A1")); err != nil {
		t.Fatal(err)
	}
	text := func(s string) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error { _, err := w.WriteString(s); return err }
	}
	err := WriteSet(File{a, text("A2")}, File{b, text("B2")}, File{c, func(w *bufio.Writer) error {
		temps, err := filepath.Glob(filepath.Join(dir, ".c.tmp-*"))
		if err != nil || len(temps) != 1 {
			return fmt.Errorf("temporary files of c: %v %v", temps, err)
		}
		return os.Remove(temps[0])
	}})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error %v, want the failed rename's", err)
	}
	wantFiles(t, dir, map[string]string{"a": "A1"})
}

// dirNames lists dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// wantFiles checks that dir holds exactly the files of want, with their
// contents.
func wantFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	var names []string
	for name, content := range want {
		names = append(names, name)
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != content {
			t.Errorf("%s holds %q (%v), want %q", name, got, err, content)
		}
	}
	slices.Sort(names)
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}

// TestWriteSpecial: what Write does with each kind of path. A regular file
// or a missing one is replaced whole; a symbolic link is followed, its
// final target replaced (or created) and the link kept; a character device
// or a FIFO is written in place, never renamed over (a write error such as
// /dev/full's is Write's error); a directory, a socket or a block device is
// refused before anything is written. No case leaves a temporary file.
//
// The tests may run as root: a real device is named only by the cases at
// the end, and only once a device behind a symbolic link in the test's own
// directory was seen written in place (else a broken Write would rename a
// file over the device node).
func TestWriteSpecial(t *testing.T) {
	const content = "new content\n"
	devicesSafe := false // a device behind a link was written in place
	for _, tc := range []struct {
		name string
		// setup makes the path to write in dir and returns it, with the
		// names that dir must hold afterwards and a check of the outcome.
		setup func(t *testing.T, dir string) (path string, names []string, check func(t *testing.T))
		want  string // in the error; "" for success
		real  bool   // names a real device
	}{
		{name: "regular file", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			path := writeFile(t, dir, "out", "old")
			return path, []string{"out"}, func(t *testing.T) { wantContent(t, path, content); wantMode(t, path, 0) }
		}},
		{name: "missing file", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			path := filepath.Join(dir, "out")
			return path, []string{"out"}, func(t *testing.T) { wantContent(t, path, content); wantMode(t, path, 0) }
		}},
		{name: "symlink to a file", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			target := writeFile(t, dir, "target", "old")
			link := symlink(t, "target", dir, "link")
			return link, []string{"link", "target"}, func(t *testing.T) {
				wantContent(t, target, content)
				wantLink(t, link, "target")
			}
		}},
		{name: "chain of symlinks to a file in another directory", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			other := t.TempDir()
			target := writeFile(t, other, "target", "old")
			symlink(t, target, dir, "second")
			link := symlink(t, "second", dir, "first")
			return link, []string{"first", "second"}, func(t *testing.T) {
				wantContent(t, target, content)
				wantLink(t, link, "second")
				if names := dirNames(t, other); !slices.Equal(names, []string{"target"}) {
					t.Errorf("the target's directory holds %v", names)
				}
			}
		}},
		{name: "dangling symlink", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			link := symlink(t, "sub/made", dir, "link")
			return link, []string{"link", "sub"}, func(t *testing.T) {
				wantContent(t, filepath.Join(dir, "sub", "made"), content)
				wantLink(t, link, "sub/made")
			}
		}},
		{name: "symlink loop", want: "too many levels of symbolic links", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			symlink(t, "b", dir, "a")
			link := symlink(t, "a", dir, "b")
			return link, []string{"a", "b"}, func(t *testing.T) { wantLink(t, link, "a") }
		}},
		{name: "symlink to /dev/null", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			link := symlink(t, "/dev/null", dir, "null")
			return link, []string{"null"}, func(t *testing.T) {
				wantLink(t, link, "/dev/null")
				wantMode(t, "/dev/null", fs.ModeDevice|fs.ModeCharDevice)
				devicesSafe = !t.Failed()
			}
		}},
		{name: "symlink to /dev/full", want: "/dev/full: no space left on device", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			link := symlink(t, "/dev/full", dir, "full")
			return link, []string{"full"}, func(t *testing.T) {
				wantLink(t, link, "/dev/full")
				wantMode(t, "/dev/full", fs.ModeDevice|fs.ModeCharDevice)
			}
		}},
		{name: "FIFO", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			fifo, read := fifoReader(t, dir, "pipe")
			return fifo, []string{"pipe"}, func(t *testing.T) {
				if got := read(); got != content {
					t.Errorf("the FIFO's reader got %q, want %q", got, content)
				}
				wantMode(t, fifo, fs.ModeNamedPipe)
			}
		}},
		{name: "socket", want: "is a socket", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			path := filepath.Join(dir, "sock")
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Skipf("no unix socket here: %v", err)
			}
			t.Cleanup(func() { l.Close() })
			return path, []string{"sock"}, func(t *testing.T) { wantMode(t, path, fs.ModeSocket) }
		}},
		{name: "block device", want: "is a block device", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			path := filepath.Join(dir, "disk")
			if err := syscall.Mknod(path, syscall.S_IFBLK|0o600, 7<<8|200); err != nil { // loop200: never opened
				t.Skipf("cannot make a block device node here: %v", err)
			}
			return path, []string{"disk"}, func(t *testing.T) { wantMode(t, path, fs.ModeDevice) }
		}},
		{name: "directory", want: "is a directory", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			path := filepath.Join(dir, "sub")
			os.Mkdir(path, 0o755)
			return path, []string{"sub"}, func(t *testing.T) { wantMode(t, path, fs.ModeDir) }
		}},
		{name: "symlink to a directory", want: "is a directory", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			link := symlink(t, "sub", dir, "link")
			return link, []string{"link", "sub"}, func(t *testing.T) { wantLink(t, link, "sub") }
		}},
		{name: "/dev/null", real: true, setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			return "/dev/null", nil, func(t *testing.T) { wantMode(t, "/dev/null", fs.ModeDevice|fs.ModeCharDevice) }
		}},
		{name: "/dev/full", real: true, want: "/dev/full: no space left on device", setup: func(t *testing.T, dir string) (string, []string, func(*testing.T)) {
			return "/dev/full", nil, func(t *testing.T) { wantMode(t, "/dev/full", fs.ModeDevice|fs.ModeCharDevice) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.real && !devicesSafe {
				t.Fatal("not run: Write did not write /dev/null behind a symbolic link in place, so it might replace the real device node")
			}
			dir := t.TempDir()
			path, names, check := tc.setup(t, dir)
			err := WriteBytes(path, []byte(content))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Write(%s): %v", path, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Write(%s): error %v, want one saying %q", path, err, tc.want)
			}
			check(t)
			if got := dirNames(t, dir); !slices.Equal(got, names) {
				t.Errorf("directory holds %v, want %v", got, names)
			}
		})
	}
}

// TestWriteSetSpecial: a set whose members are special files. Members
// written in place are written after every regular member's temporary is
// ready and before any rename: a failure there (/dev/full) leaves every
// regular target as it was. Two names of one file are refused, and so is
// a member that can be written neither way, before anything is written.
func TestWriteSetSpecial(t *testing.T) {
	text := func(s string) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error { _, err := w.WriteString(s); return err }
	}
	dir := t.TempDir()
	a := writeFile(t, dir, "a", "A1")
	fifo, read := fifoReader(t, dir, "pipe")
	if err := WriteSet(File{a, text("A2")}, File{fifo, text("F2")}); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "F2" {
		t.Errorf("the FIFO's reader got %q", got)
	}
	wantContent(t, a, "A2")
	wantMode(t, fifo, fs.ModeNamedPipe)

	full := symlink(t, "/dev/full", dir, "full")
	if err := WriteSet(File{a, text("A3")}, File{full, text("X")}, File{filepath.Join(dir, "c"), text("C3")}); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("a set with /dev/full in it: %v", err)
	}
	wantContent(t, a, "A2")
	wantLink(t, full, "/dev/full")

	link := symlink(t, "a", dir, "link")
	if err := WriteSet(File{a, text("A4")}, File{link, text("A5")}); err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Errorf("a file and a link to it in one set: %v", err)
	}
	sock := filepath.Join(dir, "sock")
	if l, err := net.Listen("unix", sock); err == nil {
		defer l.Close()
		called := false
		err := WriteSet(File{a, func(w *bufio.Writer) error { called = true; return nil }}, File{sock, text("S")})
		if err == nil || !strings.Contains(err.Error(), sock+": is a socket") || called {
			t.Errorf("a set with a socket in it: %v (writer called: %v)", err, called)
		}
	}
	wantContent(t, a, "A2")
	if names := dirNames(t, dir); !slices.Equal(names, []string{"a", "full", "link", "pipe", "sock"}) && !slices.Equal(names, []string{"a", "full", "link", "pipe"}) {
		t.Errorf("directory holds %v", names)
	}
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// symlink makes dir/name a symbolic link to target and returns its path.
func symlink(t *testing.T, target, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// fifoReader makes the FIFO dir/name and starts its reader; read returns
// what it read, once the writer closed the FIFO. The reader opens the FIFO
// through a second name in a directory of its own, so that a writer which
// renamed a file over dir/name cannot leave it blocked: read then opens
// the FIFO for writing itself, to end the reader, and fails the test.
func fifoReader(t *testing.T, dir, name string) (path string, read func() string) {
	t.Helper()
	path = filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	keep := filepath.Join(t.TempDir(), name)
	if err := os.Link(path, keep); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(keep)
		got <- string(data)
	}()
	return path, func() string {
		select {
		case s := <-got:
			return s
		case <-time.After(10 * time.Second):
			if f, err := os.OpenFile(keep, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Errorf("nothing was written into the FIFO %s within 10 s", path)
			return <-got
		}
	}
}

// wantContent checks what the file at path holds.
func wantContent(t *testing.T, path, want string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != want {
		t.Errorf("%s holds %q (%v), want %q", path, got, err, want)
	}
}

// wantMode checks the type of the file at path (not following a link):
// typ is its fs.ModeType bits, 0 for a regular file, which must also have
// mode 0644.
func wantMode(t *testing.T, path string, typ fs.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	switch {
	case err != nil:
		t.Errorf("%v", err)
	case info.Mode().Type() != typ:
		t.Errorf("%s has mode %v, want the type %v", path, info.Mode(), typ)
	case typ == 0 && info.Mode().Perm() != 0o644:
		t.Errorf("%s has mode %v, want 0644", path, info.Mode())
	}
}

// wantLink checks that path is still a symbolic link to target.
func wantLink(t *testing.T, path, target string) {
	t.Helper()
	if got, err := os.Readlink(path); err != nil || got != target {
		t.Errorf("%s: link to %q (%v), want a link to %q", path, got, err, target)
	}
}

// childEnv makes the test binary a child of TestInterruptedWrite (see
// TestMain): "MODE CONTROL_DIR OUT_DIR".
const childEnv = "GPULAB_ATOMICFILE_TEST_CHILD"

func TestMain(m *testing.M) {
	if args := strings.Fields(os.Getenv(childEnv)); len(args) == 3 {
		interruptedChild(args[0], args[1], args[2])
	}
	os.Exit(m.Run())
}

// interruptedChild catches signals as lab does and writes into out, with
// Write or WriteSet (mode), a writer that fills more than its buffer, says
// it is ready (control/ready) and waits for the signal.
func interruptedChild(mode, control, out string) {
	interrupt.Catch("child", os.Stderr)
	hang := func(w *bufio.Writer) error {
		w.Write(make([]byte, 3<<20)) // beyond the buffer: into the temporary file
		os.WriteFile(filepath.Join(control, "ready"), nil, 0o644)
		select {}
	}
	done := func(w *bufio.Writer) error { _, err := w.WriteString("done"); return err }
	switch mode {
	case "Write":
		Write(filepath.Join(out, "a"), hang)
	case "WriteSet":
		WriteSet(File{filepath.Join(out, "a"), done}, File{filepath.Join(out, "b"), hang})
	}
	os.Exit(3) // not reached
}

// TestInterruptedWrite: SIGINT or SIGTERM during a write removes every
// temporary file (of Write, and of each member of a WriteSet) and leaves
// the targets as they were; the process exits with 128 + the signal.
func TestInterruptedWrite(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		sig    syscall.Signal
		status int
	}{
		{"Write", syscall.SIGINT, 130},
		{"WriteSet", syscall.SIGTERM, 143},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			control, out := t.TempDir(), t.TempDir()
			writeFile(t, out, "a", "old")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+tc.mode+" "+control+" "+out)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(control, "ready")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the child did not start writing: %s", stderr.String())
				}
			}
			if temps, _ := filepath.Glob(filepath.Join(out, ".*.tmp-*")); len(temps) == 0 {
				t.Fatalf("no temporary file while writing: %v", dirNames(t, out))
			}
			cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.status {
				t.Errorf("the child ended with %v, want exit status %d; stderr:\n%s", err, tc.status, stderr.String())
			}
			wantFiles(t, out, map[string]string{"a": "old"})
		})
	}
}
