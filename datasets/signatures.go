package datasets

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"gpulab/engine"
)

// A signature file is this lab's own format for a Signatures value, all
// little-endian:
//
//	"GPLSIG1\n"  magic, 8 bytes
//	Dim          uint32: features per centroid
//	reserved     uint32: 0
//	N            uint64: signatures
//	C            uint64: centroids of all signatures together
//	index        (N+1) int32: Signatures.Index
//	data         C×(Dim+1) float32: Signatures.Data
//
// The header is 32 bytes, so the index and the data are 4-byte aligned, and
// the header alone fixes the file's size.

const (
	sigMagic  = "GPLSIG1\n"
	sigHeader = 32
	// sigMaxDim bounds Signatures.Dim: far more features than a signature
	// ever has, and small enough that every size computed from a header fits
	// an int64 with room to spare.
	sigMaxDim = 1 << 16
)

// Signatures is a set of feature signatures: signature i has centroids
// Index[i] .. Index[i+1]-1; centroid c is Data[c*(Dim+1) : (c+1)*(Dim+1)]:
// Dim features followed by its weight.
//
// A feature signature summarises one object, such as an image, as a few
// weighted cluster centroids in feature space; the Signature Quadratic Form
// Distance (SQFD) compares two signatures of any sizes. Keeping every
// centroid in one flat array, found through an index of offsets, is the
// layout a GPU wants: two copies move the whole set.
type Signatures struct {
	Dim   int       // features per centroid (7 in the lab: x, y, L, a, b, contrast, coarseness)
	Index []int32   // len N+1, Index[0] = 0, non-decreasing
	Data  []float32 // (Dim+1) floats per centroid
}

// Len returns N, the number of signatures.
func (s *Signatures) Len() int {
	return max(0, len(s.Index)-1)
}

// Centroids returns the (Dim+1)-float records of signature i, a sub-slice of
// Data: writing to it changes s. Its capacity ends with the signature, so
// appending to it never overwrites the next one. i must be in [0, Len()) and
// s must be valid.
func (s *Signatures) Centroids(i int) []float32 {
	rec := s.Dim + 1
	lo, hi := int(s.Index[i])*rec, int(s.Index[i+1])*rec
	return s.Data[lo:hi:hi]
}

// Append adds one signature whose centroids are the (Dim+1)-float records in
// centroids (copied). It does not check them, so a set can be built up
// cheaply; call Validate once it is complete, which also reports a length
// that is not a multiple of Dim+1 (as Index and Data disagreeing). Append
// works on the zero Signatures once Dim is set.
func (s *Signatures) Append(centroids []float32) {
	if len(s.Index) == 0 {
		s.Index = []int32{0}
	}
	count := 0
	if s.Dim > 0 {
		count = len(centroids) / (s.Dim + 1)
	}
	s.Index = append(s.Index, s.Index[len(s.Index)-1]+int32(count))
	s.Data = append(s.Data, centroids...)
}

// Validate reports whether s is a well-formed set of signatures: 0 < Dim <=
// 65536; Index starts with 0 and never decreases; Index[N]×(Dim+1) =
// len(Data); every signature has at least one centroid; no feature or weight
// is NaN or infinite; and in every signature the weights sum to more than 0
// and none is negative. The error names the signature, the centroid
// (counted from 0 within its signature) and the feature at fault.
func (s *Signatures) Validate() error {
	if err := s.check(); err != nil {
		return fmt.Errorf("datasets: signatures: %w", err)
	}
	return nil
}

