package datasets

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gpulab/engine"
	"gpulab/engine/atomicfile"
)

// A .npy file (NumPy's format, see numpy.lib.format) is
//
//	"\x93NUMPY"  magic
//	major, minor one byte each: 1.0 or 2.0
//	HEADER_LEN   uint16 (1.0) or uint32 (2.0), little-endian
//	header       HEADER_LEN bytes of ASCII: a Python dict literal such as
//	             {'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }
//	             padded with spaces and ending in '\n'
//	data         the array's elements, back to back
//
// NumPy pads the header so that the data starts at a multiple of 64 bytes,
// which lets the data be memory-mapped and read aligned.

const (
	npyMagic = "\x93NUMPY"
	npyAlign = 64
	// npyGrowthDigits is NumPy's GROWTH_AXIS_MAX_DIGITS: np.save leaves room
	// in the header for the first dimension to grow to 21 digits, so that the
	// header can be rewritten in place when rows are appended.
	npyGrowthDigits = 21
	// npyMaxHeader bounds the header we are willing to read; NumPy refuses
	// headers over 10000 bytes by default.
	npyMaxHeader = 1 << 16
	// chunkBytes is how much data the readers and writers hold at a time.
	chunkBytes = 1 << 20
)

// npyItemSize is the element size of each dtype the readers understand.
var npyItemSize = map[string]int{"<f4": 4, "<f8": 8, "<i4": 4}

// NPYFile is an open .npy file holding a 1-D or 2-D array in C (row-major)
// order, little-endian, of dtype float32, float64 or int32. It reads rows on
// demand, so that files larger than memory can be processed in batches.
//
// Versions 1.0 and 2.0 of the format are read.
type NPYFile struct {
	Path  string // the file's path, as given to OpenNPY
	DType string // the NumPy dtype: "<f4", "<f8" or "<i4"
	// Rows and Cols are the array's shape; a 1-D array of n elements has
	// Rows = n and Cols = 1.
	Rows, Cols int

	f        *os.File
	shape    []int // as in the header: one or two dimensions
	itemSize int   // bytes per element
	offset   int64 // where the data starts
}

// OpenNPY opens the .npy file at path and validates its header: the magic
// and version, the dtype (<f4, <f8 or <i4), C order and a 1-D or 2-D shape.
// It also checks that the file holds exactly the shape's worth of data, so
// that a truncated or over-long file is reported here and not by a later
// read. The caller must Close the file.
func OpenNPY(path string) (*NPYFile, error) {
	f, err := openNPY(path)
	if err != nil {
		return nil, err
	}
	if len(f.shape) > 2 {
		f.Close()
		return nil, fileErr(path, "shape %s is %d-d; only 1-D and 2-D arrays are supported", npyShape(f.shape), len(f.shape))
	}
	return f, nil
}

// openNPY is OpenNPY for arrays of any rank from 1 up: Rows is the first
// dimension and Cols the product of the others.
func openNPY(path string) (*NPYFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	f := &NPYFile{Path: path, f: fh}
	if err := f.readHeader(); err != nil {
		fh.Close()
		return nil, err
	}
	return f, nil
}

