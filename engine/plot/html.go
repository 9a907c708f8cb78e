package plot

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"
)

// EchartsVersion is the version of the echarts library inlined in every HTML
// page (the one go-echarts v2.6.7 targets).
const EchartsVersion = "5.4.3"

//go:embed assets/echarts.min.js
var echartsJS string

// EchartsLibrary returns the echarts library (EchartsVersion, minified) that
// standalone pages inline and that make lab serves to notebook charts.
func EchartsLibrary() []byte { return []byte(echartsJS) }

// chartHeightPx is the height of the interactive chart; its width follows the page.
const chartHeightPx = 500

// HTML renders the figure as a complete standalone HTML page with the echarts
// library inlined (no network access needed to view it): hover tooltips,
// legend toggles and a save-as-image button.
func (f *Figure) HTML() (out []byte, err error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("plot %s: rendering HTML failed: %v", f.name(), r)
		}
	}()
	chart, err := f.renderer()
	if err != nil {
		return nil, err
	}
	snip := chart.RenderSnippet()
	meta, err := json.Marshal(f.jsMeta())
	if err != nil {
		return nil, fmt.Errorf("plot %s: %w", f.name(), err)
	}

	var b strings.Builder
	b.Grow(len(echartsJS) + 16<<10)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(f.pageTitle()))
	b.WriteString("<style>\nhtml,body{margin:0;padding:0;background:#fff;}\n" +
		".container{display:flex;justify-content:center;align-items:center;padding:8px 0;}\n" +
		".item{margin:auto;max-width:1200px;}\n</style>\n")
	fmt.Fprintf(&b, "<script type=\"text/javascript\">\n/* Apache ECharts %s, inlined by gpulab/engine/plot for offline viewing. */\n", EchartsVersion)
	b.WriteString(echartsJS)
	b.WriteString("\n</script>\n<script type=\"text/javascript\">\n")
	b.WriteString("var gpulab = {meta: ")
	b.Write(meta)
	b.WriteString(",\n" + jsHelpers + "};\n</script>\n</head>\n<body>\n")
	b.WriteString(snip.Element)
	b.WriteString("\n<script type=\"text/javascript\">")
	b.WriteString(scriptSafe(scriptBody(snip.Script)))
	b.WriteString("</script>")
	fmt.Fprintf(&b, "\n<script type=\"text/javascript\">window.addEventListener('resize', function () { goecharts_%s.resize(); });</script>\n", f.chartID())
	b.WriteString("</body>\n</html>\n")
	return []byte(b.String()), nil
}

// EchartsURL is where the notebook chart loads echarts from, relative to the
// Jupyter server's base URL: make lab's server serves its custom/ folder
// there (scripts/jupyter/custom), with this file copied from assets/.
const EchartsURL = "custom/gpulab-echarts.min.js"

