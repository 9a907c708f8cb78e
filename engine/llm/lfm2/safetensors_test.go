package lfm2

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// stBytes builds a safetensors file by hand: header length, header, data.
func stBytes(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	third := float32(1.0 / 3)
	for _, tc := range []struct {
		dtype   string
		in, out []float32
		bits    []uint16 // the stored halves, for BF16 and F16
	}{
		{"F32", []float32{1, -2.5, third, 0, inf}, []float32{1, -2.5, third, 0, inf}, nil},
		// 1+2⁻⁸ is halfway between 1 and 1+2⁻⁷ and 1+3·2⁻⁸ between 1+2⁻⁷
		// and 1+2⁻⁶: both round to the even neighbour; a hair over half rounds up.
		{"BF16", []float32{1, -2.5, 1 + 0x1p-8, 1 + 3*0x1p-8, 1 + 0x1p-8 + 0x1p-20, 0x1p127 * 1.999},
			[]float32{1, -2.5, 1, 1 + 0x1p-6, 1 + 0x1p-7, inf},
			[]uint16{0x3f80, 0xc020, 0x3f80, 0x3f82, 0x3f81, 0x7f80}},
		// 65504 is the largest half; 65520 is halfway to the next (inf) and
		// rounds to it; 2⁻²⁴ is the smallest subnormal, 2⁻²⁶ rounds to zero.
		{"F16", []float32{1, -2.5, 65504, 65520, 0x1p-24, 3 * 0x1p-25, 0x1p-26, -0x1p-14},
			[]float32{1, -2.5, 65504, inf, 0x1p-24, 0x1p-23, 0, -0x1p-14},
			[]uint16{0x3c00, 0xc100, 0x7bff, 0x7c00, 0x0001, 0x0002, 0x0000, 0x8400}},
	} {
		path := filepath.Join(t.TempDir(), "x.safetensors")
		err := WriteSafetensors(path, map[string]TensorData{
			"x":   {tc.dtype, []int{len(tc.in)}, tc.in},
			"nan": {tc.dtype, []int{1, 1}, []float32{nan}},
			"s":   {tc.dtype, []int{}, []float32{7}},
		})
		if err != nil {
			t.Fatal(err)
		}
		f, err := OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		x := f.Tensors["x"]
		if got := x.Float32(); x.DType != tc.dtype || !reflect.DeepEqual(x.Shape, []int{len(tc.in)}) || !reflect.DeepEqual(got, tc.out) {
			t.Errorf("%s: %s %v %v, want %v", tc.dtype, x.DType, x.Shape, got, tc.out)
		}
		for i, want := range tc.bits {
			if got := binary.LittleEndian.Uint16(x.Bytes()[2*i:]); got != want {
				t.Errorf("%s: value %g stored as %#04x, want %#04x", tc.dtype, tc.in[i], got, want)
			}
		}
		if v := f.Tensors["nan"].Float32(); len(v) != 1 || !math.IsNaN(float64(v[0])) {
			t.Errorf("%s: nan came back as %v", tc.dtype, v)
		}
		if s := f.Tensors["s"]; s.Len() != 1 || s.Float32()[0] != 7 {
			t.Errorf("%s: scalar came back as %v", tc.dtype, s.Float32())
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestHalfConversions: every half and bfloat16 but nans survives widening
// and narrowing, and every half widens to its value.
func TestHalfConversions(t *testing.T) {
	for h := range 1 << 16 {
		f := f16ToF32(uint16(h))
		if math.IsNaN(float64(f)) != (h&0x7c00 == 0x7c00 && h&0x3ff != 0) {
			t.Fatalf("half %#04x widens to %g", h, f)
		}
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := f32ToF16(f); back != uint16(h) {
			t.Fatalf("half %#04x widens to %g, which narrows to %#04x", h, f, back)
		}
		if back := f32ToBF16(math.Float32frombits(uint32(h) << 16)); back != uint16(h) && h&0x7f80 != 0x7f80 {
			t.Fatalf("bfloat16 %#04x narrows back to %#04x", h, back)
		}
		exp, mant := h>>10&0x1f, float64(h&0x3ff)
		want := math.Ldexp(mant, -24) // subnormal
		switch {
		case exp == 0x1f:
			want = math.Inf(1)
		case exp > 0:
			want = math.Ldexp(1+mant/1024, exp-15)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(f) != want {
			t.Fatalf("half %#04x widens to %g, want %g", h, f, want)
		}
	}
}

func TestSafetensorsMetadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	writeFile(t, path, stBytes(`{"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}`,
		binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))))
	f, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata["format"] != "pt" || len(f.Tensors) != 1 || f.Tensors["a"].Float32()[0] != 1.5 {
		t.Errorf("metadata %v, tensors %v", f.Metadata, f.Tensors)
	}
}

func TestSafetensorsErrors(t *testing.T) {
	dir := t.TempDir()
	twelve := make([]byte, 12)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"truncated length", []byte{1, 2, 3, 4}, "4 bytes is too short for the 8-byte header length"},
		{"header past EOF", binary.LittleEndian.AppendUint64(nil, 1000), "header length 1000 runs past the end of the file (8 bytes)"},
		{"bad JSON", stBytes(`{"a": `, nil), "header:"},
		{"not an object", stBytes(`{"a": 3}`, nil), "tensor a:"},
		{"bad metadata", stBytes(`{"__metadata__": {"n": 1}}`, nil), "__metadata__"},
		{"I64", stBytes(`{"a": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}`, twelve), `tensor a: dtype "I64" is not supported`},
		{"no shape", stBytes(`{"a": {"dtype": "F32", "data_offsets": [0, 4]}}`, twelve), "tensor a: no shape"},
		{"negative shape", stBytes(`{"a": {"dtype": "F32", "shape": [-1, 2], "data_offsets": [0, 4]}}`, twelve), "tensor a: shape [-1 2] is negative"},
		{"one offset", stBytes(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [4]}}`, twelve), "tensor a: data_offsets [4] is not [begin, end]"},
		{"past the end", stBytes(`{"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}`, twelve), "tensor a: data_offsets [0, 16] outside the 12 bytes of data"},
		{"reversed", stBytes(`{"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}}`, twelve), "tensor a: data_offsets [8, 4] outside"},
		{"size mismatch", stBytes(`{"a": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 10]}}`, twelve), "tensor a: shape [2 3] × 2 bytes = 12 bytes but data_offsets span 10"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".safetensors")
		writeFile(t, path, tc.file)
		f, err := OpenSafetensors(path)
		if err == nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s and containing %q", tc.name, err, path, tc.want)
		}
	}
	if _, err := OpenSafetensors(filepath.Join(dir, "absent.safetensors")); err == nil {
		t.Error("absent file opened")
	}
	// A sparse file whose length field claims a 20 GB header is refused
	// for that length, before the file is mapped.
	path := filepath.Join(dir, "huge_header.safetensors")
	writeFile(t, path, binary.LittleEndian.AppendUint64(nil, 20e9))
	if err := os.Truncate(path, 21e9); err != nil {
		t.Skipf("no sparse file of 21 GB here: %v", err)
	}
	if f, err := OpenSafetensors(path); err == nil || !strings.Contains(err.Error(), "header length 20000000000 is more than the 100000000 bytes") {
		if f != nil {
			f.Close()
		}
		t.Errorf("a 20 GB header: %v", err)
	}
}

