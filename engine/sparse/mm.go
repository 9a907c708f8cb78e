package sparse

// Matrix Market input and output (https://math.nist.gov/MatrixMarket/formats.html).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"gpulab/engine"
	"gpulab/engine/atomicfile"
)

// Header describes a Matrix Market file as written, before symmetric
// entries are expanded.
type Header struct {
	Object   string // "matrix"
	Format   string // "coordinate" or "array"
	Field    string // "real", "integer" or "pattern"
	Symmetry string // "general", "symmetric" or "skew-symmetric"
	Rows     int
	Cols     int
	Entries  int // entries stored in the file (for array: the values listed)
	// Comments are the first comment lines, without the leading '%' and
	// trimmed: maxComments of them at most, of maxCommentBytes at most
	// together. CommentsOmitted counts the comment lines after those.
	Comments        []string
	CommentsOmitted int
}

// maxPrealloc caps the capacity reserved from a header's entry count, so a
// lying header cannot make the reader allocate more than the data
// justifies; the entries grow past it as they are read. Where the size is
// known, a header that gives more entries than the bytes after it can hold
// is an error before anything is allocated.
const maxPrealloc = 1 << 16

// The bounds on what the reader keeps and skips, whatever a file holds:
// the comments it keeps (Header.Comments), and the comment and blank lines
// it reads through, which take time and give nothing (a gzipped flood of
// them is a few hundred kilobytes).
const (
	maxComments     = 1000
	maxCommentBytes = 64 << 10
	maxSkippedBytes = 16 << 20
)

// ReadMatrixMarket reads a Matrix Market matrix: coordinate or array format;
// real, integer or pattern field (pattern entries get value 1); general,
// symmetric or skew-symmetric symmetry. Symmetric and skew-symmetric
// entries are expanded: every off-diagonal entry (i, j) also gives (j, i),
// negated for skew-symmetric. Indices in the file are 1-based; the COO's are
// 0-based. Array (dense) files keep only their nonzero values. Complex
// and hermitian matrices are not supported, and neither are values that
// are not finite (NaN, Inf, or beyond float32's range), which no
// computation of the lab can use. A symmetric or skew-symmetric file lists
// one triangle, the lower (as the format says) or the upper: entries in
// both are an error, since the mirrored ones would count twice. Entries at
// one position stay in the COO as they are; ToCSR sums them, as
// scipy.io.mmread(f).tocsr() does.
//
// What the reader allocates is bounded by the input, not by what a header
// claims: the entries that the size line gives are checked against host
// memory (engine.CheckHostMemory) before any is read, only the first
// comments are kept (Header.Comments), and more than maxSkippedBytes of
// comment and blank lines are an error. Errors name the line, as
// "line N: ...", and for a bad value the entry, as "entry K (i, j)".
func ReadMatrixMarket(r io.Reader) (*COO, Header, error) {
	return readMM(r, "", -1)
}

