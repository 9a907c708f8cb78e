package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"

	xfont "golang.org/x/image/font"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Palette is the colour cycle of bars, lines and roofline points (the
// "tab10" palette: distinct, and readable by most colour-blind viewers).
var palette = []string{
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
}

var (
	sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	boldFont = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}

	textColor  = hexColor("#222222")
	tickColor  = hexColor("#444444")
	axisColor  = hexColor("#666666")
	majorGrid  = hexColor("#dedede")
	minorGrid  = hexColor("#f0f0f0")
	refColor   = hexColor("#555555")
	roofColor  = hexColor("#263238")
	roofFill   = hexColor("#eaf1fb")
	ridgeColor = hexColor("#c62828")
)

func hexColor(s string) color.RGBA {
	var r, g, b uint8
	if _, err := fmt.Sscanf(strings.TrimPrefix(s, "#"), "%02x%02x%02x", &r, &g, &b); err != nil {
		return color.RGBA{A: 255}
	}
	return color.RGBA{R: r, G: g, B: b, A: 255}
}

func paletteColor(i int) color.RGBA { return hexColor(palette[i%len(palette)]) }

// darker returns c scaled towards black, for outlines.
func darker(c color.RGBA, f float64) color.RGBA {
	return color.RGBA{R: uint8(float64(c.R) * f), G: uint8(float64(c.G) * f), B: uint8(float64(c.B) * f), A: c.A}
}

// PNG renders the figure as a PNG image of exactly widthPx × heightPx pixels
// (DefaultWidth × DefaultHeight when either is 0). The layout is designed at
// 800×480 and scaled with the image, so larger sizes give sharper, not
// smaller, text.
func (f *Figure) PNG(widthPx, heightPx int) (out []byte, err error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if widthPx == 0 || heightPx == 0 {
		widthPx, heightPx = DefaultWidth, DefaultHeight
	}
	if widthPx < minWidth || heightPx < minHeight || widthPx > maxSide || heightPx > maxSide {
		return nil, fmt.Errorf("plot %s: PNG size %dx%d outside %dx%d .. %dx%d pixels",
			f.name(), widthPx, heightPx, minWidth, minHeight, maxSide, maxSide)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("plot %s: rendering PNG failed: %v", f.name(), r)
		}
	}()

	scale := math.Min(float64(widthPx)/DefaultWidth, float64(heightPx)/DefaultHeight)
	dpi := int(math.Round(96 * scale))
	if dpi < 24 {
		dpi = 24
	}
	img := image.NewRGBA(image.Rect(0, 0, widthPx, heightPx))
	cnv := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
	wPt, _ := cnv.Size()

	p, padLeft, leg, err := f.buildPlot(wPt)
	if err != nil {
		return nil, err
	}
	// A margin around the whole chart so nothing touches the image border.
	dc := draw.Crop(draw.New(cnv), 8+padLeft, -14, 6, -8)
	if leg != nil {
		p.Add(leg)
	}
	drawWithAxisLabels(p, dc)
	if leg != nil && leg.coversData {
		// No corner of the data area is free: draw again, with the legend
		// right of the plot.
		img = image.NewRGBA(image.Rect(0, 0, widthPx, heightPx))
		cnv = vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
		if p, padLeft, leg, err = f.buildPlot(wPt); err != nil {
			return nil, err
		}
		dc = draw.Crop(draw.New(cnv), 8+padLeft, -14, 6, -8)
		w, h := leg.size()
		inner := draw.Crop(dc, 0, -(w + 8), 0, 0)
		drawWithAxisLabels(p, inner)
		top := p.DataCanvas(inner).Max.Y
		leg.drawAt(dc, vg.Point{X: dc.Max.X - w, Y: max(top-h, dc.Min.Y)})
	}

	var buf bytes.Buffer
	if err := png.Encode(&buf, cnv.Image()); err != nil {
		return nil, fmt.Errorf("plot %s: encoding PNG: %w", f.name(), err)
	}
	return buf.Bytes(), nil
}

// drawWithAxisLabels draws p on c, placing the axis labels itself: gonum
// reserves room for a centred label at the arithmetic mean of the axis range,
// which on a logarithmic axis lies near its end and squeezes the plot.
func drawWithAxisLabels(p *gplot.Plot, c draw.Canvas) {
	xl, yl := p.X.Label.Text, p.Y.Label.Text
	xs, ys := p.X.Label.TextStyle, p.Y.Label.TextStyle
	p.X.Label.Text, p.Y.Label.Text = "", ""
	inner := c
	const gap = 6
	if yl != "" {
		inner = draw.Crop(inner, ys.Height(yl)+gap, 0, 0, 0)
	}
	if xl != "" {
		inner = draw.Crop(inner, 0, 0, xs.Height(xl)+gap, 0)
	}
	p.Draw(inner)
	da := p.DataCanvas(inner)
	if yl != "" {
		ys.Rotation = math.Pi / 2
		ys.XAlign, ys.YAlign = draw.XCenter, draw.YTop
		c.FillText(ys, vg.Point{X: c.Min.X, Y: da.Center().Y}, yl)
	}
	if xl != "" {
		xs.XAlign, xs.YAlign = draw.XCenter, draw.YBottom
		c.FillText(xs, vg.Point{X: da.Center().X, Y: c.Min.Y}, xl)
	}
	p.X.Label.Text, p.Y.Label.Text = xl, yl
}

