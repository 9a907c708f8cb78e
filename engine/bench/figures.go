package bench

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gpulab/engine"
	"gpulab/engine/plot"
)

// SpeedupBars draws one bar per variant of the records of one size: its
// speedup over the baseline, with a reference line at 1x. Where the
// speedups and 1x span a decade or more, the y axis is logarithmic, so
// that the baseline's bar and the slow variants' still show next to a 70x.
func SpeedupBars(title string, recs []Record) *plot.Figure {
	var labels []string
	var values []float64
	lo, hi := 1.0, 1.0
	for _, r := range recs {
		if r.Speedup > 0 {
			labels = append(labels, r.Variant)
			values = append(values, r.Speedup)
			lo, hi = min(lo, r.Speedup), max(hi, r.Speedup)
		}
	}
	f := plot.Bars(title, "speedup over the baseline (x)", labels, values).
		WithReference(1, "baseline").WithValueSuffix("x")
	if hi >= 10*lo {
		f.LogY()
	}
	return f
}

// Metric picks the number a throughput plot shows.
type Metric struct {
	Label string
	Value func(Record) float64
}

// Throughput metrics.
var (
	GBps          = Metric{"GB/s", func(r Record) float64 { return r.GBps }}
	GFLOPS        = Metric{"GFLOP/s", func(r Record) float64 { return r.GFLOPS }}
	PctPeakGBps   = Metric{"% of peak bandwidth", func(r Record) float64 { return pctOfMemory(r) }}
	PctPeakGFLOPS = Metric{"% of peak FLOP/s", func(r Record) float64 { return r.PctPeakGFLOPS }}
)

// pctOfMemory is a record's share of the memory peak, 0 (not plotted)
// where its rate is a cache's (Effective).
func pctOfMemory(r Record) float64 {
	if Effective(r) {
		return 0
	}
	return r.PctPeakGBps
}

// SizeLines draws metric against the numeric parameter param (e.g. "bytes"),
// one line per series (sizeSeries); seriesName names a record's line (for
// example its variant, or device and variant). The x axis is logarithmic
// where the sizes span a decade or more, linear where they do not (a sweep
// of K from 1008 to 1040); callers make the y axis logarithmic where
// useful.
func SizeLines(title, param string, m Metric, recs []Record, seriesName func(Record) string) *plot.Figure {
	series := sizeSeries(param, m, recs, seriesName)
	f := plot.Lines(title, param, m.Label, series...)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, x := range s.X {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	if lo > 0 && hi >= 10*lo {
		f.LogX()
	}
	return f
}

// sizeSeries is a line per series name of the passing records that have
// the parameter and a positive metric, its points in increasing x whatever
// the order of the records, the lines in the order their names first
// appear at the smallest x.
func sizeSeries(param string, m Metric, recs []Record, seriesName func(Record) string) []plot.Series {
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.Params.Float(param), b.Params.Float(param)) })
	byName := map[string]*plot.Series{}
	var order []string
	for _, r := range recs {
		x, ok := r.Params.Number(param)
		if !ok || !r.OK || m.Value(r) <= 0 {
			continue
		}
		name := seriesName(r)
		s, seen := byName[name]
		if !seen {
			s = &plot.Series{Name: name}
			byName[name] = s
			order = append(order, name)
		}
		s.X = append(s.X, x)
		s.Y = append(s.Y, m.Value(r))
	}
	series := make([]plot.Series, len(order))
	for i, n := range order {
		series[i] = *byName[n]
	}
	return series
}

// ByVariant names a series by the record's variant.
func ByVariant(r Record) string { return r.Variant }

// ByDeviceVariant names a series "device variant".
func ByDeviceVariant(r Record) string { return r.Device + " " + r.Variant }

// MaxSeries is the most series (lines, or roofline points) one chart
// shows: more than that cannot be told apart by colour and shape.
const MaxSeries = 8

// RooflineOf places each passing record of dev that has both flops and bytes
// on dev's roofline. A point is named by its variant when all the points
// share one suite and size (the title should say which), else "suite
// variant size". More than MaxSeries points are split over as few
// charts as that allows, of near equal size, titled "title (i of n)".
func RooflineOf(title string, dev engine.Info, recs []Record) []*plot.Figure {
	var mine []Record
	for _, r := range recs {
		if r.Device == dev.ID && r.OK && r.Intensity > 0 && r.GFLOPS > 0 {
			mine = append(mine, r)
		}
	}
	short := len(Sizes(mine)) <= 1 && len(distinct(mine, func(r Record) string { return r.Suite })) <= 1
	var pts []plot.RooflinePoint
	for _, r := range mine {
		name := r.Variant
		if !short {
			name = fmt.Sprintf("%s %s %s", r.Suite, r.Variant, r.Size)
		}
		pts = append(pts, plot.RooflinePoint{Name: name, Intensity: r.Intensity, GFLOPS: r.GFLOPS, Effective: r.InCache})
	}
	charts := max(1, (len(pts)+MaxSeries-1)/MaxSeries)
	var figs []*plot.Figure
	for i := range charts {
		lo, hi := i*len(pts)/charts, (i+1)*len(pts)/charts
		t := title
		if charts > 1 {
			t = fmt.Sprintf("%s (%d of %d)", title, i+1, charts)
		}
		figs = append(figs, plot.Roofline(t, dev.PeakGFLOPS, dev.PeakGBps, pts[lo:hi]))
	}
	return figs
}

// distinct returns the distinct keys of recs in the order they first appear.
func distinct(recs []Record, key func(Record) string) []string {
	var out []string
	for _, r := range recs {
		if k := key(r); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Sizes returns the distinct sizes of recs in the order they first appear.
func Sizes(recs []Record) []string { return distinct(recs, func(r Record) string { return r.Size }) }

// OfSize keeps the records of one size.
func OfSize(recs []Record, size string) []Record {
	var out []Record
	for _, r := range recs {
		if r.Size == size {
			out = append(out, r)
		}
	}
	return out
}
