// Package atomicfile writes files so that nobody ever sees half of one:
// the content goes to a temporary file beside the target, which is synced
// and renamed over it only when everything succeeded. A reader, or a crash,
// finds the old file or the whole new one; a failure leaves no temporary
// file behind and the target untouched. WriteSet does the same for several
// files that belong together.
//
// What the path names decides how it is written:
//   - nothing, or a regular file: a temporary file renamed over it, as
//     above; the file ends up with mode 0644.
//   - a symbolic link: followed, through a chain of links and to a target
//     that does not exist yet; the file it finally names is written as
//     above, its temporary beside that file, and the link is kept.
//   - a character device (/dev/null, /dev/full, a terminal) or a FIFO:
//     written in place, opened for writing without truncating or creating
//     it; renaming over it would replace the device node or the pipe with
//     a regular file. Such a write is not atomic (a FIFO's reader has seen
//     what came before a failure), and its errors are the write's: /dev/full
//     fails it with "no space left on device".
//   - a directory, a socket, a block device, anything else: refused with an
//     error naming the path, before anything is written.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"gpulab/engine/interrupt"
)

// Write creates or replaces path with what write puts into the buffered
// writer it is given (see the package documentation for links, devices and
// FIFOs). A directory at path is an error before anything is written.
// Errors come back as they are; callers add their context.
func Write(path string, write func(w *bufio.Writer) error) error {
	t, err := resolve(path)
	if err != nil {
		return err
	}
	if t.inPlace {
		return writeInPlace(t, write)
	}
	tmp, err := writeTemp(t.real, write)
	if err != nil {
		return err
	}
	defer tmp.remove() // if the rename failed
	return tmp.renameTo(t.real)
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
// be) leaves every target as it was and no temporary behind. Members
// written in place (a character device, a FIFO) are written next, once
// every temporary is ready and before any rename: their failure leaves the
// other targets as they were, but what they took is not taken back. The
// renames that follow are one system call each, not one together: if one
// of them fails, the targets already renamed are put back as they were (an
// old file from a hard link taken before the renames, a new one removed),
// as far as the file system lets WriteSet undo. Two members that name one
// file (through a link, say) are an error. Errors name the member they are
// about.
func WriteSet(files ...File) (err error) {
	targets := make([]target, len(files))
	seen := map[string]string{} // real path -> the member's path
	for i, f := range files {
		if targets[i], err = resolve(f.Path); err != nil {
			return err
		}
		real := filepath.Clean(targets[i].real)
		if prev, dup := seen[real]; dup {
			if filepath.Clean(prev) == filepath.Clean(f.Path) {
				return fmt.Errorf("%s is named twice in one set of files", f.Path)
			}
			return fmt.Errorf("%s and %s are one file (%s), named twice in one set of files", prev, f.Path, real)
		}
		seen[real] = f.Path
	}
	temps := make([]temp, len(files))   // none for a member written in place
	backups := make([]temp, len(files)) // none where there is no old file to restore
	defer func() {
		for i := range files {
			temps[i].remove() // those renamed are no longer temporaries; their undo is below
			backups[i].remove()
		}
	}()
	for i, f := range files {
		if targets[i].inPlace {
			continue
		}
		if temps[i], err = writeTemp(targets[i].real, f.Write); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err) // which member: a writer's error may not say
		}
	}
	for i, f := range files {
		if !targets[i].inPlace {
			continue
		}
		if err := writeInPlace(targets[i], f.Write); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
	}
	for i, t := range targets {
		if !t.inPlace {
			if backups[i], err = backup(t.real); err != nil {
				return err
			}
		}
	}
	var renamed []int
	for i, t := range targets {
		if t.inPlace {
			continue
		}
		if err := temps[i].renameTo(t.real); err != nil {
			return errors.Join(err, undo(targets, renamed, backups))
		}
		renamed = append(renamed, i)
	}
	return nil
}

// target is where the content for a path goes.
type target struct {
	path    string // as the caller named it, for errors
	real    string // path with its symbolic links followed: what is replaced or written
	inPlace bool   // a character device or a FIFO: written where it is, never replaced
}

// maxLinks bounds a chain of symbolic links, as Linux does.
const maxLinks = 40

// resolve follows the symbolic links of path and says how its content is
// written, or why it cannot be.
func resolve(path string) (target, error) {
	t := target{path: path, real: path}
	for links := 0; ; links++ {
		info, err := os.Lstat(t.real)
		if errors.Is(err, fs.ErrNotExist) {
			return t, nil // created; a missing directory is CreateTemp's error
		}
		if err != nil {
			return target{}, err
		}
		mode := info.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			if links == maxLinks {
				return target{}, &fs.PathError{Op: "write", Path: path, Err: syscall.ELOOP}
			}
			link, err := os.Readlink(t.real)
			if err != nil {
				return target{}, err
			}
			if !filepath.IsAbs(link) {
				dir, _ := filepath.Split(t.real) // not cleaned: "dir/.." means what the kernel says
				link = dir + link
			}
			t.real = link
		case mode.IsRegular():
			return t, nil
		case mode.IsDir():
			return target{}, &fs.PathError{Op: "write", Path: path, Err: syscall.EISDIR}
		case writableInPlace(mode):
			t.inPlace = true
			return t, nil
		default:
			return target{}, &fs.PathError{Op: "write", Path: path, Err: notWritable(mode)}
		}
	}
}

