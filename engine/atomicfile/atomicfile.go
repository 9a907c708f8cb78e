// Package atomicfile writes files so that nobody ever sees half of one:
// the content goes to a temporary file beside the target, which is synced
// and renamed over it only when everything succeeded. A reader, or a crash,
// finds the old file or the whole new one; a failure leaves no temporary
// file behind and the target untouched.
package atomicfile

import (
	"bufio"
	"os"
	"path/filepath"
)

// Write creates or replaces path with what write puts into the buffered
// writer it is given. The file ends up with mode 0644. Errors come back as
// they are; callers add their context.
func Write(path string, write func(w *bufio.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err = write(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil { // CreateTemp makes the file 0600
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteBytes is Write for content already in memory.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
