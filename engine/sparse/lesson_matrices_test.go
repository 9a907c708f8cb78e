package sparse

import (
	"strings"
	"testing"
)

func TestFormatsText(t *testing.T) {
	coo, h, err := ReadMatrixMarketFile("../../datasets/mtx/seed4x4.mtx")
	if err != nil {
		t.Fatal(err)
	}
	text, err := FormatsText(coo, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"coordinate real general, 4×4", "[5 8 0 0]", "COO  row [1 1 2 3]  col [0 1 2 1]  val [5 8 3 6]",
		"CSR  ptr [0 0 2 3 4]  idx [0 1 2 1]", "CSC  ptr [0 1 3 4 4]  idx [1 1 3 2]  val [5 8 6 3]"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if _, err := FormatsText(Poisson2D(5).ToCOO(), Header{}); err == nil || !strings.Contains(err.Error(), "25×25") {
		t.Errorf("a 25×25 matrix printed densely: %v", err)
	}
}

func TestFootprintsMarkdown(t *testing.T) {
	coo, _, err := ReadMatrixMarketFile("../../datasets/mtx/seed4x4.mtx")
	if err != nil {
		t.Fatal(err)
	}
	seed, err := coo.ToCSR()
	if err != nil {
		t.Fatal(err)
	}
	diag, err := FromDense(2, 2, []float32{1, 0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	// Poisson 4²: 16 rows, 5·16-4·4 = 64 entries; COO 3·64·4 = 768 B, CSR (17+128)·4 = 580 B.
	md := FootprintsMarkdown([]string{"seed", "Poisson", "diagonal"}, []*CSR{seed, Poisson2D(4), diag})
	for _, want := range []string{
		"| seed | 4 | 4 | 64 B | 48 B | 52 B | 52 B |",
		"- **seed:** CSR (52 B) is larger than COO (48 B): its 5 row pointers cost more than the 4 row indices they replace. Of the dense array, COO is 75% and CSR 81%.",
		"- **Poisson:** CSR (580 B) saves 24% of COO's bytes (768 B): 17 row pointers replace 64 row indices. Of the dense array, COO is 75% and CSR 57%.",
		"- **diagonal:** CSR (28 B) is larger than COO (24 B)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}

func TestRowSkew(t *testing.T) {
	// 100 rows of 2 entries and one row of 100 in a 101×101 matrix.
	d := make([]float32, 101*101)
	for i := range 100 {
		d[i*101+i], d[i*101+100] = 1, 1
	}
	for j := range 101 {
		d[100*101+j] = 1
	}
	hub, err := FromDense(101, 101, d)
	if err != nil {
		t.Fatal(err)
	}
	s := RowSkewOf("hub", hub)
	if s.Shortest != 2 || s.Longest != 101 || s.Entries != 301 {
		t.Fatalf("stats %+v", s)
	}
	if want := []LengthBin{{2, 100}, {128, 1}}; len(s.Lengths) != 2 || s.Lengths[0] != want[0] || s.Lengths[1] != want[1] {
		t.Errorf("lengths %v, want %v", s.Lengths, want)
	}
	// The longest 1% of 101 rows is 2 rows: 101 + 2 entries of 301.
	if got, want := s.TopShare, 103.0/301; got != want {
		t.Errorf("top share %g, want %g", got, want)
	}
	flat := RowSkewOf("band", Banded(50, 2, 1))
	md := RowSkewMarkdown([]RowSkew{flat, s})
	for _, want := range []string{
		"| hub | 101 | 301 | 2 | 101 | 3.0 |",
		"In band, no row is longer than 1.02× the mean",
		"The rows are skewed elsewhere: in hub the longest row is 33.9× the mean, and the longest 1% of rows hold 34% of the entries.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if _, err := RowSkewFigure([]RowSkew{flat, s}).HTML(); err != nil {
		t.Error(err)
	}
}

func TestExpansion(t *testing.T) {
	// A = [[1 1] [1 1]]: A² has 4 entries made of 8 products.
	full, err := FromDense(2, 2, []float32{1, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := ExpansionOf("full", full)
	if err != nil {
		t.Fatal(err)
	}
	if e.Products != 8 || e.EntriesC != 4 || e.PerEntry() != 2 {
		t.Errorf("%+v", e)
	}
	diag, _ := FromDense(2, 2, []float32{1, 0, 0, 1})
	d, _ := ExpansionOf("diag", diag)
	md := ExpansionMarkdown([]Expansion{d, e})
	for _, want := range []string{
		"| full | 4 | 8 | 4 | 2.00 |",
		"On diag, almost every product is a new entry of C.",
		"On full, several products meet at each entry: 2.0 on average.",
		"up to 2.0 times C, on full:",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if _, err := ExpansionOf("rect", &CSR{Rows: 1, Cols: 2, RowPtr: []int32{0, 0}}); err == nil {
		t.Error("A² of a 1×2 matrix accepted")
	}
}

func TestProductBins(t *testing.T) {
	// Row 0 of A is full (40 entries); rows 1..39 have one entry, in column
	// 0. Row 0 of A² takes 40 + 39 = 79 products (the 256-slot table, up to
	// 128), rows 1..39 take 40 each (the 128-slot table, up to 64).
	const n = 40
	d := make([]float32, n*n)
	for j := range n {
		d[j] = 1
	}
	for i := 1; i < n; i++ {
		d[i*n] = 1
	}
	a, err := FromDense(n, n, d)
	if err != nil {
		t.Fatal(err)
	}
	bins := ProductBins(a, a)
	if len(bins) != len(BinnedTables)+1 || bins[len(bins)-1].Name() != "dense windows" {
		t.Fatalf("bins %+v", bins)
	}
	for _, bin := range bins {
		want := ProductBin{Slots: bin.Slots, Threads: bin.Threads}
		switch bin.Slots {
		case 128:
			want.Rows, want.Products, want.Longest = 39, 39*40, 40
		case 256:
			want.Rows, want.Products, want.Longest = 1, 79, 79
		}
		if bin != want {
			t.Errorf("bin %s: %+v, want %+v", bin.Name(), bin, want)
		}
	}
	md := ProductBinsMarkdown("star", n, bins)
	for _, want := range []string{
		"star, C = A²: 40 rows, 1639 products",
		"| hash 128 slots | 32 | 39 | 97.5% | 1560 | 95.2% |",
		"| dense windows | a block per window | 0 | 0.0% | 0 | 0.0% |",
		"The bin with the most work is *hash 128 slots*: 98% of the rows, 95% of the products.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "A minority of rows") {
		t.Errorf("calls 98%% of the rows a minority:\n%s", md)
	}
	if _, err := ProductBinsFigure("star", n, bins).HTML(); err != nil {
		t.Errorf("the figure: %v", err)
	}
}
