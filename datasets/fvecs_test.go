package datasets

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFvecsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ rows, dim int }{{1, 1}, {3, 4}, {300, 1000}} {
		data := make([]float32, tc.rows*tc.dim)
		for i := range data {
			data[i] = float32(i%97) - 40.25
		}
		p := filepath.Join(dir, "v.fvecs")
		if err := WriteFvecs(p, data, tc.rows, tc.dim); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || len(b) != tc.rows*(4+4*tc.dim) {
			t.Errorf("%d×%d: file of %d bytes, %v; want %d", tc.rows, tc.dim, len(b), err, tc.rows*(4+4*tc.dim))
		}
		got, rows, dim, err := ReadFvecs(p)
		if err != nil || rows != tc.rows || dim != tc.dim || !slices.Equal(got, data) {
			t.Errorf("%d×%d: read back %d×%d, equal %v, %v", tc.rows, tc.dim, rows, dim, slices.Equal(got, data), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files, want only v.fvecs", len(entries))
	}
	if err := WriteFvecs(filepath.Join(dir, "w.fvecs"), make([]float32, 5), 2, 3); err == nil || !strings.Contains(err.Error(), "w.fvecs") {
		t.Errorf("WriteFvecs with 5 values for 2×3: %v", err)
	}
}

func TestFvecsErrors(t *testing.T) {
	vec := func(d int32, v ...float32) []byte { return append(le([]int32{d}), le(v)...) }
	two := slices.Concat(vec(2, 1, 2), vec(2, 3, 4))
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"truncated vector", two[:len(two)-3], "vector 1 at byte 12 is truncated: it needs 12 bytes but the file has 9 left"},
		{"truncated dimension", append(slices.Clip(two), 2, 0), "vector 2 at byte 24 is truncated: it needs 4 bytes but the file has 2 left"},
		{"differing dims", slices.Concat(two, vec(3, 1, 2, 3)), "vector 2 at byte 24 has dimension 3, but vector 0 has 2"},
		{"zero dim", vec(0), "vector 0 at byte 0 has dimension 0, want > 0"},
		{"negative dim", vec(-5, 1), "has dimension -5"},
		{"huge dim", vec(1<<30, 1), "it needs 4294967300 bytes but the file has 8 left"},
		{"a directory", nil, "is a directory"},
	} {
		path := writeTemp(t, "x.fvecs", tc.file)
		if tc.name == "a directory" {
			os.Remove(path)
			os.Mkdir(path, 0o755)
		}
		_, _, _, err := ReadFvecs(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x.fvecs") {
			t.Errorf("%s: error %v, want one naming x.fvecs and saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzReadFvecs: whatever the bytes, ReadFvecs returns vectors or an error
// that names the file; it allocates in proportion to the file, whatever a
// dimension claims; and what it accepts writes back byte for byte.
func FuzzReadFvecs(f *testing.F) {
	vec := func(d int32, v ...float32) []byte { return append(le([]int32{d}), le(v)...) }
	p := filepath.Join(f.TempDir(), "seed.fvecs")
	if err := WriteFvecs(p, []float32{1, 2, 3, -4.5, float32(math.Inf(1)), 6}, 2, 3); err != nil {
		f.Fatal(err)
	}
	written, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(written)
	f.Add(slices.Concat(vec(2, 1, 2), vec(2, 3, 4)))
	f.Add(slices.Concat(vec(2, 1, 2), vec(3, 3, 4, 5)))
	f.Add(vec(1<<30, 1))
	f.Add(vec(-1))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "in.fvecs")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var data []float32
		var rows, dim int
		var err error
		if n := allocated(func() { data, rows, dim, err = ReadFvecs(path) }); n > 4*uint64(len(b))+1<<18 {
			t.Fatalf("reading a file of %d bytes allocated %d", len(b), n)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "datasets: "+path+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if rows <= 0 || dim <= 0 || len(data) != rows*dim || rows*(4+4*dim) != len(b) {
			t.Fatalf("%d×%d, %d values from %d bytes", rows, dim, len(data), len(b))
		}
		out := filepath.Join(t.TempDir(), "out.fvecs")
		if err := WriteFvecs(out, data, rows, dim); err != nil {
			t.Fatal(err)
		}
		if back, err := os.ReadFile(out); err != nil || !bytes.Equal(back, b) {
			t.Fatalf("written back differently (%v)", err)
		}
	})
}