// TestSafetensorsTiling: the tensors of a file must cover its data end to
// end, as Hugging Face's safetensors requires: overlapping data_offsets
// (aliased weights), gaps and bytes that belong to no tensor are errors
// naming the tensors and their offsets.
func TestSafetensorsTiling(t *testing.T) {
	dir := t.TempDir()
	f32 := func(name string, n, begin, end int) string {
		return fmt.Sprintf(`"%s": {"dtype": "F32", "shape": [%d], "data_offsets": [%d, %d]}`, name, n, begin, end)
	}
	for _, tc := range []struct {
		name    string
		tensors []string
		data    int
		want    string // "" for a valid file
	}{
		{"overlap", []string{f32("a", 2, 0, 8), f32("b", 2, 4, 12)}, 12, "tensor b data_offsets [4, 12] overlap tensor a's [0, 8]: two tensors may not share bytes"},
		{"aliased", []string{f32("w2", 2, 0, 8), f32("w1", 2, 0, 8)}, 8, "tensor w2 data_offsets [0, 8] overlap tensor w1's [0, 8]: two tensors may not share bytes"},
		{"empty inside another", []string{f32("a", 2, 0, 8), f32("z", 0, 4, 4)}, 8, "tensor z data_offsets [4, 4] overlap tensor a's [0, 8]: two tensors may not share bytes"},
		{"gap", []string{f32("b", 1, 8, 12), f32("a", 1, 0, 4)}, 12, "bytes [4, 8) of the data, between tensor a's data_offsets [0, 4] and tensor b's [8, 12], belong to no tensor"},
		{"before the first", []string{f32("a", 2, 4, 12)}, 12, "bytes [0, 4) of the data, before tensor a's data_offsets [4, 12], belong to no tensor"},
		{"after the last", []string{f32("a", 1, 0, 4)}, 12, "bytes [4, 12) of the data, after tensor a's data_offsets [0, 4], belong to no tensor"},
		{"no tensor", nil, 4, "4 bytes of data but no tensor"},
		{"tiled out of order", []string{f32("z", 0, 8, 8), f32("a", 1, 4, 8), f32("b", 1, 0, 4), f32("e", 0, 0, 0)}, 8, ""},
		{"nothing", nil, 0, ""},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".safetensors")
		writeFile(t, path, stBytes("{"+strings.Join(tc.tensors, ", ")+"}", make([]byte, tc.data)))
		f, err := OpenSafetensors(path)
		if err == nil {
			f.Close()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || err.Error() != "lfm2: "+path+": "+tc.want):
			t.Errorf("%s: error %v\nwant lfm2: %s: %s", tc.name, err, path, tc.want)
		}
	}
}