// buildPlot assembles the gonum plot for a canvas wPt points wide. It
// also returns extra room needed left of the plot (for slanted bar labels)
// and the legend, which PNG places.
func (f *Figure) buildPlot(wPt vg.Length) (p *gplot.Plot, padLeft vg.Length, leg *legendBox, err error) {
	p = f.newPlot()
	lay := &layout{}
	switch f.kind {
	case kindBars:
		padLeft = f.buildBars(p, lay, wPt)
	case kindLines:
		f.buildLines(p, lay)
	case kindRoofline:
		f.buildRoofline(p, lay)
	default:
		return nil, 0, nil, f.errorf("unknown figure kind")
	}
	for _, ax := range []struct {
		name   string
		lo, hi float64
		log    bool
	}{{"x", p.X.Min, p.X.Max, f.isLogX()}, {"y", p.Y.Min, p.Y.Max, f.isLogY()}} {
		ok := finite(ax.lo) && finite(ax.hi) && ax.hi > ax.lo && finite(ax.hi-ax.lo)
		if ax.log {
			ok = ok && ax.lo > 0 && finite(ax.hi/ax.lo)
		}
		if !ok {
			return nil, 0, nil, f.errorf("the %s axis range [%s, %s] cannot be drawn (values too large or too small)",
				ax.name, formatValue(ax.lo), formatValue(ax.hi))
		}
	}
	return p, padLeft, lay.legend, nil
}

