package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bar charts: category ticks that shorten and slant when crowded, bars in
// the palette, and a value label on each.

func (f *Figure) buildBars(p *gplot.Plot, lay *layout, wPt vg.Length) (padLeft vg.Length) {
	n := len(f.values)
	p.Y.Min, p.Y.Max = f.barsRange()
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
	base := 0.0 // where the bars rise from: zero, or a log axis's bottom
	if f.logY {
		base = p.Y.Min
	}
	p.Add(&barsPlotter{values: f.values, base: base, colors: colors, texts: texts,
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

// barsRange is a bar chart's y range: from zero (or below the lowest
// negative bar), or on a log axis from a nice value at least a factor 2
// below the lowest bar, so that the lowest bar still shows; up to the
// highest bar, the reference line and WithYAtLeast, with headroom for the
// value labels.
func (f *Figure) barsRange() (lo, hi float64) {
	if f.logY {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, v := range f.values {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if f.ref != nil && f.ref.y > 0 {
			lo, hi = math.Min(lo, f.ref.y), math.Max(hi, f.ref.y)
		}
		return niceLogFloor(lo / 2), niceLogCeil(hi * 1.6)
	}
	for _, v := range f.values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if f.ref != nil {
		hi = math.Max(hi, f.ref.y)
	}
	hi = math.Max(hi, f.yAtLeast)
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
	return niceRange(lo, hi, 6)
}

type barsPlotter struct {
	values []float64
	base   float64 // the y the bars rise from
	colors []color.RGBA
	texts  []string
	style  text.Style
	lay    *layout
}

func (b *barsPlotter) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	slot := tx(1) - tx(0)
	w := slot * 0.68
	y0 := ty(b.base)
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
