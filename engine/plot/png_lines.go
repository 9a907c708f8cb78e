package plot

import (
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Line charts and scatter plots: a colour, a marker shape and a dash
// pattern per series.

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
	if n := len(f.yNames); n > 0 { // named values: those names, and room for each lane
		p.Y.Min, p.Y.Max = math.Min(-0.5, ylo), math.Max(float64(n)-0.5, yhi)
		ticks := make([]gplot.Tick, n)
		for i, name := range f.yNames {
			ticks[i] = gplot.Tick{Value: float64(i), Label: name}
		}
		p.Y.Tick.Marker = gplot.ConstantTicks(ticks)
	} else if f.logY {
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
		r := l.glyph.Radius * 1.25 // the largest glyph's half-width
		for _, pt := range pts {
			c.DrawGlyph(l.glyph, pt)
			l.lay.add(vg.Rectangle{Min: vg.Point{X: pt.X - r, Y: pt.Y - r}, Max: vg.Point{X: pt.X + r, Y: pt.Y + r}})
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