// notebookHTML is the interactive chart for a live notebook: a div, and a
// script that loads echarts once per page and draws the chart into it.
//
// Where the script does not run (a notebook that is not trusted, a viewer
// without the lab's server), the div keeps a short note; the same output
// carries the PNG, which every other front end shows instead, and which
// make lab's custom.js puts in the note's place. Each call gets a new DOM id,
// so that the same figure shown twice on one page draws twice.
func (f *Figure) notebookHTML() (string, error) {
	id := fmt.Sprintf("%s_%x", f.chartID(), notebookChartSeq.Add(1)+uint64(time.Now().UnixNano()))
	g := *f
	g.id = id
	chart, err := g.renderer()
	if err != nil {
		return "", err
	}
	meta, err := json.Marshal(g.jsMeta())
	if err != nil {
		return "", fmt.Errorf("plot %s: %w", f.name(), err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<div class=\"gpulab-chart\" id=\"%s\" aria-label=\"%s\" style=\"width:100%%;min-height:2em;\">"+
		"<em>Interactive chart: it draws where the notebook is trusted and echarts is served (make lab). "+
		"The PNG of the same output is shown elsewhere.</em></div>\n", id, html.EscapeString(g.pageTitle()))
	b.WriteString("<script type=\"text/javascript\">\n(function () {\n")
	fmt.Fprintf(&b, "var el = document.getElementById('%s');\nif (!el) { return; }\n", id)
	fmt.Fprintf(&b, "function draw(echarts) {\nvar gpulab = {meta: %s,\n%s};\n", scriptSafe(string(meta)), jsHelpers)
	fmt.Fprintf(&b, "el.textContent = '';\nel.style.height = '%dpx';\n", chartHeightPx)
	b.WriteString(scriptSafe(scriptBody(chart.RenderSnippet().Script)))
	fmt.Fprintf(&b, "\nwindow.addEventListener('resize', function () { goecharts_%s.resize(); });\n}\n", id)
	fmt.Fprintf(&b, loadEcharts, EchartsURL)
	b.WriteString("window.gpulabEcharts.then(draw, function () {});\n})();\n</script>\n")
	return b.String(), nil
}

// notebookChartSeq makes notebook chart ids unique within one process;
// the clock makes them unique across the cells of a page.
var notebookChartSeq atomic.Uint64

// loadEcharts sets window.gpulabEcharts to a promise of the echarts module,
// loading it once per page from the Jupyter server (%s: EchartsURL): through
// RequireJS in the classic notebook, whose define() would otherwise capture
// echarts' UMD module, and through a script element elsewhere. The base URL
// is the classic notebook's data-base-url, or JupyterLab's page config.
const loadEcharts = `if (!window.gpulabEcharts) {
  window.gpulabEcharts = new Promise(function (resolve, reject) {
    if (window.echarts) { resolve(window.echarts); return; }
    var base = document.body.getAttribute('data-base-url');
    var cfg = document.getElementById('jupyter-config-data');
    if (!base && cfg) { try { base = JSON.parse(cfg.textContent).baseUrl; } catch (e) {} }
    var url = (base || '/').replace(/\/?$/, '/') + '%s';
    if (typeof window.requirejs === 'function') {
      window.requirejs.config({paths: {'gpulab-echarts': url.replace(/\.js$/, '')}});
      window.requirejs(['gpulab-echarts'], function (e) { window.echarts = e; resolve(e); }, reject);
      return;
    }
    var s = document.createElement('script');
    s.src = url;
    s.onload = function () { window.echarts ? resolve(window.echarts) : reject(new Error('no echarts')); };
    s.onerror = reject;
    document.head.appendChild(s);
  });
}
`

// renderer builds the figure's echarts chart.
func (f *Figure) renderer() (render.Renderer, error) {
	switch f.kind {
	case kindBars:
		return f.echartsBars(), nil
	case kindLines:
		return f.echartsLines(), nil
	case kindRoofline:
		return f.echartsRoofline(), nil
	}
	return nil, f.errorf("unknown figure kind")
}

func (f *Figure) pageTitle() string {
	if strings.TrimSpace(f.Title) == "" {
		return "gpulab " + f.kind.String()
	}
	return f.Title
}

// chartID is the DOM id of the chart, also part of a JS variable name
// (goecharts_<id>), so only [a-z0-9_].
func (f *Figure) chartID() string {
	if f.id != "" {
		return f.id
	}
	return "gpulab_" + strings.ReplaceAll(Slug(f.Title), "-", "_")
}

// scriptBody returns the code inside go-echarts' <script ...>...</script> snippet.
func scriptBody(s string) string {
	if i := strings.Index(s, "<script"); i >= 0 {
		if j := strings.Index(s[i:], ">"); j >= 0 {
			s = s[i+j+1:]
		}
	}
	if k := strings.LastIndex(s, "</script>"); k >= 0 {
		s = s[:k]
	}
	return s
}

// scriptSafe keeps text inside a <script> element from ending it early: the
// generated option JSON holds user strings (titles, labels) verbatim, and in
// JS string literals "<\/" means "</".
func scriptSafe(s string) string {
	s = strings.ReplaceAll(s, "</", `<\/`)
	return strings.ReplaceAll(s, "<!--", `<\!--`)
}

// jsHelpers are the tooltip helpers the generated formatter functions call.
// (Formatter functions cannot hold string literals with user text: go-echarts
// emits them through a JSON string, so values come from gpulab.meta.)
const jsHelpers = `fmt: function (v) {
  if (typeof v !== 'number' || !isFinite(v)) { return String(v); }
  var a = Math.abs(v);
  if (a === 0) { return '0'; }
  if (a >= 1e7 || a < 1e-4) { return v.toExponential(2); }
  var d = Math.max(0, 2 - Math.floor(Math.log10(a)));
  var s = v.toFixed(d);
  if (s.indexOf('.') >= 0) { s = s.replace(/0+$/, '').replace(/\.$/, ''); }
  return s;
},
esc: function (s) { return echarts.format.encodeHTML(String(s)); },
tick: function (v) {
  var a = Math.abs(v);
  if (a === 0) { return '0'; }
  if (a < 1e-3) { return v.toExponential(0).replace('+', ''); }
  if (a < 1e4) { return String(+v.toPrecision(6)); }
  var u = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (var i = 0; i < u.length; i++) { if (a >= u[i][0]) { return String(+(v / u[i][0]).toFixed(2)) + u[i][1]; } }
  return String(v);
},
pct: function (f) { var p = f * 100; return (p >= 10 ? p.toFixed(0) : p >= 1 ? p.toFixed(1) : p.toPrecision(2)) + '%'; }`

// jsMeta is data for the tooltip formatters.
func (f *Figure) jsMeta() map[string]any {
	m := map[string]any{
		"x":      f.xLabel,
		"y":      f.yLabel,
		"suffix": f.valueSuffix(),
	}
	if f.kind == kindRoofline {
		m["peak"] = f.peakGFLOPS
		m["bw"] = f.peakGBps
	}
	return m
}

// Tooltip formatters (no double quotes or backslashes: see jsHelpers).
const (
	barTooltip = `function (p) { var q = Array.isArray(p) ? p[0] : p;
  return gpulab.esc(q.name) + ': <b>' + gpulab.fmt(q.value) + gpulab.esc(gpulab.meta.suffix) + '</b>'; }`
	xyTooltip = `function (p) { var v = p.value;
  if (!Array.isArray(v)) { return gpulab.esc(p.name) + ': ' + gpulab.fmt(v) + gpulab.esc(gpulab.meta.suffix); }
  return '<b>' + gpulab.esc(p.seriesName) + '</b><br>' + gpulab.esc(gpulab.meta.x || 'x') + ': ' + gpulab.fmt(v[0]) +
    '<br>' + gpulab.esc(gpulab.meta.y || 'y') + ': ' + gpulab.fmt(v[1]) + gpulab.esc(gpulab.meta.suffix); }`
	roofTooltip = `function (p) { var v = p.value, m = gpulab.meta;
  if (!Array.isArray(v)) { return gpulab.esc(p.name) + ': ' + gpulab.fmt(v) + ' GFLOP/s'; }
  if (p.seriesName === 'roofline') { return 'roofline: min(' + gpulab.fmt(m.peak) + ' GFLOP/s, ' + gpulab.fmt(m.bw) + ' GB/s × AI)'; }
  var att = Math.min(m.peak, m.bw * v[0]);
  var s = '<b>' + gpulab.esc(p.seriesName) + '</b><br>AI: ' + gpulab.fmt(v[0]) + ' FLOP/B<br>' + gpulab.fmt(v[1]) + ' GFLOP/s';
  if (p.seriesName !== 'ridge point') { s += '<br>' + (v[1] > att ? '‡ effective: above the roof, so caches served part of the bytes counted' : gpulab.pct(v[1] / att) + ' of the roof (' + gpulab.fmt(att) + ' GFLOP/s, ' + (v[0] < m.peak / m.bw ? 'memory' : 'compute') + '-bound)'); }
  return s; }`
)

// htmlTitleRunes is the longest title line of the interactive chart; a
// longer title wraps at spaces.
const htmlTitleRunes = 90

func (f *Figure) commonOpts(legend bool) []charts.GlobalOpts {
	title := wrapTitle(f.Title, htmlTitleRunes)
	extra := 22 * (len(title) - 1) // px of each title line after the first
	top := strconv.Itoa(60 + extra)
	if !legend {
		top = strconv.Itoa(50 + extra)
	}
	left := "3%"
	if f.yLabel != "" {
		left = "45" // room for the y axis name, centred left of the tick labels
	}
	return []charts.GlobalOpts{
		charts.WithInitializationOpts(opts.Initialization{
			PageTitle: f.pageTitle(),
			Width:     "100%",
			Height:    fmt.Sprintf("%dpx", chartHeightPx),
			ChartID:   f.chartID(),
		}),
		charts.WithTitleOpts(opts.Title{Title: strings.Join(title, "\n"), Left: "center", Top: "6",
			TitleStyle: &opts.TextStyle{FontSize: 17, Color: "#222"}}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(legend), Top: strconv.Itoa(32 + extra), Type: "scroll"}),
		charts.WithColorsOpts(opts.Colors(palette)),
		charts.WithGridOpts(opts.Grid{Left: left, Right: "5%", Top: top, Bottom: "60", ContainLabel: opts.Bool(true)}),
		charts.WithToolboxOpts(opts.Toolbox{Show: opts.Bool(true), Right: "2%", Top: "4",
			Feature: &opts.ToolBoxFeature{
				SaveAsImage: &opts.ToolBoxFeatureSaveAsImage{Show: opts.Bool(true), Type: "png", Name: Slug(f.Title), Title: "save PNG"},
				Restore:     &opts.ToolBoxFeatureRestore{Show: opts.Bool(true), Title: "restore"},
			}}),
	}
}

