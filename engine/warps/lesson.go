package warps

// What notebook 02 needs around the suites: running one experiment on the
// selected devices, the kernels it shows, the runs recorded on a GPU
// machine, and the records as plot series, figures and pictures.

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/plot"
	"gpulab/kernels"
)

// Suites are the lesson's experiments, in the order it runs them; each is a
// bench suite and has a CUDA and an OpenCL kernel file of the same name
// under kernels/*/warps.
var Suites = []string{"divergence", "fastmath", "wgsize", "barrier", "occupancy", "intensity", "banks", "filter"}

// LessonOptions time each case with one warm-up run, then at least five
// timed runs and 20 ms of device time, so that the whole lesson runs in
// about a minute on PoCL; the recorded runs used the same five runs and
// `lab bench --min-time 20ms`.
var LessonOptions = bench.Options{Warmup: 1, MinReps: 5, MinTime: 20 * time.Millisecond}

// Measure runs suite on each device of ids (CUDA or OpenCL) with the sizes
// given (nil: the suite's default for each device) and LessonOptions, and
// returns the records of all devices. It prints one line per device to
// progress (nil: nowhere). A case that fails its check is an error naming
// it, so no wrong result is ever plotted.
func Measure(ids []string, suite string, sizes []string, progress io.Writer) ([]bench.Record, error) {
	s, err := bench.Lookup(suite)
	if err != nil {
		return nil, err
	}
	if progress == nil {
		progress = io.Discard
	}
	var all []bench.Record
	for _, id := range ids {
		dev, err := engine.Open(id)
		if err != nil {
			return all, fmt.Errorf("warps: %s on %s: %w", suite, id, err)
		}
		start := time.Now()
		recs, err := bench.Run(s, dev, sizes, LessonOptions)
		dev.Close()
		if err == nil {
			err = bench.Failed(recs)
		}
		if err != nil {
			return all, fmt.Errorf("warps: %s on %s: %w", suite, id, err)
		}
		fmt.Fprintf(progress, "%s on %s: %d cases in %.1f s\n", suite, id, len(recs), time.Since(start).Seconds())
		all = append(all, recs...)
	}
	return all, nil
}

// KernelSteps returns the kernel file of an experiment (one of Suites) in
// family f as a one-step ladder, for nb.ShowSteps: its header comment says
// the guide's claim, what the kernel measures and why.
func KernelSteps(f kernels.Family, experiment string) ([]kernels.Step, error) {
	name := "warps/" + experiment
	code, err := f.Source(name)
	if err != nil {
		return nil, fmt.Errorf("warps: kernel of %q: %w", experiment, err)
	}
	return []kernels.Step{{Name: experiment, File: name + f.Ext, Code: code}}, nil
}

// RecordedRun is a run of one suite kept in docs/results: the file's name
// there and the command that wrote it.
type RecordedRun struct {
	File, Command string
}

// recordedDevices are the devices of the recorded runs: an NVIDIA H200
// through CUDA and through NVIDIA's OpenCL (docs/opencl-and-warps.md).
var recordedDevices = []string{"cuda:0", "opencl:1:0"}

// RecordedRuns returns the H200 runs of suite kept in docs/results, CUDA
// first, with the command of docs/opencl-and-warps.md.
func RecordedRuns(suite string) []RecordedRun {
	var runs []RecordedRun
	for _, id := range recordedDevices {
		file := fmt.Sprintf("h200-%s-%s.json", suite, strings.ReplaceAll(id, ":", "-"))
		runs = append(runs, RecordedRun{
			File:    file,
			Command: fmt.Sprintf("lab bench %s --device %s --min-time 20ms --json %s", suite, id, file),
		})
	}
	return runs
}

// Series groups the passing records into one plot series per name, in the
// order the names first appear, each with its points sorted by x so that
// its line does not zigzag.
func Series(recs []bench.Record, name func(bench.Record) string, x, y func(bench.Record) float64) []plot.Series {
	type point struct{ x, y float64 }
	var names []string
	points := map[string][]point{}
	for _, r := range recs {
		if !r.OK {
			continue
		}
		n := name(r)
		if _, seen := points[n]; !seen {
			names = append(names, n)
		}
		points[n] = append(points[n], point{x(r), y(r)})
	}
	out := make([]plot.Series, 0, len(names))
	for _, n := range names {
		ps := points[n]
		slices.SortStableFunc(ps, func(a, b point) int { return cmp.Compare(a.x, b.x) })
		s := plot.Series{Name: n}
		for _, p := range ps {
			s.X, s.Y = append(s.X, p.x), append(s.Y, p.y)
		}
		out = append(out, s)
	}
	return out
}

