package plot

import (
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// What bars, lines and rooflines share: grid lines at the ticks and the
// dashed reference line.

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