// readHeader parses the prefix and header dict of f and sets its exported
// fields, shape, itemSize and offset.
func (f *NPYFile) readHeader() error {
	st, err := f.f.Stat()
	if err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	size := st.Size()
	var pre [12]byte
	n, err := f.f.ReadAt(pre[:], 0)
	if err != nil && err != io.EOF { // a short file is judged below
		return fmt.Errorf("datasets: %s: %w", f.Path, err)
	}
	if n < len(npyMagic) || string(pre[:len(npyMagic)]) != npyMagic {
		return fileErr(f.Path, "not a .npy file: bad magic, it does not start with %q", npyMagic)
	}
	// The prefix is the magic, two version bytes and the header length:
	// a uint16 in version 1.0, a uint32 in version 2.0.
	prefix := map[byte]int{1: 10, 2: 12}[pre[6]]
	switch {
	case n < 8 || n < prefix:
		return fileErr(f.Path, "the file ends inside the .npy prefix, after %d bytes", n)
	case prefix == 0 || pre[7] != 0:
		return fileErr(f.Path, "unsupported .npy version %d.%d (want 1.0 or 2.0)", pre[6], pre[7])
	}
	start, hlen := int64(prefix), int64(binary.LittleEndian.Uint32(pre[8:]))
	if pre[6] == 1 {
		hlen = int64(binary.LittleEndian.Uint16(pre[8:]))
	}
	if start+hlen > size {
		return fileErr(f.Path, "header length %d runs past the end of the file (%d bytes)", hlen, size)
	}
	if hlen > npyMaxHeader {
		return fileErr(f.Path, "header length %d is implausibly large (over %d)", hlen, npyMaxHeader)
	}
	h := make([]byte, hlen)
	if _, err := f.f.ReadAt(h, start); err != nil {
		return fmt.Errorf("datasets: %s: reading the header: %w", f.Path, err)
	}
	if err := f.parseHeader(string(h)); err != nil {
		return fileErr(f.Path, "%v", err)
	}
	f.offset = start + hlen
	// The product of the dimensions must fit even where a zero makes the
	// array empty: Cols, the product of all but the first, is used to size
	// rows.
	span := int64(f.itemSize) // the bytes of the shape with its zeros read as ones
	for _, d := range f.shape {
		if d > 0 && span > math.MaxInt64/int64(d) {
			return fileErr(f.Path, "shape %s is too large: its elements overflow a 64-bit count", npyShape(f.shape))
		}
		span *= int64(max(d, 1))
	}
	want := span
	if slices.Contains(f.shape, 0) {
		want = 0
	}
	if got := size - f.offset; got != want {
		return fileErr(f.Path, "header says shape %s = %d bytes of data but the file has %d",
			npyShape(f.shape), want, got)
	}
	return nil
}

// npyKeys are the keys of a .npy header's dict, all required.
var npyKeys = []string{"descr", "fortran_order", "shape"}

// parseHeader interprets the header dict and sets DType, Rows, Cols, shape
// and itemSize. The dict must hold the three keys of npyKeys and no other.
func (f *NPYFile) parseHeader(h string) error {
	d, err := parsePyDict(h)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(d)) {
		if !slices.Contains(npyKeys, k) {
			return fmt.Errorf("header has the key '%s': a .npy header holds 'descr', 'fortran_order' and 'shape' only", k)
		}
	}
	for _, k := range npyKeys {
		if _, ok := d[k]; !ok {
			return fmt.Errorf("header has no '%s': %q", k, strings.TrimSpace(h))
		}
	}
	descr := d["descr"]
	if len(descr) < 2 || (descr[0] != '\'' && descr[0] != '"') || descr[len(descr)-1] != descr[0] {
		return fmt.Errorf("descr %s is not a simple dtype (structured dtypes are not supported)", descr)
	}
	f.DType = descr[1 : len(descr)-1]
	switch f.itemSize = npyItemSize[f.DType]; {
	case f.itemSize > 0:
	case strings.HasPrefix(f.DType, ">"):
		return fmt.Errorf("big-endian dtype '%s' is not supported (want little-endian '<f4', '<f8' or '<i4')", f.DType)
	default:
		return fmt.Errorf("dtype '%s' is not supported (want '<f4', '<f8' or '<i4')", f.DType)
	}
	switch d["fortran_order"] {
	case "False":
	case "True":
		return fmt.Errorf("fortran_order is True: column-major arrays are not supported; save np.ascontiguousarray(arr)")
	default:
		return fmt.Errorf("fortran_order %q is not True or False", d["fortran_order"])
	}
	if f.shape, err = parsePyShape(d["shape"]); err != nil {
		return err
	}
	if len(f.shape) == 0 {
		return fmt.Errorf("shape () is 0-d; want an array of one dimension or more")
	}
	f.Rows, f.Cols = f.shape[0], 1
	for _, d := range f.shape[1:] {
		f.Cols *= d
	}
	return nil
}