func (f *Figure) newPlot() *gplot.Plot {
	p := gplot.New()
	p.Title.Text = f.Title
	p.Title.TextStyle.Font = font.From(boldFont, 14)
	p.Title.TextStyle.Color = textColor
	p.Title.Padding = 10
	for _, ax := range []*gplot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sansFont, 11.5)
		ax.Label.TextStyle.Color = textColor
		ax.Label.Padding = 3
		ax.Tick.Label.Font = font.From(sansFont, 10)
		ax.Tick.Label.Color = tickColor
		ax.LineStyle = draw.LineStyle{Color: axisColor, Width: 0.8}
		ax.Tick.LineStyle = draw.LineStyle{Color: axisColor, Width: 0.8}
		ax.Tick.Length = 4
		ax.Padding = 0
	}
	p.X.Label.Text = f.xLabel
	p.Y.Label.Text = f.yLabel
	p.X.Tick.Marker = linearTicks{}
	p.Y.Tick.Marker = linearTicks{}
	if f.isLogX() {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if f.isLogY() {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	return p
}

func (f *Figure) textStyle(p *gplot.Plot, size vg.Length, bold bool, c color.Color) text.Style {
	fnt := sansFont
	if bold {
		fnt = boldFont
	}
	return text.Style{Color: c, Font: font.From(fnt, size), Handler: p.TextHandler}
}

// ---- bars ----

func (f *Figure) buildBars(p *gplot.Plot, lay *layout, wPt vg.Length) (padLeft vg.Length) {
	n := len(f.values)
	lo, hi := 0.0, 0.0
	for _, v := range f.values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if f.ref != nil {
		hi = math.Max(hi, f.ref.y)
	}
	span := hi - lo
	if span == 0 {
		span = 1
	}
	// Headroom for the value labels above (and below negative) bars.
	if hi > 0 {
		hi += 0.1 * span
	}
	if lo < 0 {
		lo -= 0.1 * span
	}
	p.Y.Min, p.Y.Max = niceRange(lo, hi, 6)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5

	// Category ticks; long or crowded labels are shortened and rotated.
	ticks := make([]gplot.Tick, n)
	widths := make([]vg.Length, n)
	var maxW vg.Length
	for i, l := range f.labels {
		l = shorten(l, 28)
		ticks[i] = gplot.Tick{Value: float64(i), Label: l}
		widths[i] = p.X.Tick.Label.Width(l)
		maxW = max(maxW, widths[i])
	}
	p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	p.X.Tick.Length = 0
	const axisRoom = 60 // y axis label, tick labels and margins, roughly
	slot := (wPt - axisRoom) / vg.Length(n)
	if maxW > 0.92*slot {
		rot := math.Pi / 6
		if slot < 16 {
			rot = math.Pi / 2
		}
		p.X.Tick.Label.Rotation = rot
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YTop
		// Slanted labels hang left of their bars; the first ones may need
		// room beyond the y axis.
		for i, w := range widths {
			need := w*vg.Length(math.Cos(rot)) - (vg.Length(i)+0.5)*slot - axisRoom + 20
			padLeft = max(padLeft, need)
		}
	}

	suffix := f.valueSuffix()
	texts := make([]string, n)
	colors := make([]color.RGBA, n)
	for i, v := range f.values {
		texts[i] = formatValue(v) + suffix
		colors[i] = paletteColor(i)
	}
	p.Add(gridLines{horizontal: true})
	p.Add(&barsPlotter{values: f.values, colors: colors, texts: texts,
		style: f.textStyle(p, 10, true, textColor), lay: lay})
	f.addReference(p, lay)
	if f.ref != nil {
		leg := &legendBox{style: f.textStyle(p, 10, false, textColor), lay: lay}
		leg.entries = append(leg.entries, legendEntry{name: f.refLabel(), thumb: refThumb})
		lay.legend = leg
	}
	return min(padLeft, wPt/4)
}

// shorten cuts s to at most n runes, ending in an ellipsis when cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

type barsPlotter struct {
	values []float64
	colors []color.RGBA
	texts  []string
	style  text.Style
	lay    *layout
}

func (b *barsPlotter) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	slot := tx(1) - tx(0)
	w := slot * 0.68
	y0 := ty(0)
	sty := b.style
	// Shrink the value labels when the widest does not fit its slot.
	var maxW vg.Length
	for _, t := range b.texts {
		maxW = vg.Length(math.Max(float64(maxW), float64(sty.Width(t))))
	}
	if maxW > slot*0.98 && maxW > 0 {
		size := sty.Font.Size * slot * 0.98 / maxW
		if size < 5 {
			size = 5
		}
		sty.Font.Size = size
	}
	sty.XAlign = draw.XCenter
	for i, v := range b.values {
		xc := tx(float64(i))
		y1 := ty(v)
		r := vg.Rectangle{
			Min: vg.Point{X: xc - w/2, Y: vg.Length(math.Min(float64(y0), float64(y1)))},
			Max: vg.Point{X: xc + w/2, Y: vg.Length(math.Max(float64(y0), float64(y1)))},
		}
		c.FillPolygon(b.colors[i], c.ClipPolygonXY(rectPath(r)))
		c.StrokeLines(draw.LineStyle{Color: darker(b.colors[i], 0.75), Width: 0.6},
			c.ClipLinesXY(append(rectPath(r), r.Min))...)
		b.lay.add(r)

		at := vg.Point{X: xc, Y: y1 + 3}
		sty.YAlign = draw.YBottom
		if v < 0 {
			at.Y = y1 - 3
			sty.YAlign = draw.YTop
		}
		c.FillText(sty, at, b.texts[i])
		b.lay.add(textRect(sty, at, b.texts[i]))
	}
}

func rectPath(r vg.Rectangle) []vg.Point {
	return []vg.Point{r.Min, {X: r.Min.X, Y: r.Max.Y}, r.Max, {X: r.Max.X, Y: r.Min.Y}}
}

// textRect is the rectangle txt occupies when drawn at pt with sty.
func textRect(sty text.Style, pt vg.Point, txt string) vg.Rectangle {
	r := sty.Rectangle(txt)
	return vg.Rectangle{Min: r.Min.Add(pt), Max: r.Max.Add(pt)}
}

// ---- lines ----

var glyphShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, diamondGlyph{},
	draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

var dashPatterns = [][]vg.Length{nil, {6, 3}, {2, 2}, {8, 3, 2, 3}}

