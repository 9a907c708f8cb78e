// Package atomicfile writes files so that nobody ever sees half of one:
// the content goes to a temporary file beside the target, which is synced
// and renamed over it only when everything succeeded. A reader, or a crash,
// finds the old file or the whole new one; a failure leaves no temporary
// file behind and the target untouched. WriteSet does the same for several
// files that belong together.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write creates or replaces path with what write puts into the buffered
// writer it is given. The file ends up with mode 0644. A directory at path
// is an error before anything is written. Errors come back as they are;
// callers add their context.
func Write(path string, write func(w *bufio.Writer) error) error {
	if err := notDirectory(path); err != nil {
		return err
	}
	tmp, err := writeTemp(path, write)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteBytes is Write for content already in memory.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// A File is one member of a set for WriteSet: its path and what to write
// into it.
type File struct {
	Path  string
	Write func(w *bufio.Writer) error
}

// WriteSet writes files that belong together (a result and its labels, say)
// so that they appear all or none. Every file is written to a synced
// temporary beside its target before any is renamed, so a failure while
// writing (a full disk, an encoding error, a directory where a file should
// be) leaves every target as it was and no temporary behind. The renames
// that follow are one system call each, not one together: if one of them
// fails, the targets already renamed are put back as they were (an old
// file from a hard link taken before the renames, a new one removed), as
// far as the file system lets WriteSet undo. Two members with one path are
// an error. Errors name the member they are about.
func WriteSet(files ...File) (err error) {
	seen := map[string]bool{}
	for _, f := range files {
		clean := filepath.Clean(f.Path)
		if seen[clean] {
			return fmt.Errorf("%s is named twice in one set of files", f.Path)
		}
		seen[clean] = true
		if err := notDirectory(f.Path); err != nil {
			return err
		}
	}
	temps := make([]string, 0, len(files))
	backups := make([]string, len(files)) // "" where there is no old file to restore
	defer func() {
		for _, tmp := range temps {
			os.Remove(tmp) // those renamed are gone already; their undo is below
		}
		for _, b := range backups {
			if b != "" {
				os.Remove(b)
			}
		}
	}()
	for _, f := range files {
		tmp, err := writeTemp(f.Path, f.Write)
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err) // which member: a writer's error may not say
		}
		temps = append(temps, tmp)
	}
	for i, f := range files {
		if backups[i], err = backup(f.Path); err != nil {
			return err
		}
	}
	for i, f := range files {
		if err := os.Rename(temps[i], f.Path); err != nil {
			return errors.Join(err, undo(files[:i], backups))
		}
	}
	return nil
}

// undo puts back the targets of files, already renamed: each old file from
// its backup, or, where there was none, the new file removed.
func undo(files []File, backups []string) error {
	var errs []error
	for i, f := range files {
		if backups[i] != "" {
			if err := os.Rename(backups[i], f.Path); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", f.Path, err))
			} else {
				backups[i] = ""
			}
		} else if err := os.Remove(f.Path); err != nil {
			errs = append(errs, fmt.Errorf("removing the new %s: %w", f.Path, err))
		}
	}
	return errors.Join(errs...)
}

// backup hard-links the file at path, if there is one, to a new name beside
// it and returns that name ("" if there is no file at path).
func backup(path string) (string, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// link refuses an existing name: reserve a fresh one, then free it.
	f, err := os.CreateTemp(dir, "."+base+".old-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	if err := os.Link(path, name); err != nil {
		return "", fmt.Errorf("keeping the old %s while the set is renamed: %w", path, err)
	}
	return name, nil
}

// notDirectory fails if path names a directory, with an error that says so.
func notDirectory(path string) error {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return &fs.PathError{Op: "write", Path: path, Err: syscall.EISDIR}
	}
	return nil
}

// writeTemp writes a synced temporary file of mode 0644 beside path with
// what write puts into it, and returns its name. On failure it removes the
// temporary.
func writeTemp(path string, write func(w *bufio.Writer) error) (name string, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err = write(w); err != nil {
		return "", err
	}
	if err = w.Flush(); err != nil {
		return "", err
	}
	if err = tmp.Chmod(0o644); err != nil { // CreateTemp makes the file 0600
		return "", err
	}
	if err = tmp.Sync(); err != nil {
		return "", err
	}
	if err = tmp.Close(); err != nil {
		return "", err
	}
	return tmp.Name(), nil
}
