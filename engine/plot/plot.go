// Package plot draws the lab's three chart kinds — bars (e.g. the speedup of
// each kernel variant over a baseline), lines (throughput against problem
// size) and rooflines (measured kernels over a device's compute and memory
// roofs) — each both as a PNG (gonum/plot; robust in every notebook export)
// and as a standalone interactive HTML page (go-echarts) with the echarts
// library inlined, so the page renders offline.
//
// Constructors never fail: invalid data (mismatched lengths, no data, NaN or
// Inf, non-positive values on a logarithmic axis, non-positive peaks) is
// reported, naming the figure's title and the problem, by PNG, HTML, Save and
// Show. The errors wrap ErrInvalid. Nothing in the package panics on bad input.
//
//	fig := plot.Bars("SGEMM 4096³ speedup", "speedup over naive",
//		[]string{"naive", "tiled", "cuBLAS"}, []float64{1, 6.3, 9.6}).
//		WithReference(1, "naive = 1x")
//	paths, err := fig.Show() // inline in GoNB; plots/sgemm-4096-speedup.{png,html} elsewhere
package plot

import (
	"errors"
	"fmt"
	"gpulab/engine/atomicfile"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// ErrInvalid is wrapped by every error about a figure's data or options.
var ErrInvalid = errors.New("invalid figure")

// Default PNG size in pixels, used when PNG is given a zero width or height.
const (
	DefaultWidth  = 800
	DefaultHeight = 480
)

// Limits on the PNG size in pixels.
const (
	minWidth, minHeight = 160, 100
	maxSide             = 8192
)

type kind int

const (
	kindBars kind = iota + 1
	kindLines
	kindRoofline
)

func (k kind) String() string {
	switch k {
	case kindBars:
		return "bar chart"
	case kindLines:
		return "line chart"
	case kindRoofline:
		return "roofline"
	}
	return "figure"
}

// Figure is one chart, renderable as PNG or HTML. Build it with Bars, Lines
// or Roofline; the With*/Log* methods modify it in place and return it, so
// they chain. Title may be changed at any time before rendering.
type Figure struct {
	Title string

	kind           kind
	xLabel, yLabel string

	// Bars.
	labels []string
	values []float64

	// Lines.
	series []Series

	// Roofline.
	peakGFLOPS, peakGBps float64
	points               []RooflinePoint

	logX, logY bool
	yAtLeast   float64  // the y axis reaches at least this far (bars; 0: no demand)
	yNames     []string // names of the y values 0, 1, ... (lines: lanes)
	dataTicks  bool     // x ticks at the series' x values (XTicksAtData)
	scatter    bool     // Lines drawn as unconnected points
	ref        *reference
	suffix     *string

	id string // the chart's DOM id where it must be unique (notebookHTML)
}

type reference struct {
	y     float64
	label string
}

// Series is a named line of (X, Y) points.
type Series struct {
	Name string
	X, Y []float64
}

// RooflinePoint is one measured kernel: its arithmetic intensity in FLOP per
// byte of DRAM traffic and its achieved GFLOP/s.
type RooflinePoint struct {
	Name      string
	Intensity float64
	GFLOPS    float64
	// Effective marks a point whose bytes a cache served, though it is
	// below its memory roof (bench.Record.InCache): labelled "‡ effective",
	// as a point above the roof is, not with a share of the roof.
	Effective bool
}

// Bars draws one bar per label, e.g. the speedup of each variant against a
// baseline. Every bar gets its own colour and its value printed above it.
// Values are printed with the suffix "x" when ylabel mentions "speedup"
// (see WithValueSuffix). Add a horizontal reference line (e.g. at 1.0x) with
// WithReference.
func Bars(title, ylabel string, labels []string, values []float64) *Figure {
	return &Figure{
		Title:  title,
		kind:   kindBars,
		yLabel: ylabel,
		labels: append([]string(nil), labels...),
		values: append([]float64(nil), values...),
	}
}

// Lines draws one line with markers per series, e.g. throughput against
// problem size. Use LogX and LogY for logarithmic axes. A linear y axis
// starts at zero when all values are non-negative.
func Lines(title, xlabel, ylabel string, series ...Series) *Figure {
	cp := make([]Series, len(series))
	for i, s := range series {
		cp[i] = Series{
			Name: s.Name,
			X:    append([]float64(nil), s.X...),
			Y:    append([]float64(nil), s.Y...),
		}
	}
	return &Figure{Title: title, kind: kindLines, xLabel: xlabel, yLabel: ylabel, series: cp}
}

// Roofline draws measured points over the device roofline
// min(peakGFLOPS, peakGBps·AI) on log-log axes: x is the arithmetic intensity
// AI in FLOP/byte, y is GFLOP/s. Each point is labelled with its name and
// listed in the legend with its share of the attainable performance at its
// intensity; the ridge point (peakGFLOPS/peakGBps, peakGFLOPS) is marked.
// points may be empty, to show the device's roofs alone.
func Roofline(title string, peakGFLOPS, peakGBps float64, points []RooflinePoint) *Figure {
	return &Figure{
		Title:      title,
		kind:       kindRoofline,
		xLabel:     "arithmetic intensity (FLOP/byte)",
		yLabel:     "performance (GFLOP/s)",
		peakGFLOPS: peakGFLOPS,
		peakGBps:   peakGBps,
		points:     append([]RooflinePoint(nil), points...),
	}
}

// Ridge returns the arithmetic intensity (FLOP/byte) of the roofline's ridge
// point, peakGFLOPS/peakGBps, where a kernel stops being memory-bound. It
// returns NaN unless both peaks are positive and finite.
func Ridge(peakGFLOPS, peakGBps float64) float64 {
	if !positiveFinite(peakGFLOPS) || !positiveFinite(peakGBps) {
		return math.NaN()
	}
	return peakGFLOPS / peakGBps
}

// Attainable returns the roofline's bound min(peakGFLOPS, peakGBps·intensity)
// in GFLOP/s (GB/s × FLOP/byte = GFLOP/s).
func Attainable(peakGFLOPS, peakGBps, intensity float64) float64 {
	return math.Min(peakGFLOPS, peakGBps*intensity)
}

// WithReference adds a horizontal dashed reference line at y, labelled label
// (e.g. 1.0 and "baseline"). A y <= 0 removes the line; an empty label
// becomes "reference <y>". It applies to every kind of figure; on a
// logarithmic y axis y must lie within the plotted data's decades to be seen.
func (f *Figure) WithReference(y float64, label string) *Figure {
	if f == nil {
		return nil
	}
	if finite(y) && y <= 0 {
		f.ref = nil
		return f
	}
	f.ref = &reference{y: y, label: label}
	return f
}

// WithValueSuffix sets the text appended to values printed on bars and in
// tooltips (e.g. "x", " ms", " GB/s"). Without it, bar charts whose y label
// mentions "speedup" use "x" and everything else uses none.
func (f *Figure) WithValueSuffix(suffix string) *Figure {
	if f == nil {
		return nil
	}
	f.suffix = &suffix
	return f
}

// Points draws a Lines figure's series as unconnected points: a scatter
// plot, e.g. clustered data.
func (f *Figure) Points() *Figure {
	f.scatter = true
	return f
}

// LogX makes the x axis logarithmic (line charts; a roofline is always
// log-log). All x values must then be positive.
func (f *Figure) LogX() *Figure {
	if f != nil {
		f.logX = true
	}
	return f
}

// XTicksAtData puts the x axis's ticks at the x values the series hold
// (at most maxDataTicks of them, evenly thinned): a chart of a few
// measured sizes then reads 1024, 2048, 4096, not round numbers that no
// measurement is at. PNG only; the interactive chart keeps its own ticks.
func (f *Figure) XTicksAtData() *Figure {
	if f != nil {
		f.dataTicks = true
	}
	return f
}

// LogY makes the y axis logarithmic (line and bar charts; a roofline is
// always log-log). All y values must then be positive; bars rise from the
// bottom of the axis, a nice value at least a factor 2 below the lowest.
func (f *Figure) LogY() *Figure {
	if f != nil {
		f.logY = true
	}
	return f
}

// WithYAtLeast makes a bar chart's linear y axis reach at least y, so that
// charts drawn side by side can share a scale (e.g. 1 against 32). A y <= 0
// removes the demand.
func (f *Figure) WithYAtLeast(y float64) *Figure {
	if f != nil {
		f.yAtLeast = max(y, 0)
	}
	return f
}

// WithYNames names the y values 0, 1, ... of a line chart, e.g. the lanes
// of a timeline: its y axis then runs from -0.5 to len(names)-0.5 and shows
// these names at those values, and no numbers.
func (f *Figure) WithYNames(names ...string) *Figure {
	if f != nil {
		f.yNames = slices.Clone(names)
	}
	return f
}

// YNames is what WithYNames set: the names of the y values 0, 1, ...
func (f *Figure) YNames() []string { return slices.Clone(f.yNames) }

// Series returns a copy of a line chart's series (nil for other kinds).
func (f *Figure) Series() []Series { return append([]Series(nil), f.series...) }

// RooflinePoints returns a copy of a roofline's measured points (nil for
// other kinds).
func (f *Figure) RooflinePoints() []RooflinePoint {
	return append([]RooflinePoint(nil), f.points...)
}

func (f *Figure) isLogX() bool { return f.logX || f.kind == kindRoofline }
func (f *Figure) isLogY() bool { return f.logY || f.kind == kindRoofline }

func (f *Figure) valueSuffix() string {
	if f.suffix != nil {
		return *f.suffix
	}
	if f.kind == kindBars && strings.Contains(strings.ToLower(f.yLabel), "speedup") {
		return "x"
	}
	return ""
}

func (f *Figure) refLabel() string {
	if f.ref == nil {
		return ""
	}
	if f.ref.label != "" {
		return f.ref.label
	}
	return "reference " + formatValue(f.ref.y) + f.valueSuffix()
}

// seriesName returns the display name of series i.
func (f *Figure) seriesName(i int) string {
	if n := strings.TrimSpace(f.series[i].Name); n != "" {
		return f.series[i].Name
	}
	return fmt.Sprintf("series %d", i+1)
}

func (f *Figure) pointName(i int) string {
	if n := strings.TrimSpace(f.points[i].Name); n != "" {
		return f.points[i].Name
	}
	return fmt.Sprintf("point %d", i+1)
}

// errorf returns an error naming the figure and wrapping ErrInvalid.
func (f *Figure) errorf(format string, args ...any) error {
	return fmt.Errorf("plot %s: %w: %s", f.name(), ErrInvalid, fmt.Sprintf(format, args...))
}

func (f *Figure) name() string {
	if f == nil {
		return "<nil>"
	}
	if strings.TrimSpace(f.Title) == "" {
		return "(untitled " + f.kind.String() + ")"
	}
	return fmt.Sprintf("%q", f.Title)
}

func positiveFinite(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// describe names a bad number: "NaN", "+Inf", "0", "-3".
func describe(v float64) string { return formatValue(v) }

// validate reports the first problem with the figure's data or options.
func (f *Figure) validate() error {
	if f == nil {
		return fmt.Errorf("plot: %w: nil *Figure (build it with Bars, Lines or Roofline)", ErrInvalid)
	}
	if f.ref != nil && !finite(f.ref.y) {
		return f.errorf("reference line value is %s", describe(f.ref.y))
	}
	switch f.kind {
	case kindBars:
		return f.validateBars()
	case kindLines:
		return f.validateLines()
	case kindRoofline:
		return f.validateRoofline()
	}
	return f.errorf("empty Figure (build it with Bars, Lines or Roofline)")
}

func (f *Figure) validateBars() error {
	if len(f.labels) == 0 && len(f.values) == 0 {
		return f.errorf("no bars: labels and values are empty")
	}
	if len(f.labels) != len(f.values) {
		return f.errorf("%d labels but %d values", len(f.labels), len(f.values))
	}
	if f.logX {
		return f.errorf("a logarithmic x axis is not supported for bar charts")
	}
	if f.logY && f.yAtLeast > 0 {
		return f.errorf("WithYAtLeast is for a linear y axis")
	}
	if len(f.yNames) > 0 {
		return f.errorf("WithYNames is for line charts")
	}
	for i, v := range f.values {
		if !finite(v) {
			return f.errorf("value of bar %q (index %d) is %s", f.labels[i], i, describe(v))
		}
		if f.logY && v <= 0 {
			return f.errorf("value of bar %q (index %d) is %s: a logarithmic y axis needs positive values", f.labels[i], i, formatValue(v))
		}
	}
	return nil
}

func (f *Figure) validateLines() error {
	if len(f.series) == 0 {
		return f.errorf("no series")
	}
	if len(f.yNames) > 0 && f.logY {
		return f.errorf("named y values need a linear y axis")
	}
	for i, s := range f.series {
		name := f.seriesName(i)
		if len(s.X) != len(s.Y) {
			return f.errorf("series %q: X has %d points but Y has %d", name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			return f.errorf("series %q has no points", name)
		}
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if !finite(x) {
				return f.errorf("series %q: X[%d] is %s", name, j, describe(x))
			}
			if !finite(y) {
				return f.errorf("series %q: Y[%d] is %s", name, j, describe(y))
			}
			if f.logX && x <= 0 {
				return f.errorf("series %q: X[%d] = %s is not positive, but the x axis is logarithmic", name, j, describe(x))
			}
			if f.logY && y <= 0 {
				return f.errorf("series %q: Y[%d] = %s is not positive, but the y axis is logarithmic", name, j, describe(y))
			}
		}
	}
	return nil
}

func (f *Figure) validateRoofline() error {
	if !positiveFinite(f.peakGFLOPS) {
		return f.errorf("peak compute must be a positive, finite GFLOP/s, got %s", describe(f.peakGFLOPS))
	}
	if !positiveFinite(f.peakGBps) {
		return f.errorf("peak bandwidth must be a positive, finite GB/s, got %s", describe(f.peakGBps))
	}
	for i, p := range f.points {
		name := f.pointName(i)
		if !positiveFinite(p.Intensity) {
			return f.errorf("point %q: intensity %s FLOP/byte must be positive and finite (log axes)", name, describe(p.Intensity))
		}
		if !positiveFinite(p.GFLOPS) {
			return f.errorf("point %q: %s GFLOP/s must be positive and finite (log axes)", name, describe(p.GFLOPS))
		}
	}
	return nil
}

// Save writes the figure to path, as a PNG of the default size (.png) or a
// standalone HTML page (.html), chosen by the extension (case-insensitive).
// The content is rendered first, then written to a temporary file in the same
// directory and renamed over path, so path never holds half-written output.
func (f *Figure) Save(path string) error {
	var (
		data []byte
		err  error
	)
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png":
		data, err = f.PNG(0, 0)
	case ".html":
		data, err = f.HTML()
	default:
		if err := f.validate(); err != nil {
			return err
		}
		return fmt.Errorf("plot %s: cannot save %q: unsupported extension %q (use .png or .html)", f.name(), path, ext)
	}
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, data); err != nil {
		return fmt.Errorf("plot %s: %w", f.name(), err)
	}
	return nil
}