// parsePyDict splits a Python dict literal with string keys into its keys
// and the source text of its values. Values may be strings, names such as
// True, or tuples and lists, whose commas do not end the value. A key given
// twice is an error, and so is a value whose quotes or brackets do not
// balance.
func parsePyDict(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, fmt.Errorf("header %q is not a Python dict", s)
	}
	d := map[string]string{}
	for rest := s[1 : len(s)-1]; ; {
		if rest = strings.TrimSpace(rest); rest == "" {
			return d, nil
		}
		q := rest[0]
		end := strings.IndexByte(rest[1:], q) + 1
		if (q != '\'' && q != '"') || end == 0 {
			return nil, fmt.Errorf("header %q: expected a quoted key at %q", s, rest)
		}
		key := rest[1:end]
		rest = strings.TrimSpace(rest[end+1:])
		if !strings.HasPrefix(rest, ":") {
			return nil, fmt.Errorf("header %q: no ':' after key '%s'", s, key)
		}
		if _, twice := d[key]; twice {
			return nil, fmt.Errorf("header gives '%s' twice", key)
		}
		rest = rest[1:]
		n, err := pyValueEnd(rest)
		if err != nil {
			return nil, fmt.Errorf("header %q: the value of '%s' %v", s, key, err)
		}
		d[key] = strings.TrimSpace(rest[:n])
		rest = strings.TrimPrefix(rest[n:], ",")
	}
}

// pyValueEnd returns the index of the comma that ends the Python value at the
// start of s, or len(s): the first comma outside quotes and brackets. The
// error says where the quotes or brackets of the value do not balance.
func pyValueEnd(s string) (int, error) {
	var open []byte // the brackets open at i, innermost last
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			open = append(open, c)
		case c == ')' || c == ']' || c == '}':
			if len(open) == 0 {
				return 0, fmt.Errorf("has a '%c' that closes nothing", c)
			}
			if o := open[len(open)-1]; strings.IndexByte("([{", o) != strings.IndexByte(")]}", c) {
				return 0, fmt.Errorf("closes '%c' with '%c'", o, c)
			}
			open = open[:len(open)-1]
		case c == ',' && len(open) == 0:
			return i, nil
		}
	}
	switch {
	case quote != 0:
		return 0, fmt.Errorf("opens a %c quote and never closes it", quote)
	case len(open) > 0:
		return 0, fmt.Errorf("opens '%c' and never closes it", open[len(open)-1])
	}
	return len(s), nil
}

// parsePyShape parses a Python tuple of non-negative integers: "()", "(3,)"
// or "(3, 2)".
func parsePyShape(s string) ([]int, error) {
	if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' {
		return nil, fmt.Errorf("shape %s is not a tuple", s)
	}
	parts := strings.Split(s[1:len(s)-1], ",")
	if last := len(parts) - 1; strings.TrimSpace(parts[last]) == "" {
		parts = parts[:last] // "()" and the trailing comma of "(3,)"
	}
	shape := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("shape %s: %q is not a dimension", s, p)
		}
		shape[i] = v
	}
	return shape, nil
}

