package plot

import (
	"fmt"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Roofline charts: the memory and compute roofs, the ridge, and the
// measured points, each labelled with its share of the roof.

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
		if pt.Effective {
			frac = math.Inf(1)
		}
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

// roofLabel names a roofline point with its share of the roof. A point
// above the roof moved more bytes per second than the memory can: caches
// served part of the bytes its traffic model counts, so its intensity is
// an effective one and a share of the roof would mean nothing; it is
// marked "‡ effective" instead.
func roofLabel(name string, frac float64) string {
	if frac > 1 {
		return name + ": ‡ effective"
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

	// Point labels, where one fits without covering anything: the legend
	// names every point anyway.
	for i := range r.pts {
		if c.Contains(at[i]) {
			placeFreeLabel(c, r.lay, r.names[i], around(r.label, at[i], r.glyphs[i].Radius+4))
		}
	}
}

func glyphRect(g draw.GlyphStyle, pt vg.Point) vg.Rectangle {
	rad := g.Radius + 3 // a little clearance for labels
	return vg.Rectangle{Min: vg.Point{X: pt.X - rad, Y: pt.Y - rad}, Max: vg.Point{X: pt.X + rad, Y: pt.Y + rad}}
}
