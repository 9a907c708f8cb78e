package lfm2

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"gpulab/engine/atomicfile"
	"gpulab/engine/readlimit"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// A .safetensors file (Hugging Face's format) is
//
//	N       uint64, little-endian: the header's length
//	header  N bytes of JSON: {"name": {"dtype": "BF16", "shape": [2048, 64],
//	        "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
//	data    the tensors' bytes, little-endian and row-major; each tensor's
//	        offsets count from the start of the data
//
// Writers pad the header with spaces to a multiple of 8 bytes so that the
// data can be mapped and read aligned. A sharded checkpoint splits the
// tensors over several such files and lists which holds what in
// model.safetensors.index.json: {"weight_map": {"name": "shard file"}}.

// itemSize is the bytes per element of each dtype this package reads.
var itemSize = map[string]int{"F32": 4, "BF16": 2, "F16": 2}

// Tensor is one tensor of an open safetensors file. Its data is the file's
// memory: valid until the file is closed.
type Tensor struct {
	Name  string
	DType string // "F32", "BF16" or "F16"
	Shape []int  // row-major; [] is a scalar
	data  []byte
}

// Len returns the number of elements: the product of Shape.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes returns the tensor's raw little-endian data, mapped read-only from
// the file: writing to it faults.
func (t *Tensor) Bytes() []byte { return t.data }

// Float32 converts the tensor to a new float32 slice.
func (t *Tensor) Float32() []float32 {
	out := make([]float32, t.Len())
	b := t.data
	switch t.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	case "F16":
		for i := range out {
			out[i] = f16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	}
	return out
}

// f16ToF32 widens an IEEE half: 1 sign, 5 exponent (bias 15) and 10
// mantissa bits. Every half is exactly a float32.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp, mant := uint32(h>>10&0x1f), uint32(h&0x3ff)
	switch exp {
	case 0: // zero or subnormal: mant × 2^-24
		f := float32(mant) / (1 << 24)
		return math.Float32frombits(math.Float32bits(f) | sign)
	case 0x1f: // inf or nan, keeping the payload
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// f32ToBF16 keeps the top 16 bits of f, rounded to nearest even.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if math.IsNaN(float64(f)) { // nan: keep it a (quiet) nan, which rounding could turn into inf
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b >> 16 & 1)) >> 16)
}

// f32ToF16 narrows f to an IEEE half, rounded to nearest even; too large
// becomes inf, too small a subnormal or zero.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp, mant := int(b>>23&0xff), b&0x7fffff
	e := exp - 127 + 15 // the half's biased exponent
	switch {
	case exp == 0xff && mant != 0:
		return sign | 0x7e00
	case e >= 0x1f: // includes inf
		return sign | 0x7c00
	case e < -10: // below half the smallest subnormal
		return sign
	}
	// Keep the top bits of the significand m that fit, and round on the rest;
	// a carry out of the mantissa correctly bumps the exponent (up to inf).
	m, shift, k := mant, uint32(13), uint32(e)<<10
	if e <= 0 { // subnormal: the implicit 1 becomes explicit
		m, shift, k = mant|0x800000, uint32(14-e), 0
	}
	k += m >> shift
	rem, half := m&(1<<shift-1), uint32(1)<<(shift-1)
	if rem > half || rem == half && k&1 == 1 {
		k++
	}
	return sign | uint16(k)
}

// File is an open, memory-mapped safetensors file.
type File struct {
	Path     string
	Tensors  map[string]*Tensor
	Metadata map[string]string // the header's __metadata__, if any
	mem      []byte
}

