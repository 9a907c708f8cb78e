package sparse

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"gpulab/engine/bench"
)

// What notebook 03 shows, built from the numbers a cell has just measured
// or read from docs/results: tables, figures and the sentences that
// interpret them. A lesson's prose never types a measured figure; these
// functions write them, so that the text and the table beside it always
// agree. This file holds what they share; lesson_matrices.go covers the
// formats and the matrices, lesson_runs.go the benchmark runs and
// lesson_phases.go the per-phase GPU times.

// Label names a matrix spec briefly, for tables, legends and sentences:
// "uniform (16 per row)", "banded (w=8)", "Poisson 512²", "R-MAT scale 18
// (a=0.57)"; a Matrix Market file or a SuiteSparse Group/Name by its base
// name. Labels have no commas, so that lists of them read well.
func Label(spec string) string {
	spec = strings.TrimPrefix(strings.TrimSpace(spec), "gen:")
	kind, args, ok := strings.Cut(spec, ":")
	if !ok || strings.ContainsAny(kind, `/\.`) {
		return strings.TrimSuffix(strings.TrimSuffix(path.Base(spec), ".gz"), ".mtx")
	}
	field := map[string]string{}
	for kv := range strings.SplitSeq(args, ",") {
		k, v, _ := strings.Cut(kv, "=")
		field[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	switch strings.ToLower(kind) {
	case "uniform":
		return "uniform (" + field["k"] + " per row)"
	case "banded":
		return "banded (w=" + field["w"] + ")"
	case "poisson":
		return "Poisson " + field["k"] + "²"
	case "rmat":
		s := "R-MAT scale " + field["scale"]
		if a := field["a"]; a != "" {
			s += " (a=" + a + ")"
		}
		return s
	}
	return spec
}

// timeText prints a time with three significant digits in the unit that
// keeps them: "35.5 ms", "675 µs", "4.40 ms". (nb.Duration does the same
// for cells; this package cannot import nb, which imports every suite.)
func timeText(d time.Duration) string {
	if d == 0 {
		return "0 ns"
	}
	// Round to three significant digits first, so that 999.6 µs is 1.00 ms.
	digits := int(math.Floor(math.Log10(math.Abs(float64(d))))) + 1
	if digits > 3 {
		d = d.Round(time.Duration(math.Pow10(digits - 3)))
	}
	size, unit := time.Duration(1), "ns"
	for _, u := range []struct {
		size time.Duration
		name string
	}{{time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "µs"}} {
		if d >= u.size || -d >= u.size {
			size, unit = u.size, u.name
			break
		}
	}
	v := float64(d) / float64(size)
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(v)))))
	return strconv.FormatFloat(v, 'f', decimals, 64) + " " + unit
}

// msText prints a record's time in milliseconds as timeText does.
func msText(ms float64) string { return timeText(time.Duration(ms * float64(time.Millisecond))) }

// bytesText prints a size in MiB, or in GiB from 10 GiB on.
func bytesText(b float64) string {
	if b >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", b/(1<<20))
}

// times prints a ratio with two decimals below 10, one below 100, none
// above: "3.74×", "12.5×", "503×".
func times(x float64) string {
	switch {
	case x >= 99.5:
		return fmt.Sprintf("%.0f×", x)
	case x >= 9.995:
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// percent prints a share as a percentage, with two significant digits
// below a tenth: "93%", "5.2%", "0.0031%".
func percent(share float64) string {
	if share != 0 && math.Abs(share) < 0.1 {
		return fmt.Sprintf("%.2g%%", 100*share)
	}
	return fmt.Sprintf("%.0f%%", 100*share)
}

// geomean is the geometric mean of positive values (0 for none).
func geomean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var logs float64
	for _, x := range v {
		logs += math.Log(x)
	}
	return math.Exp(logs / float64(len(v)))
}

// recordSet indexes the passing records of one run by size, then variant; sizes
// keep the order in which they were measured.
type recordSet struct {
	sizes []string
	recs  map[string]map[string]bench.Record
}

func indexRun(recs []bench.Record) recordSet {
	r := recordSet{recs: map[string]map[string]bench.Record{}}
	for _, rec := range recs {
		if !rec.OK {
			continue
		}
		if r.recs[rec.Size] == nil {
			r.sizes = append(r.sizes, rec.Size)
			r.recs[rec.Size] = map[string]bench.Record{}
		}
		r.recs[rec.Size][rec.Variant] = rec
	}
	return r
}

// get returns the record of variant at size and whether there is one.
func (r recordSet) get(size, variant string) (bench.Record, bool) {
	rec, ok := r.recs[size][variant]
	return rec, ok
}

// perRow is a record's parameter per row of its matrix (products per row,
// entries per row), 0 when either is missing.
func perRow(rec bench.Record, name string) float64 {
	rows := rec.Params.Float("rows")
	if rows == 0 {
		return 0
	}
	return rec.Params.Float(name) / rows
}