// ReadMatrixMarketFile reads a Matrix Market file, gunzipping it when it
// starts with the gzip magic bytes or its name ends in ".gz". Errors name
// the file and line, as "path:line N: ...". A file that is not gzipped
// must be large enough for the entries its size line gives, at the fewest
// bytes an entry's line can take.
func ReadMatrixMarketFile(path string) (*COO, Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Header{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, Header{}, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	size := st.Size()
	magic, _ := br.Peek(2)
	if strings.HasSuffix(path, ".gz") || (len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, Header{}, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r, size = zr, -1
	}
	return readMM(r, path, size)
}

// mmReader tracks the position for error messages, the bytes read, and
// the comment and blank lines read through.
type mmReader struct {
	sc           *bufio.Scanner
	name         string
	h            *Header // where comments go
	line         int
	bytes        int64 // the lines read with a newline each (a "\r\n" counts one byte)
	skipped      int64 // the bytes of those lines that were comments or blank
	commentBytes int   // of h.Comments together
}

// errorf returns an error that names the line (and the file), formatted as
// fmt.Errorf formats, so that %w wraps.
func (p *mmReader) errorf(format string, args ...any) error {
	where := fmt.Sprintf("line %d", p.line)
	if p.name != "" {
		where = p.name + ":" + where
	}
	return fmt.Errorf("%s: "+format, append([]any{where}, args...)...)
}

// scan returns the next line, valid until the next call, or ok=false at the
// end of input.
func (p *mmReader) scan() ([]byte, bool, error) {
	if !p.sc.Scan() {
		if err := p.sc.Err(); err != nil {
			p.line++
			return nil, false, p.errorf("%v", err)
		}
		return nil, false, nil
	}
	p.line++
	p.bytes += int64(len(p.sc.Bytes())) + 1
	return p.sc.Bytes(), true, nil
}

// next returns the next line that is neither a comment nor blank, trimmed,
// or ok=false at the end of input. The comment lines before it go to
// keepComment; they and the blank lines count against maxSkippedBytes, and
// allocate nothing.
func (p *mmReader) next() (string, bool, error) {
	for {
		b, ok, err := p.scan()
		if !ok {
			return "", false, err
		}
		t := bytes.TrimSpace(b)
		if len(t) > 0 && t[0] != '%' {
			return string(t), true, nil
		}
		if p.skipped += int64(len(b)) + 1; p.skipped > maxSkippedBytes {
			return "", false, p.errorf("more than %d bytes of comment and blank lines", maxSkippedBytes)
		}
		if len(t) > 0 {
			p.keepComment(t[1:])
		}
	}
}

// keepComment adds comment c to the header's Comments while they are fewer
// than maxComments and c fits in maxCommentBytes with them, and counts it
// in CommentsOmitted from the first that does not: Comments are the first
// comments of the file.
func (p *mmReader) keepComment(c []byte) {
	c = bytes.TrimSpace(c)
	if p.h.CommentsOmitted > 0 || len(p.h.Comments) == maxComments || p.commentBytes+len(c) > maxCommentBytes {
		p.h.CommentsOmitted++
		return
	}
	p.h.Comments = append(p.h.Comments, string(c))
	p.commentBytes += len(c)
}

// readMM reads a Matrix Market matrix from r, called name in errors; size
// is r's length in bytes, or -1 when unknown.
func readMM(r io.Reader, name string, size int64) (*COO, Header, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var h Header
	p := &mmReader{sc: sc, name: name, h: &h}

	// Banner.
	banner, ok, err := p.scan()
	if err != nil {
		return nil, h, err
	}
	if !ok {
		p.line = 1
		return nil, h, p.errorf("empty file: expected a %%%%MatrixMarket banner")
	}
	if err := h.parseBanner(string(banner)); err != nil {
		return nil, h, p.errorf("%v", err)
	}

	// Comments, then the size line.
	sizeLine, ok, err := p.next()
	if err != nil {
		return nil, h, err
	}
	if !ok {
		p.line++
		return nil, h, p.errorf("file ends before the size line")
	}
	if err := h.parseSize(strings.Fields(sizeLine)); err != nil {
		return nil, h, p.errorf("%v", err)
	}
	if need, rest := h.minEntryBytes(), max(size-p.bytes, 0); size >= 0 && need > rest {
		return nil, h, p.errorf("the size line gives %d entries, which take at least %d bytes, but %d bytes follow it", h.Entries, need, rest)
	}
	stored, holds := float64(h.Entries), "its entries in coordinate form"
	if h.Symmetry != "general" {
		stored, holds = 2*stored, holds+", mirrored ones included"
	}
	what := fmt.Sprintf("a %d×%d matrix of %d entries", h.Rows, h.Cols, h.Entries)
	if err := engine.CheckHostMemory(what, holds, engine.BytesOf(12*stored)); err != nil {
		return nil, h, p.errorf("%w", err)
	}

	m := &COO{Rows: h.Rows, Cols: h.Cols}
	c := min(int(stored), maxPrealloc)
	m.Row, m.Col, m.Val = make([]int32, 0, c), make([]int32, 0, c), make([]float32, 0, c)

	// Entries.
	// Array files list column by column; for symmetric (skew) files only the
	// lower triangle with (without) the diagonal.
	ai, aj := 0, 0 // next array position, 0-based
	if h.Symmetry == "skew-symmetric" {
		ai = 1
	}
	n := 0
	var offDiag struct{ line, i, j int } // the first entry off the diagonal, of a symmetric (skew) file
	for {
		t, ok, err := p.next()
		if err != nil {
			return nil, h, err
		}
		if !ok {
			break
		}
		if n == h.Entries {
			return nil, h, p.errorf("more entries than the %d the size line gives", h.Entries)
		}
		n++
		f := strings.Fields(t)
		var i, j int
		var v float32
		if h.Format == "array" {
			if len(f) != 1 {
				return nil, h, p.errorf("want 1 value in an array entry, have %d fields", len(f))
			}
			if v, err = h.parseValue(f[0]); err != nil {
				return nil, h, p.errorf("entry %d (%d, %d): %v", n, ai+1, aj+1, err)
			}
			i, j = ai, aj
			ai++
			if ai == h.Rows {
				aj++
				ai = aj
				if h.Symmetry == "general" {
					ai = 0
				} else if h.Symmetry == "skew-symmetric" {
					ai = aj + 1
				}
			}
			if v == 0 {
				continue
			}
		} else {
			want := 3
			if h.Field == "pattern" {
				want = 2
			}
			if len(f) != want {
				return nil, h, p.errorf("want %d fields in a %s entry, have %d", want, h.Field, len(f))
			}
			if i, err = parseIndex(f[0], h.Rows, "row"); err != nil {
				return nil, h, p.errorf("%v", err)
			}
			if j, err = parseIndex(f[1], h.Cols, "column"); err != nil {
				return nil, h, p.errorf("%v", err)
			}
			v = 1
			if want == 3 {
				if v, err = h.parseValue(f[2]); err != nil {
					return nil, h, p.errorf("entry %d (%d, %d): %v", n, i+1, j+1, err)
				}
			}
			if i == j && h.Symmetry == "skew-symmetric" {
				return nil, h, p.errorf("diagonal entry (%d, %d) in a skew-symmetric matrix", i+1, j+1)
			}
			if i != j && h.Symmetry != "general" {
				switch first := offDiag; {
				case first.line == 0:
					offDiag.line, offDiag.i, offDiag.j = p.line, i, j
				case (i > j) != (first.i > first.j):
					return nil, h, p.errorf("entry (%d, %d) is %s the diagonal, but line %d's (%d, %d) is %s it: a %s file lists one triangle only",
						i+1, j+1, side(i, j), first.line, first.i+1, first.j+1, side(first.i, first.j), h.Symmetry)
				}
			}
		}
		m.Row = append(m.Row, int32(i))
		m.Col = append(m.Col, int32(j))
		m.Val = append(m.Val, v)
		if i != j && h.Symmetry != "general" {
			if h.Symmetry == "skew-symmetric" {
				v = -v
			}
			m.Row = append(m.Row, int32(j))
			m.Col = append(m.Col, int32(i))
			m.Val = append(m.Val, v)
		}
	}
	if n < h.Entries {
		p.line++
		return nil, h, p.errorf("file ends after %d of the %d entries the size line gives", n, h.Entries)
	}
	return m, h, nil
}

// side says where entry (i, j), off the diagonal, lies: "below" or "above".
func side(i, j int) string {
	if i > j {
		return "below"
	}
	return "above"
}

func (h *Header) parseBanner(s string) error {
	f := strings.Fields(s)
	if len(f) == 0 || !strings.EqualFold(f[0], "%%MatrixMarket") {
		return fmt.Errorf("bad banner %q: want %%%%MatrixMarket matrix FORMAT FIELD SYMMETRY", trunc(s))
	}
	if len(f) != 5 {
		return fmt.Errorf("bad banner %q: want 5 words, have %d", trunc(s), len(f))
	}
	h.Object, h.Format, h.Field, h.Symmetry = strings.ToLower(f[1]), strings.ToLower(f[2]), strings.ToLower(f[3]), strings.ToLower(f[4])
	if h.Object != "matrix" {
		return fmt.Errorf("object %q not supported (only matrix)", f[1])
	}
	if h.Format != "coordinate" && h.Format != "array" {
		return fmt.Errorf("format %q not supported (only coordinate and array)", f[2])
	}
	switch h.Field {
	case "real", "integer", "pattern":
	case "double":
		h.Field = "real"
	case "complex":
		return fmt.Errorf("field complex not supported (values are float32; only real, integer and pattern)")
	default:
		return fmt.Errorf("field %q not supported (only real, integer and pattern)", f[3])
	}
	if h.Field == "pattern" && h.Format == "array" {
		return fmt.Errorf("field pattern is invalid with format array")
	}
	switch h.Symmetry {
	case "general", "symmetric", "skew-symmetric":
	case "hermitian":
		return fmt.Errorf("symmetry hermitian not supported (only general, symmetric and skew-symmetric)")
	default:
		return fmt.Errorf("symmetry %q not supported (only general, symmetric and skew-symmetric)", f[4])
	}
	return nil
}

func (h *Header) parseSize(f []string) error {
	want := 3
	if h.Format == "array" {
		want = 2
	}
	if len(f) != want {
		return fmt.Errorf("bad size line %q: want %d numbers for format %s", trunc(strings.Join(f, " ")), want, h.Format)
	}
	var v [3]int
	for k, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("bad size line: %q is not an integer", trunc(s))
		}
		if n < 0 {
			return fmt.Errorf("bad size line: negative size %d", n)
		}
		if n > math.MaxInt32 {
			return fmt.Errorf("bad size line: %d is over the int32 limit", n)
		}
		v[k] = int(n)
	}
	h.Rows, h.Cols = v[0], v[1]
	if h.Symmetry != "general" && h.Rows != h.Cols {
		return fmt.Errorf("a %s matrix must be square, have %d×%d", h.Symmetry, h.Rows, h.Cols)
	}
	if h.Format == "array" {
		switch h.Symmetry {
		case "general":
			h.Entries = h.Rows * h.Cols
		case "symmetric":
			h.Entries = h.Rows * (h.Rows + 1) / 2
		default:
			h.Entries = h.Rows * (h.Rows - 1) / 2
		}
	} else {
		h.Entries = v[2]
		if h.Entries > 0 && (h.Rows == 0 || h.Cols == 0) {
			return fmt.Errorf("bad size line: %d entries in a %d×%d matrix", h.Entries, h.Rows, h.Cols)
		}
	}
	limit := math.MaxInt32
	if h.Symmetry != "general" {
		limit /= 2
	}
	if h.Entries > limit {
		return fmt.Errorf("bad size line: %d entries is over the int32 limit", h.Entries)
	}
	return nil
}