// check is Validate without the "datasets: " prefix, for callers that add
// their own context, such as a file name.
func (s *Signatures) check() error {
	switch {
	case s == nil:
		return errors.New("nil *Signatures")
	case s.Dim <= 0 || s.Dim > sigMaxDim:
		return fmt.Errorf("signatures: Dim = %d, want 1 .. %d", s.Dim, sigMaxDim)
	case len(s.Index) == 0:
		return errors.New("signatures: Index is empty, want N+1 offsets starting with 0")
	case s.Index[0] != 0:
		return fmt.Errorf("signatures: Index[0] = %d, want 0", s.Index[0])
	}
	for i := 1; i < len(s.Index); i++ {
		if s.Index[i] < s.Index[i-1] {
			return fmt.Errorf("signatures: Index[%d] = %d is less than Index[%d] = %d, want non-decreasing",
				i, s.Index[i], i-1, s.Index[i-1])
		}
	}
	n, rec := s.Len(), s.Dim+1
	if c := int64(s.Index[n]); c*int64(rec) != int64(len(s.Data)) {
		return fmt.Errorf("index says %d centroids (%d floats), data holds %d floats", c, c*int64(rec), len(s.Data))
	}
	for i := range n {
		cs := s.Centroids(i)
		if len(cs) == 0 {
			return fmt.Errorf("signature %d has no centroids", i)
		}
		var sum float64
		negative := -1 // the first centroid with a negative weight
		for j := range len(cs) / rec {
			c := cs[j*rec : (j+1)*rec]
			for k, v := range c {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					what := fmt.Sprintf("feature %d", k)
					if k == s.Dim {
						what = "weight"
					}
					return fmt.Errorf("signature %d, centroid %d: %s is %v", i, j, what, v)
				}
			}
			if w := c[s.Dim]; w < 0 && negative < 0 {
				negative = j
			}
			sum += float64(c[s.Dim])
		}
		if !(sum > 0) {
			return fmt.Errorf("signature %d: weights sum to %v, want > 0", i, float32(sum))
		}
		if negative >= 0 {
			return fmt.Errorf("signature %d, centroid %d: weight %v is negative", i, negative, cs[negative*rec+s.Dim])
		}
	}
	return nil
}

// WriteSignatures validates s and writes it to path in the signature file
// format. The file is written under a temporary name and renamed into place,
// so that path never holds half a file.
func WriteSignatures(path string, s *Signatures) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("datasets: write %s: %w", path, err)
	}
	return writeAtomic(path, func(w *bufio.Writer) error {
		le := binary.LittleEndian
		h := le.AppendUint32([]byte(sigMagic), uint32(s.Dim))
		h = le.AppendUint32(h, 0)
		h = le.AppendUint64(h, uint64(s.Len()))
		h = le.AppendUint64(h, uint64(s.Index[s.Len()]))
		if _, err := w.Write(h); err != nil {
			return err
		}
		if err := writeLE(w, s.Index); err != nil {
			return err
		}
		return writeLE(w, s.Data)
	})
}