// npyShape formats shape as Python writes a tuple: "()", "(3,)", "(3, 2)".
func npyShape(shape []int) string {
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = strconv.Itoa(d)
	}
	if len(s) == 1 {
		return "(" + s[0] + ",)"
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// ReadRows reads rows [start, start+n) into dst[:n*Cols], converting
// float64 and int32 elements to float32. It reads with ReadAt, so calls may
// run concurrently, each with its own dst.
func (f *NPYFile) ReadRows(start, n int, dst []float32) error {
	if start < 0 || n < 0 || start > f.Rows-n {
		return fileErr(f.Path, "rows [%d, %d) out of range: the file has %d rows", start, start+n, f.Rows)
	}
	if len(dst) < n*f.Cols {
		return fileErr(f.Path, "dst has %d elements, want %d rows × %d cols = %d", len(dst), n, f.Cols, n*f.Cols)
	}
	first := start * f.Cols
	return f.readData(first, n*f.Cols, func(b []byte, at int) error {
		if i := toFloat32(dst[at:], b, f.DType); i >= 0 {
			e := first + at + i
			return fileErr(f.Path, "row %d, column %d: %g is beyond float32's range (it would become infinite)",
				e/f.Cols, e%f.Cols, math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
		return nil
	})
}

// readData reads count elements starting at element first, chunkBytes at a
// time, and hands each chunk to use with the index (counted from first) of
// its first element; an error from use stops the reading.
func (f *NPYFile) readData(first, count int, use func(b []byte, at int) error) error {
	buf := make([]byte, min(count*f.itemSize, chunkBytes))
	for at := 0; at < count; {
		k := min(count-at, len(buf)/f.itemSize)
		b := buf[:k*f.itemSize]
		if _, err := f.f.ReadAt(b, f.offset+int64(first+at)*int64(f.itemSize)); err != nil {
			return fmt.Errorf("datasets: %s: %w", f.Path, err)
		}
		if err := use(b, at); err != nil {
			return err
		}
		at += k
	}
	return nil
}

// toFloat32 decodes the little-endian elements of dtype in src into dst. It
// returns the index of the first float64 that is finite but beyond
// float32's range, which would become infinite (it stops there), or -1.
func toFloat32(dst []float32, src []byte, dtype string) int {
	le := binary.LittleEndian
	switch dtype {
	case "<f4":
		for i := range len(src) / 4 {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case "<f8":
		for i := range len(src) / 8 {
			v := math.Float64frombits(le.Uint64(src[8*i:]))
			if dst[i] = float32(v); math.IsInf(float64(dst[i]), 0) && !math.IsInf(v, 0) {
				return i
			}
		}
	case "<i4":
		for i := range len(src) / 4 {
			dst[i] = float32(int32(le.Uint32(src[4*i:])))
		}
	}
	return -1
}

// checkHostMemory refuses, with an *engine.MemoryError, reading all of f's
// values as elements of a type of size bytes: a sparse file has the size
// its header claims without the disk behind it, so only the host's memory
// can bound what the header sizes.
func (f *NPYFile) checkHostMemory(typ string, size int) error {
	bytes := float64(size)
	for _, d := range f.shape {
		bytes *= float64(d)
	}
	return checkHostMemory(f.Path, fmt.Sprintf("its %s values as %s", npyShape(f.shape), typ), bytes)
}

// Close closes the file.
func (f *NPYFile) Close() error {
	return f.f.Close()
}

// ReadNPYFloat32 reads a whole 1-D or 2-D .npy file of float32, float64 or
// int32 as row-major float32 data of rows×cols; a 1-D array has cols = 1.
func ReadNPYFloat32(path string) (data []float32, rows, cols int, err error) {
	f, err := OpenNPY(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	if err := f.checkHostMemory("float32", 4); err != nil {
		return nil, 0, 0, err
	}
	data = make([]float32, f.Rows*f.Cols)
	if err := f.ReadRows(0, f.Rows, data); err != nil {
		return nil, 0, 0, err
	}
	return data, f.Rows, f.Cols, nil
}

// ReadNPYTensor reads a whole .npy file of float32, float64 or int32 and
// any rank from 1 up, such as logits [batch, seq, vocab], as row-major
// float32 data and its shape.
func ReadNPYTensor(path string) (data []float32, shape []int, err error) {
	f, err := openNPY(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if err := f.checkHostMemory("float32", 4); err != nil {
		return nil, nil, err
	}
	data = make([]float32, f.Rows*f.Cols)
	if err := f.ReadRows(0, f.Rows, data); err != nil {
		return nil, nil, err
	}
	return data, f.shape, nil
}

// WriteNPYTensor writes data, row-major of the given shape, to path as a
// '<f4' .npy file, through a temporary file as WriteNPYFloat32 does.
func WriteNPYTensor(path string, data []float32, shape []int) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			n = -1
			break
		}
		n *= d
	}
	if len(shape) == 0 || n != len(data) {
		return fmt.Errorf("datasets: write %s: len(data) = %d does not fit the shape %v", path, len(data), shape)
	}
	return writeNPY(path, "<f4", shape, data)
}

// ReadNPYInt32 reads a 1-D .npy file of int32 ('<i4'), such as class labels.
// Other dtypes and shapes are errors, as converting them could lose values.
func ReadNPYInt32(path string) ([]int32, error) {
	f, err := OpenNPY(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.DType != "<i4" || len(f.shape) != 1 {
		return nil, fileErr(path, "want a 1-D '<i4' array, got '%s' with shape %s", f.DType, npyShape(f.shape))
	}
	if err := f.checkHostMemory("int32", 4); err != nil {
		return nil, err
	}
	out := make([]int32, f.Rows)
	err = f.readData(0, f.Rows, func(b []byte, at int) error {
		for i := range len(b) / 4 {
			out[at+i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WriteNPYFloat32 writes data, row-major rows×cols, to path as a 2-D '<f4'
// .npy file (version 1.0, with the header np.save writes). The file is
// written under a temporary name and renamed into place, so that path never
// holds half a file.
func WriteNPYFloat32(path string, data []float32, rows, cols int) error {
	if err := fitsRowsCols(len(data), rows, cols); err != nil {
		return fmt.Errorf("datasets: write %s: %v", path, err)
	}
	return writeNPY(path, "<f4", []int{rows, cols}, data)
}

// EncodeNPYFloat32 writes data, row-major rows×cols, to w as WriteNPYFloat32
// writes its file; with atomicfile.WriteSet, several arrays are written as
// a set.
func EncodeNPYFloat32(w io.Writer, data []float32, rows, cols int) error {
	if err := fitsRowsCols(len(data), rows, cols); err != nil {
		return fmt.Errorf("datasets: %v", err)
	}
	return encodeNPY(w, "<f4", []int{rows, cols}, data)
}

// fitsRowsCols checks that n values make a rows×cols array.
func fitsRowsCols(n, rows, cols int) error {
	if rows < 0 || cols < 0 || n != rows*cols {
		return fmt.Errorf("len(data) = %d, want rows × cols = %d × %d", n, rows, cols)
	}
	return nil
}

// WriteNPYInt32 writes data to path as a 1-D '<i4' .npy file (version 1.0),
// through a temporary file as WriteNPYFloat32 does.
func WriteNPYInt32(path string, data []int32) error {
	return writeNPY(path, "<i4", []int{len(data)}, data)
}

// EncodeNPYInt32 writes data to w as WriteNPYInt32 writes its file.
func EncodeNPYInt32(w io.Writer, data []int32) error {
	return encodeNPY(w, "<i4", []int{len(data)}, data)
}

// writeNPY writes a version 1.0 .npy file of the given dtype and shape.
func writeNPY[T float32 | int32](path, descr string, shape []int, data []T) error {
	return writeAtomic(path, func(w *bufio.Writer) error { return encodeNPY(w, descr, shape, data) })
}

// encodeNPY writes a version 1.0 .npy of the given dtype and shape to w.
func encodeNPY[T float32 | int32](w io.Writer, descr string, shape []int, data []T) error {
	if _, err := w.Write(npyHeader(descr, shape)); err != nil {
		return err
	}
	var buf []byte
	for len(data) > 0 {
		k := min(len(data), chunkBytes/4)
		buf, _ = binary.Append(buf[:0], binary.LittleEndian, data[:k]) // cannot fail for []float32, []int32
		if _, err := w.Write(buf); err != nil {
			return err
		}
		data = data[k:]
	}
	return nil
}

// npyHeader returns the prefix and header of a version 1.0 .npy file exactly
// as NumPy's np.save writes them: the dict with sorted keys and a trailing
// ", ", room for the first dimension to grow, then spaces and '\n' up to a
// multiple of 64 bytes (a full 64 spaces when already aligned, as NumPy does).
func npyHeader(descr string, shape []int) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, npyShape(shape))
	dict += strings.Repeat(" ", npyGrowthDigits-len(strconv.Itoa(shape[0])))
	pad := npyAlign - (len(npyMagic)+4+len(dict)+1)%npyAlign
	h := binary.LittleEndian.AppendUint16([]byte(npyMagic+"\x01\x00"), uint16(len(dict)+pad+1))
	return append(append(append(h, dict...), strings.Repeat(" ", pad)...), '\n')
}

// writeAtomic writes path with atomicfile.Write, its errors naming the file.
func writeAtomic(path string, write func(w *bufio.Writer) error) error {
	if err := atomicfile.Write(path, write); err != nil {
		return fmt.Errorf("datasets: write %s: %w", path, err)
	}
	return nil
}

// checkHostMemory refuses, with an *engine.MemoryError that names the file,
// reading path into bytes of host memory that hold what
// (engine.CheckHostMemory). The readers call it before they allocate what a
// file's header, or its size, sizes.
func checkHostMemory(path, what string, bytes float64) error {
	return engine.CheckHostMemory("datasets: reading "+path, what, engine.BytesOf(bytes))
}

// fileErr returns an error that names the file and what is wrong with it.
func fileErr(path, format string, args ...any) error {
	return fmt.Errorf("datasets: %s: %s", path, fmt.Sprintf(format, args...))
}