// tickLabels formats value-axis labels like the PNG's (10k, 2.5M) and, on a
// log axis whose ends are not powers of ten, hides the end labels (echarts
// would print them, e.g. "0.02", among the decades).
func tickLabels(log bool, lo, hi float64) *opts.AxisLabel {
	l := &opts.AxisLabel{FontSize: 12, Formatter: opts.FuncOpts(`function (v) { return gpulab.tick(v); }`)}
	if log {
		l.ShowMinLabel = opts.Bool(isDecade(lo))
		l.ShowMaxLabel = opts.Bool(isDecade(hi))
	}
	return l
}

func isDecade(v float64) bool {
	e := math.Round(math.Log10(v))
	return math.Abs(v-math.Pow(10, e)) <= 1e-9*v
}

func splitLine() *opts.SplitLine {
	return &opts.SplitLine{Show: opts.Bool(true), LineStyle: &opts.LineStyle{Color: "#e6e6e6"}}
}

func (f *Figure) markRef() charts.SeriesOpts {
	return func(s *charts.SingleSeries) {
		if f.ref == nil {
			return
		}
		s.MarkLines = &opts.MarkLines{
			Data: []interface{}{opts.MarkLineNameYAxisItem{Name: f.refLabel(), YAxis: f.ref.y}},
			MarkLineStyle: opts.MarkLineStyle{
				Symbol:    []string{"none", "none"},
				LineStyle: &opts.LineStyle{Color: "#555", Type: "dashed", Width: 1.5},
				Label:     &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "insideEndTop", Color: "#444"},
			},
		}
	}
}

