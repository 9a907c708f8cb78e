package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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
