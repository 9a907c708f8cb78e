// Package readlimit reads a whole file that a user names (a config, an
// index, a tokenizer, a notebook, records) up to a limit that the caller
// sets for that kind of file. os.ReadFile allocates what the file's size
// claims, and reads a device or a FIFO until it ends: a sparse file of
// 64 GB, /dev/zero or a pipe that never closes would exhaust memory before
// any parser saw a byte. Here a file over the limit, however its size came
// about, is an error naming it, its size and the limit, and no more than
// limit+1 bytes are ever read.
package readlimit

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadFile returns the contents of the file at path, or an error if they
// are more than limit bytes; what names the kind of file in that error
// ("config.json", "notebook"). A FIFO is opened without waiting for a
// writer: with none, it reads as empty.
func ReadFile(path, what string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, &os.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	}
	if info.Mode().IsRegular() && info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a %s may have", path, info.Size(), limit, what)
	}
	// The size of a regular file sizes the buffer (it was checked above);
	// a device or a FIFO says nothing, so the buffer grows as it reads.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s holds more than the %d bytes a %s may have", path, limit, what)
	}
	return data, nil
}