func (f *Figure) echartsBars() render.Renderer {
	bar := charts.NewBar()
	g := f.commonOpts(false)
	rotate := 0.0
	maxLen := 0
	for _, l := range f.labels {
		maxLen = max(maxLen, len([]rune(l)))
	}
	if len(f.labels) > 8 || maxLen*len(f.labels) > 90 {
		rotate = 30
	}
	yAxis := opts.YAxis{Type: axisType(f.logY), Name: f.yLabel, NameLocation: "middle", NameGap: 50,
		SplitLine: splitLine(), AxisLabel: tickLabels(false, 0, 0)}
	if f.logY || f.yAtLeast > 0 { // the PNG's range: the lowest bar shows, a demanded top is reached
		lo, hi := f.barsRange()
		yAxis.Min, yAxis.Max = lo, hi
		if f.logY {
			yAxis.AxisLabel = tickLabels(true, lo, hi)
		}
	}
	g = append(g,
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis",
			AxisPointer: &opts.AxisPointer{Type: "shadow"}, Formatter: opts.FuncOpts(barTooltip)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category",
			AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: rotate, FontSize: 12}}),
		charts.WithYAxisOpts(yAxis),
	)
	bar.SetGlobalOptions(g...)
	suffix := f.valueSuffix()
	data := make([]opts.BarData, len(f.values))
	for i, v := range f.values {
		data[i] = opts.BarData{
			Name:      f.labels[i],
			Value:     v,
			ItemStyle: &opts.ItemStyle{Color: palette[i%len(palette)]},
			Label: &opts.Label{Show: opts.Bool(true), Position: "top", FontWeight: "bold",
				Formatter: strings.NewReplacer("{", "(", "}", ")").Replace(formatValue(v) + suffix)},
		}
	}
	name := f.yLabel
	if name == "" {
		name = "value"
	}
	bar.SetXAxis(f.labels).AddSeries(name, data,
		charts.WithBarChartOpts(opts.BarChart{BarCategoryGap: "30%"}), f.markRef())
	return bar
}