// headerEntry is one tensor's header entry.
type headerEntry struct {
	DType   string  `json:"dtype"`
	Shape   []int   `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// OpenSafetensors maps the file at path read-only and validates its header:
// every tensor has a known dtype, a non-negative shape, and data_offsets
// inside the data spanning exactly its shape's bytes; and the tensors tile
// the data, as Hugging Face's safetensors requires: no two share a byte
// (weights aliased) and no byte is left to none (a gap, or bytes after the
// last). The caller must Close the file, after which its tensors' data is
// gone.
func OpenSafetensors(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	defer fh.Close() // the mapping outlives the descriptor
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("lfm2: %s: %d bytes is too short for the 8-byte header length", path, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("lfm2: %s: %d bytes is too large to map", path, size)
	}
	// The header's length is checked before the file is mapped: a length
	// that the file cannot hold, or beyond what any header needs, says more
	// than a failed mapping of a file that a sparse header made huge.
	var n [8]byte
	if _, err := fh.ReadAt(n[:], 0); err != nil {
		return nil, fmt.Errorf("lfm2: %s: %w", path, err)
	}
	if err := checkHeaderLength(binary.LittleEndian.Uint64(n[:]), size); err != nil {
		return nil, fmt.Errorf("lfm2: %s: %w", path, err)
	}
	mem, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %s: mapping its %d bytes: %w (an address-space limit, ulimit -v, below the file's size refuses it)", path, size, err)
	}
	f := &File{Path: path, mem: mem}
	if err := f.parse(); err != nil {
		syscall.Munmap(mem)
		return nil, fmt.Errorf("lfm2: %s: %w", path, err)
	}
	return f, nil
}

// maxHeaderBytes bounds a safetensors header's length, as Hugging Face's
// safetensors does (100 MB): a header lists names, shapes and offsets, a
// few hundred bytes a tensor.
const maxHeaderBytes = 100_000_000

// checkHeaderLength returns an error unless a header of n bytes fits a file
// of size bytes after its 8-byte length, within maxHeaderBytes.
func checkHeaderLength(n uint64, size int64) error {
	switch {
	case n > maxHeaderBytes:
		return fmt.Errorf("header length %d is more than the %d bytes a safetensors header may have", n, maxHeaderBytes)
	case n > uint64(size-8):
		return fmt.Errorf("header length %d runs past the end of the file (%d bytes)", n, size)
	}
	return nil
}

// parse reads f's header and sets its Tensors and Metadata.
func (f *File) parse() error {
	n := binary.LittleEndian.Uint64(f.mem)
	if err := checkHeaderLength(n, int64(len(f.mem))); err != nil {
		return err
	}
	data := f.mem[8+n:]
	var header map[string]json.RawMessage
	if err := json.Unmarshal(f.mem[8:8+n], &header); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if m, ok := header["__metadata__"]; ok {
		if err := json.Unmarshal(m, &f.Metadata); err != nil {
			return fmt.Errorf("header: __metadata__: %w", err)
		}
		delete(header, "__metadata__")
	}
	f.Tensors = make(map[string]*Tensor, len(header))
	spans := make([]tensorSpan, 0, len(header))
	for _, name := range slices.Sorted(maps.Keys(header)) {
		var e headerEntry
		if err := json.Unmarshal(header[name], &e); err != nil {
			return fmt.Errorf("tensor %s: %w", name, err)
		}
		size, ok := int64(itemSize[e.DType]), true
		switch {
		case size == 0:
			return fmt.Errorf("tensor %s: dtype %q is not supported (want F32, BF16 or F16)", name, e.DType)
		case e.Shape == nil:
			return fmt.Errorf("tensor %s: no shape", name)
		case len(e.Offsets) != 2:
			return fmt.Errorf("tensor %s: data_offsets %v is not [begin, end]", name, e.Offsets)
		}
		for _, d := range e.Shape {
			ok = ok && d >= 0 && (d == 0 || size <= math.MaxInt64/int64(d))
			size *= int64(d)
		}
		begin, end := e.Offsets[0], e.Offsets[1]
		switch {
		case !ok:
			return fmt.Errorf("tensor %s: shape %v is negative or too large", name, e.Shape)
		case begin < 0 || begin > end || end > int64(len(data)):
			return fmt.Errorf("tensor %s: data_offsets [%d, %d] outside the %d bytes of data", name, begin, end, len(data))
		case end-begin != size:
			return fmt.Errorf("tensor %s: shape %v × %d bytes = %d bytes but data_offsets span %d",
				name, e.Shape, itemSize[e.DType], size, end-begin)
		}
		f.Tensors[name] = &Tensor{Name: name, DType: e.DType, Shape: e.Shape, data: data[begin:end:end]}
		spans = append(spans, tensorSpan{name, begin, end})
	}
	return checkTiling(spans, int64(len(data)))
}

// tensorSpan is a tensor's data_offsets.
type tensorSpan struct {
	name       string
	begin, end int64
}

// checkTiling returns an error unless spans, in any order, cover the n
// bytes of data end to end: each begins where the one before it ends, the
// first at 0, the last at n. Errors name the tensors and their offsets.
func checkTiling(spans []tensorSpan, n int64) error {
	slices.SortFunc(spans, func(a, b tensorSpan) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end), cmp.Compare(a.name, b.name))
	})
	var prev *tensorSpan
	at := int64(0) // where the next tensor must begin
	for i := range spans {
		sp := &spans[i]
		switch {
		case sp.begin < at:
			return fmt.Errorf("tensor %s data_offsets [%d, %d] overlap tensor %s's [%d, %d]: two tensors may not share bytes",
				sp.name, sp.begin, sp.end, prev.name, prev.begin, prev.end)
		case sp.begin > at && prev == nil:
			return fmt.Errorf("bytes [0, %d) of the data, before tensor %s's data_offsets [%d, %d], belong to no tensor",
				sp.begin, sp.name, sp.begin, sp.end)
		case sp.begin > at:
			return fmt.Errorf("bytes [%d, %d) of the data, between tensor %s's data_offsets [%d, %d] and tensor %s's [%d, %d], belong to no tensor",
				at, sp.begin, prev.name, prev.begin, prev.end, sp.name, sp.begin, sp.end)
		}
		prev, at = sp, sp.end
	}
	if at != n {
		if prev == nil {
			return fmt.Errorf("%d bytes of data but no tensor", n)
		}
		return fmt.Errorf("bytes [%d, %d) of the data, after tensor %s's data_offsets [%d, %d], belong to no tensor",
			at, n, prev.name, prev.begin, prev.end)
	}
	return nil
}

// Close unmaps the file.
func (f *File) Close() error {
	if f.mem == nil {
		return nil
	}
	err := syscall.Munmap(f.mem)
	f.mem, f.Tensors = nil, nil
	if err != nil {
		return fmt.Errorf("lfm2: %s: munmap: %w", f.Path, err)
	}
	return nil
}

// Checkpoint is all the tensors of a model directory: model.safetensors, or
// the shards listed in model.safetensors.index.json.
type Checkpoint struct {
	Dir     string
	Tensors map[string]*Tensor
	files   []*File
}

// OpenCheckpoint opens the safetensors of the model directory dir. With an
// index, every tensor it lists must be in the shard it names, and no tensor
// may be in two shards. The caller must Close the checkpoint.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	ck := &Checkpoint{Dir: dir, Tensors: map[string]*Tensor{}}
	if err := ck.open(); err != nil {
		ck.Close()
		return nil, fmt.Errorf("lfm2: %s: %w", dir, err)
	}
	return ck, nil
}

// maxIndexBytes bounds a model.safetensors.index.json: LFM2-8B-A1B's, which
// names 2 296 tensors, is about 200 kB.
const maxIndexBytes = 16 << 20

// open finds ck's files, opens them and gathers their tensors.
func (ck *Checkpoint) open() error {
	const single, index = "model.safetensors", "model.safetensors.index.json"
	raw, err := readlimit.ReadFile(filepath.Join(ck.Dir, index), index, maxIndexBytes)
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(ck.Dir, single)); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no %s or %s", single, index)
		}
		_, err := ck.add(single)
		return err
	}
	if err != nil {
		return err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("%s: %w", index, err)
	}
	if len(idx.WeightMap) == 0 {
		return fmt.Errorf("%s: no weight_map", index)
	}
	shards := map[string]*File{}
	for _, name := range slices.Sorted(maps.Values(idx.WeightMap)) {
		if shards[name] != nil {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%s names shard %q outside the directory", index, name)
		}
		if shards[name], err = ck.add(name); err != nil {
			return fmt.Errorf("%s names shard %s: %w", index, name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(idx.WeightMap)) {
		want := idx.WeightMap[name]
		t, ok := ck.Tensors[name]
		switch {
		case !ok:
			return fmt.Errorf("%s maps tensor %s to %s, which does not hold it", index, name, want)
		case shards[want].Tensors[name] != t:
			return fmt.Errorf("%s maps tensor %s to %s, but it is in %s", index, name, want, ck.holder(name))
		}
	}
	return nil
}

// add opens the file called name in ck.Dir and adds its tensors.
func (ck *Checkpoint) add(name string) (*File, error) {
	f, err := OpenSafetensors(filepath.Join(ck.Dir, name))
	if err != nil {
		return nil, err
	}
	ck.files = append(ck.files, f)
	for _, tn := range slices.Sorted(maps.Keys(f.Tensors)) {
		if _, dup := ck.Tensors[tn]; dup {
			return nil, fmt.Errorf("tensor %s is in both %s and %s", tn, ck.holder(tn), name)
		}
		ck.Tensors[tn] = f.Tensors[tn]
	}
	return f, nil
}

// holder returns the base name of the first of ck's files to hold tensor name.
func (ck *Checkpoint) holder(name string) string {
	for _, f := range ck.files {
		if f.Tensors[name] != nil {
			return filepath.Base(f.Path)
		}
	}
	return "none"
}

// Close unmaps every file of the checkpoint.
func (ck *Checkpoint) Close() error {
	var errs []error
	for _, f := range ck.files {
		errs = append(errs, f.Close())
	}
	ck.files, ck.Tensors = nil, nil
	return errors.Join(errs...)
}

// TensorData is a tensor to write: values in float32, stored as DType.
type TensorData = struct {
	DType string // "F32", "BF16" (rounded to nearest even) or "F16" (likewise)
	Shape []int
	Data  []float32
}

// WriteSafetensors writes tensors to path, in name order, atomically: to a
// temporary file renamed into place. It is meant for tests and small
// fixtures, as it builds the whole file in memory.
func WriteSafetensors(path string, tensors map[string]TensorData) error {
	header := map[string]headerEntry{}
	var data []byte
	for _, name := range slices.Sorted(maps.Keys(tensors)) {
		t := tensors[name]
		n, neg := 1, false
		for _, d := range t.Shape {
			n, neg = n*d, neg || d < 0
		}
		switch {
		case name == "" || name == "__metadata__":
			return fmt.Errorf("lfm2: %s: tensor name %q is reserved", path, name)
		case itemSize[t.DType] == 0:
			return fmt.Errorf("lfm2: %s: tensor %s: dtype %q is not supported (want F32, BF16 or F16)", path, name, t.DType)
		case neg || n != len(t.Data):
			return fmt.Errorf("lfm2: %s: tensor %s: shape %v does not hold the %d values", path, name, t.Shape, len(t.Data))
		}
		begin := int64(len(data))
		for _, v := range t.Data {
			switch t.DType {
			case "F32":
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			case "BF16":
				data = binary.LittleEndian.AppendUint16(data, f32ToBF16(v))
			case "F16":
				data = binary.LittleEndian.AppendUint16(data, f32ToF16(v))
			}
		}
		header[name] = headerEntry{t.DType, append([]int{}, t.Shape...), []int64{begin, int64(len(data))}}
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("lfm2: %s: %w", path, err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	if err := atomicfile.WriteBytes(path, append(append(out, h...), data...)); err != nil {
		return fmt.Errorf("lfm2: %w", err)
	}
	return nil
}