func (f *Figure) buildLines(p *gplot.Plot, lay *layout) {
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	total := 0
	for _, s := range f.series {
		for j := range s.X {
			xlo, xhi = math.Min(xlo, s.X[j]), math.Max(xhi, s.X[j])
			ylo, yhi = math.Min(ylo, s.Y[j]), math.Max(yhi, s.Y[j])
		}
		total += len(s.X)
	}
	if f.ref != nil && (!f.logY || f.ref.y > 0) {
		ylo, yhi = math.Min(ylo, f.ref.y), math.Max(yhi, f.ref.y)
	}
	if f.logX {
		p.X.Min, p.X.Max = logRange(xlo, xhi, 1.12)
	} else {
		pad := 0.03 * (xhi - xlo)
		if pad == 0 {
			pad = math.Max(math.Abs(xlo)*0.1, 1)
		}
		p.X.Min, p.X.Max = xlo-pad, xhi+pad
	}
	if f.logY {
		p.Y.Min, p.Y.Max = logRange(ylo, yhi, 1.25)
	} else {
		if ylo >= 0 {
			ylo = 0
		}
		span := yhi - ylo
		p.Y.Min, p.Y.Max = niceRange(ylo-0.02*span*b2f(ylo < 0), yhi+0.06*span, 6)
	}

	p.Add(gridLines{horizontal: true, vertical: true})
	f.addReference(p, lay)
	leg := &legendBox{style: f.textStyle(p, 10, false, textColor), lay: lay}
	for i, s := range f.series {
		lp := &linePlotter{
			xs: s.X, ys: s.Y,
			line:    draw.LineStyle{Color: paletteColor(i), Width: 2, Dashes: dashPatterns[(i/len(palette))%len(dashPatterns)]},
			glyph:   draw.GlyphStyle{Color: paletteColor(i), Radius: 3.2, Shape: glyphShapes[i%len(glyphShapes)]},
			markers: len(s.X) <= 60 || f.scatter,
			lay:     lay,
		}
		if f.scatter {
			lp.line.Width, lp.glyph.Radius = 0, 1.6
		}
		p.Add(lp)
		leg.entries = append(leg.entries, legendEntry{name: f.seriesName(i), thumb: lp.thumb})
	}
	if f.ref != nil {
		leg.entries = append(leg.entries, legendEntry{name: f.refLabel(), thumb: refThumb})
	}
	lay.legend = leg
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

type linePlotter struct {
	xs, ys  []float64
	line    draw.LineStyle
	glyph   draw.GlyphStyle
	markers bool
	lay     *layout
}

func (l *linePlotter) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	pts := make([]vg.Point, len(l.xs))
	for i := range l.xs {
		pts[i] = vg.Point{X: tx(l.xs[i]), Y: ty(l.ys[i])}
	}
	if len(pts) > 1 && l.line.Width > 0 {
		c.StrokeLines(l.line, c.ClipLinesXY(pts)...)
		l.lay.addPolyline(pts)
	}
	if l.markers || len(pts) == 1 {
		for _, pt := range pts {
			c.DrawGlyph(l.glyph, pt)
		}
	}
}

func (l *linePlotter) thumb(c draw.Canvas, r vg.Rectangle) {
	y := (r.Min.Y + r.Max.Y) / 2
	if l.line.Width > 0 {
		c.StrokeLine2(l.line, r.Min.X, y, r.Max.X, y)
	}
	c.DrawGlyphNoClip(l.glyph, vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: y})
}

// diamondGlyph is a filled diamond (a square standing on a corner).
type diamondGlyph struct{}

func (diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 1.25
	var path vg.Path
	path.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	path.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	path.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	path.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	path.Close()
	c.Fill(path)
}

// ---- shared decorations ----

// gridLines draws light grid lines at the axes' ticks (major ticks darker).
type gridLines struct{ horizontal, vertical bool }

func (g gridLines) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	major := draw.LineStyle{Color: majorGrid, Width: 0.7}
	minor := draw.LineStyle{Color: minorGrid, Width: 0.5}
	if g.vertical {
		for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			x := tx(t.Value)
			if x < c.Min.X || x > c.Max.X {
				continue
			}
			sty := minor
			if !t.IsMinor() {
				sty = major
			}
			c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
		}
	}
	if g.horizontal {
		for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			y := ty(t.Value)
			if y < c.Min.Y || y > c.Max.Y {
				continue
			}
			sty := minor
			if !t.IsMinor() {
				sty = major
			}
			c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
		}
	}
}

var refLineStyle = draw.LineStyle{Color: refColor, Width: 1.4, Dashes: []vg.Length{6, 4}}

func refThumb(c draw.Canvas, r vg.Rectangle) {
	y := (r.Min.Y + r.Max.Y) / 2
	c.StrokeLine2(refLineStyle, r.Min.X, y, r.Max.X, y)
}

func (f *Figure) addReference(p *gplot.Plot, lay *layout) {
	if f.ref == nil {
		return
	}
	p.Add(&refPlotter{y: f.ref.y, lay: lay})
}

type refPlotter struct {
	y   float64
	lay *layout
}

func (r *refPlotter) Plot(c draw.Canvas, p *gplot.Plot) {
	if r.y < p.Y.Min || r.y > p.Y.Max {
		return
	}
	_, ty := p.Transforms(&c)
	y := ty(r.y)
	c.StrokeLine2(refLineStyle, c.Min.X, y, c.Max.X, y)
	r.lay.addPolylineWeighted([]vg.Point{{X: c.Min.X, Y: y}, {X: c.Max.X, Y: y}}, 0.1)
}

// ---- legend ----

type legendEntry struct {
	name  string
	thumb func(c draw.Canvas, r vg.Rectangle)
}

// legendBox draws a framed legend in the corner of the data area that
// overlaps least with what was drawn before it (recorded in lay). When
// every corner covers something, it says so (coversData), and PNG draws
// the chart again with the legend outside the data area.
type legendBox struct {
	entries    []legendEntry
	style      text.Style
	lay        *layout
	coversData bool
}

