package sparse

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// The matrices of notebook 03: how a small matrix looks in each format,
// what each format costs, how entries spread over rows, how many products
// A² makes per entry of C, and how the GPU steps' bins split the work.

// FormatsText prints a small matrix as the seed post draws it: its Matrix
// Market header, its dense rows, then the arrays of COO, CSR and CSC.
func FormatsText(coo *COO, h Header) (string, error) {
	const largest = 16 // rows or columns printed densely
	if coo.Rows > largest || coo.Cols > largest {
		return "", fmt.Errorf("sparse: FormatsText prints matrices up to %d×%d densely, not %d×%d", largest, largest, coo.Rows, coo.Cols)
	}
	csr, err := coo.ToCSR()
	if err != nil {
		return "", err
	}
	csc := csr.ToCSC()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s, %d×%d\n\n", h.Format, h.Field, h.Symmetry, h.Rows, h.Cols)
	d := csr.Dense()
	for i := range csr.Rows {
		fmt.Fprintln(&b, d[i*csr.Cols:(i+1)*csr.Cols])
	}
	canon := csr.ToCOO()
	fmt.Fprintf(&b, "\nCOO  row %v  col %v  val %v\n", canon.Row, canon.Col, canon.Val)
	fmt.Fprintf(&b, "CSR  ptr %v  idx %v  val %v\n", csr.RowPtr, csr.ColIdx, csr.Val)
	fmt.Fprintf(&b, "CSC  ptr %v  idx %v  val %v\n", csc.ColPtr, csc.RowIdx, csc.Val)
	return b.String(), nil
}

// FootprintsMarkdown tabulates the bytes of each matrix as a dense array
// and in COO, CSR and CSC (4-byte indices and values), then says for each
// whether CSR's row pointers cost more or less than COO's row indices.
func FootprintsMarkdown(labels []string, ms []*CSR) string {
	var b strings.Builder
	b.WriteString("| matrix | N | E | dense | COO | CSR | CSC |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for i, m := range ms {
		fmt.Fprintf(&b, "| %s | %d | %d | %d B | %d B | %d B | %d B |\n", labels[i], m.Rows, m.NNZ(), 4*m.Rows*m.Cols,
			m.ToCOO().Footprint().Total, m.Footprint().Total, m.ToCSC().Footprint().Total)
	}
	b.WriteString("\n")
	for i, m := range ms {
		coo, csr := m.ToCOO().Footprint().Total, m.Footprint().Total
		switch {
		case csr > coo:
			fmt.Fprintf(&b, "- **%s:** CSR (%d B) is larger than COO (%d B): its %d row pointers cost more than the %d row indices they replace.",
				labels[i], csr, coo, m.Rows+1, m.NNZ())
		case csr == coo:
			fmt.Fprintf(&b, "- **%s:** CSR and COO both take %d B: %d row pointers replace as many row indices.", labels[i], csr, m.Rows+1)
		default:
			fmt.Fprintf(&b, "- **%s:** CSR (%d B) saves %s of COO's bytes (%d B): %d row pointers replace %d row indices.",
				labels[i], csr, percent(1-float64(csr)/float64(coo)), coo, m.Rows+1, m.NNZ())
		}
		dense := float64(4 * m.Rows * m.Cols)
		fmt.Fprintf(&b, " Of the dense array, COO is %s and CSR %s.\n", percent(float64(coo)/dense), percent(float64(csr)/dense))
	}
	return b.String()
}

// RowSkew is how the entries of a matrix spread over its rows.
type RowSkew struct {
	Label             string
	Rows, Entries     int
	Shortest, Longest int
	Mean, StdDev      float64
	TopShare          float64     // share of the entries in the longest 1% of the rows
	Lengths           []LengthBin // rows by length, increasing
}

// LengthBin counts the rows whose length rounds up to UpTo, a power of
// two: UpTo/2 < length <= UpTo (UpTo 1 also counts the empty rows).
type LengthBin struct{ UpTo, Rows int }

// RowSkewOf measures the row lengths of m.
func RowSkewOf(label string, m *CSR) RowSkew {
	s := RowSkew{Label: label, Rows: m.Rows, Entries: m.NNZ()}
	s.Shortest, s.Longest, s.Mean, s.StdDev = RowStats(m)
	lengths := m.RowLengths()
	counts := map[int]int{}
	for _, n := range lengths {
		up := 1
		for up < n {
			up *= 2
		}
		counts[up]++
	}
	for up := 1; up <= max(1, 2*s.Longest); up *= 2 {
		if counts[up] > 0 {
			s.Lengths = append(s.Lengths, LengthBin{UpTo: up, Rows: counts[up]})
		}
	}
	slices.SortFunc(lengths, func(a, b int) int { return b - a })
	top := 0
	for _, n := range lengths[:(len(lengths)+99)/100] {
		top += n
	}
	if s.Entries > 0 {
		s.TopShare = float64(top) / float64(s.Entries)
	}
	return s
}