// byDevice splits records by device, in the order the devices first appear.
func byDevice(recs []bench.Record) [][]bench.Record {
	var ids []string
	groups := map[string][]bench.Record{}
	for _, r := range recs {
		if _, seen := groups[r.Device]; !seen {
			ids = append(ids, r.Device)
		}
		groups[r.Device] = append(groups[r.Device], r)
	}
	out := make([][]bench.Record, len(ids))
	for i, id := range ids {
		out[i] = groups[id]
	}
	return out
}

// bySuite splits records by suite, in the order of Suites (unknown suites
// last, in the order they appear).
func bySuite(recs []bench.Record) [][]bench.Record {
	order := slices.Clone(Suites)
	groups := map[string][]bench.Record{}
	for _, r := range recs {
		if !slices.Contains(order, r.Suite) {
			order = append(order, r.Suite)
		}
		groups[r.Suite] = append(groups[r.Suite], r)
	}
	var out [][]bench.Record
	for _, s := range order {
		if len(groups[s]) > 0 {
			out = append(out, groups[s])
		}
	}
	return out
}

// ms is a record's median time, the y of the time plots.
func ms(r bench.Record) float64 { return r.MedianMS }

// Figures draws the lesson's charts of records of any of its suites, one
// set per device: each divergence mask's time over uniform; speedups of
// the fast-math builds and of the filters; throughput against work-group
// size; time with and without barriers; bandwidth against occupancy (CUDA)
// or loads in flight (OpenCL); the roofline of the intensity sweep, in two
// halves so that its legend has room; time against the bank-conflict
// stride, one line per padding.
func Figures(recs []bench.Record) []*plot.Figure {
	var figs []*plot.Figure
	for _, suite := range bySuite(recs) {
		for _, dev := range byDevice(suite) {
			figs = append(figs, deviceFigures(dev)...)
		}
	}
	return figs
}

// deviceFigures draws the charts of one suite's records on one device.
func deviceFigures(recs []bench.Record) []*plot.Figure {
	id := recs[0].Device
	switch recs[0].Suite {
	case "divergence":
		return []*plot.Figure{divergenceBars(recs)}
	case "fastmath":
		return []*plot.Figure{bench.SpeedupBars("fast math on "+id+": speed over precise", recs)}
	case "filter":
		return []*plot.Figure{bench.SpeedupBars("filters on "+id+": speed over buffers", recs)}
	case "wgsize":
		hint := func(r bench.Record) string {
			if r.Params["hint"] == true {
				return "with size hint"
			}
			return "no hint"
		}
		local := func(r bench.Record) float64 { return r.Params.Float("local") }
		copies := kept(recs, func(r bench.Record) bool { return r.Params["kernel"] == "copy" })
		fmas := kept(recs, func(r bench.Record) bool { return r.Params["kernel"] == "fma" })
		return []*plot.Figure{
			lines("copy on "+id, "work-group size", "GB/s", Series(copies, hint, local, func(r bench.Record) float64 { return r.GBps })).LogX(),
			lines("FMA chain on "+id, "work-group size", "GFLOP/s", Series(fmas, hint, local, func(r bench.Record) float64 { return r.GFLOPS })).LogX(),
		}
	case "barrier":
		barrier := func(r bench.Record) string {
			if r.Params["barrier"] == true {
				return "with barriers"
			}
			return "without"
		}
		return []*plot.Figure{lines("barriers on "+id, "work-group size", "median ms",
			Series(recs, barrier, func(r bench.Record) float64 { return r.Params.Float("local") }, ms)).LogX()}
	case "occupancy":
		gbps := func(r bench.Record) float64 { return r.GBps }
		if _, cuda := recs[0].Params["occupancy"]; cuda {
			return []*plot.Figure{lines("occupancy on "+id, "occupancy (resident threads / most an SM holds)", "GB/s",
				Series(recs, func(r bench.Record) string { return fmt.Sprintf("ACC=%g", r.Params.Float("acc")) },
					func(r bench.Record) float64 { return r.Params.Float("occupancy") }, gbps))}
		}
		return []*plot.Figure{lines("loads in flight on "+id, "ACC (independent loads per work-item)", "GB/s",
			Series(recs, func(r bench.Record) string { return fmt.Sprintf("local %g KiB", r.Params.Float("local_mem")/1024) },
				func(r bench.Record) float64 { return r.Params.Float("acc") }, gbps)).LogX()}
	case "intensity":
		return intensityFigures(recs)
	case "banks":
		return []*plot.Figure{lines("bank conflicts on "+id, "stride (words per row before padding)", "median ms",
			Series(recs, func(r bench.Record) string { return fmt.Sprintf("pad %g", r.Params.Float("pad")) },
				func(r bench.Record) float64 { return r.Params.Float("stride") }, ms)).LogX()}
	}
	return nil
}