func axisType(log bool) string {
	if log {
		return "log"
	}
	return "value"
}

func (f *Figure) echartsLines() render.Renderer {
	line := charts.NewLine()
	g := f.commonOpts(true)
	xAxis := opts.XAxis{Type: axisType(f.logX), Name: f.xLabel, NameLocation: "middle", NameGap: 30,
		Scale: opts.Bool(!f.logX), SplitLine: splitLine(), AxisLabel: tickLabels(false, 0, 0)}
	yAxis := opts.YAxis{Type: axisType(f.logY), Name: f.yLabel, NameLocation: "middle", NameGap: 50,
		SplitLine: splitLine(), AxisLabel: tickLabels(false, 0, 0)}
	if f.logX {
		lo, hi := f.seriesExtent(true)
		lo, hi = niceLogFloor(lo), niceLogCeil(hi)
		xAxis.Min, xAxis.Max, xAxis.AxisLabel = lo, hi, tickLabels(true, lo, hi)
	}
	if f.logY {
		lo, hi := f.seriesExtent(false)
		lo, hi = niceLogFloor(lo), niceLogCeil(hi)
		yAxis.Min, yAxis.Max, yAxis.AxisLabel = lo, hi, tickLabels(true, lo, hi)
	}
	if n := len(f.yNames); n > 0 { // named values, as in the PNG
		lo, hi := f.seriesExtent(false)
		names := jsStrings(f.yNames)
		widest := 0
		for _, name := range f.yNames {
			widest = max(widest, utf8.RuneCountInString(name))
		}
		yAxis.Min, yAxis.Max, yAxis.MinInterval, yAxis.MaxInterval, yAxis.NameGap = math.Min(-0.5, lo), math.Max(float64(n)-0.5, hi), 1, 1, 7*widest+15
		yAxis.AxisLabel = &opts.AxisLabel{FontSize: 12, ShowMinLabel: opts.Bool(false), ShowMaxLabel: opts.Bool(false),
			Formatter: opts.FuncOpts(fmt.Sprintf(`function (v) { var n = %s; return v >= 0 && v < n.length && v === Math.round(v) ? n[v] : ''; }`, names))}
	}
	g = append(g,
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item", Formatter: opts.FuncOpts(xyTooltip)}),
		charts.WithXAxisOpts(xAxis), charts.WithYAxisOpts(yAxis))
	line.SetGlobalOptions(g...)
	symbols := []string{"circle", "rect", "triangle", "diamond", "roundRect", "pin", "arrow"}
	for i, s := range f.series {
		data := make([]opts.LineData, len(s.X))
		for j := range s.X {
			data[j] = opts.LineData{Value: []float64{s.X[j], s.Y[j]}}
		}
		so := []charts.SeriesOpts{
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: symbols[i%len(symbols)], SymbolSize: 7}),
			charts.WithLineStyleOpts(opts.LineStyle{Width: 2.5}),
		}
		if f.scatter {
			so = []charts.SeriesOpts{
				charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 4}),
				charts.WithLineStyleOpts(opts.LineStyle{Width: 0, Opacity: opts.Float(0)}),
			}
		}
		if i == 0 {
			so = append(so, f.markRef())
		}
		line.AddSeries(f.seriesName(i), data, so...)
	}
	return line
}