// skewed is how much longer than the mean a matrix's longest row may be
// for one thread or warp per row to balance itself.
const skewed = 4

// RowSkewMarkdown tabulates the row statistics of each matrix, then says
// which are flat (the longest row at most skewed times the mean) and how
// the work piles up in the others.
func RowSkewMarkdown(s []RowSkew) string {
	var b strings.Builder
	b.WriteString("| matrix | rows | entries | shortest row | longest row | mean | stddev | entries in the longest 1% of rows |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var flat, skew []string
	flatMax := 0.0
	for _, r := range s {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.1f | %.1f | %s |\n", r.Label, r.Rows, r.Entries, r.Shortest, r.Longest, r.Mean, r.StdDev, percent(r.TopShare))
		ratio := float64(r.Longest) / math.Max(r.Mean, 1e-9)
		if ratio <= skewed {
			flat = append(flat, r.Label)
			flatMax = max(flatMax, ratio)
			continue
		}
		skew = append(skew, fmt.Sprintf("in %s the longest row is %s the mean, and the longest 1%% of rows hold %s of the entries", r.Label, times(ratio), percent(r.TopShare)))
	}
	b.WriteString("\n")
	if len(flat) > 0 {
		fmt.Fprintf(&b, "In %s, no row is longer than %s the mean: every row has about the same length, so one thread or warp per row balances itself. ",
			bench.JoinAnd(flat), times(flatMax))
	}
	if len(skew) > 0 {
		fmt.Fprintf(&b, "The rows are skewed elsewhere: %s. Most rows are short and a few hub rows hold much of the work, so one thread per row would leave most threads idle while a few finish the hubs.",
			bench.JoinAnd(skew))
	}
	return b.String() + "\n"
}

// RowSkewFigure draws the row-length histograms of RowSkewOf, one line per
// matrix, both axes logarithmic.
func RowSkewFigure(s []RowSkew) *plot.Figure {
	var series []plot.Series
	for _, r := range s {
		line := plot.Series{Name: r.Label}
		for _, l := range r.Lengths {
			line.X, line.Y = append(line.X, float64(l.UpTo)), append(line.Y, float64(l.Rows))
		}
		series = append(series, line)
	}
	return plot.Lines("rows by length", "row length (rounded up to a power of two)", "rows", series...).LogX().LogY()
}

// Expansion is how many products C = A² makes against the entries of C:
// what an output sized by products (step 01, ESC) holds beyond C itself.
type Expansion struct {
	Label    string
	Entries  int   // of A
	Products int64 // of A·A
	EntriesC int
}

// ExpansionOf multiplies A by itself (parallel Gustavson) and counts.
func ExpansionOf(label string, a *CSR) (Expansion, error) {
	c, err := GustavsonParallel(a, a)
	if err != nil {
		return Expansion{}, fmt.Errorf("sparse: %s: %w", label, err)
	}
	return Expansion{Label: label, Entries: a.NNZ(), Products: Products(a, a), EntriesC: c.NNZ()}, nil
}

// PerEntry is the number of products per entry of C.
func (e Expansion) PerEntry() float64 { return float64(e.Products) / math.Max(float64(e.EntriesC), 1) }

// ExpansionMarkdown tabulates the expansions and says where the products
// mostly land on new entries of C and where several meet at each entry.
func ExpansionMarkdown(es []Expansion) string {
	var b strings.Builder
	b.WriteString("| matrix | entries of A | products | entries of C | products per entry of C |\n|---|---:|---:|---:|---:|\n")
	var fresh, merged, perEntry []string
	most := Expansion{}
	for _, e := range es {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.2f |\n", e.Label, e.Entries, e.Products, e.EntriesC, e.PerEntry())
		if e.PerEntry() < 1.5 {
			fresh = append(fresh, e.Label)
		} else {
			merged = append(merged, e.Label)
			perEntry = append(perEntry, fmt.Sprintf("%.1f", e.PerEntry()))
		}
		if e.PerEntry() > most.PerEntry() {
			most = e
		}
	}
	b.WriteString("\n")
	if len(fresh) > 0 {
		fmt.Fprintf(&b, "On %s, almost every product is a new entry of C. ", bench.JoinAnd(fresh))
	}
	if len(merged) > 0 {
		fmt.Fprintf(&b, "On %s, several products meet at each entry: %s on average. ", bench.JoinAnd(merged), bench.JoinAnd(perEntry))
	}
	if most.EntriesC > 0 {
		fmt.Fprintf(&b, "An output sized by products, one slot per product, is then up to %.1f times C, on %s: that is what step 01 below allocates, and what step 02's exact count avoids.",
			most.PerEntry(), most.Label)
	}
	return b.String() + "\n"
}

// ProductBin is one bin of the binned GPU steps (04, 06): the rows whose
// product count fits a hash table of Slots entries at most half full, or,
// with Slots 0, the long rows that go to the dense windows.
type ProductBin struct {
	Slots, Threads int
	Rows           int
	Products       int64
	Longest        int64 // the most products of a row in the bin
}

// Name says what the bin is: "hash 64 slots" or "dense windows".
func (p ProductBin) Name() string {
	if p.Slots == 0 {
		return "dense windows"
	}
	return fmt.Sprintf("hash %d slots", p.Slots)
}

// ProductBins sorts the rows of A·B into the bins of BinnedTables, then the
// dense windows, as steps 04 and 06 do by product count; rows without
// products go nowhere.
func ProductBins(a, b *CSR) []ProductBin {
	var bins []ProductBin
	for _, t := range BinnedTables {
		bins = append(bins, ProductBin{Slots: t.Slots, Threads: t.Threads})
	}
	bins = append(bins, ProductBin{})
	for _, p := range RowProducts(a, b) {
		if p == 0 {
			continue
		}
		i := slices.IndexFunc(bins, func(bin ProductBin) bool { return bin.Slots == 0 || p <= int64(bin.Slots/2) })
		bins[i].Rows++
		bins[i].Products += p
		bins[i].Longest = max(bins[i].Longest, p)
	}
	return bins
}

// ProductBinsMarkdown tabulates the bins of a matrix with rows rows, then
// says which bin holds the most products and what share of the rows it is.
func ProductBinsMarkdown(label string, rows int, bins []ProductBin) string {
	var total int64
	for _, bin := range bins {
		total += bin.Products
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, C = A²: %d rows, %d products\n\n| bin (by products) | threads | rows | share of rows | products | share of products |\n|---|---:|---:|---:|---:|---:|\n", label, rows, total)
	heaviest := ProductBin{}
	for _, bin := range bins {
		threads := "a block per window"
		if bin.Slots > 0 {
			threads = fmt.Sprint(bin.Threads)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %s |\n", bin.Name(), threads, bin.Rows, share(int64(bin.Rows), int64(rows)), bin.Products, share(bin.Products, total))
		if bin.Products > heaviest.Products {
			heaviest = bin
		}
	}
	if total == 0 {
		return b.String()
	}
	rowShare, productShare := float64(heaviest.Rows)/float64(rows), float64(heaviest.Products)/float64(total)
	fmt.Fprintf(&b, "\nThe bin with the most work is *%s*: %s of the rows, %s of the products.", heaviest.Name(), percent(rowShare), percent(productShare))
	if rowShare < 0.5 && productShare > 0.5 {
		b.WriteString(" A minority of rows holds most of the work, so one kernel configuration cannot suit both them and the short rows.")
	}
	return b.String() + "\n"
}

// share prints part/whole as a percentage with one decimal.
func share(part, whole int64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

// ProductBinsFigure draws each bin's share of the rows and of the
// products against the most products of a row in it: the rows spread over
// the bins, the products pile up in the last ones. Both axes are
// logarithmic; empty bins are left out.
func ProductBinsFigure(label string, rows int, bins []ProductBin) *plot.Figure {
	var total int64
	for _, bin := range bins {
		total += bin.Products
	}
	rowShare, productShare := plot.Series{Name: "% of the rows"}, plot.Series{Name: "% of the products"}
	for _, bin := range bins {
		if bin.Rows == 0 {
			continue
		}
		x := float64(bin.Longest)
		rowShare.X, rowShare.Y = append(rowShare.X, x), append(rowShare.Y, 100*float64(bin.Rows)/float64(rows))
		productShare.X, productShare.Y = append(productShare.X, x), append(productShare.Y, 100*float64(bin.Products)/float64(total))
	}
	return plot.Lines(label+": rows and products by bin", "most products of a row in the bin", "%", rowShare, productShare).LogX().LogY()
}
