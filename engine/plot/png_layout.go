package plot

import (
	"math"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Where things may still be drawn: layout records what each plotter has
// covered, so that the legend and the labels go where they hide least.

func rectPath(r vg.Rectangle) []vg.Point {
	return []vg.Point{r.Min, {X: r.Min.X, Y: r.Max.Y}, r.Max, {X: r.Max.X, Y: r.Min.Y}}
}

// textRect is the rectangle txt occupies when drawn at pt with sty.
func textRect(sty text.Style, pt vg.Point, txt string) vg.Rectangle {
	r := sty.Rectangle(txt)
	return vg.Rectangle{Min: r.Min.Add(pt), Max: r.Max.Add(pt)}
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

// labelSpot is one candidate position for a text label.
type labelSpot struct {
	at  vg.Point
	sty text.Style
}

// placeLabel draws txt at the first candidate that stays inside c and
// overlaps nothing recorded in lay, or else at the one overlapping least,
// and records where it went.
func placeLabel(c draw.Canvas, lay *layout, txt string, spots []labelSpot) {
	if best, _ := bestSpot(c, lay, txt, spots); best >= 0 {
		drawLabel(c, lay, txt, spots[best])
	}
}

// placeFreeLabel draws txt at the first spot where it overlaps nothing
// recorded in lay and stays inside c, and nowhere if there is none.
func placeFreeLabel(c draw.Canvas, lay *layout, txt string, spots []labelSpot) {
	if best, cost := bestSpot(c, lay, txt, spots); best >= 0 && cost < 1 {
		drawLabel(c, lay, txt, spots[best])
	}
}

// bestSpot returns the spot where txt overlaps least (-1 if there is none)
// and its cost: the area it covers, 1e6 more if it leaves c, plus 1e-3 per
// earlier candidate passed over.
func bestSpot(c draw.Canvas, lay *layout, txt string, spots []labelSpot) (int, float64) {
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
	return best, bestCost
}

func drawLabel(c draw.Canvas, lay *layout, txt string, s labelSpot) {
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
