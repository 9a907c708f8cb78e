package datasets

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// npyBytes builds a .npy file by hand: the prefix of version major.0, dict
// padded with spaces and '\n' to a multiple of 64 bytes, then data.
func npyBytes(major byte, dict string, data []byte) []byte {
	b := []byte("\x93NUMPY")
	b = append(b, major, 0)
	prefix := 10
	if major == 2 {
		prefix = 12
	}
	hlen := len(dict) + 1
	hlen += (64 - (prefix+hlen)%64) % 64
	if major == 2 {
		b = binary.LittleEndian.AppendUint32(b, uint32(hlen))
	} else {
		b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	}
	b = append(b, dict...)
	b = append(b, strings.Repeat(" ", hlen-len(dict)-1)...)
	return append(append(b, '\n'), data...)
}

// le encodes float32, float64 or int32 values little-endian.
func le(v any) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil {
		panic(err)
	}
	return b
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNPYRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		rows, cols int
		header     string
	}{
		{3, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }"},
		{0, 5, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }"},
		{700, 500, "{'descr': '<f4', 'fortran_order': False, 'shape': (700, 500), }"}, // several read chunks
	} {
		data := make([]float32, tc.rows*tc.cols)
		for i := range data {
			data[i] = float32(i)*0.5 - 7
		}
		p := filepath.Join(dir, "a.npy")
		if err := WriteNPYFloat32(p, data, tc.rows, tc.cols); err != nil {
			t.Fatal(err)
		}
		checkNPYHeader(t, p, tc.header)
		got, rows, cols, err := ReadNPYFloat32(p)
		if err != nil || rows != tc.rows || cols != tc.cols || !slices.Equal(got, data) {
			t.Errorf("%d×%d: read back %d×%d, equal %v, %v", tc.rows, tc.cols, rows, cols, slices.Equal(got, data), err)
		}
	}

	labels := []int32{3, -1, 0, math.MaxInt32, math.MinInt32}
	p := filepath.Join(dir, "labels.npy")
	if err := WriteNPYInt32(p, labels); err != nil {
		t.Fatal(err)
	}
	checkNPYHeader(t, p, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }")
	if got, err := ReadNPYInt32(p); err != nil || !slices.Equal(got, labels) {
		t.Errorf("int32: read back %v, %v; want %v", got, err, labels)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d files, want a.npy and labels.npy (no temporary files)", len(entries))
	}
}

// checkNPYHeader checks that the file at p starts as np.save would write it:
// version 1.0, the dict text, and data aligned to 64 bytes.
func checkNPYHeader(t *testing.T, p, dict string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "\x93NUMPY\x01\x00") {
		t.Fatalf("%s: prefix %q", p, b[:8])
	}
	end := 10 + int(binary.LittleEndian.Uint16(b[8:]))
	h := string(b[10:end])
	if end%64 != 0 || !strings.HasPrefix(h, dict+" ") || !strings.HasSuffix(h, " \n") || strings.TrimSpace(h) != dict {
		t.Errorf("%s: header %q (ends at %d), want %q padded to a multiple of 64", p, h, end, dict)
	}
}

func TestNPYRead(t *testing.T) {
	for _, tc := range []struct {
		name       string
		file       []byte
		rows, cols int
		want       []float32
	}{
		{"v2.0", npyBytes(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", le([]float32{1, 2, 3, 4})),
			2, 2, []float32{1, 2, 3, 4}},
		{"<f8", npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 3), }", le([]float64{0.5, -2, 1e10})),
			1, 3, []float32{0.5, -2, 1e10}},
		{"<i4", npyBytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", le([]int32{7, -7, 0})),
			3, 1, []float32{7, -7, 0}},
		{"1-D", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", le([]float32{1, 2, 3, 4})),
			4, 1, []float32{1, 2, 3, 4}},
		{"keys reordered, odd spaces", npyBytes(1, `{ "shape":(2 ,1) ,'fortran_order' :False,'descr':"<f4"}`, le([]float32{5, 6})),
			2, 1, []float32{5, 6}},
	} {
		got, rows, cols, err := ReadNPYFloat32(writeTemp(t, "x.npy", tc.file))
		if err != nil || rows != tc.rows || cols != tc.cols || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v %d×%d, %v; want %v %d×%d", tc.name, got, rows, cols, err, tc.want, tc.rows, tc.cols)
		}
	}
}