// jsStrings writes ss as a JavaScript array expression with no double
// quote, backslash, <, > or & in it (go-echarts escapes those inside a
// function it embeds): each string percent-encoded, all but letters and
// digits, in single quotes, decoded by decodeURIComponent.
func jsStrings(ss []string) string {
	var b strings.Builder
	b.WriteString("[")
	for i, s := range ss {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("decodeURIComponent('")
		for _, c := range []byte(s) {
			if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		b.WriteString("')")
	}
	return b.String() + "]"
}

// seriesExtent returns the smallest and largest x (or y) over all series.
func (f *Figure) seriesExtent(x bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range f.series {
		vs := s.Y
		if x {
			vs = s.X
		}
		for _, v := range vs {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if !x && f.ref != nil && f.ref.y > 0 {
		lo, hi = math.Min(lo, f.ref.y), math.Max(hi, f.ref.y)
	}
	return lo, hi
}

// niceLogFloor/niceLogCeil round to 1, 2 or 5 times a power of ten, so log
// axes start and end on round numbers.
func niceLogFloor(v float64) float64 {
	d := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*d <= v*(1+1e-12) {
			return m * d
		}
	}
	return d
}

func niceLogCeil(v float64) float64 {
	d := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*d >= v*(1-1e-12) {
			return m * d
		}
	}
	return 10 * d
}

func (f *Figure) echartsRoofline() render.Renderer {
	line := charts.NewLine()
	xlo, xhi, ylo, yhi := f.rooflineRanges()
	xa, xb := niceLogFloor(xlo), niceLogCeil(xhi)
	ya, yb := niceLogFloor(ylo), niceLogCeil(yhi)
	g := f.commonOpts(true)
	g = append(g,
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item", Formatter: opts.FuncOpts(roofTooltip)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: f.xLabel, NameLocation: "middle", NameGap: 30,
			Min: xa, Max: xb, SplitLine: splitLine(), AxisLabel: tickLabels(true, xa, xb)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: f.yLabel, NameLocation: "middle", NameGap: 50,
			Min: ya, Max: yb, SplitLine: splitLine(), AxisLabel: tickLabels(true, ya, yb)}),
	)
	line.SetGlobalOptions(g...)
	ridge := f.peakGFLOPS / f.peakGBps
	x0 := math.Max(xa, ya/f.peakGBps) // where the memory roof enters the plot
	roof := []opts.LineData{
		{Value: []float64{x0, f.peakGBps * x0}},
		{Value: []float64{ridge, f.peakGFLOPS}},
		{Value: []float64{xb, f.peakGFLOPS}},
	}
	line.AddSeries("roofline", roof,
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
		charts.WithLineStyleOpts(opts.LineStyle{Width: 3, Color: "#263238"}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: "#263238"}),
		charts.WithAreaStyleOpts(opts.AreaStyle{Color: "#eaf1fb", Origin: "start", Opacity: opts.Float(0.8)}),
		f.markRef(),
	)
	sc := charts.NewScatter()
	sc.AddSeries("ridge point", []opts.ScatterData{{Value: []float64{ridge, f.peakGFLOPS}, Symbol: "diamond", SymbolSize: 13}},
		charts.WithItemStyleOpts(opts.ItemStyle{Color: "#c62828"}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "bottom", Color: "#c62828", FontWeight: "bold",
			Formatter: "ridge: " + formatValue(ridge) + " FLOP/B"}),
	)
	for i, pt := range f.points {
		sc.AddSeries(f.pointName(i), []opts.ScatterData{{Value: []float64{pt.Intensity, pt.GFLOPS}, SymbolSize: 12}},
			charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[i%len(palette)], BorderColor: "#222", BorderWidth: 0.6}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "right", Formatter: "{a}", Color: "#222"}),
		)
	}
	line.Overlap(sc)
	// Keep the shaded roof area under the points (go-echarts has no series z).
	line.AddJSFuncs(`%MY_ECHARTS%.setOption({series: [{z: 1}]});`)
	return line
}
