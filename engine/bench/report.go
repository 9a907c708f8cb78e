package bench

import (
	"encoding/json"
	"fmt"
	"gpulab/engine/atomicfile"
	"gpulab/engine/readlimit"
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
)

// Checked is the outcome of comparing an output with its reference.
type Checked struct {
	MaxRelErr float64 // largest |got-want| / max(|want|, 1); +Inf for a non-finite mismatch
	Worst     int     // index of the element with that error (-1 if none)
	Got, Want float32 // the values at Worst
	NonFinite int     // NaN or Inf values in got (matching the reference's own NaN/Inf counts too)
}

// Compare compares got with want element by element. A NaN or Inf in got where
// want is finite, or a finite value where want is NaN or Inf, is an error of
// +Inf: non-finite values must propagate exactly as they do in the reference,
// never pass silently. Outputs of different lengths compare as +Inf at index -1.
func Compare(got, want []float32) Checked {
	c := Checked{Worst: -1}
	if len(got) != len(want) {
		c.MaxRelErr = math.Inf(1)
		return c
	}
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		gFinite, wFinite := !math.IsNaN(g) && !math.IsInf(g, 0), !math.IsNaN(w) && !math.IsInf(w, 0)
		if !gFinite {
			c.NonFinite++
		}
		var e float64
		switch {
		case wFinite && gFinite:
			e = math.Abs(g-w) / math.Max(math.Abs(w), 1)
		case math.IsNaN(w) && math.IsNaN(g), !wFinite && g == w:
			continue
		default:
			e = math.Inf(1)
		}
		if e > c.MaxRelErr || c.Worst < 0 && e > 0 {
			c.MaxRelErr, c.Worst, c.Got, c.Want = e, i, got[i], want[i]
		}
	}
	return c
}

// ParseBytes reads a size such as "4096", "64K", "256M" or "1G" (binary
// units): at least one byte and under 128 TiB; never NaN or an infinity.
func ParseBytes(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := 1
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	bytes := v * float64(mult)
	if err != nil || !(bytes >= 1 && bytes <= math.MaxInt32*float64(1<<16)) { // NaN is neither
		return 0, fmt.Errorf("size %q: want a positive number of bytes such as 4096, 64K, 256M or 1G", s)
	}
	return int(bytes), nil
}

// ParseFields reads a size such as "blobs:n=1000,d=64": after prefix,
// comma-separated key=count pairs stored into fields (counts are integers
// >= 0; keys not in fields are errors, and so is a missing prefix). Suites
// use it for their sizes; the caller checks the values.
func ParseFields(spec, prefix string, fields map[string]*int) error {
	rest, ok := strings.CutPrefix(strings.TrimSpace(spec), prefix)
	if !ok {
		return fmt.Errorf("size %q does not start with %q", spec, prefix)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for kv := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		p, ok := fields[strings.TrimSpace(k)]
		if !ok {
			return fmt.Errorf("size %q: unknown field %q (have %s)", spec, k, strings.Join(keys, ", "))
		}
		x, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || x < 0 {
			return fmt.Errorf("size %q: %s = %q is not a count", spec, k, v)
		}
		*p = x
	}
	return nil
}

// SplitList splits a comma-separated list such as "64M, 1G", dropping empty
// items: the form of --size, --variants and the notebooks' knobs. An item
// that is only key=value continues the previous item when that one has a
// colon, so generator specs keep their commas: "uniform:n=64,k=4, 1G" is
// two items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case len(out) > 0 && strings.Contains(f, "=") && !strings.Contains(f, ":") && strings.Contains(out[len(out)-1], ":"):
			out[len(out)-1] += "," + f
		default:
			out = append(out, f)
		}
	}
	return out
}

var (
	commitOnce sync.Once
	commit     string
	// stampedCommit is set at link time by make gpu-bundle
	// (-X gpulab/engine/bench.stampedCommit=...).
	stampedCommit string
)