const (
	legendPad    = vg.Length(5)
	legendThumbW = vg.Length(24)
	legendGap    = vg.Length(5)
	legendInset  = vg.Length(6)
)

// size is the legend's box.
func (l *legendBox) size() (w, h vg.Length) {
	var textW vg.Length
	for _, e := range l.entries {
		textW = max(textW, l.style.Width(e.name))
	}
	return legendPad + legendThumbW + legendGap + textW + legendPad, legendPad*2 + l.rowHeight()*vg.Length(len(l.entries))
}

func (l *legendBox) rowHeight() vg.Length { return l.style.Font.Size * 1.45 }

func (l *legendBox) Plot(c draw.Canvas, p *gplot.Plot) {
	if len(l.entries) == 0 {
		return
	}
	boxW, boxH := l.size()
	cw, ch := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	if boxW > cw-2*legendInset || boxH > ch-2*legendInset {
		l.coversData = true // no room inside: it goes outside
		return
	}
	corners := []vg.Point{
		{X: c.Max.X - legendInset - boxW, Y: c.Max.Y - legendInset - boxH}, // top right
		{X: c.Min.X + legendInset, Y: c.Max.Y - legendInset - boxH},        // top left
		{X: c.Max.X - legendInset - boxW, Y: c.Min.Y + legendInset},        // bottom right
		{X: c.Min.X + legendInset, Y: c.Min.Y + legendInset},               // bottom left
	}
	best, bestCost := 0, math.Inf(1)
	for i, m := range corners {
		r := vg.Rectangle{Min: m, Max: vg.Point{X: m.X + boxW, Y: m.Y + boxH}}
		if cost := l.lay.overlap(r); cost < bestCost-1e-9 {
			best, bestCost = i, cost
		}
	}
	l.coversData = bestCost > 0
	l.drawAt(c, corners[best])
}

// drawAt draws the legend with its lower left corner at m.
func (l *legendBox) drawAt(c draw.Canvas, m vg.Point) {
	boxW, boxH := l.size()
	box := vg.Rectangle{Min: m, Max: vg.Point{X: m.X + boxW, Y: m.Y + boxH}}
	c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 235}, rectPath(box))
	c.StrokeLines(draw.LineStyle{Color: hexColor("#bbbbbb"), Width: 0.6}, append(rectPath(box), box.Min))
	sty := l.style
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	rowH := l.rowHeight()
	for i, e := range l.entries {
		cy := box.Max.Y - legendPad - rowH*(vg.Length(i)+0.5)
		tr := vg.Rectangle{
			Min: vg.Point{X: box.Min.X + legendPad, Y: cy - rowH/2},
			Max: vg.Point{X: box.Min.X + legendPad + legendThumbW, Y: cy + rowH/2},
		}
		e.thumb(c, tr)
		c.FillText(sty, vg.Point{X: tr.Max.X + legendGap, Y: cy}, e.name)
	}
	l.lay.add(box)
}

// layout records the screen rectangles already drawn on, so that legends and
// labels can avoid them. Each has a weight: covering data costs more than
// covering a reference line.
type layout struct {
	boxes   []vg.Rectangle
	weights []float64
	legend  *legendBox // placed by PNG
}

func (l *layout) add(r vg.Rectangle) { l.addWeighted(r, 1) }

func (l *layout) addWeighted(r vg.Rectangle, w float64) {
	l.boxes = append(l.boxes, r)
	l.weights = append(l.weights, w)
}

// addPolyline records a line as a chain of small boxes every few points.
func (l *layout) addPolyline(pts []vg.Point) { l.addPolylineWeighted(pts, 1) }

func (l *layout) addPolylineWeighted(pts []vg.Point, weight float64) {
	const step, half = vg.Length(3), vg.Length(1.5)
	for i, p := range pts {
		l.addWeighted(vg.Rectangle{Min: vg.Point{X: p.X - half, Y: p.Y - half}, Max: vg.Point{X: p.X + half, Y: p.Y + half}}, weight)
		if i == 0 {
			continue
		}
		q := pts[i-1]
		d := vg.Length(math.Hypot(float64(p.X-q.X), float64(p.Y-q.Y)))
		n := int(d / step)
		if n > 2000 {
			n = 2000
		}
		for k := 1; k < n; k++ {
			t := vg.Length(k) / vg.Length(n)
			x, y := q.X+(p.X-q.X)*t, q.Y+(p.Y-q.Y)*t
			l.addWeighted(vg.Rectangle{Min: vg.Point{X: x - half, Y: y - half}, Max: vg.Point{X: x + half, Y: y + half}}, weight)
		}
	}
}

