package readlimit

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestReadFile: a file up to the limit is read whole; one past it, a
// sparse file claiming gigabytes, a device that never ends and a
// directory are errors naming the file, and none of them is held in
// memory; a FIFO without a writer reads as empty rather than waiting.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exact := write("exact.json", "0123456789")
	over := write("over.json", "0123456789A")
	sparse := write("sparse.json", "{")
	if err := os.Truncate(sparse, 64<<30); err != nil {
		t.Skipf("no sparse file of 64 GiB here: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want, err string
	}{
		{exact, "0123456789", ""},
		{over, "", over + " is 11 bytes, more than the 10 a test file may have"},
		{sparse, "", sparse + " is 68719476736 bytes, more than the 10 a test file may have"},
		{"/dev/zero", "", "/dev/zero holds more than the 10 bytes a test file may have"},
		{dir, "", "is a directory"},
		{fifo, "", ""},
		{filepath.Join(dir, "absent"), "", "no such file"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		data, err := ReadFile(tc.path, "test file", 10)
		runtime.ReadMemStats(&after)
		switch {
		case tc.err == "" && (err != nil || string(data) != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.path, data, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %q, %v; want an error containing %q", tc.path, data, err, tc.err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: %d bytes allocated", tc.path, grew)
		}
	}
}