// Commit identifies the code that produced a record: $GPULAB_COMMIT, else the
// commit stamped by make gpu-bundle, else the VCS revision that go build
// records, else `git rev-parse`, else "unknown". A "-dirty" suffix marks
// uncommitted changes.
func Commit() string {
	commitOnce.Do(func() {
		if c := os.Getenv("GPULAB_COMMIT"); c != "" {
			commit = c
			return
		}
		if stampedCommit != "" {
			commit = stampedCommit
			return
		}
		if bi, ok := debug.ReadBuildInfo(); ok {
			var rev, dirty string
			for _, s := range bi.Settings {
				switch {
				case s.Key == "vcs.revision":
					rev = s.Value
				case s.Key == "vcs.modified" && s.Value == "true":
					dirty = "-dirty"
				}
			}
			if rev != "" {
				commit = rev[:min(12, len(rev))] + dirty
				return
			}
		}
		if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
			commit = strings.TrimSpace(string(out))
			if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
				commit += "-dirty"
			}
			return
		}
		commit = "unknown"
	})
	return commit
}

// tableHeader and tableRow are the columns that Table and Markdown share.
// "model GB/s" is the bytes the suite's traffic model counts (compulsory
// traffic for a copy, the kernel's global loads and stores for a GEMM
// step) over the time: caches may serve part of them. "% roof" has one
// definition in every row: the share of the roofline bound min(peak
// FLOP/s, intensity × peak GB/s) at the model's intensity, which is the
// larger of % of peak FLOP/s (of the unit that computes at the record's
// precision) and % of peak GB/s. A byte rate above what DRAM can move
// counts bytes that caches served: that row is above its roof, so it is
// marked as effective bandwidth (effectiveMark, explained under the
// table) and given no share. A FLOP rate above the peak is beyond what
// any cache can help with: the time is wrong, and the share is marked as
// a measurement error (impossibleMark). The "vs" column names what it
// compares with (sharedBaseline).
var tableHeader = []string{"suite", "device", "size", "variant", "median ms", "model GB/s", "GFLOP/s", "% roof", "vs baseline", "max rel err", "ok"}

// vsColumn is the index of the "vs" column in tableHeader.
const vsColumn = 8

// sharedBaseline is the baseline that every record of recs compared with
// one names, or "" when they name different ones (or none does). A table
// with one baseline names it in the header ("vs naive"); a table whose
// rows compare with different ones says "vs baseline" and names each
// row's in its cell ("3.06x naive"), so that no ratio is read against the
// wrong reference.
func sharedBaseline(recs []Record) string {
	base := ""
	for _, r := range recs {
		if r.Speedup == 0 || r.Baseline == "" {
			continue
		}
		if base != "" && r.Baseline != base {
			return ""
		}
		base = r.Baseline
	}
	return base
}

// header is tableHeader for recs, with the "vs" column named after their
// shared baseline when they have one; quote wraps the name.
func header(recs []Record, quote string) []string {
	h := slices.Clone(tableHeader)
	if base := sharedBaseline(recs); base != "" {
		h[vsColumn] = "vs " + quote + base + quote
	}
	return h
}

// effectiveMark follows a byte rate above the DRAM peak; impossibleMark
// follows a share of the compute peak above 100%.
const (
	effectiveMark  = " ‡"
	impossibleMark = " ✗"
)

// tableRow is a record's row in a table of baseline shared (sharedBaseline).
func tableRow(r Record, shared string) []string {
	ok := "ok"
	if !r.OK {
		ok = "FAIL"
	}
	gbps, pct := num(r.GBps, 1), pctStr(max(r.PctPeakGFLOPS, r.PctPeakGBps))
	if Effective(r) {
		gbps += effectiveMark
		pct = strings.TrimSpace(effectiveMark)
	}
	if BeyondComputePeak(r) {
		pct += impossibleMark
	}
	return []string{r.Suite, r.Device, r.Size, r.Variant, num(r.MedianMS, 4), gbps, num(r.GFLOPS, 1),
		pct, speedup(r, shared), fmt.Sprintf("%.2g", r.MaxRelErr), ok}
}

// Effective says whether a record's byte rate is a cache's, not
// memory's: above the DRAM peak, or with all its bytes in the last-level
// cache (InCache). Its share of the memory peak means nothing: tables
// mark it (effectiveMark) and give it no % roof, and the % of peak
// bandwidth metric leaves it out.
func Effective(r Record) bool { return r.PctPeakGBps > 100 || r.InCache }

// BeyondComputePeak says whether a record computed faster than the
// device's peak FLOP/s at its precision allows: no cache makes arithmetic
// faster, so its time is a measurement error (a launch that failed
// without an error, work the timer missed, a peak read wrong), never a
// result to celebrate. Tables mark it, and so should anything else that
// shows the record's speed.
func BeyondComputePeak(r Record) bool { return r.PctPeakGFLOPS > 100 }