// lines is a line chart whose y axis is logarithmic when its values span a
// decade or more.
func lines(title, xlabel, ylabel string, series []plot.Series) *plot.Figure {
	f := plot.Lines(title, xlabel, ylabel, series...)
	if spansDecade(series) {
		f.LogY()
	}
	return f
}

// spansDecade reports whether the series' y values are all positive and
// the largest is at least ten times the smallest.
func spansDecade(series []plot.Series) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, y := range s.Y {
			lo, hi = min(lo, y), max(hi, y)
		}
	}
	return lo > 0 && hi >= 10*lo
}

// divergenceBars draws each mask's time over the uniform one, in the order
// of divergenceOrder: bars, so that masks with the same share (uniform and
// warp_split; alternate_lanes and random p = 0.5) stand side by side
// instead of on one x.
func divergenceBars(recs []bench.Record) *plot.Figure {
	rs := divergenceOrder(recs)
	uniform, _ := variant(rs, "uniform")
	var labels []string
	var ratios []float64
	for _, r := range rs {
		labels = append(labels, fmt.Sprintf("%s (%s)", r.Variant, share(r.Params.Float("divergent_fraction"))))
		ratios = append(ratios, r.MedianMS/uniform.MedianMS)
	}
	return plot.Bars("divergence on "+recs[0].Device+": time over uniform", "time / uniform time", labels, ratios).
		WithReference(1, "uniform").WithValueSuffix("×")
}

