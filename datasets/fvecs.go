package datasets

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// An .fvecs file (the TEXMEX format of the ANN benchmarks such as SIFT1M and
// GIST1M) is a sequence of vectors, each an int32 dimension d followed by d
// float32 values, all little-endian. There is no header: the number of
// vectors follows from the file size.

// ReadFvecs reads the .fvecs file at path into row-major data of rows
// vectors of dim elements. Every vector must have the same dimension d > 0;
// a vector with another dimension, or one cut short by the end of the file,
// is an error that names the vector's index and byte offset. The file's
// size sizes the data, so it is checked against the host's memory first (a
// sparse file has its size without the disk behind it).
func ReadFvecs(path string) (data []float32, rows, dim int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return nil, 0, 0, fileErr(path, "empty file, no vectors")
	}
	r := bufio.NewReaderSize(f, int(min(size, chunkBytes))) // no bigger than the file
	var head [4]byte
	var buf []byte
	var off int64 // where vector number rows starts
	truncated := func(need int64) error {
		return fileErr(path, "vector %d at byte %d is truncated: it needs %d bytes but the file has %d left",
			rows, off, need, size-off)
	}
	for ; off < size; rows++ {
		if size-off < 4 {
			return nil, 0, 0, truncated(4)
		}
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return nil, 0, 0, fmt.Errorf("datasets: %s: %w", path, err)
		}
		d := int(int32(binary.LittleEndian.Uint32(head[:])))
		switch {
		case rows == 0 && d <= 0:
			return nil, 0, 0, fileErr(path, "vector 0 at byte 0 has dimension %d, want > 0", d)
		case rows > 0 && d != dim:
			return nil, 0, 0, fileErr(path, "vector %d at byte %d has dimension %d, but vector 0 has %d", rows, off, d, dim)
		}
		need := int64(4 + 4*d)
		if size-off < need {
			return nil, 0, 0, truncated(need)
		}
		if rows == 0 { // size ≥ need, so these allocations are bounded by the file, and by the host
			dim = d
			vectors := size / need // room for every whole vector
			if err := checkHostMemory(path, fmt.Sprintf("room for %d vectors of %d float32", vectors, d), 4*float64(vectors)*float64(d)); err != nil {
				return nil, 0, 0, err
			}
			data = make([]float32, 0, vectors*int64(d))
			buf = make([]byte, 4*d)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, 0, 0, fmt.Errorf("datasets: %s: %w", path, err)
		}
		data = data[:len(data)+d]
		toFloat32(data[len(data)-d:], buf, "<f4") // float32 to float32: nothing out of range
		off += need
	}
	return data, rows, dim, nil
}

// WriteFvecs writes data, row-major rows×dim with rows, dim > 0, to path as
// an .fvecs file. The file is written under a temporary name and renamed
// into place, so that path never holds half a file.
func WriteFvecs(path string, data []float32, rows, dim int) error {
	if rows <= 0 || dim <= 0 || dim > math.MaxInt32 || len(data) != rows*dim {
		return fmt.Errorf("datasets: write %s: want rows, dim > 0 and len(data) = rows × dim, got %d × %d and len %d",
			path, rows, dim, len(data))
	}
	return writeAtomic(path, func(w *bufio.Writer) error {
		buf := make([]byte, 0, 4+4*dim)
		for i := range rows {
			buf = binary.LittleEndian.AppendUint32(buf[:0], uint32(dim))
			buf, _ = binary.Append(buf, binary.LittleEndian, data[i*dim:(i+1)*dim]) // cannot fail for []float32
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
}