// ReadSignatures reads a signature file written by WriteSignatures. The
// header is checked against the file's size, and what it sizes against the
// host's memory (a sparse file has its size without the disk behind it),
// before anything is allocated, so a corrupt header cannot ask for huge
// amounts of memory; the result is validated as Validate does.
func ReadSignatures(path string) (*Signatures, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	r := bufio.NewReaderSize(f, chunkBytes)
	var h [sigHeader]byte
	n, err := io.ReadFull(r, h[:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF { // a short file is judged below
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	if n < len(sigMagic) || string(h[:len(sigMagic)]) != sigMagic {
		return nil, fileErr(path, "not a signature file: it does not start with %q", sigMagic)
	}
	if n < sigHeader {
		return nil, fileErr(path, "the file ends inside the %d-byte header, after %d bytes", sigHeader, n)
	}
	le := binary.LittleEndian
	dim, reserved, ns, nc := le.Uint32(h[8:]), le.Uint32(h[12:]), le.Uint64(h[16:]), le.Uint64(h[24:])
	switch {
	case reserved != 0:
		return nil, fileErr(path, "the reserved header field at byte 12 is %d, want 0", reserved)
	case dim == 0 || dim > sigMaxDim:
		return nil, fileErr(path, "header says Dim = %d, want 1 .. %d", dim, sigMaxDim)
	case ns > math.MaxInt32 || nc > math.MaxInt32:
		return nil, fileErr(path, "header says %d signatures and %d centroids, but int32 offsets allow at most %d",
			ns, nc, math.MaxInt32)
	}
	// With Dim, N and C bounded as above this cannot overflow.
	want := sigHeader + 4*(int64(ns)+1) + 4*int64(nc)*int64(dim+1)
	if want != st.Size() {
		return nil, fileErr(path, "header says %d signatures and %d centroids = %d bytes, file has %d",
			ns, nc, want, st.Size())
	}
	what := fmt.Sprintf("the offsets of %d signatures and %d centroids of %d features and a weight", ns, nc, dim)
	if err := checkHostMemory(path, what, float64(want-sigHeader)); err != nil {
		return nil, err
	}
	s := &Signatures{Dim: int(dim), Index: make([]int32, ns+1), Data: make([]float32, nc*uint64(dim+1))}
	if err := readLE(r, s.Index); err != nil {
		return nil, fmt.Errorf("datasets: %s: reading the index: %w", path, err)
	}
	if err := readLE(r, s.Data); err != nil {
		return nil, fmt.Errorf("datasets: %s: reading the centroids: %w", path, err)
	}
	if err := s.check(); err != nil {
		return nil, fileErr(path, "%v", err)
	}
	return s, nil
}

// writeLE writes data little-endian, chunkBytes at a time.
func writeLE[T int32 | float32](w io.Writer, data []T) error {
	var buf []byte
	for len(data) > 0 {
		k := min(len(data), chunkBytes/4)
		buf, _ = binary.Append(buf[:0], binary.LittleEndian, data[:k]) // cannot fail for []int32, []float32
		if _, err := w.Write(buf); err != nil {
			return err
		}
		data = data[k:]
	}
	return nil
}

// readLE fills dst with little-endian values from r, chunkBytes at a time.
func readLE[T int32 | float32](r io.Reader, dst []T) error {
	buf := make([]byte, min(4*len(dst), chunkBytes))
	for len(dst) > 0 {
		k := min(len(dst), len(buf)/4)
		if _, err := io.ReadFull(r, buf[:4*k]); err != nil {
			return err
		}
		binary.Decode(buf[:4*k], binary.LittleEndian, dst[:k]) // cannot fail: the sizes match
		dst = dst[k:]
	}
	return nil
}

// SyntheticSignatures returns n random signatures of dim features for
// testing and benchmarks. Each has a uniformly random number of centroids
// in [minC, maxC] and belongs to one of 8 "themes": a theme is 3 prototype
// points in [0, 1)^dim, and centroid j of a signature lies near prototype
// j mod 3 of its theme (Gaussian noise, standard deviation 0.05). Signatures
// of one theme are therefore close under SQFD and those of different themes
// far apart, so k-medoids has clusters to find. Weights are positive and sum
// to 1 (up to float32 rounding). The same arguments always give the same
// signatures. It refuses, with an *engine.MemoryError, n signatures whose
// most centroids (n·maxC records of dim+1 float32s) and offsets the host
// cannot hold.
func SyntheticSignatures(n, minC, maxC, dim int, seed uint64) (*Signatures, error) {
	switch {
	case n <= 0:
		return nil, fmt.Errorf("datasets: SyntheticSignatures: n = %d signatures, want > 0", n)
	case minC < 1:
		return nil, fmt.Errorf("datasets: SyntheticSignatures: minC = %d centroids, want >= 1", minC)
	case maxC < minC:
		return nil, fmt.Errorf("datasets: SyntheticSignatures: maxC = %d is less than minC = %d", maxC, minC)
	case dim <= 0 || dim > sigMaxDim:
		return nil, fmt.Errorf("datasets: SyntheticSignatures: dim = %d, want 1 .. %d", dim, sigMaxDim)
	case maxC > math.MaxInt32/n:
		return nil, fmt.Errorf("datasets: SyntheticSignatures: up to n × maxC = %d × %d centroids overflow int32 offsets", n, maxC)
	}
	need := 4*uint64(n)*uint64(maxC)*uint64(dim+1) + 4*uint64(n+1)
	if err := engine.CheckHostMemory(fmt.Sprintf("datasets: %d synthetic signatures", n), fmt.Sprintf("up to %d centroids of %d features and a weight", n*maxC, dim), need); err != nil {
		return nil, err
	}
	const themes, protos, spread = 8, 3, 0.05
	r := rand.New(rand.NewPCG(seed, golden))
	proto := make([]float64, themes*protos*dim) // prototype p of theme t starts at (t*protos+p)*dim
	for i := range proto {
		proto[i] = r.Float64()
	}
	s := &Signatures{Dim: dim, Index: make([]int32, 1, n+1)}
	rec := dim + 1
	for range n {
		t, m := r.IntN(themes), minC+r.IntN(maxC-minC+1)
		start := len(s.Data)
		var sum float64
		for j := range m {
			p := proto[(t*protos+j%protos)*dim:][:dim]
			for _, v := range p {
				s.Data = append(s.Data, float32(v+spread*r.NormFloat64()))
			}
			w := 0.2 + r.Float64()
			s.Data = append(s.Data, float32(w))
			sum += w
		}
		for j := range m {
			s.Data[start+j*rec+dim] /= float32(sum)
		}
		s.Index = append(s.Index, s.Index[len(s.Index)-1]+int32(m))
	}
	return s, nil
}