// writableInPlace reports whether a file of mode is written where it is:
// a character device or a FIFO.
func writableInPlace(mode fs.FileMode) bool {
	return mode&fs.ModeCharDevice != 0 || mode&fs.ModeNamedPipe != 0
}

// notWritable says why a file of mode is neither replaced nor written.
func notWritable(mode fs.FileMode) error {
	kind := fmt.Sprintf("a file of mode %v", mode)
	switch {
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a block device"
	}
	return fmt.Errorf("is %s: outputs go to regular files (replaced whole), character devices such as /dev/null and FIFOs (written in place), nothing else", kind)
}

// writeInPlace writes into the character device or FIFO of t, opened for
// writing only (a FIFO's open waits for its reader). A file that is no
// longer one of those by the time it is open is left untouched.
func writeInPlace(t target, write func(w *bufio.Writer) error) error {
	f, err := os.OpenFile(t.real, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !writableInPlace(info.Mode()) {
		return &fs.PathError{Op: "write", Path: t.path, Err: fmt.Errorf("%s changed into a file of mode %v while it was opened", t.real, info.Mode())}
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := write(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// undo puts back the targets of the members renamed: each old file from
// its backup, or, where there was none, the new file removed.
func undo(targets []target, renamed []int, backups []temp) error {
	var errs []error
	for _, i := range renamed {
		t := targets[i]
		if backups[i].name != "" {
			if err := backups[i].renameTo(t.real); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", t.path, err))
			}
		} else if err := os.Remove(t.real); err != nil {
			errs = append(errs, fmt.Errorf("removing the new %s: %w", t.path, err))
		}
	}
	return errors.Join(errs...)
}

// A temp is a file of this package's own beside a target: a temporary
// file or a backup. It is registered with package interrupt while it
// exists, so that a SIGINT or SIGTERM that ends the command removes it.
type temp struct {
	name       string // "" for none
	unregister func()
}

// createTemp creates a new empty file beside path, named "." + path's base
// + suffix with a random part for "*" (as os.CreateTemp), open.
func createTemp(path, suffix string) (*os.File, temp, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var f *os.File
	unregister, err := interrupt.Register(func() (func(), error) {
		var err error
		if f, err = os.CreateTemp(dir, "."+base+suffix); err != nil {
			return nil, err
		}
		name := f.Name()
		return func() { os.Remove(name) }, nil
	})
	if err != nil {
		return nil, temp{}, err
	}
	return f, temp{name: f.Name(), unregister: unregister}, nil
}

// remove removes the file, if there is one, and its registration.
func (t *temp) remove() {
	if t.name != "" {
		os.Remove(t.name)
		t.forget()
	}
}

// renameTo renames the file to path; it is no longer this package's.
func (t *temp) renameTo(path string) error {
	if err := os.Rename(t.name, path); err != nil {
		return err
	}
	t.forget()
	return nil
}

// forget ends the registration of a file that is gone or no longer ours.
func (t *temp) forget() {
	t.unregister()
	*t = temp{}
}

// backup hard-links the file at path, if there is one, to a new name beside
// it and returns that name (none if there is no file at path).
func backup(path string) (temp, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return temp{}, nil
	}
	// link refuses an existing name: reserve a fresh one, then free it.
	f, b, err := createTemp(path, ".old-*")
	if err != nil {
		return temp{}, err
	}
	f.Close()
	os.Remove(b.name)
	if err := os.Link(path, b.name); err != nil {
		b.forget()
		return temp{}, fmt.Errorf("keeping the old %s while the set is renamed: %w", path, err)
	}
	return b, nil
}

// writeTemp writes a synced temporary file of mode 0644 beside path with
// what write puts into it. On failure it removes the temporary.
func writeTemp(path string, write func(w *bufio.Writer) error) (temp, error) {
	f, t, err := createTemp(path, ".tmp-*")
	if err != nil {
		return temp{}, err
	}
	if err := fill(f, write); err != nil {
		f.Close()
		t.remove()
		return temp{}, err
	}
	return t, nil
}

// fill writes into f what write puts into it, makes it mode 0644, syncs
// and closes it.
func fill(f *os.File, write func(w *bufio.Writer) error) error {
	w := bufio.NewWriterSize(f, 1<<20)
	if err := write(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp makes the file 0600
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