// overlap is the total area of r covered by recorded boxes.
func (l *layout) overlap(r vg.Rectangle) float64 {
	sum := 0.0
	for i, b := range l.boxes {
		w := math.Min(float64(r.Max.X), float64(b.Max.X)) - math.Max(float64(r.Min.X), float64(b.Min.X))
		h := math.Min(float64(r.Max.Y), float64(b.Max.Y)) - math.Max(float64(r.Min.Y), float64(b.Min.Y))
		if w > 0 && h > 0 {
			sum += w * h * l.weights[i]
		}
	}
	return sum
}

// ---- label placement ----

// labelSpot is one candidate position for a text label.
type labelSpot struct {
	at  vg.Point
	sty text.Style
}

// placeLabel draws txt at the first candidate that stays inside c and
// overlaps nothing recorded in lay, or else at the one overlapping least,
// and records where it went.
func placeLabel(c draw.Canvas, lay *layout, txt string, spots []labelSpot) {
	best, bestCost := -1, math.Inf(1)
	for k, s := range spots {
		cost := 0.0
		for _, r := range labelBoxes(s.sty, s.at, txt) {
			cost += lay.overlap(r)
			if r.Min.X < c.Min.X || r.Max.X > c.Max.X || r.Min.Y < c.Min.Y || r.Max.Y > c.Max.Y {
				cost += 1e6
			}
		}
		cost += float64(k) * 1e-3 // earlier candidates win ties
		if cost < bestCost {
			best, bestCost = k, cost
		}
	}
	if best < 0 {
		return
	}
	s := spots[best]
	c.FillText(s.sty, s.at, txt)
	for _, r := range labelBoxes(s.sty, s.at, txt) {
		lay.add(r)
	}
}

// labelBoxes returns the area txt covers when drawn at pt: its rectangle,
// or for rotated text a chain of squares along its middle line (the
// bounding box of rotated text is mostly empty).
func labelBoxes(sty text.Style, pt vg.Point, txt string) []vg.Rectangle {
	if sty.Rotation == 0 {
		return []vg.Rectangle{textRect(sty, pt, txt)}
	}
	w, h := sty.Width(txt), sty.Height(txt)
	x0 := vg.Length(sty.XAlign) * w
	ym := vg.Length(sty.YAlign)*h + h/2
	sin, cos := math.Sincos(sty.Rotation)
	rot := func(x, y vg.Length) vg.Point {
		return vg.Point{
			X: pt.X + vg.Length(float64(x)*cos-float64(y)*sin),
			Y: pt.Y + vg.Length(float64(x)*sin+float64(y)*cos),
		}
	}
	// Squares of side 0.64h: inside the text's band at any angle.
	half := h * 0.32
	n := int(w/half/2) + 1
	out := make([]vg.Rectangle, 0, n+1)
	for i := 0; i <= n; i++ {
		q := rot(x0+w*vg.Length(i)/vg.Length(n), ym)
		out = append(out, vg.Rectangle{Min: vg.Point{X: q.X - half, Y: q.Y - half}, Max: vg.Point{X: q.X + half, Y: q.Y + half}})
	}
	return out
}

// around returns candidate spots for a label next to a marker at pt, d away:
// right, upper right, lower right, left, above, below, upper left, lower left.
func around(sty text.Style, pt vg.Point, d vg.Length) []labelSpot {
	type c struct {
		dx, dy float64
		xa     text.XAlignment
		ya     text.YAlignment
	}
	cs := []c{
		{1, 0, draw.XLeft, draw.YCenter},
		{0.7, 0.7, draw.XLeft, draw.YBottom},
		{0.7, -0.7, draw.XLeft, draw.YTop},
		{-1, 0, draw.XRight, draw.YCenter},
		{0, 1, draw.XCenter, draw.YBottom},
		{0, -1, draw.XCenter, draw.YTop},
		{-0.7, 0.7, draw.XRight, draw.YBottom},
		{-0.7, -0.7, draw.XRight, draw.YTop},
	}
	out := make([]labelSpot, len(cs))
	for i, k := range cs {
		s := sty
		s.XAlign, s.YAlign = k.xa, k.ya
		out[i] = labelSpot{at: vg.Point{X: pt.X + d*vg.Length(k.dx), Y: pt.Y + d*vg.Length(k.dy)}, sty: s}
	}
	return out
}

// ---- roofline ----

// rooflineRanges returns the axis ranges of a roofline chart: the x range
// spans the points and the ridge with room on both sides (at least 3
// decades); the y range reaches above the peak and below the lowest point.
func (f *Figure) rooflineRanges() (xlo, xhi, ylo, yhi float64) {
	ridge := f.peakGFLOPS / f.peakGBps
	alo, ahi := ridge, ridge
	glo, ghi := math.Inf(1), f.peakGFLOPS
	for _, pt := range f.points {
		alo, ahi = math.Min(alo, pt.Intensity), math.Max(ahi, pt.Intensity)
		glo, ghi = math.Min(glo, pt.GFLOPS), math.Max(ghi, pt.GFLOPS)
	}
	xlo, xhi = alo/4, ahi*4
	if r := xhi / xlo; r < 1000 {
		widen := math.Sqrt(1000 / r)
		xlo, xhi = xlo/widen, xhi*widen
	}
	yhi = ghi * 2.5
	ylo = math.Max(f.peakGBps*xlo, f.peakGFLOPS*1e-5)
	if !math.IsInf(glo, 1) {
		ylo = math.Min(ylo, glo/2.5)
	}
	if yhi/ylo < 100 {
		ylo = yhi / 100
	}
	return xlo, xhi, ylo, yhi
}

var roofGlyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, diamondGlyph{}, draw.CircleGlyph{},
	draw.BoxGlyph{}, draw.PyramidGlyph{}, diamondGlyph{},
}

func (f *Figure) buildRoofline(p *gplot.Plot, lay *layout) {
	xlo, xhi, ylo, yhi := f.rooflineRanges()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo, xhi, ylo, yhi
	p.Add(gridLines{horizontal: true, vertical: true})
	rp := &roofPlotter{
		peak: f.peakGFLOPS, bw: f.peakGBps, ridge: f.peakGFLOPS / f.peakGBps,
		note:      f.textStyle(p, 9.5, false, roofColor),
		ridgeText: f.textStyle(p, 9.5, true, ridgeColor),
		label:     f.textStyle(p, 10, false, textColor),
		lay:       lay,
	}
	if f.ref != nil {
		rp.ref = &refPlotter{y: f.ref.y, lay: lay}
	}
	leg := &legendBox{style: f.textStyle(p, 9.5, false, textColor), lay: lay}
	for i, pt := range f.points {
		// Colours cycle every 10 points, shapes every 4: 40 distinct markers.
		g := draw.GlyphStyle{Color: paletteColor(i), Radius: 4.5, Shape: roofGlyphs[i%4]}
		rp.pts = append(rp.pts, pt)
		rp.names = append(rp.names, shorten(f.pointName(i), 32))
		rp.glyphs = append(rp.glyphs, g)
		frac := pt.GFLOPS / Attainable(f.peakGFLOPS, f.peakGBps, pt.Intensity)
		leg.entries = append(leg.entries, legendEntry{name: roofLabel(shorten(f.pointName(i), 32), frac), thumb: glyphThumb(g)})
	}
	p.Add(rp)
	if f.ref != nil {
		leg.entries = append(leg.entries, legendEntry{name: f.refLabel(), thumb: refThumb})
	}
	if len(leg.entries) <= 12 {
		lay.legend = leg
	}
}

// roofLabel names a roofline point with its share of the roof; a point
// above the roof is a measurement problem (caches served bytes the count
// takes for DRAM's, or the peak was measured low), and says so.
func roofLabel(name string, frac float64) string {
	if frac > 1 {
		return fmt.Sprintf("%s: %s of roof: above it (caches, or a low peak)", name, formatPercent(frac))
	}
	return fmt.Sprintf("%s: %s of roof", name, formatPercent(frac))
}

func formatPercent(frac float64) string {
	pc := frac * 100
	switch {
	case pc >= 10:
		return fmt.Sprintf("%.0f%%", pc)
	case pc >= 1:
		return fmt.Sprintf("%.1f%%", pc)
	default:
		return fmt.Sprintf("%.2g%%", pc)
	}
}

// haloGlyph draws g over a slightly larger dark copy, so markers stand out
// on any background.
func haloGlyph(c *draw.Canvas, g draw.GlyphStyle, pt vg.Point, clip bool) {
	halo := g
	halo.Color = hexColor("#1a1a1a")
	halo.Radius += 0.9
	if clip {
		c.DrawGlyph(halo, pt)
		c.DrawGlyph(g, pt)
		return
	}
	c.DrawGlyphNoClip(halo, pt)
	c.DrawGlyphNoClip(g, pt)
}

func glyphThumb(g draw.GlyphStyle) func(c draw.Canvas, r vg.Rectangle) {
	return func(c draw.Canvas, r vg.Rectangle) {
		haloGlyph(&c, g, vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}, false)
	}
}

// formatRate renders a GFLOP/s or GB/s figure with a sensible prefix:
// 67000 GFLOP/s -> "67 TFLOP/s".
func formatRate(g float64, unit string) string {
	switch {
	case g >= 1e6:
		return formatValue(g/1e6) + " P" + unit
	case g >= 1e3:
		return formatValue(g/1e3) + " T" + unit
	default:
		return formatValue(g) + " G" + unit
	}
}

// roofPlotter draws the roofline, its ridge, the measured points and all
// their labels, placing each label where it overlaps least.
type roofPlotter struct {
	peak, bw, ridge        float64
	pts                    []RooflinePoint
	names                  []string
	glyphs                 []draw.GlyphStyle
	note, ridgeText, label text.Style
	ref                    *refPlotter
	lay                    *layout
}