// writeShards writes each shard's tensors (values 0, 1, ...) to dir, and an
// index mapping each name to a file, if index is not nil.
func writeShards(t *testing.T, dir string, shards map[string][]string, index map[string]string) {
	t.Helper()
	for file, names := range shards {
		m := map[string]TensorData{}
		for i, n := range names {
			m[n] = TensorData{"F32", []int{2}, []float32{float32(i), float32(i + 1)}}
		}
		if err := WriteSafetensors(filepath.Join(dir, file), m); err != nil {
			t.Fatal(err)
		}
	}
	if index != nil {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": index})
		writeFile(t, filepath.Join(dir, "model.safetensors.index.json"), b)
	}
}

func TestCheckpoint(t *testing.T) {
	const s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	dir := t.TempDir()
	writeShards(t, dir, map[string][]string{s1: {"a", "b"}, s2: {"c"}}, map[string]string{"a": s1, "b": s1, "c": s2})
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ck.Tensors) != 3 || !reflect.DeepEqual(ck.Tensors["b"].Float32(), []float32{1, 2}) || ck.Tensors["c"].Shape[0] != 2 {
		t.Errorf("tensors %v", ck.Tensors)
	}
	if err := ck.Close(); err != nil {
		t.Error(err)
	}

	single := t.TempDir()
	writeShards(t, single, map[string][]string{"model.safetensors": {"a"}}, nil)
	if ck, err = OpenCheckpoint(single); err != nil || len(ck.Tensors) != 1 {
		t.Fatalf("single file: %v", err)
	}
	ck.Close()

	for _, tc := range []struct {
		name   string
		shards map[string][]string
		index  map[string]string
		want   string
	}{
		{"empty", nil, nil, "no model.safetensors or model.safetensors.index.json"},
		{"missing shard", map[string][]string{s1: {"a"}}, map[string]string{"a": s1, "b": s2}, "names shard " + s2},
		{"wrong shard", map[string][]string{s1: {"a"}, s2: {"b", "c"}}, map[string]string{"a": s1, "b": s1, "c": s2}, "maps tensor b to " + s1 + ", but it is in " + s2},
		{"not in any", map[string][]string{s1: {"a"}}, map[string]string{"a": s1, "b": s1}, "maps tensor b to " + s1 + ", which does not hold it"},
		{"duplicate", map[string][]string{s1: {"a"}, s2: {"a", "b"}}, map[string]string{"a": s1, "b": s2}, "tensor a is in both " + s1 + " and " + s2},
		{"outside", nil, map[string]string{"a": "../x.safetensors"}, "outside the directory"},
		{"no weight_map", nil, map[string]string{}, "no weight_map"},
	} {
		d := t.TempDir()
		writeShards(t, d, tc.shards, tc.index)
		if ck, err := OpenCheckpoint(d); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), d) {
			if err == nil {
				ck.Close()
			}
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestWriteSafetensorsErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.safetensors")
	for _, tc := range []struct {
		t    TensorData
		want string
	}{
		{TensorData{"I64", []int{1}, []float32{1}}, `dtype "I64"`},
		{TensorData{"F32", []int{2, 2}, []float32{1}}, "shape [2 2] does not hold the 1 values"},
		{TensorData{"F32", []int{-1, -1}, []float32{1}}, "shape [-1 -1]"},
	} {
		if err := WriteSafetensors(path, map[string]TensorData{"a": tc.t}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.t, err, tc.want)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a failed write left a file")
	}
}