// Environment variables read by Show.
const (
	// EnvPlotDir is the directory Show writes to outside a notebook (default "plots").
	EnvPlotDir = "GPULAB_PLOT_DIR"
	// EnvPlotHTML set to "0" makes Show display only the PNG in a notebook,
	// without the interactive chart.
	EnvPlotHTML = "GPULAB_PLOT_HTML"
)

// Hooks for tests; in production they are gonbui's.
var (
	inNotebook  = func() bool { return gonbui.IsNotebook }
	displayData = func(d *protocol.DisplayData) { gonbui.SendData(d) }
	displayErr  = gonbui.Error
)

// Show displays the figure inline when running under GoNB, as one output
// with two representations: the interactive chart (HTML) and the PNG. A
// front end shows the richest it may: the chart in a trusted live notebook,
// the PNG on GitHub, in nbconvert, and where the notebook is not trusted.
// With GPULAB_PLOT_HTML=0 the output holds only the PNG. Show then returns
// no paths.
//
// Outside a notebook it saves <dir>/<slug-of-title>.png and .html, where dir
// is $GPULAB_PLOT_DIR or "plots" (created if missing), and returns the paths
// written.
func (f *Figure) Show() ([]string, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if inNotebook() {
		png, err := f.PNG(0, 0)
		if err != nil {
			return nil, err
		}
		data := map[protocol.MIMEType]any{
			protocol.MIMEImagePNG:  png,
			protocol.MIMETextPlain: "chart: " + f.pageTitle(),
		}
		if os.Getenv(EnvPlotHTML) != "0" {
			frag, err := f.notebookHTML()
			if err != nil {
				return nil, err
			}
			data[protocol.MIMETextHTML] = frag
		}
		displayData(&protocol.DisplayData{Data: data})
		// Wait until GoNB has taken the chart: it stops reading a cell's
		// display pipe when the program exits, and would drop it.
		gonbui.Sync()
		if err := displayErr(); err != nil {
			return nil, fmt.Errorf("plot %s: displaying in the notebook: %w", f.name(), err)
		}
		return nil, nil
	}
	dir := os.Getenv(EnvPlotDir)
	if dir == "" {
		dir = "plots"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plot %s: %w", f.name(), err)
	}
	base := filepath.Join(dir, Slug(f.Title))
	var written []string
	for _, p := range []string{base + ".png", base + ".html"} {
		if err := f.Save(p); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

// Slug turns a title into a file name stem: lower-case ASCII letters and
// digits separated by single dashes, at most 80 bytes; "figure" if nothing is
// left. "SGEMM 4096³: speedup (x)" -> "sgemm-4096-speedup-x".
func Slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= 80 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "figure"
	}
	return s
}

// wrapTitle breaks a title at spaces into lines of at most maxRunes runes
// (a longer word gets a line of its own), so that a long title wraps
// instead of running off the chart.
func wrapTitle(title string, maxRunes int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(title) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= maxRunes:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}
