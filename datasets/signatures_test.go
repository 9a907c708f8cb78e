package datasets

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/enginetest"
)

// sigBytes builds a signature file by hand from its header fields, index and
// data.
func sigBytes(dim, reserved uint32, n, c uint64, index []int32, data []float32) []byte {
	b := binary.LittleEndian.AppendUint32([]byte(sigMagic), dim)
	b = binary.LittleEndian.AppendUint32(b, reserved)
	b = binary.LittleEndian.AppendUint64(b, n)
	b = binary.LittleEndian.AppendUint64(b, c)
	return slices.Concat(b, le(index), le(data))
}

// twoSigs is a small valid set: dim 2, signatures of 1 and 2 centroids.
func twoSigs() *Signatures {
	return &Signatures{Dim: 2, Index: []int32{0, 1, 3}, Data: []float32{
		0.1, 0.2, 1, // signature 0
		0.3, 0.4, 0.25, 0.5, 0.6, 0.75, // signature 1
	}}
}

func sameSigs(a, b *Signatures) bool {
	return a.Dim == b.Dim && slices.Equal(a.Index, b.Index) && slices.Equal(a.Data, b.Data)
}

func TestSignaturesAppend(t *testing.T) {
	s := Signatures{Dim: 2}
	if s.Len() != 0 {
		t.Errorf("zero Signatures: Len() = %d, want 0", s.Len())
	}
	want := twoSigs()
	s.Append(want.Data[:3])
	s.Append(want.Data[3:])
	if !sameSigs(&s, want) || s.Len() != 2 || s.Validate() != nil {
		t.Fatalf("appended %+v, want %+v (Validate: %v)", s, *want, s.Validate())
	}
	c := s.Centroids(0)
	if !slices.Equal(c, want.Data[:3]) || cap(c) != 3 {
		t.Errorf("Centroids(0) = %v with cap %d, want %v with cap 3", c, cap(c), want.Data[:3])
	}
	_ = append(c, 9) // must not overwrite signature 1
	if !slices.Equal(s.Centroids(1), want.Data[3:]) {
		t.Errorf("Centroids(1) = %v after appending to Centroids(0), want %v", s.Centroids(1), want.Data[3:])
	}
	s.Append([]float32{1, 2}) // not a multiple of Dim+1
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "index says 3 centroids (9 floats), data holds 11 floats") {
		t.Errorf("after appending 2 floats: Validate() = %v", err)
	}
}

func TestSignaturesValidate(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name   string
		change func(s *Signatures)
		want   string // "" for valid
	}{
		{"valid", func(s *Signatures) {}, ""},
		{"zero weight of one centroid", func(s *Signatures) { s.Data[5] = 0 }, ""},
		{"no signatures", func(s *Signatures) { s.Index, s.Data = []int32{0}, nil }, ""},
		{"dim 0", func(s *Signatures) { s.Dim = 0 }, "Dim = 0, want 1 .. 65536"},
		{"dim huge", func(s *Signatures) { s.Dim = 1 << 40 }, "Dim = 1099511627776"},
		{"no index", func(s *Signatures) { s.Index = nil }, "Index is empty"},
		{"index starts at 1", func(s *Signatures) { s.Index[0] = 1 }, "Index[0] = 1, want 0"},
		{"index decreases", func(s *Signatures) { s.Index = []int32{0, 3, 2} }, "Index[2] = 2 is less than Index[1] = 3"},
		{"index too long", func(s *Signatures) { s.Index[2] = 4 }, "index says 4 centroids (12 floats), data holds 9 floats"},
		{"data too long", func(s *Signatures) { s.Data = append(s.Data, 1) }, "index says 3 centroids (9 floats), data holds 10 floats"},
		{"empty signature", func(s *Signatures) { s.Index = []int32{0, 1, 1, 3} }, "signature 1 has no centroids"},
		{"NaN feature", func(s *Signatures) { s.Data[7] = nan }, "signature 1, centroid 1: feature 1 is NaN"},
		{"Inf weight", func(s *Signatures) { s.Data[2] = inf }, "signature 0, centroid 0: weight is +Inf"},
		{"negative sum", func(s *Signatures) { s.Data[5], s.Data[8] = -1, 0.5 }, "signature 1: weights sum to -0.5, want > 0"},
		{"zero sum", func(s *Signatures) { s.Data[2] = 0 }, "signature 0: weights sum to 0, want > 0"},
		{"negative weight", func(s *Signatures) { s.Data[5] = -0.25 }, "signature 1, centroid 0: weight -0.25 is negative"},
	} {
		s := twoSigs()
		tc.change(s)
		err := s.Validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := (*Signatures)(nil).Validate(); err == nil {
		t.Error("nil Signatures: Validate() = nil")
	}
}

func TestSignaturesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	synth, err := SyntheticSignatures(300, 1, 12, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Signatures{twoSigs(), {Dim: 3, Index: []int32{0}}, synth} {
		p := filepath.Join(dir, "s.sig")
		if err := WriteSignatures(p, s); err != nil {
			t.Fatal(err)
		}
		size := sigHeader + 4*len(s.Index) + 4*len(s.Data)
		if b, err := os.ReadFile(p); err != nil || len(b) != size {
			t.Errorf("N = %d: file of %d bytes, %v; want %d", s.Len(), len(b), err, size)
		}
		got, err := ReadSignatures(p)
		if err != nil || !sameSigs(got, s) {
			t.Errorf("N = %d: read back a different set, %v", s.Len(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files, want only s.sig", len(entries))
	}
	bad := twoSigs()
	bad.Data[0] = float32(math.NaN())
	p := filepath.Join(dir, "bad.sig")
	if err := WriteSignatures(p, bad); err == nil || !strings.Contains(err.Error(), "bad.sig: signature 0, centroid 0: feature 0 is NaN") {
		t.Errorf("WriteSignatures of a NaN: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("WriteSignatures of an invalid set left a file: %v", err)
	}
}

func TestReadSignaturesErrors(t *testing.T) {
	s := twoSigs()
	good := sigBytes(2, 0, 2, 3, s.Index, s.Data)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, `not a signature file: it does not start with "GPLSIG1\n"`},
		{"wrong magic", []byte("GPLSIG2\n and more bytes than the header needs"), "not a signature file"},
		{"short header", good[:20], "the file ends inside the 32-byte header, after 20 bytes"},
		{"reserved", sigBytes(2, 7, 2, 3, s.Index, s.Data), "the reserved header field at byte 12 is 7, want 0"},
		{"dim 0", sigBytes(0, 0, 2, 3, s.Index, s.Data), "header says Dim = 0, want 1 .. 65536"},
		{"dim huge", sigBytes(1<<31, 0, 2, 3, s.Index, s.Data), "header says Dim = 2147483648"},
		{"N lies", sigBytes(2, 0, 1<<31-1, 3, s.Index, s.Data), "header says 2147483647 signatures and 3 centroids = 8589934660 bytes, file has 80"},
		{"C lies", sigBytes(2, 0, 2, 1<<30, s.Index, s.Data), "header says 2 signatures and 1073741824 centroids = 12884901932 bytes, file has 80"},
		{"N beyond int32", sigBytes(2, 0, 1<<63, 3, s.Index, s.Data), "header says 9223372036854775808 signatures and 3 centroids, but int32 offsets allow at most 2147483647"},
		{"C one short", sigBytes(2, 0, 2, 2, s.Index, s.Data), "header says 2 signatures and 2 centroids = 68 bytes, file has 80"},
		{"truncated", good[:len(good)-3], "header says 2 signatures and 3 centroids = 80 bytes, file has 77"},
		{"trailing bytes", append(slices.Clip(good), 0), "= 80 bytes, file has 81"},
		{"index disagrees", sigBytes(2, 0, 2, 3, []int32{0, 1, 2}, s.Data), "index says 2 centroids (6 floats), data holds 9 floats"},
		{"bad weight", sigBytes(2, 0, 2, 3, s.Index, slices.Replace(slices.Clone(s.Data), 2, 3, -1)), "signature 0: weights sum to -1"},
	} {
		_, err := ReadSignatures(writeTemp(t, "x.sig", tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x.sig") {
			t.Errorf("%s: error %v, want one naming x.sig and saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadSignatures(filepath.Join(t.TempDir(), "missing.sig")); err == nil || !strings.Contains(err.Error(), "missing.sig") {
		t.Errorf("missing file: %v", err)
	}
}

func TestSyntheticSignatures(t *testing.T) {
	const n, minC, maxC, dim = 200, 2, 9, 7
	s, err := SyntheticSignatures(n, minC, maxC, dim, 42)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil || s.Len() != n || s.Dim != dim {
		t.Fatalf("N = %d, Dim = %d, Validate() = %v; want N = %d, Dim = %d, valid", s.Len(), s.Dim, err, n, dim)
	}
	again, _ := SyntheticSignatures(n, minC, maxC, dim, 42)
	other, _ := SyntheticSignatures(n, minC, maxC, dim, 43)
	if !sameSigs(s, again) || sameSigs(s, other) {
		t.Errorf("same seed equal: %v (want true), other seed equal: %v (want false)", sameSigs(s, again), sameSigs(s, other))
	}
	counts := map[int]int{}
	for i := range n {
		c := s.Centroids(i)
		m := len(c) / (dim + 1)
		counts[m]++
		var sum float64
		for j := range m {
			w := c[j*(dim+1)+dim]
			if w <= 0 {
				t.Fatalf("signature %d, centroid %d: weight %v, want > 0", i, j, w)
			}
			sum += float64(w)
			for _, v := range c[j*(dim+1) : j*(dim+1)+dim] {
				if v < -0.5 || v > 1.5 {
					t.Fatalf("signature %d, centroid %d: feature %v far outside [0, 1)", i, j, v)
				}
			}
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("signature %d: weights sum to %v, want 1", i, sum)
		}
	}
	for m := minC; m <= maxC; m++ {
		if counts[m] == 0 {
			t.Errorf("no signature has %d centroids: counts %v", m, counts)
		}
	}
	if len(counts) != maxC-minC+1 {
		t.Errorf("centroid counts %v outside [%d, %d]", counts, minC, maxC)
	}
	for _, tc := range []struct {
		n, minC, maxC, dim int
		want               string
	}{
		{0, 1, 2, 7, "n = 0 signatures, want > 0"},
		{5, 0, 2, 7, "minC = 0 centroids, want >= 1"},
		{5, 3, 2, 7, "maxC = 2 is less than minC = 3"},
		{5, 1, 2, 0, "dim = 0, want 1 .. 65536"},
		{1 << 20, 1, 1 << 12, 7, "overflow int32 offsets"},
	} {
		if _, err := SyntheticSignatures(tc.n, tc.minC, tc.maxC, tc.dim, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SyntheticSignatures(%d, %d, %d, %d): %v, want %q", tc.n, tc.minC, tc.maxC, tc.dim, err, tc.want)
		}
	}
}

// FuzzReadSignatures checks that ReadSignatures never panics, and that
// whatever it accepts is valid and written back byte for byte.
func FuzzReadSignatures(f *testing.F) {
	s := twoSigs()
	good := sigBytes(2, 0, 2, 3, s.Index, s.Data)
	f.Add(good)
	f.Add(good[:40])
	f.Add(sigBytes(2, 0, 2, 1<<40, s.Index, s.Data))
	f.Add(sigBytes(2, 0, 2, 3, []int32{0, 3, 1}, s.Data))
	f.Add(sigBytes(1, 0, 0, 0, []int32{0}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.sig")
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadSignatures(in)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("ReadSignatures accepted an invalid set: %v", err)
		}
		out := filepath.Join(dir, "out.sig")
		if err := WriteSignatures(out, s); err != nil {
			t.Fatal(err)
		}
		if written, err := os.ReadFile(out); err != nil || !bytes.Equal(written, b) {
			t.Fatalf("written back differently (%v)", err)
		}
		if again, err := ReadSignatures(out); err != nil || !sameSigs(again, s) {
			t.Fatalf("read back differently (%v)", err)
		}
	})
}

// TestSyntheticSignaturesChecksMemory: n signatures of up to maxC centroids
// that the host cannot hold are refused before they are generated.
func TestSyntheticSignaturesChecksMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	_, err := SyntheticSignatures(10000, 10, 40, 7, 1)
	enginetest.WantMemoryError(t, err, 4*10000*40*(7+1)+4*(10000+1))
}