// ImpossibleNote explains impossibleMark: what a share of the compute
// peak above 100% means. EffectiveNote and InCacheNote explain
// effectiveMark: what a byte rate above the DRAM peak, or one whose bytes
// all fit in the last-level cache, means.
const (
	ImpossibleNote = "faster than the hardware's peak allows: the timing is a measurement error (a launch that failed without an error, work the timer did not see, or a wrong peak), not a result"
	EffectiveNote  = "effective bandwidth: more bytes per second than DRAM can move, so caches served part of the bytes counted"
	InCacheNote    = "effective bandwidth: every byte the run moves fits in the last-level cache, so the repeated runs were served from cache, not memory"
)

// writeNotes explains the marks of a table's rows.
func writeNotes(b *strings.Builder, recs []Record) {
	if slices.ContainsFunc(recs, func(r Record) bool { return r.PctPeakGBps > 100 }) {
		b.WriteString("\n‡ " + EffectiveNote + "; the row is above its memory roof, so it has no share of it.\n")
	}
	if slices.ContainsFunc(recs, func(r Record) bool { return r.InCache && r.PctPeakGBps <= 100 }) {
		b.WriteString("\n‡ " + InCacheNote + ", so it has no share of the memory roof.\n")
	}
	if slices.ContainsFunc(recs, BeyondComputePeak) {
		b.WriteString("\n✗ above 100% of the compute peak at the record's precision: " + ImpossibleNote + ".\n")
	}
}

// Table formats records as an aligned text table, one row per record, then
// the error of each failed record.
func Table(recs []Record) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, strings.Join(header(recs, ""), "\t")+"\t")
	shared := sharedBaseline(recs)
	for _, r := range recs {
		fmt.Fprintln(w, strings.Join(tableRow(r, shared), "\t")+"\t")
	}
	w.Flush()
	writeNotes(&b, recs)
	writeErrors(&b, recs)
	return b.String()
}

// Markdown formats records as a Markdown table (for notebooks and docs/).
func Markdown(recs []Record) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header(recs, "`"), " | ") + " |\n|" + strings.Repeat(" ---: |", len(tableHeader)) + "\n")
	shared := sharedBaseline(recs)
	for _, r := range recs {
		b.WriteString("| " + strings.Join(tableRow(r, shared), " | ") + " |\n")
	}
	writeNotes(&b, recs)
	writeErrors(&b, recs)
	return b.String()
}

func writeErrors(b *strings.Builder, recs []Record) {
	for _, r := range recs {
		if r.Error != "" {
			fmt.Fprintf(b, "\n%s/%s size %s: %s\n", r.Suite, r.Variant, r.Size, r.Error)
		}
	}
}