func parseIndex(s string, n int, what string) (int, error) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s index %q is not an integer", what, trunc(s))
	}
	if i < 1 || i > int64(n) {
		return 0, fmt.Errorf("%s index %d out of range 1..%d", what, i, n)
	}
	return int(i - 1), nil
}

func (h *Header) parseValue(s string) (float32, error) {
	if h.Field == "integer" {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("value %q is not an integer", trunc(s))
		}
		return float32(i), nil
	}
	v, err := strconv.ParseFloat(s, 32)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("value %q is beyond float32's range (it would be infinite)", trunc(s))
	case err != nil:
		return 0, fmt.Errorf("value %q is not a number", trunc(s))
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("value %q is not finite: the lab computes with finite values only", trunc(s))
	}
	return float32(v), nil
}

// minEntryBytes is the fewest bytes that h's entries take in a file: each
// on its own line of one-digit numbers separated by single spaces, the
// last line without its newline.
func (h *Header) minEntryBytes() int64 {
	if h.Entries == 0 {
		return 0
	}
	perLine := int64(6) // "1 1 1\n"
	switch {
	case h.Format == "array":
		perLine = 2 // "1\n"
	case h.Field == "pattern":
		perLine = 4 // "1 1\n"
	}
	return int64(h.Entries)*perLine - 1
}

