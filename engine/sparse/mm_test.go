package sparse

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/enginetest"
)

// mmDense expands m into a row-major slice, summing duplicates.
func mmDense(m *COO) []float32 {
	d := make([]float32, m.Rows*m.Cols)
	for k := range m.Val {
		d[int(m.Row[k])*m.Cols+int(m.Col[k])] += m.Val[k]
	}
	return d
}

func TestReadDatasets(t *testing.T) {
	dir := filepath.Join("..", "..", "datasets", "mtx")
	tests := []struct {
		file                  string
		format, field, sym    string
		rows, cols, stored, n int
		check                 map[[2]int]float32
	}{
		{"general4x4.mtx", "coordinate", "real", "general", 4, 4, 7, 7,
			map[[2]int]float32{{0, 0}: 4, {0, 2}: -1.5, {3, 1}: 1e-3, {1, 0}: 0}},
		{"sym5x5.mtx", "coordinate", "real", "symmetric", 5, 5, 9, 13,
			map[[2]int]float32{{0, 0}: 2, {1, 0}: -1, {0, 1}: -1, {4, 3}: -1, {3, 4}: -1, {0, 2}: 0}},
		{"pattern4x6.mtx", "coordinate", "pattern", "general", 4, 6, 6, 6,
			map[[2]int]float32{{0, 5}: 1, {2, 4}: 1, {0, 1}: 0}},
		{"skew4x4.mtx", "coordinate", "integer", "skew-symmetric", 4, 4, 4, 8,
			map[[2]int]float32{{1, 0}: 3, {0, 1}: -3, {3, 1}: 7, {1, 3}: -7, {0, 0}: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			m, h, err := ReadMatrixMarketFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if h.Object != "matrix" || h.Format != tc.format || h.Field != tc.field || h.Symmetry != tc.sym {
				t.Errorf("header %+v", h)
			}
			if h.Rows != tc.rows || h.Cols != tc.cols || h.Entries != tc.stored {
				t.Errorf("header sizes %d×%d %d, want %d×%d %d", h.Rows, h.Cols, h.Entries, tc.rows, tc.cols, tc.stored)
			}
			if len(h.Comments) == 0 {
				t.Errorf("no comments")
			}
			if m.Rows != tc.rows || m.Cols != tc.cols || m.NNZ() != tc.n {
				t.Errorf("COO %d×%d nnz %d, want %d×%d nnz %d", m.Rows, m.Cols, m.NNZ(), tc.rows, tc.cols, tc.n)
			}
			d := mmDense(m)
			for ij, want := range tc.check {
				if got := d[ij[0]*m.Cols+ij[1]]; got != want {
					t.Errorf("(%d, %d) = %v, want %v", ij[0], ij[1], got, want)
				}
			}
		})
	}
}