// num prints v with prec decimals, or with two significant digits where
// those decimals would read zero (0.037 GFLOP/s, not 0.0); "-" for none.
func num(v float64, prec int) string {
	switch {
	case v == 0:
		return "-"
	case math.Abs(v) < 0.5*math.Pow10(-prec):
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// pctStr prints a share in percent as num does with one decimal: never
// 0.0%.
func pctStr(v float64) string {
	if v == 0 {
		return "-"
	}
	return num(v, 1) + "%"
}

// speedup is a record's cell of the "vs" column: its ratio to its
// baseline, followed by the baseline's name unless the table's header
// names it (shared).
func speedup(r Record, shared string) string {
	switch {
	case r.Speedup == 0:
		return "-"
	case r.Variant == r.Baseline:
		return "(baseline)"
	case r.Baseline != shared:
		return fmt.Sprintf("%.2fx %s", r.Speedup, r.Baseline)
	}
	return fmt.Sprintf("%.2fx", r.Speedup)
}

// WriteJSON writes records as an indented JSON array. It writes a temporary
// file next to path and renames it, so a failure never leaves half a file.
func WriteJSON(path string, recs []Record) error { return WriteJSONValue(path, recs) }

// WriteJSONValue writes any value as indented JSON, the same safe way.
func WriteJSONValue(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode %s: %w", path, err)
	}
	if err := atomicfile.WriteBytes(path, append(data, '\n')); err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}

// maxRecordsBytes bounds a file of records: a record is about a kilobyte.
const maxRecordsBytes = 256 << 20

// ReadJSON reads records written by WriteJSON: one JSON array and nothing
// after it (json.Unmarshal refuses trailing data), every record naming its
// suite, variant and device, so that a JSON file of something else (a
// profile, a p2p matrix) is refused rather than read as empty records. A
// file that cannot be read is the os error as it is (os.IsNotExist works).
func ReadJSON(path string) ([]Record, error) {
	data, err := readlimit.ReadFile(path, "file of records", maxRecordsBytes)
	if err != nil {
		return nil, err
	}
	var recs []Record
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	for i, r := range recs {
		if r.Suite == "" || r.Variant == "" || r.Device == "" {
			return nil, fmt.Errorf("bench: %s: record %d has suite %q, variant %q and device %q: a bench record names all three (is this a file of lab bench --json?)",
				path, i, r.Suite, r.Variant, r.Device)
		}
	}
	return amend(recs), nil
}

// amend returns recs with each registered suite's records as they ran
// (Suite.Amend), in their order.
func amend(recs []Record) []Record {
	bySuite := map[string][]int{}
	for i, r := range recs {
		bySuite[r.Suite] = append(bySuite[r.Suite], i)
	}
	for name, at := range bySuite {
		s, err := Lookup(name)
		if err != nil || s.Amend == nil {
			continue
		}
		mine := make([]Record, len(at))
		for j, i := range at {
			mine[j] = recs[i]
		}
		for j, r := range s.Amend(mine) {
			recs[at[j]] = r
		}
	}
	return recs
}

// Provenance is where a recorded run comes from: the device it ran on,
// the commit of the source and the date. Every table of a recorded run
// is captioned with it (Caption).
type Provenance struct {
	Device     string `json:"device"`
	DeviceName string `json:"device_name"`
	Commit     string `json:"commit"`
	Date       string `json:"date"` // RFC 3339, or a day (2006-01-02)
}

// Provenance is the record's device, commit and date.
func (r Record) Provenance() Provenance {
	return Provenance{Device: r.Device, DeviceName: r.DeviceName, Commit: r.Commit, Date: r.Date}
}

// Caption is the caption of a table of a recorded run, "*Recorded on
// NVIDIA H200 (`cuda:0`), commit `abc123`, 2026-11-22, with `COMMAND`:*",
// or an error naming what the run or the command lacks: a recorded table
// says where its figures come from, or is not shown.
func (p Provenance) Caption(command string) (string, error) {
	return caption([]Provenance{p}, command)
}

// RecordsCaption is the Caption of a table of recs. Rows that ran on
// different devices (the CPU next to a GPU, one GPU next to several) name
// each of them; a commit with uncommitted changes (-dirty) is said to be
// one; records of several commits, which are not one run, say so.
func RecordsCaption(recs []Record, command string) (string, error) {
	ps := make([]Provenance, len(recs))
	for i, r := range recs {
		ps[i] = r.Provenance()
	}
	return caption(ps, command)
}

// caption is the caption of the runs ps, the day of the first.
func caption(ps []Provenance, command string) (string, error) {
	var missing, devices, commits []string
	if strings.TrimSpace(command) == "" {
		missing = append(missing, "command")
	}
	for _, p := range ps {
		for _, f := range []struct{ name, value string }{{"device", p.Device}, {"device name", p.DeviceName}, {"commit", p.Commit}, {"date", p.Date}} {
			if strings.TrimSpace(f.value) == "" {
				missing = appendNew(missing, f.name)
			}
		}
		devices = appendNew(devices, fmt.Sprintf("%s (`%s`)", p.DeviceName, p.Device))
		commits = appendNew(commits, "`"+p.Commit+"`")
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("bench: a recorded run of %q lacks its %s", command, strings.Join(missing, ", "))
	}
	commit := "commit " + commits[0]
	if len(commits) > 1 {
		commit = "commits " + strings.Join(commits, ", ") + " (rows of several runs)"
	}
	if len(commits) == 1 {
		commit += DirtyNote(ps[0].Commit)
	}
	day, _, _ := strings.Cut(ps[0].Date, "T")
	return fmt.Sprintf("*Recorded on %s, %s, %s, with `%s`:*", strings.Join(devices, " and "), commit, day, command), nil
}

// DirtyNote is what a caption adds after a commit with uncommitted changes
// (a "-dirty" suffix): " (built with uncommitted changes: not exactly that
// commit's code)"; nothing after a clean commit.
func DirtyNote(commit string) string {
	if strings.HasSuffix(commit, "-dirty") {
		return " (built with uncommitted changes: not exactly that commit's code)"
	}
	return ""
}

// appendNew appends s to list unless list has it.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