func (r *roofPlotter) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	xlo, xhi := p.X.Min, p.X.Max
	// The memory roof enters at the left edge, or at the bottom edge when it
	// is below the y range there.
	x0 := math.Max(xlo, p.Y.Min/r.bw)
	roof := []vg.Point{
		{X: tx(x0), Y: ty(r.bw * x0)},
		{X: tx(r.ridge), Y: ty(r.peak)},
		{X: tx(xhi), Y: ty(r.peak)},
	}
	// Attainable region, lightly shaded.
	poly := append([]vg.Point{{X: roof[0].X, Y: ty(p.Y.Min)}}, roof...)
	poly = append(poly, vg.Point{X: roof[2].X, Y: ty(p.Y.Min)})
	c.FillPolygon(roofFill, c.ClipPolygonXY(poly))
	gridLines{horizontal: true, vertical: true}.Plot(c, p) // grid stays visible over the shading

	// Ridge: a dotted drop line to the x axis, the roof, then the ridge marker.
	ridgePt := roof[1]
	drop := []vg.Point{{X: ridgePt.X, Y: c.Min.Y}, ridgePt}
	c.StrokeLines(draw.LineStyle{Color: ridgeColor, Width: 1, Dashes: []vg.Length{2, 3}}, c.ClipLinesXY(drop)...)
	r.lay.addPolyline(drop)
	c.StrokeLines(draw.LineStyle{Color: roofColor, Width: 2.6}, c.ClipLinesXY(roof)...)
	r.lay.addPolyline(roof)
	if r.ref != nil {
		r.ref.Plot(c, p)
	}
	ridgeGlyph := draw.GlyphStyle{Color: ridgeColor, Radius: 4, Shape: diamondGlyph{}}
	c.DrawGlyph(ridgeGlyph, ridgePt)
	r.lay.add(glyphRect(ridgeGlyph, ridgePt))

	// Measured points, recorded before any label is placed.
	at := make([]vg.Point, len(r.pts))
	for i, pt := range r.pts {
		at[i] = vg.Point{X: tx(pt.Intensity), Y: ty(pt.GFLOPS)}
		haloGlyph(&c, r.glyphs[i], at[i], true)
		r.lay.add(glyphRect(r.glyphs[i], at[i]))
	}

	// Ridge label.
	placeLabel(c, r.lay, "ridge: "+formatValue(r.ridge)+" FLOP/B", around(r.ridgeText, ridgePt, 7)[1:])

	// Compute roof label, just above (or below) the flat part.
	ctext := "peak " + formatRate(r.peak, "FLOP/s")
	var spots []labelSpot
	for _, fx := range []float64{0.98, 0.75, 0.5} {
		x := ridgePt.X + (c.Max.X-ridgePt.X)*vg.Length(fx)
		for _, above := range []bool{true, false} {
			s := r.note
			s.XAlign, s.YAlign = draw.XRight, draw.YBottom
			y := ridgePt.Y + 4
			if !above {
				s.YAlign = draw.YTop
				y = ridgePt.Y - 4
			}
			spots = append(spots, labelSpot{at: vg.Point{X: x, Y: y}, sty: s})
		}
	}
	placeLabel(c, r.lay, ctext, spots)

	// Memory roof label, along the slope.
	mtext := formatRate(r.bw, "B/s") + " memory"
	dx, dy := float64(roof[1].X-roof[0].X), float64(roof[1].Y-roof[0].Y)
	if dx > 0 {
		angle := math.Atan2(dy, dx)
		spots = spots[:0]
		for _, t := range []float64{0.5, 0.35, 0.65, 0.2, 0.8} {
			xm := float64(roof[0].X) + t*dx
			ym := float64(roof[0].Y) + t*dy
			for _, side := range []float64{1, -1} {
				s := r.note
				s.Rotation = angle
				s.XAlign, s.YAlign = draw.XCenter, draw.YBottom
				if side < 0 {
					s.YAlign = draw.YTop
				}
				const off = 3.0
				spots = append(spots, labelSpot{
					at:  vg.Point{X: vg.Length(xm - side*off*math.Sin(angle)), Y: vg.Length(ym + side*off*math.Cos(angle))},
					sty: s,
				})
			}
		}
		placeLabel(c, r.lay, mtext, spots)
	}

	// Point labels.
	for i := range r.pts {
		if c.Contains(at[i]) {
			placeLabel(c, r.lay, r.names[i], around(r.label, at[i], r.glyphs[i].Radius+4))
		}
	}
}

func glyphRect(g draw.GlyphStyle, pt vg.Point) vg.Rectangle {
	rad := g.Radius + 3 // a little clearance for labels
	return vg.Rectangle{Min: vg.Point{X: pt.X - rad, Y: pt.Y - rad}, Max: vg.Point{X: pt.X + rad, Y: pt.Y + rad}}
}