// divergenceOrder returns the passing divergence records sorted by the
// share of 32-lane groups whose lanes disagree, branchless last.
func divergenceOrder(recs []bench.Record) []bench.Record {
	rs := kept(recs, func(r bench.Record) bool { return r.OK })
	branchless := func(r bench.Record) int {
		if r.Params["branch"] == "select" {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(rs, func(a, b bench.Record) int {
		return cmp.Or(cmp.Compare(branchless(a), branchless(b)), cmp.Compare(a.Params.Float("divergent_fraction"), b.Params.Float("divergent_fraction")))
	})
	return rs
}

// kept returns the records that keep accepts.
func kept(recs []bench.Record, keep func(bench.Record) bool) []bench.Record {
	var out []bench.Record
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// peaksOf recovers the device peaks that the records were compared with
// (GFLOP/s / share of peak); 0 when the records carry none.
func peaksOf(recs []bench.Record) (gflops, gbps float64) {
	for _, r := range recs {
		if r.GFLOPS > 0 && r.PctPeakGFLOPS > 0 {
			gflops = 100 * r.GFLOPS / r.PctPeakGFLOPS
		}
		if r.GBps > 0 && r.PctPeakGBps > 0 {
			gbps = 100 * r.GBps / r.PctPeakGBps
		}
	}
	return gflops, gbps
}

// intensityFigures places the sweep on the device's roofline, F = 1 to 16
// and F = 32 up in two charts (ten points and their legend do not fit one);
// without peaks, GFLOP/s against FLOP/byte.
func intensityFigures(recs []bench.Record) []*plot.Figure {
	id := recs[0].Device
	peakGFLOPS, peakGBps := peaksOf(recs)
	if peakGFLOPS == 0 || peakGBps == 0 {
		return []*plot.Figure{plot.Lines("intensity on "+id, "FLOP/byte", "GFLOP/s",
			Series(recs, func(bench.Record) string { return "measured" },
				func(r bench.Record) float64 { return r.Intensity }, func(r bench.Record) float64 { return r.GFLOPS })...).LogX().LogY()}
	}
	var low, high []plot.RooflinePoint
	for _, r := range recs {
		if !r.OK || r.Intensity <= 0 || r.GFLOPS <= 0 {
			continue
		}
		p := plot.RooflinePoint{Name: fmt.Sprintf("F=%g", r.Params.Float("f")), Intensity: r.Intensity, GFLOPS: r.GFLOPS}
		if r.Params.Float("f") <= 16 {
			low = append(low, p)
		} else {
			high = append(high, p)
		}
	}
	var figs []*plot.Figure
	for _, half := range []struct {
		title string
		pts   []plot.RooflinePoint
	}{{"roofline on " + id + ", F up to 16", low}, {"roofline on " + id + ", F from 32", high}} {
		if len(half.pts) > 0 {
			figs = append(figs, plot.Roofline(half.title, peakGFLOPS, peakGBps, half.pts))
		}
	}
	return figs
}

// FilterPanel is one picture for nb.Image: a title and w×h RGB values.
type FilterPanel struct {
	Title string
	RGB   []float32
	what  string   // the filter, "5×5 Gaussian blur"
	runs  []string // the kernels and devices that drew it, "blur_image on opencl:0:0"
}

// FilterPanels runs each filter once on dev through the image (OpenCL
// image2d_t) or texture (CUDA) path and returns its output, labelled with
// the variant and the device; the buffer path's output is the same
// (the suite checks both against one reference).
func FilterPanels(dev *engine.Device, img []float32, w, h int) ([]FilterPanel, error) {
	var panels []FilterPanel
	for _, v := range filterVariants[dev.Kind] {
		if !strings.HasSuffix(v, "_image") && !strings.HasSuffix(v, "_texture") {
			continue
		}
		out, _, err := FilterImage(dev, v, img, w, h)
		if err != nil {
			return nil, err
		}
		filter, _, _ := strings.Cut(v, "_")
		what := map[string]string{"blur": "5×5 Gaussian blur", "sobel": "Sobel gradient magnitude"}[filter]
		runs := []string{fmt.Sprintf("%s on %s", v, dev.ID)}
		panels = append(panels, FilterPanel{Title: panelTitle(what, runs), RGB: GrayRGB(out), what: what, runs: runs})
	}
	if len(panels) == 0 {
		return nil, fmt.Errorf("warps: filter: %s runs no filter kernels; pick a CUDA or OpenCL device", dev.ID)
	}
	return panels, nil
}

// FilterPanelsOn is FilterPanels on each device of ids, opened and closed
// here, with each picture shown once: panels of one filter whose pixels
// are equal bit for bit become one, titled with every kernel and device
// that drew it. Devices that disagree get a panel each.
func FilterPanelsOn(ids []string, img []float32, w, h int) ([]FilterPanel, error) {
	var all []FilterPanel
	for _, id := range ids {
		dev, err := engine.Open(id)
		if err != nil {
			return nil, err
		}
		panels, err := FilterPanels(dev, img, w, h)
		dev.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, panels...)
	}
	return samePictures(all), nil
}

// samePictures merges the panels of one filter with equal pixels, keeping
// the order in which each picture first came.
func samePictures(panels []FilterPanel) []FilterPanel {
	var out []FilterPanel
next:
	for _, p := range panels {
		for i := range out {
			if out[i].what == p.what && slices.Equal(out[i].RGB, p.RGB) {
				out[i].runs = append(out[i].runs, p.runs...)
				out[i].Title = panelTitle(out[i].what, out[i].runs)
				continue next
			}
		}
		out = append(out, p)
	}
	return out
}

// panelTitle is "blur_image on opencl:0:0: 5×5 Gaussian blur", or for a
// picture several kernels drew, "5×5 Gaussian blur by a and b, the same
// picture bit for bit".
func panelTitle(what string, runs []string) string {
	if len(runs) == 1 {
		return runs[0] + ": " + what
	}
	return fmt.Sprintf("%s by %s, the same picture bit for bit", what, bench.JoinAnd(runs))
}

// GrayRGB repeats each gray value three times, the RGB layout of nb.Image.
func GrayRGB(gray []float32) []float32 {
	rgb := make([]float32, 3*len(gray))
	for i, v := range gray {
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = v, v, v
	}
	return rgb
}