// trunc shortens s for an error message.
func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// WriteMatrixMarket writes m as a "coordinate real general" Matrix Market
// matrix with 1-based indices, one entry per line in m's order. Each line of
// comment becomes a '%' comment line.
func WriteMatrixMarket(w io.Writer, m *COO, comment string) error {
	if len(m.Row) != len(m.Val) || len(m.Col) != len(m.Val) {
		return fmt.Errorf("sparse: COO has %d rows, %d columns and %d values", len(m.Row), len(m.Col), len(m.Val))
	}
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("sparse: COO size %d×%d", m.Rows, m.Cols)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString("%%MatrixMarket matrix coordinate real general\n")
	if comment != "" {
		for _, l := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
			bw.WriteString("% " + strings.TrimRight(l, "\r") + "\n")
		}
	}
	fmt.Fprintf(bw, "%d %d %d\n", m.Rows, m.Cols, len(m.Val))
	buf := make([]byte, 0, 64)
	for k := range m.Val {
		i, j := int(m.Row[k]), int(m.Col[k])
		if i < 0 || i >= m.Rows || j < 0 || j >= m.Cols {
			return fmt.Errorf("sparse: entry %d at (%d, %d) is outside %d×%d", k, i, j, m.Rows, m.Cols)
		}
		buf = strconv.AppendInt(buf[:0], int64(i+1), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(j+1), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, float64(m.Val[k]), 'g', -1, 32)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteMatrixMarketFile writes m to path as WriteMatrixMarket does (gzipped
// when path ends in ".gz"). It writes a temporary file in the same directory
// and renames it, so path never holds half-written output.
func WriteMatrixMarketFile(path string, m *COO, comment string) error {
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		if strings.HasSuffix(path, ".gz") {
			zw := gzip.NewWriter(w)
			if err := WriteMatrixMarket(zw, m, comment); err != nil {
				return err
			}
			return zw.Close()
		}
		return WriteMatrixMarket(w, m, comment)
	})
}
