package datasets

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gpulab/engine"
	"gpulab/engine/enginetest"
)

// sparseFile writes head to name in a new directory and extends it to size
// bytes with os.Truncate: a file of a real size whose pages past head are
// holes, as a hostile file can be made in an instant.
func sparseFile(t *testing.T, name string, head []byte, size int64) string {
	t.Helper()
	path := writeTemp(t, name, head)
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	return path
}

// pngClaiming is a PNG file whose header (IHDR) gives w×h 8-bit gray
// pixels, followed by the data of a 1×1 image.
func pngClaiming(t *testing.T, w, h uint32) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	// The signature (8 bytes), then IHDR: length (4), type (4), width,
	// height, 5 more bytes of data, CRC of the type and data.
	binary.BigEndian.PutUint32(p[16:], w)
	binary.BigEndian.PutUint32(p[20:], h)
	binary.BigEndian.PutUint32(p[29:], crc32.ChecksumIEEE(p[12:29]))
	return p
}

// TestReadersCheckHostMemory: every reader refuses, with an
// *engine.MemoryError that names the file, what a file's header (or its
// size, for .fvecs) sizes beyond the host's memory, before allocating it.
// The files are sparse, so their sizes pass the checks against the
// header; only the host's memory can refuse them.
func TestReadersCheckHostMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	npy := func(dict string, size int64) string {
		head := npyBytes(1, dict, nil)
		return sparseFile(t, "x.npy", head, int64(len(head))+size)
	}
	f4 := npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 16), }", 64_000_000)
	f8 := npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 16), }", 128_000_000)
	t3 := npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000, 16), }", 64_000_000)
	i4 := npy("{'descr': '<i4', 'fortran_order': False, 'shape': (16000000,), }", 64_000_000)
	sig := sparseFile(t, "x.sig", sigBytes(7, 0, 1000, 1_000_000, nil, nil), 32+4*1001+4*1_000_000*8)
	fvecs := sparseFile(t, "x.fvecs", le([]int32{16}), 1_000_000*(4+4*16))
	gray := writeTemp(t, "x.png", pngClaiming(t, 4000, 4000))
	for _, tc := range []struct {
		name string
		path string
		read func(string) error
		need uint64
		want string
	}{
		{"ReadNPYFloat32 <f4", f4, func(p string) error { _, _, _, err := ReadNPYFloat32(p); return err }, 64_000_000, "its (1000000, 16) values as float32"},
		{"ReadNPYFloat32 <f8", f8, func(p string) error { _, _, _, err := ReadNPYFloat32(p); return err }, 64_000_000, "its (1000000, 16) values as float32"},
		{"ReadNPYTensor", t3, func(p string) error { _, _, err := ReadNPYTensor(p); return err }, 64_000_000, "its (1000, 1000, 16) values as float32"},
		{"ReadNPYInt32", i4, func(p string) error { _, err := ReadNPYInt32(p); return err }, 64_000_000, "its (16000000,) values as int32"},
		{"ReadSignatures", sig, func(p string) error { _, err := ReadSignatures(p); return err }, 4*1001 + 4*1_000_000*8, "the offsets of 1000 signatures and 1000000 centroids of 7 features and a weight"},
		{"ReadFvecs", fvecs, func(p string) error { _, _, _, err := ReadFvecs(p); return err }, 4 * 1_000_000 * 16, "room for 1000000 vectors of 16 float32"},
		{"LoadGray", gray, func(p string) error { _, _, _, err := LoadGray(p); return err }, 4000 * 4000 * (8 + 4), "a 4000×4000 png image decoded (8 bytes a pixel at most) and 1 float32 a pixel"},
		{"LoadRGB", gray, func(p string) error { _, _, _, err := LoadRGB(p); return err }, 4000 * 4000 * (8 + 12), "a 4000×4000 png image decoded (8 bytes a pixel at most) and 3 float32 a pixel"},
	} {
		var err error
		if n := allocated(func() { err = tc.read(tc.path) }); n > 2*chunkBytes { // a reader's buffer at most
			t.Errorf("%s: allocated %d bytes", tc.name, n)
		}
		enginetest.WantMemoryError(t, err, tc.need, "datasets: reading "+tc.path+" needs", tc.want)
	}

	// A file of the same kinds that fits is read.
	small := filepath.Join(t.TempDir(), "small.npy")
	if err := WriteNPYFloat32(small, make([]float32, 1000), 100, 10); err != nil {
		t.Fatal(err)
	}
	if _, rows, _, err := ReadNPYFloat32(small); err != nil || rows != 100 {
		t.Errorf("a small file: %d rows, %v", rows, err)
	}
}
