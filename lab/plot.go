package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// plotValues are what --y may show on the y axis.
var plotValues = map[string]func(bench.Record) float64{
	"median_ms": func(r bench.Record) float64 { return r.MedianMS },
	"gbps":      func(r bench.Record) float64 { return r.GBps },
	"gflops":    func(r bench.Record) float64 { return r.GFLOPS },
}

// plotCmd draws benchmark records as a PNG or HTML file, for write-ups in
// docs/: a line per series with x read from a parameter, or a roofline.
func plotCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plot", stderr)
	x := fs.String("x", "", "parameter on the x axis (e.g. divergent_fraction, local, stride)")
	y := choiceFlag(fs, "y", "median_ms", slices.Sorted(maps.Keys(plotValues)), "what the y axis shows: median_ms, gbps or gflops")
	series := fs.String("series", "device", "what names a line: device, variant, a parameter, or several joined by commas")
	var where whereFlags
	fs.Var(&where, "where", "keep only records whose device, variant or parameter KEY has VALUE (KEY=VALUE, repeatable)")
	roofline := fs.Bool("roofline", false, "draw the records on their device's roofline instead")
	bars := fs.Bool("bars", false, "draw each record's speedup over its baseline as a bar instead")
	logX := fs.Bool("logx", false, "logarithmic x axis")
	title := fs.String("title", "", "the chart's title")
	out := fs.String("out", "", "output file, .png or .html")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab plot (--x PARAM [--y median_ms|gbps|gflops] [--series KEY] | --roofline | --bars) --out FILE.png FILE.json ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *out == "" || fs.NArg() == 0 || (*x == "" && !*roofline && !*bars) {
		fs.Usage()
		return usageError{fmt.Errorf("need --out, --x or --roofline, and at least one JSON file")}
	}
	var recs []bench.Record
	for _, path := range fs.Args() {
		r, err := bench.ReadJSON(path)
		if err != nil {
			return err
		}
		for _, rec := range r {
			if where.keep(rec) {
				recs = append(recs, rec)
			}
		}
	}
	var fig *plot.Figure
	if *bars {
		var labels []string
		var values []float64
		for _, r := range recs {
			if r.OK && r.Speedup > 0 {
				labels = append(labels, r.Device+" "+r.Variant)
				values = append(values, r.Speedup)
			}
		}
		fig = plot.Bars(*title, "speedup over the baseline (x)", labels, values).WithReference(1, "baseline").WithValueSuffix("x")
	} else if *roofline {
		f, err := rooflineFigure(*title, recs)
		if err != nil {
			return err
		}
		fig = f
	} else {
		value := plotValues[*y]
		lines := map[string]*plot.Series{}
		var names []string
		for _, r := range recs {
			xv, ok := number(r.Params[*x])
			if !ok || !r.OK {
				continue
			}
			name := seriesName(r, *series)
			if lines[name] == nil {
				lines[name] = &plot.Series{Name: name}
				names = append(names, name)
			}
			lines[name].X = append(lines[name].X, xv)
			lines[name].Y = append(lines[name].Y, value(r))
		}
		if len(names) == 0 {
			return fmt.Errorf("no passing record has a numeric parameter %q", *x)
		}
		var all []plot.Series
		for _, n := range names {
			s := lines[n]
			sortByX(s)
			all = append(all, *s)
		}
		fig = plot.Lines(*title, *x, *y, all...)
		if *logX {
			fig = fig.LogX()
		}
	}
	if err := fig.Save(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// rooflineFigure places the records on the roofline of their (single) device,
// whose peaks are recovered from the records' % of peak.
func rooflineFigure(title string, recs []bench.Record) (*plot.Figure, error) {
	var peakF, peakB float64
	var pts []plot.RooflinePoint
	for _, r := range recs {
		if !r.OK || r.Intensity <= 0 || r.GFLOPS <= 0 {
			continue
		}
		if r.PctPeakGFLOPS > 0 {
			peakF = r.GFLOPS * 100 / r.PctPeakGFLOPS
		}
		if r.PctPeakGBps > 0 {
			peakB = r.GBps * 100 / r.PctPeakGBps
		}
		pts = append(pts, plot.RooflinePoint{Name: r.Device + " " + r.Variant, Intensity: r.Intensity, GFLOPS: r.GFLOPS})
	}
	if len(pts) == 0 || peakF == 0 || peakB == 0 {
		return nil, fmt.Errorf("no passing record with flops, bytes and the device's peaks")
	}
	return plot.Roofline(title, peakF, peakB, pts), nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case bool:
		if n {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// field returns a record's device, variant or parameter key, as text.
func field(r bench.Record, key string) string {
	switch key {
	case "device":
		return r.Device
	case "variant":
		return r.Variant
	}
	return fmt.Sprint(r.Params[key])
}

func seriesName(r bench.Record, keys string) string {
	var parts []string
	for _, k := range strings.Split(keys, ",") {
		if k == "device" || k == "variant" {
			parts = append(parts, field(r, k))
		} else {
			parts = append(parts, k+"="+field(r, k))
		}
	}
	return strings.Join(parts, " ")
}

// whereFlags are --where KEY=VALUE filters.
type whereFlags []string

func (w *whereFlags) String() string { return strings.Join(*w, ",") }

func (w *whereFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("--where %q: want KEY=VALUE", v)
	}
	*w = append(*w, v)
	return nil
}

func (w whereFlags) keep(r bench.Record) bool {
	for _, kv := range w {
		k, v, _ := strings.Cut(kv, "=")
		if field(r, k) != v {
			return false
		}
	}
	return true
}

func sortByX(s *plot.Series) {
	idx := make([]int, len(s.X))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.X[idx[a]] < s.X[idx[b]] })
	x, y := make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		x[i], y[i] = s.X[j], s.Y[j]
	}
	s.X, s.Y = x, y
}
