package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/enginetest"
)

// TestRowLengthStats compares the statistics of COO matrices (empty rows,
// repeated entries, no rows) with those of a slot per row counted here,
// and RowStats of their CSR forms (repeated entries summed) likewise.
func TestRowLengthStats(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 0))
	for _, tc := range []struct{ rows, nnz int }{{0, 0}, {1, 0}, {5, 0}, {1, 3}, {7, 20}, {100, 37}, {50, 500}} {
		m := &COO{Rows: tc.rows, Cols: 9}
		for range tc.nnz {
			m.Row, m.Col, m.Val = append(m.Row, int32(r.IntN(tc.rows))), append(m.Col, int32(r.IntN(9))), append(m.Val, 1)
		}
		if got, want := m.RowLengthStats(), countRowLengths(tc.rows, m.Row); !closeStats(got, want) {
			t.Errorf("%d rows, %d entries: %+v, want %+v", tc.rows, tc.nnz, got, want)
		}
		csr, err := m.ToCSR()
		if err != nil {
			t.Fatal(err)
		}
		want := countRowLengths(tc.rows, csr.ToCOO().Row)
		mn, mx, mean, sd := RowStats(csr)
		if got := (RowLengthStats{Rows: tc.rows, Empty: want.Empty, Min: mn, Max: mx, Mean: mean, Stddev: sd}); !closeStats(got, want) {
			t.Errorf("%d rows, %d entries in CSR: RowStats = %d %d %g %g, want %+v", tc.rows, tc.nnz, mn, mx, mean, sd, want)
		}
	}
}

// countRowLengths is the statistics of the rows rows named by rowOf, from a
// count per row and E[l²] - mean².
func countRowLengths(rows int, rowOf []int32) RowLengthStats {
	s := RowLengthStats{Rows: rows}
	if rows == 0 {
		return s
	}
	count := make([]int, rows)
	for _, i := range rowOf {
		count[i]++
	}
	s.Min = math.MaxInt
	var sum, sq float64
	for _, c := range count {
		s.Min, s.Max = min(s.Min, c), max(s.Max, c)
		sum += float64(c)
		sq += float64(c * c)
		if c == 0 {
			s.Empty++
		}
	}
	s.Mean = sum / float64(rows)
	s.Stddev = math.Sqrt(max(sq/float64(rows)-s.Mean*s.Mean, 0))
	return s
}

func closeStats(a, b RowLengthStats) bool {
	return a.Rows == b.Rows && a.Empty == b.Empty && a.Min == b.Min && a.Max == b.Max &&
		math.Abs(a.Mean-b.Mean) <= 1e-12 && math.Abs(a.Stddev-b.Stddev) <= 1e-9
}

// TestRowLengthStatsOfBillionsOfEmptyRows: two billion declared rows with
// three entries take memory for the entries, not for the rows.
func TestRowLengthStatsOfBillionsOfEmptyRows(t *testing.T) {
	const rows = 2_000_000_000
	m := &COO{Rows: rows, Cols: rows, Row: []int32{5, 1_999_999_999, 5}, Col: []int32{0, 1, 2}, Val: []float32{1, 2, 3}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := m.RowLengthStats()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("allocated %d bytes for 3 entries", grew)
	}
	mean := 3.0 / rows
	// Two rows of lengths 2 and 1, the rest 0: E[l²] - mean².
	sd := math.Sqrt((4+1)/float64(rows) - mean*mean)
	if got.Rows != rows || got.Empty != rows-2 || got.Min != 0 || got.Max != 2 || got.Mean != mean || math.Abs(got.Stddev-sd) > 1e-12*sd+1e-15 {
		t.Errorf("%+v, want %d rows, %d empty, min 0, max 2, mean %g, stddev %g", got, rows, rows-2, mean, sd)
	}
}

// limitHostMemory makes the engine count bytes of host memory as all that
// is available, for the rest of the test.
func limitHostMemory(t *testing.T, bytes uint64) {
	t.Helper()
	t.Setenv(engine.HostMemoryEnv, fmt.Sprint(bytes))
}

// TestToCSRChecksMemory: the row pointers of a CSR are Rows+1 however few
// the entries; ToCSR refuses what the host cannot hold, naming the need.
func TestToCSRChecksMemory(t *testing.T) {
	limitHostMemory(t, 1_000_000)
	huge := &COO{Rows: 2_000_000_000, Cols: 2_000_000_000}
	_, err := huge.ToCSR()
	enginetest.WantMemoryError(t, err, 4*(2_000_000_000+1),
		"the CSR form of a 2000000000×2000000000 matrix with 0 entries needs 8.0 GB of host memory for 2000000001 row pointers", "1.0 MB is available")
	small := &COO{Rows: 1000, Cols: 3, Row: []int32{999}, Col: []int32{2}, Val: []float32{1}}
	if m, err := small.ToCSR(); err != nil || m.RowPtr[1000] != 1 {
		t.Errorf("a small matrix: %v", err)
	}
}

// TestGenerateChecksMemory: a generator spec from a flag is checked before
// the generator allocates.
func TestGenerateChecksMemory(t *testing.T) {
	limitHostMemory(t, 1_000_000)
	for _, tc := range []struct {
		spec string
		need uint64
	}{
		{"poisson:k=20000", 4*(20000*20000+1) + 8*5*20000*20000},
		{"uniform:n=1000000,k=16", 4*(1000000+1) + 8*16000000},
		{"banded:n=1000000,w=1", 4*(1000000+1) + 8*3000000},
		// The edges as COO (12 bytes each), then ToCSR's sorted copy and order.
		{"rmat:scale=20,ef=2", 12*(2<<20) + 4*(1<<20+1) + 20*(2<<20)},
	} {
		_, err := Generate(tc.spec)
		enginetest.WantMemoryError(t, err, tc.need, "sparse: matrix "+tc.spec+" needs")
	}
	if m, err := Generate("rmat:scale=8,ef=4"); err != nil || m.Rows != 256 {
		t.Errorf("a small matrix: %v", err)
	}
}

// TestSuitesCheckMemory: spmv and spgemm refuse a matrix whose vectors or
// accumulators the host cannot hold, before allocating them: here a file
// of three lines declaring a million empty rows and columns, whose CSR form
// (4 MB) fits under the limit but the suites' vectors do not.
func TestSuitesCheckMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.mtx")
	if err := os.WriteFile(path, []byte("%%MatrixMarket matrix coordinate real general\n1000000 1000000 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	limitHostMemory(t, 10_000_000)
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	spmv, _ := bench.Lookup("spmv")
	_, err = bench.Run(spmv, dev, []string{path}, bench.Options{})
	enginetest.WantMemoryError(t, err, 4*1000000+3*4*1000000, "spmv of "+path+" needs 16.0 MB of host memory for x, the reference y and the variants' y; 10.0 MB is available")
	spgemm, _ := bench.Lookup("spgemm")
	_, err = bench.Run(spgemm, dev, []string{path}, bench.Options{})
	workers := uint64(runtime.GOMAXPROCS(0))
	enginetest.WantMemoryError(t, err, 2*4*(1000000+1)+4*1000000+8*1000000*workers, "spgemm of "+path+" needs", fmt.Sprintf("%d accumulators of a row", workers))
}
