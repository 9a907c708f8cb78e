package bench

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
)

func TestSplitList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"64M, 1G", []string{"64M", "1G"}},
		{" ,a,, b ,", []string{"a", "b"}},
		{"uniform:n=64,k=4, 1G", []string{"uniform:n=64,k=4", "1G"}},
		{"rmat:scale=16,ef=8,a=0.57,b=0.19,c=0.19,poisson:k=9", []string{"rmat:scale=16,ef=8,a=0.57,b=0.19,c=0.19", "poisson:k=9"}},
		{"x=1,y=2", []string{"x=1", "y=2"}}, // no colon before: separate items
		{"", nil},
	} {
		if got := SplitList(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("SplitList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseFields(t *testing.T) {
	var n, k int
	fields := map[string]*int{"n": &n, "k": &k}
	if err := ParseFields("s:n=5, k=2", "s:", fields); err != nil || n != 5 || k != 2 {
		t.Errorf("n=%d k=%d %v", n, k, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"n=5", `does not start with "s:"`},
		{"s:q=1", `unknown field "q" (have k, n)`},
		{"s:n=-1", "is not a count"},
		{"s:n=x", "is not a count"},
	} {
		if err := ParseFields(tc.in, "s:", fields); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestEffectiveBandwidth: a byte rate above the DRAM peak is marked as
// effective and explained, and its % roof is the mark, not a share of
// another roof (the H100 copy of lesson 01 showed 01_naive at 57.8% of
// the memory roof at 1024 and 1.9% of the compute roof at 1000x1023x999).
func TestEffectiveBandwidth(t *testing.T) {
	recs := []Record{
		{Suite: "gemm", Variant: "02_coalesced", GBps: 24600, GFLOPS: 6147, PctPeakGBps: 511, PctPeakGFLOPS: 9.2, OK: true},
		{Suite: "copy", Variant: "copy", GBps: 4000, PctPeakGBps: 83.3, OK: true},
	}
	md := Markdown(recs)
	for _, want := range []string{"| 24600.0 ‡ | 6147.0 | ‡ |", "| 4000.0 | - | 83.3% |", "‡ effective bandwidth", "| model GB/s |"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if md := Markdown(recs[1:]); strings.Contains(md, "‡") {
		t.Errorf("a DRAM-bound rate is marked:\n%s", md)
	}
}

// TestBeyondComputePeak: a share of the compute peak above 100% is marked
// in both tables and explained once as a measurement error; a share at
// the peak or a byte rate above DRAM's (effective bandwidth) is not.
func TestBeyondComputePeak(t *testing.T) {
	recs := []Record{
		{Suite: "gemm", Variant: "cublas_bf16", GFLOPS: 1.2e6, PctPeakGFLOPS: 120.5, PctPeakGBps: 40, OK: true},
		{Suite: "gemm", Variant: "12_wgmma_tma", GFLOPS: 9.9e5, PctPeakGFLOPS: 100, OK: true},
		{Suite: "gemm", Variant: "02_coalesced", GBps: 24600, GFLOPS: 6147, PctPeakGBps: 511, PctPeakGFLOPS: 9.2, OK: true},
	}
	for name, table := range map[string]string{"Markdown": Markdown(recs), "Table": Table(recs)} {
		if n := strings.Count(table, "120.5% ✗"); n != 1 {
			t.Errorf("%s: %d marked rows, want 1:\n%s", name, n, table)
		}
		if strings.Contains(table, "100.0% ✗") || strings.Contains(table, "9.2% ✗") {
			t.Errorf("%s marks a possible speed:\n%s", name, table)
		}
		if n := strings.Count(table, "✗ above 100% of the compute peak"); n != 1 {
			t.Errorf("%s explains the mark %d times, want once:\n%s", name, n, table)
		}
	}
	if md := Markdown(recs[1:]); strings.Contains(md, "✗") {
		t.Errorf("no record beyond the peak, yet a mark:\n%s", md)
	}
}

// TestBaselineNamed: a table whose rows compare with one baseline names it
// in the header; one whose rows compare with different baselines names
// each row's in its cell, and no ratio is left without its reference.
func TestBaselineNamed(t *testing.T) {
	rec := func(variant, base string, speedup float64) Record {
		return Record{Suite: "s", Variant: variant, Baseline: base, Speedup: speedup, MedianMS: 1, OK: true}
	}
	for _, tc := range []struct {
		name       string
		recs       []Record
		header     string
		cells, not []string
	}{
		{"one baseline", []Record{rec("naive", "naive", 1), rec("shared", "naive", 3.06), rec("failed", "", 0)},
			"| vs `naive` |", []string{"| (baseline) |", "| 3.06x |", "| - |"}, []string{"3.06x naive"}},
		{"several", []Record{rec("assign", "naive", 3.06), rec("assign_x2", "assign", 1.79), rec("fit", "fit", 1)},
			"| vs baseline |", []string{"| 3.06x naive |", "| 1.79x assign |", "| (baseline) |"}, nil},
		{"none", []Record{rec("a", "", 0)}, "| vs baseline |", []string{"| - |"}, nil},
	} {
		md := Markdown(tc.recs)
		for _, want := range append([]string{tc.header}, tc.cells...) {
			if !strings.Contains(md, want) {
				t.Errorf("%s: lacks %q:\n%s", tc.name, want, md)
			}
		}
		for _, bad := range tc.not {
			if strings.Contains(md, bad) {
				t.Errorf("%s: has %q:\n%s", tc.name, bad, md)
			}
		}
	}
	if tab := Table([]Record{rec("naive", "naive", 1), rec("shared", "naive", 3.06)}); !strings.Contains(tab, "vs naive") {
		t.Errorf("text table without its baseline:\n%s", tab)
	}
}

// TestNumbersNeverReadZero: a figure too small for a table's decimals
// keeps two significant digits; none at all is "-".
func TestNumbersNeverReadZero(t *testing.T) {
	for _, tc := range []struct {
		pct  float64
		want string
	}{{0, "-"}, {0.0128, "0.013%"}, {0.049, "0.049%"}, {0.05, "0.1%"}, {0.13, "0.1%"}, {76.4, "76.4%"}} {
		if got := pctStr(tc.pct); got != tc.want {
			t.Errorf("pctStr(%v) = %q, want %q", tc.pct, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    float64
		prec int
		want string
	}{{0, 1, "-"}, {0.037, 1, "0.037"}, {0.2, 1, "0.2"}, {8.567, 1, "8.6"}, {0.00003, 4, "3e-05"}, {0.1826, 4, "0.1826"}} {
		if got := num(tc.v, tc.prec); got != tc.want {
			t.Errorf("num(%v, %d) = %q, want %q", tc.v, tc.prec, got, tc.want)
		}
	}
}

func TestCaption(t *testing.T) {
	full := Provenance{Device: "cuda:0", DeviceName: "NVIDIA H200", Commit: "abc123", Date: "2026-11-22T07:45:00Z"}
	for _, tc := range []struct {
		name    string
		p       Provenance
		command string
		want    string // the caption, or what the error names
	}{
		{"a record's date", full, "lab bench spmv --device cuda:0", "*Recorded on NVIDIA H200 (`cuda:0`), commit `abc123`, 2026-11-22, with `lab bench spmv --device cuda:0`:*"},
		{"a day", Provenance{Device: "cuda:0", DeviceName: "NVIDIA H200", Commit: "abc123", Date: "2026-11-22"}, "lab x", "*Recorded on NVIDIA H200 (`cuda:0`), commit `abc123`, 2026-11-22, with `lab x`:*"},
		{"no date", Provenance{Device: "cuda:0", DeviceName: "NVIDIA H200", Commit: "abc123"}, "lab x", "lacks its date"},
		{"nothing but a command", Provenance{}, "lab x", "lacks its device, device name, commit, date"},
		{"no command", full, " ", "lacks its command"},
	} {
		got, err := tc.p.Caption(tc.command)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	r := Record{Device: "cuda:0", DeviceName: "NVIDIA H200", Commit: "abc123", Date: "2026-11-22T07:45:00Z"}
	if r.Provenance() != full {
		t.Errorf("Provenance = %+v", r.Provenance())
	}
}

// TestRecordedRunsHaveProvenance: every record kept in docs/results can be
// captioned with its device, commit and date.
func TestRecordedRunsHaveProvenance(t *testing.T) {
	paths, _ := filepath.Glob("../../docs/results/*.json")
	n := 0
	for _, path := range paths {
		recs, err := ReadJSON(path)
		if err != nil {
			continue // a file of something else (a profile, a p2p matrix)
		}
		for _, r := range recs {
			n++
			if _, err := r.Provenance().Caption("lab bench"); err != nil {
				t.Errorf("%s, %s %s: %v", filepath.Base(path), r.Variant, r.Size, err)
				break
			}
		}
	}
	if n == 0 {
		t.Fatal("no records in docs/results")
	}
}

// TestInCache: a row whose bytes all fit in the last-level cache is
// effective whatever its share of the memory peak (the H100 host's 1M
// go_serial copy read 86.3% of DRAM's roof), explained once, and left out
// of the % of peak bandwidth chart; fillPeaks sets it from the device's
// cache size.
func TestInCache(t *testing.T) {
	dev := engine.Info{PeakGBps: 48, CacheBytes: 32 << 20}
	var small, large Record
	fillPeaks(&small, Case{Bytes: 8 << 20}, dev)
	fillPeaks(&large, Case{Bytes: 512 << 20}, dev)
	if !small.InCache || large.InCache {
		t.Errorf("InCache: 8 MiB %v, 512 MiB %v with a 32 MiB cache", small.InCache, large.InCache)
	}
	if fillPeaks(&large, Case{Bytes: 8 << 20}, engine.Info{PeakGBps: 48}); large.InCache {
		t.Error("InCache without a known cache size")
	}
	// Past the ridge (100 GFLOP/s over 48 GB/s) the compute roof holds,
	// wherever the bytes come from; below it the cache beats the memory.
	dev.PeakGFLOPS = 100
	var blocked, naive Record
	fillPeaks(&blocked, Case{Bytes: 1 << 20, Flops: 1 << 24}, dev)
	fillPeaks(&naive, Case{Bytes: 1 << 20, Flops: 1 << 18}, dev)
	if blocked.InCache || !naive.InCache {
		t.Errorf("InCache: past the ridge %v, below it %v", blocked.InCache, naive.InCache)
	}
	recs := []Record{
		{Suite: "copy", Variant: "go_serial", Size: "1M", GBps: 41, PctPeakGBps: 86.3, InCache: true, OK: true},
		{Suite: "copy", Variant: "go_serial", Size: "64M", GBps: 12.4, PctPeakGBps: 26.1, OK: true},
	}
	md := Markdown(recs)
	for _, want := range []string{"| 41.0 ‡ | - | ‡ |", "| 12.4 | - | 26.1% |", "‡ " + InCacheNote} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, EffectiveNote) {
		t.Errorf("explains a rate above the peak that no row has:\n%s", md)
	}
	if PctPeakGBps.Value(recs[0]) != 0 || PctPeakGBps.Value(recs[1]) != 26.1 {
		t.Errorf("%% of peak bandwidth: %v, %v", PctPeakGBps.Value(recs[0]), PctPeakGBps.Value(recs[1]))
	}
}
