package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