func TestReadArray(t *testing.T) {
	tests := []struct {
		name, in string
		want     []float32 // row-major
		stored   int
	}{
		{"general", "%%MatrixMarket matrix array real general\n2 3\n1\n2\n0\n4\n5\n6\n",
			[]float32{1, 0, 5, 2, 4, 6}, 6},
		{"symmetric", "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
			[]float32{1, 2, 3, 2, 4, 5, 3, 5, 6}, 6},
		{"skew", "%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n",
			[]float32{0, -1, -2, 1, 0, -3, 2, 3, 0}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, h, err := ReadMatrixMarket(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if h.Entries != tc.stored {
				t.Errorf("Entries %d, want %d", h.Entries, tc.stored)
			}
			d := mmDense(m)
			for k := range d {
				if d[k] != tc.want[k] {
					t.Fatalf("dense %v, want %v", d, tc.want)
				}
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	const coord = "%%MatrixMarket matrix coordinate real general\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "line 1: empty file"},
		{"bad banner", "%MatrixMarket matrix coordinate real general\n1 1 0\n", "line 1: bad banner"},
		{"short banner", "%%MatrixMarket matrix coordinate real\n1 1 0\n", "line 1: bad banner"},
		{"vector", "%%MatrixMarket vector coordinate real general\n", "line 1: object \"vector\" not supported"},
		{"format", "%%MatrixMarket matrix sparse real general\n", "line 1: format \"sparse\" not supported"},
		{"complex", "%%MatrixMarket matrix coordinate complex general\n", "line 1: field complex not supported"},
		{"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n", "line 1: symmetry hermitian not supported"},
		{"array pattern", "%%MatrixMarket matrix array pattern general\n", "line 1: field pattern is invalid"},
		{"no size", coord + "% only a comment\n", "line 3: file ends before the size line"},
		{"size words", coord + "3 3\n", "line 2: bad size line"},
		{"size nonnumeric", coord + "% c\n3 x 1\n", "line 3: bad size line: \"x\" is not an integer"},
		{"size negative", coord + "-3 3 1\n", "line 2: bad size line: negative size -3"},
		{"zero with entries", coord + "0 3 1\n1 1 1\n", "line 2: bad size line: 1 entries in a 0×3 matrix"},
		{"symmetric not square", "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n", "line 2: a symmetric matrix must be square"},
		{"row out of range", coord + "2 2 2\n1 1 1\n3 1 1\n", "line 4: row index 3 out of range 1..2"},
		{"col zero", coord + "2 2 1\n1 0 1\n", "line 3: column index 0 out of range 1..2"},
		{"bad index", coord + "2 2 1\n1.5 1 1\n", "line 3: row index \"1.5\" is not an integer"},
		{"bad value", coord + "2 2 1\n1 1 abc\n", "line 3: entry 1 (1, 1): value \"abc\" is not a number"},
		{"value range", coord + "2 2 1\n1 1 1e40\n", "line 3: entry 1 (1, 1): value \"1e40\" is beyond float32's range"},
		{"nan", coord + "2 2 2\n1 1 1\n2 1 NaN\n", "line 4: entry 2 (2, 1): value \"NaN\" is not finite"},
		{"inf", coord + "% c\n2 2 1\n1 2 -Inf\n", "line 4: entry 1 (1, 2): value \"-Inf\" is not finite"},
		{"array inf", "%%MatrixMarket matrix array real general\n2 2\n1\ninfinity\n", "line 4: entry 2 (2, 1): value \"infinity\" is not finite"},
		{"symmetric array nan", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\nnan\n", "line 5: entry 3 (2, 2): value \"nan\" is not finite"},
		{"bad integer", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 2.5\n", "line 3: entry 1 (1, 1): value \"2.5\" is not an integer"},
		{"missing value", coord + "2 2 1\n1 1\n", "line 3: want 3 fields in a real entry, have 2"},
		{"pattern with value", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n", "line 3: want 2 fields"},
		{"too few", coord + "2 2 3\n1 1 1\n\n2 2 1\n", "line 6: file ends after 2 of the 3 entries"},
		{"too many", coord + "2 2 1\n1 1 1\n2 2 1\n", "line 4: more entries than the 1"},
		{"skew diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n", "line 3: diagonal entry (1, 1) in a skew-symmetric matrix"},
		{"symmetric both triangles", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 1\n2 1 1\n",
			"line 4: entry (2, 1) is below the diagonal, but line 3's (1, 2) is above it: a symmetric file lists one triangle only"},
		{"skew both triangles", "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n% c\n3 1 1\n\n1 2 4\n",
			"line 6: entry (1, 2) is above the diagonal, but line 4's (3, 1) is below it: a skew-symmetric file lists one triangle only"},
		{"symmetric both triangles after the diagonal", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n3 2\n2 3\n",
			"line 5: entry (2, 3) is above the diagonal, but line 4's (3, 2) is below it"},
		{"array too few", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", "line 6: file ends after 3 of the 4 entries"},
		{"array two values", "%%MatrixMarket matrix array real general\n1 2\n1 2\n", "line 3: want 1 value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadMatrixMarket(strings.NewReader(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), "line ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestReadFileErrorNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.mtx")
	os.WriteFile(path, []byte("%%MatrixMarket matrix coordinate real general\n2 2 1\n9 1 1\n"), 0o644)
	_, _, err := ReadMatrixMarketFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":line 3: row index 9") {
		t.Fatalf("error %v", err)
	}
}

// TestReadFileTooShortForItsHeader: a file whose size line gives more
// entries than the bytes after it can hold is refused at the size line,
// before anything is sized by it; a file of the fewest bytes that can hold
// them is read.
func TestReadFileTooShortForItsHeader(t *testing.T) {
	const coord = "%%MatrixMarket matrix coordinate real general\n"
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, err string
	}{
		{"lying", coord + "2000000000 2000000000 2000000000\n1 1 1\n", "line 2: the size line gives 2000000000 entries, which take at least 11999999999 bytes, but 6 bytes follow it"},
		{"short", coord + "% c\n3 3 2\n1 1 1\n", "line 3: the size line gives 2 entries, which take at least 11 bytes, but 6 bytes follow it"},
		{"array", "%%MatrixMarket matrix array real general\n40000 40000\n1\n", "line 2: the size line gives 1600000000 entries, which take at least 3199999999 bytes, but 2 bytes follow it"},
		{"no entries", coord + "2000000000 2000000000 0\n", ""},
		{"no entries, no newline", coord + "2 2 0", ""},
		{"fewest bytes", coord + "2 2 2\n1 1 1\n2 2 2", ""},
		{"pattern fewest bytes", "%%MatrixMarket matrix coordinate pattern general\r\n2 2 2\r\n1 1\r\n2 2", ""},
		{"array fewest bytes", "%%MatrixMarket matrix array integer general\n2 1\n1\n2", ""},
	} {
		path := filepath.Join(dir, tc.name+".mtx")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		m, h, err := ReadMatrixMarketFile(path)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && m.NNZ() != h.Entries:
			t.Errorf("%s: %d entries read, the header gives %d", tc.name, m.NNZ(), h.Entries)
		case tc.err != "" && (err == nil || err.Error() != path+":"+tc.err):
			t.Errorf("%s: error %v\nwant %s:%s", tc.name, err, path, tc.err)
		}
	}
}

func TestReadBlankAndComments(t *testing.T) {
	in := "%%MatrixMarket Matrix Coordinate Real General\n%first\n\n% second\n  \n2 2 2\n\n1 1 1.5\n% mid\n2 2 -2\n\n"
	m, h, err := ReadMatrixMarket(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.NNZ() != 2 || len(h.Comments) != 3 || h.Comments[0] != "first" || h.Comments[1] != "second" {
		t.Errorf("nnz %d, comments %q", m.NNZ(), h.Comments)
	}
}

func sortedEntries(m *COO) []string {
	var s []string
	for k := range m.Val {
		s = append(s, fmt.Sprintf("%d,%d=%v", m.Row[k], m.Col[k], m.Val[k]))
	}
	sort.Strings(s)
	return s
}

func TestRoundTrip(t *testing.T) {
	m := &COO{Rows: 3, Cols: 5,
		Row: []int32{0, 2, 1, 2, 0},
		Col: []int32{4, 0, 1, 3, 0},
		Val: []float32{1.5, -2.25e-7, 3.1415927, 1e30, -0.1}}
	for _, name := range []string{"m.mtx", "m.mtx.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			if err := WriteMatrixMarketFile(path, m, "round trip\nsecond line"); err != nil {
				t.Fatal(err)
			}
			got, h, err := ReadMatrixMarketFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if h.Format != "coordinate" || h.Field != "real" || h.Symmetry != "general" ||
				len(h.Comments) != 2 || h.Comments[1] != "second line" {
				t.Errorf("header %+v", h)
			}
			if got.Rows != m.Rows || got.Cols != m.Cols {
				t.Errorf("size %d×%d", got.Rows, got.Cols)
			}
			a, b := sortedEntries(m), sortedEntries(got)
			if strings.Join(a, ";") != strings.Join(b, ";") {
				t.Errorf("entries %v, want %v", b, a)
			}
			ents, _ := os.ReadDir(filepath.Dir(path))
			if len(ents) != 1 {
				t.Errorf("directory holds %d files, want 1 (temp file left?)", len(ents))
			}
		})
	}
}

func TestReadGzipByMagic(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n2 1\n"))
	zw.Close()
	path := filepath.Join(t.TempDir(), "zipped.mtx") // no .gz suffix
	os.WriteFile(path, b.Bytes(), 0o644)
	m, _, err := ReadMatrixMarketFile(path)
	if err != nil || m.NNZ() != 1 || m.Row[0] != 1 || m.Val[0] != 1 {
		t.Fatalf("%v %+v", err, m)
	}
}

func TestWriteErrorsLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.mtx")
	bad := &COO{Rows: 2, Cols: 2, Row: []int32{0, 5}, Col: []int32{0, 0}, Val: []float32{1, 2}}
	if err := WriteMatrixMarketFile(path, bad, ""); err == nil {
		t.Fatal("no error for an entry outside the matrix")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
	if err := WriteMatrixMarket(&bytes.Buffer{}, &COO{Rows: 1, Cols: 1, Row: []int32{0}}, ""); err == nil {
		t.Error("no error for mismatched lengths")
	}
}

func FuzzReadMatrixMarket(f *testing.F) {
	for _, name := range []string{"general4x4.mtx", "sym5x5.mtx", "pattern4x6.mtx", "skew4x4.mtx"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "datasets", "mtx", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
		"%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n",
		"%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n",
		"%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 2147483647\n1 1 1\n",
		"%%MatrixMarket matrix array real general\n100000 100000\n1\n",
		"%%MatrixMarket matrix coordinate complex hermitian\n1 1 1\n1 1 1 0\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, h, err := ReadMatrixMarket(bytes.NewReader(data))
		if checkRead(t, m, h, err, ""); err != nil {
			return
		}
		// What was read writes and reads back the same.
		var b bytes.Buffer
		if err := WriteMatrixMarket(&b, m, strings.Join(h.Comments, "\n")); err != nil {
			t.Fatal(err)
		}
		m2, _, err := ReadMatrixMarket(&b)
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		if m2.NNZ() != m.NNZ() {
			t.Fatalf("read back %d entries, want %d", m2.NNZ(), m.NNZ())
		}
	})
}

// TestReadSumsDuplicates: entries at the same position are summed where the
// reader's COO becomes CSR (ToCSR), as scipy.io.mmread(f).tocsr() does,
// mirrored symmetric entries included, and the CSR stays sorted by column
// within each row; explicit zeros stay. Symmetric files stored as the upper
// triangle read as those stored as the lower. The CSRs are worked by hand.
func TestReadSumsDuplicates(t *testing.T) {
	tests := []struct {
		name, in string
		stored   int // h.Entries
		coo      int // entries in the COO, mirrored ones included
		ptr, col []int32
		val      []float32
	}{
		{"general (1,1) twice", "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n1 1 2\n2 2 3\n",
			3, 3, []int32{0, 1, 2}, []int32{0, 1}, []float32{3, 3}},
		{"general, unsorted, a sum of zero kept", "%%MatrixMarket matrix coordinate real general\n3 3 5\n3 1 1\n1 3 2\n3 1 4\n1 1 5\n1 3 -2\n",
			5, 5, []int32{0, 2, 2, 3}, []int32{0, 2, 0}, []float32{5, 0, 5}},
		{"symmetric (2,1) twice", "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 1\n2 1 2\n2 1 3\n",
			3, 5, []int32{0, 2, 3}, []int32{0, 1, 0}, []float32{1, 5, 5}},
		{"symmetric upper triangle", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 2 2\n1 3 4\n2 2 7\n",
			3, 5, []int32{0, 2, 4, 5}, []int32{1, 2, 0, 1, 0}, []float32{2, 4, 2, 7, 4}},
		{"skew (3,2) twice", "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n3 2 1\n3 2 2\n",
			2, 4, []int32{0, 0, 1, 2}, []int32{2, 1}, []float32{-3, 3}},
		{"pattern (2,1) three times", "%%MatrixMarket matrix coordinate pattern general\n2 2 3\n2 1\n2 1\n2 1\n",
			3, 3, []int32{0, 0, 1}, []int32{0}, []float32{3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, h, err := ReadMatrixMarket(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if h.Entries != tc.stored || m.NNZ() != tc.coo {
				t.Errorf("%d stored, %d in the COO; want %d and %d", h.Entries, m.NNZ(), tc.stored, tc.coo)
			}
			c, err := m.ToCSR()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.RowPtr, tc.ptr) || !slices.Equal(c.ColIdx, tc.col) || !slices.Equal(c.Val, tc.val) {
				t.Errorf("CSR %v %v %v, want %v %v %v", c.RowPtr, c.ColIdx, c.Val, tc.ptr, tc.col, tc.val)
			}
			s, dups, err := m.Summed()
			if err != nil || dups != tc.coo-len(tc.val) || !slices.Equal(s.Val, tc.val) || !slices.Equal(s.Col, tc.col) {
				t.Errorf("Summed: %v, %d duplicates, values %v; want %d duplicates, values %v", err, dups, s.Val, tc.coo-len(tc.val), tc.val)
			}
		})
	}
}

// gzipped is b compressed as a .gz file holds it.
func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // the level is valid
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// heapAllocated is how many bytes run allocates on the heap, all told.
func heapAllocated(run func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadSkippedInputBounded: comment and blank lines cost the reader
// bounded memory however many a file holds, gzipped or not: it keeps the
// first maxComments comments (maxCommentBytes at most) and counts the rest,
// and a file with more than maxSkippedBytes of comment and blank lines is
// refused at the line that passes the bound, before a flood is read on.
func TestReadSkippedInputBounded(t *testing.T) {
	const coord = "%%MatrixMarket matrix coordinate real general\n"
	many := strings.Repeat("% a comment line of the flood\n", 200_000) // 6 MB
	long := strings.Repeat("% "+strings.Repeat("y", 1000)+"\n", 200)
	comments := strings.Repeat("% x\n", maxSkippedBytes/4+1) // 4 bytes a line, one line past the bound
	blanks := strings.Repeat("  \n", maxSkippedBytes/3+1)
	tests := []struct {
		name, content string
		kept, omitted int
		err           string
	}{
		{"many comments", coord + many + "2 2 1\n1 1 1\n", maxComments, 200_000 - maxComments, ""},
		{"many comments among the entries", coord + "2 2 2\n1 1 1\n" + many + "2 2 2\n", maxComments, 200_000 - maxComments, ""},
		{"long comments", coord + long + "2 2 1\n1 1 1\n", maxCommentBytes / 1000, 200 - maxCommentBytes/1000, ""},
		{"comment flood", coord + comments + "2 2 1\n1 1 1\n", 0, 0,
			fmt.Sprintf("line %d: more than %d bytes of comment and blank lines", maxSkippedBytes/4+2, maxSkippedBytes)},
		{"blank flood", coord + blanks, 0, 0,
			fmt.Sprintf("line %d: more than %d bytes of comment and blank lines", maxSkippedBytes/3+2, maxSkippedBytes)},
		{"blank flood among the entries", coord + "2 2 2\n1 1 1\n" + blanks + "2 2 2\n", 0, 0,
			fmt.Sprintf("line %d: more than %d bytes of comment and blank lines", maxSkippedBytes/3+4, maxSkippedBytes)},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		for _, gz := range []bool{false, true} {
			path, content := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".mtx"), []byte(tc.content)
			if gz {
				path, content = path+".gz", gzipped(t, content)
			}
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			var m *COO
			var h Header
			var err error
			if n := heapAllocated(func() { m, h, err = ReadMatrixMarketFile(path) }); n > 4<<20 {
				t.Errorf("%s: reading %d bytes of text allocated %d bytes", path, len(tc.content), n)
			}
			if tc.err != "" {
				if err == nil || err.Error() != path+":"+tc.err {
					t.Errorf("error %v\nwant %s:%s", err, path, tc.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			size := 0
			for _, c := range h.Comments {
				size += len(c)
			}
			if len(h.Comments) != tc.kept || h.CommentsOmitted != tc.omitted || size > maxCommentBytes || m.NNZ() != h.Entries {
				t.Errorf("%s: kept %d comments (%d bytes), omitted %d, read %d of %d entries; want %d kept, %d omitted",
					path, len(h.Comments), size, h.CommentsOmitted, m.NNZ(), h.Entries, tc.kept, tc.omitted)
			}
		}
	}
}

// TestReadChecksHostMemory: the entries a size line gives (12 bytes each in
// the COO, twice that where mirrored) are checked against host memory
// before any is read: where the file's size cannot bound them (gzipped), and
// where it does but the host is smaller.
func TestReadChecksHostMemory(t *testing.T) {
	limitHostMemory(t, 1_000_000)
	const coord, sym = "%%MatrixMarket matrix coordinate real general\n", "%%MatrixMarket matrix coordinate real symmetric\n"
	honest := coord + "1000 1000 100000\n" + strings.Repeat("1 1 1\n", 100_000)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		need          uint64
		want          string
	}{
		{"lying.mtx.gz", coord + "1000000 1000000 1000000\n1 1 1\n", 12_000_000, "line 2: a 1000000×1000000 matrix of 1000000 entries needs 12.0 MB of host memory for its entries in coordinate form"},
		{"honest.mtx", honest, 1_200_000, "line 2: a 1000×1000 matrix of 100000 entries needs 1.2 MB"},
		{"honest.mtx.gz", honest, 1_200_000, "line 2: a 1000×1000 matrix of 100000 entries needs 1.2 MB"},
		{"symmetric.mtx.gz", sym + "% c\n1000000 1000000 100000\n2 1 1\n", 2_400_000, "line 3: a 1000000×1000000 matrix of 100000 entries needs 2.4 MB of host memory for its entries in coordinate form, mirrored ones included"},
		{"small.mtx.gz", coord + "2 2 1\n1 1 1\n", 0, ""},
	} {
		path, content := filepath.Join(dir, tc.name), []byte(tc.content)
		if strings.HasSuffix(path, ".gz") {
			content = gzipped(t, content)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		if n := heapAllocated(func() { _, _, err = ReadMatrixMarketFile(path) }); n > 1<<20 {
			t.Errorf("%s: allocated %d bytes", tc.name, n)
		}
		if tc.need == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		enginetest.WantMemoryError(t, err, tc.need, path+":"+tc.want)
	}
}

// checkRead fails the test unless ReadMatrixMarket or ReadMatrixMarketFile
// returned an error naming a line (after prefix), or a COO consistent with
// its header: the header's shape, indices in range, the header's entries
// (twice those where mirrored at most), comments within their bounds.
func checkRead(t *testing.T, m *COO, h Header, err error, prefix string) {
	t.Helper()
	if err != nil {
		if !strings.HasPrefix(err.Error(), prefix+"line ") {
			t.Fatalf("error without %sline: %v", prefix, err)
		}
		return
	}
	if m.Rows != h.Rows || m.Cols != h.Cols || len(m.Row) != len(m.Val) || len(m.Col) != len(m.Val) {
		t.Fatalf("inconsistent COO %d×%d %d/%d/%d, header %+v", m.Rows, m.Cols, len(m.Row), len(m.Col), len(m.Val), h)
	}
	for k := range m.Val {
		if m.Row[k] < 0 || int(m.Row[k]) >= m.Rows || m.Col[k] < 0 || int(m.Col[k]) >= m.Cols {
			t.Fatalf("entry %d (%d, %d) outside %d×%d", k, m.Row[k], m.Col[k], m.Rows, m.Cols)
		}
	}
	if h.Format == "coordinate" && (m.NNZ() < h.Entries || m.NNZ() > 2*h.Entries) {
		t.Fatalf("nnz %d for %d stored entries", m.NNZ(), h.Entries)
	}
	size := 0
	for _, c := range h.Comments {
		size += len(c)
	}
	if len(h.Comments) > maxComments || size > maxCommentBytes || h.CommentsOmitted < 0 {
		t.Fatalf("%d comments of %d bytes kept, %d omitted", len(h.Comments), size, h.CommentsOmitted)
	}
}

// FuzzReadMatrixMarketGzip: the fuzzer's bytes, gzipped into a .mtx.gz
// file, read through ReadMatrixMarketFile (lab's entry point) with 64 MB
// of host memory: an error naming the file and line, or a COO consistent
// with its header, and never more memory than the bounds allow.
func FuzzReadMatrixMarketGzip(f *testing.F) {
	f.Setenv(engine.HostMemoryEnv, "64000000")
	b, err := os.ReadFile(filepath.Join("..", "..", "datasets", "mtx", "sym5x5.mtx"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	const coord = "%%MatrixMarket matrix coordinate real general\n"
	for _, s := range []string{
		coord + "2 2 3\n1 1 1\n1 1 2\n2 2 3\n",
		"%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 1\n2 1 1\n",
		coord + strings.Repeat("% flood\n", 5000) + "1 1 1\n1 1 1\n",
		coord + "2 2 2\n1 1 1\n" + strings.Repeat("\n", 5000) + "2 2 2\n",
		coord + "2000000000 2000000000 2000000000\n1 1 1\n",
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "in.mtx.gz") // a worker runs one input at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, gzipped(t, data), 0o644); err != nil {
			t.Fatal(err)
		}
		var m *COO
		var h Header
		var err error
		if n := heapAllocated(func() { m, h, err = ReadMatrixMarketFile(path) }); n > 64*uint64(len(data))+4<<20 {
			t.Fatalf("reading %d bytes allocated %d", len(data), n)
		}
		checkRead(t, m, h, err, path+":")
	})
}