func TestNPYReadRows(t *testing.T) {
	data := make([]float32, 10*3)
	for i := range data {
		data[i] = float32(i)
	}
	p := filepath.Join(t.TempDir(), "m.npy")
	if err := WriteNPYFloat32(p, data, 10, 3); err != nil {
		t.Fatal(err)
	}
	f, err := OpenNPY(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Path != p || f.DType != "<f4" || f.Rows != 10 || f.Cols != 3 {
		t.Errorf("OpenNPY: %+v", f)
	}
	dst := make([]float32, 9)
	if err := f.ReadRows(4, 3, dst); err != nil || !slices.Equal(dst, data[12:21]) {
		t.Errorf("ReadRows(4, 3) = %v, %v; want %v", dst, err, data[12:21])
	}
	for _, tc := range []struct {
		start, n, dst int
		want          string
	}{
		{8, 3, 9, "rows [8, 11) out of range: the file has 10 rows"},
		{-1, 2, 9, "rows [-1, 1) out of range"},
		{0, -1, 9, "out of range"},
		{0, 4, 9, "dst has 9 elements, want 4 rows × 3 cols = 12"},
	} {
		if err := f.ReadRows(tc.start, tc.n, make([]float32, tc.dst)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadRows(%d, %d) with len(dst) %d: error %v, want %q", tc.start, tc.n, tc.dst, err, tc.want)
		}
	}
}

func TestNPYErrors(t *testing.T) {
	f4 := func(shape string) string {
		return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }"
	}
	good := npyBytes(1, f4("(10, 4)"), make([]byte, 160))
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"truncated data", good[:len(good)-64], "header says shape (10, 4) = 160 bytes of data but the file has 96"},
		{"extra data", append(slices.Clip(good), 1, 2, 3, 4), "160 bytes of data but the file has 164"},
		{"bad magic", append([]byte("\x93NUMPX"), good[6:]...), "bad magic"},
		{"short file", []byte("\x93NUMPY\x01"), "ends inside the .npy prefix, after 7 bytes"},
		{"version 3.0", npyBytes(3, f4("(10, 4)"), nil), "unsupported .npy version 3.0"},
		{"fortran order", npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", make([]byte, 16)), "fortran_order is True"},
		{"big-endian", npyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", make([]byte, 8)), "big-endian dtype '>f4'"},
		{"int64", npyBytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", make([]byte, 16)), "dtype '<i8' is not supported"},
		{"structured", npyBytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", make([]byte, 8)), "structured dtypes"},
		{"3-D", npyBytes(1, f4("(2, 3, 4)"), make([]byte, 96)), "shape (2, 3, 4) is 3-d"},
		{"0-d", npyBytes(1, f4("()"), make([]byte, 4)), "shape () is 0-d"},
		{"negative dim", npyBytes(1, f4("(-2, 3)"), nil), `"-2" is not a dimension`},
		{"missing key", npyBytes(1, "{'descr': '<f4', 'shape': (2,), }", make([]byte, 8)), "no 'fortran_order'"},
		{"not a dict", npyBytes(1, "descr=<f4", nil), "not a Python dict"},
		{"unbalanced, no keys", npyBytes(1, "{'x': [[[[[[}", nil), "the value of 'x' opens '[' and never closes it"},
		{"unbalanced, extra key", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': [[[[[[}", make([]byte, 8)),
			"the value of 'x' opens '[' and never closes it"},
		{"extra key", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", make([]byte, 8)),
			"header has the key 'x': a .npy header holds 'descr', 'fortran_order' and 'shape' only"},
		{"key twice", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (1,), }", make([]byte, 4)), "header gives 'shape' twice"},
		{"closes nothing", npyBytes(1, f4("(2,))"), make([]byte, 8)), "the value of 'shape' has a ')' that closes nothing"},
		{"mismatched", npyBytes(1, f4("(2,]"), make([]byte, 8)), "the value of 'shape' closes '(' with ']'"},
		{"unterminated string", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x }", make([]byte, 8)), `expected a quoted key at "'x"`},
		{"open quote", npyBytes(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", make([]byte, 8)), "the value of 'descr' opens a ' quote and never closes it"},
		{"header past EOF", good[:100], "header length 118 runs past the end of the file (100 bytes)"},
		// An empty array whose other dimensions overflow: Cols would wrap.
		{"empty, overflowing", npyBytes(1, f4("(0, 4611686018427387904, 4)"), nil), "shape (0, 4611686018427387904, 4) is too large"},
		{"empty, overflowing int", npyBytes(1, f4("(0, 9223372036854775807, 3)"), nil), "is too large"},
		{"float64 beyond float32", npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", le([]float64{1, 2, 3, -1e300})),
			"row 1, column 1: -1e+300 is beyond float32's range"},
		{"a directory", nil, "is a directory"},
	} {
		path := writeTemp(t, "x.npy", tc.file)
		if tc.name == "a directory" {
			os.Remove(path)
			os.Mkdir(path, 0o755)
		}
		_, _, _, err := ReadNPYFloat32(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x.npy") {
			t.Errorf("%s: error %v, want one naming x.npy and saying %q", tc.name, err, tc.want)
		}
	}

	p := writeTemp(t, "f.npy", good)
	if _, err := ReadNPYInt32(p); err == nil || !strings.Contains(err.Error(), "want a 1-D '<i4' array, got '<f4' with shape (10, 4)") {
		t.Errorf("ReadNPYInt32 of a float file: %v", err)
	}
	if _, _, _, err := ReadNPYFloat32(filepath.Join(t.TempDir(), "missing.npy")); err == nil || !strings.Contains(err.Error(), "missing.npy") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	if err := WriteNPYFloat32(filepath.Join(dir, "w.npy"), make([]float32, 5), 2, 3); err == nil || !strings.Contains(err.Error(), "len(data) = 5") {
		t.Errorf("WriteNPYFloat32 with 5 values for 2×3: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed write left %d files", len(entries))
	}
}

// TestEncodeNPY: the encoders write what the file writers write, and
// refuse a shape the data does not fill.
func TestEncodeNPY(t *testing.T) {
	dir := t.TempDir()
	f, i := filepath.Join(dir, "f.npy"), filepath.Join(dir, "i.npy")
	if err := WriteNPYFloat32(f, []float32{1, 2, 3, 4, 5, 6}, 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := WriteNPYInt32(i, []int32{7, -7}); err != nil {
		t.Fatal(err)
	}
	var fb, ib bytes.Buffer
	if err := EncodeNPYFloat32(&fb, []float32{1, 2, 3, 4, 5, 6}, 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := EncodeNPYInt32(&ib, []int32{7, -7}); err != nil {
		t.Fatal(err)
	}
	for path, encoded := range map[string][]byte{f: fb.Bytes(), i: ib.Bytes()} {
		if written, err := os.ReadFile(path); err != nil || !bytes.Equal(written, encoded) {
			t.Errorf("%s: encoded %d bytes differ from the %d written (%v)", path, len(encoded), len(written), err)
		}
	}
	if err := EncodeNPYFloat32(&fb, make([]float32, 5), 2, 3); err == nil || !strings.Contains(err.Error(), "len(data) = 5, want rows × cols = 2 × 3") {
		t.Errorf("5 values for 2×3: %v", err)
	}
}

// TestNPYTensor: a 3-D array round-trips through WriteNPYTensor and
// ReadNPYTensor, and OpenNPY still refuses it.
func TestNPYTensor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logits.npy")
	data := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	if err := WriteNPYTensor(path, data, []int{2, 3, 2}); err != nil {
		t.Fatal(err)
	}
	got, shape, err := ReadNPYTensor(path)
	if err != nil || !slices.Equal(got, data) || !slices.Equal(shape, []int{2, 3, 2}) {
		t.Errorf("ReadNPYTensor = %v %v %v", got, shape, err)
	}
	if _, err := OpenNPY(path); err == nil || !strings.Contains(err.Error(), "shape (2, 3, 2) is 3-d") {
		t.Errorf("OpenNPY of a 3-D array: %v", err)
	}
	if err := WriteNPYTensor(path, data, []int{5, 2}); err == nil || !strings.Contains(err.Error(), "len(data) = 12") {
		t.Errorf("WriteNPYTensor with a wrong shape: %v", err)
	}
}

// FuzzReadNPY: whatever the bytes, the readers return data or an error
// that names the file; they allocate in proportion to the file, whatever
// its header claims; and what they accept writes and reads back the same.
func FuzzReadNPY(f *testing.F) {
	for _, name := range []string{"dense", "moe"} {
		b, err := os.ReadFile(filepath.Join("testdata", "lfm2", name, "logits.npy"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dir := f.TempDir()
	written := map[string]func(string) error{
		"f4": func(p string) error {
			return WriteNPYFloat32(p, []float32{1, -2, 3.5, float32(math.NaN()), 0, 7}, 3, 2)
		},
		"i4": func(p string) error { return WriteNPYInt32(p, []int32{3, -1, math.MaxInt32}) },
		"3d": func(p string) error { return WriteNPYTensor(p, make([]float32, 12), []int{2, 3, 2}) },
		"0r": func(p string) error { return WriteNPYFloat32(p, nil, 0, 5) },
	}
	for name, write := range written {
		p := filepath.Join(dir, name+".npy")
		if err := write(p); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f4 := func(shape string) string { return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }" }
	f.Add(npyBytes(2, f4("(2, 2)"), le([]float32{1, 2, 3, 4})))
	f.Add(npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 3), }", le([]float64{0.5, -1e300, math.Inf(1)})))
	f.Add(npyBytes(1, f4("(0, 4611686018427387904, 4)"), nil))
	f.Add(npyBytes(1, f4("(1099511627776, 0)"), nil))
	f.Add(npyBytes(1, `{ "shape":(2 ,1) ,'fortran_order' :False,'descr':"<f4"}`, le([]float32{5, 6})))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "in.npy")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var data []float32
		var shape []int
		var err error
		if n := allocated(func() { data, shape, err = ReadNPYTensor(path) }); n > 4*uint64(len(b))+1<<18 {
			t.Fatalf("reading a file of %d bytes allocated %d", len(b), n)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "datasets: "+path+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		elems := 1
		for _, d := range shape {
			elems *= d
		}
		if len(shape) == 0 || elems != len(data) || 4*len(data) > len(b) {
			t.Fatalf("%d values of shape %v from %d bytes", len(data), shape, len(b))
		}
		// The 2-D reader agrees with the tensor reader where it applies.
		if len(shape) <= 2 {
			flat, rows, cols, err := ReadNPYFloat32(path)
			if err != nil || rows != shape[0] || rows*cols != elems || !sameBits(flat, data) {
				t.Fatalf("ReadNPYFloat32: %d×%d, %v; ReadNPYTensor: %v", rows, cols, err, shape)
			}
		}
		out := filepath.Join(t.TempDir(), "out.npy")
		if err := WriteNPYTensor(out, data, shape); err != nil {
			t.Fatal(err)
		}
		again, againShape, err := ReadNPYTensor(out)
		if err != nil || !slices.Equal(againShape, shape) || !sameBits(again, data) {
			t.Fatalf("read back %v (%v), want shape %v", againShape, err, shape)
		}
	})
}

// sameBits says whether a and b hold the same float32 bit patterns (NaNs
// included).
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// allocated is how many bytes run allocates on the heap.
func allocated(run func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
