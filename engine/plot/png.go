package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PNG images through gonum/plot: this file draws the frame every chart
// shares (size and scale, title, axes and their labels, the legend's second
// chance outside the data area); png_bars.go, png_lines.go and
// png_roofline.go build each kind's plotters, png_legend.go and
// png_layout.go place the legend and the labels where they hide least, and
// png_style.go holds the colours and fonts.

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
		// right of the plot, or below it when it would take more than
		// legendRightShare of the width; the title wraps to the plot's width.
		img = image.NewRGBA(image.Rect(0, 0, widthPx, heightPx))
		cnv = vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
		if p, padLeft, leg, err = f.buildPlot(wPt); err != nil {
			return nil, err
		}
		dc = draw.Crop(draw.New(cnv), 8+padLeft, -14, 6, -8)
		w, h := leg.size()
		full := dc.Max.X - dc.Min.X
		if w > full*legendRightShare {
			inner := draw.Crop(dc, 0, 0, h+8, 0)
			drawWithAxisLabels(p, inner)
			leg.drawAt(dc, vg.Point{X: p.DataCanvas(inner).Min.X, Y: dc.Min.Y})
		} else {
			inner := draw.Crop(dc, 0, -(w + 8), 0, 0)
			p.Title.Text = strings.Join(wrapTitle(f.Title, int(float64(pngTitleRunes*(full-w-8)/full))), "\n")
			drawWithAxisLabels(p, inner)
			top := p.DataCanvas(inner).Max.Y
			leg.drawAt(dc, vg.Point{X: dc.Max.X - w, Y: max(top-h, dc.Min.Y)})
		}
	}

	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, paletted(cnv.Image())); err != nil {
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
	p.Title.Text = strings.Join(wrapTitle(f.Title, pngTitleRunes), "\n")
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
	if f.dataTicks {
		p.X.Tick.Marker = dataTicks(f.series)
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

// legendRightShare is the largest share of a chart's width a legend may
// take right of the plot; a wider one goes below it.
const legendRightShare = 0.4

// pngTitleRunes is the longest title line of a PNG; a longer title wraps at
// spaces.
const pngTitleRunes = 72

// paletted converts a chart to at most 256 colours, which makes its PNG
// several times smaller: a chart is mostly a few flat colours, plus the
// blends that antialiasing puts at their edges. Up to 256 colours are kept
// exactly; beyond that, the 256 most frequent are kept, and each rarer one
// (an edge pixel) becomes the nearest of them.
func paletted(img image.Image) *image.Paletted {
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(count))
	for c := range count {
		colors = append(colors, c)
	}
	slices.SortFunc(colors, func(a, b color.RGBA) int { // most frequent first; ties in a fixed order
		if d := count[b] - count[a]; d != 0 {
			return d
		}
		return int(packRGBA(a)) - int(packRGBA(b))
	})
	pal := make(color.Palette, 0, 256)
	index := make(map[color.RGBA]uint8, len(colors))
	for _, c := range colors[:min(len(colors), 256)] {
		index[c] = uint8(len(pal))
		pal = append(pal, c)
	}
	for _, c := range colors[len(pal):] {
		index[c] = uint8(pal.Index(c))
	}
	out := image.NewPaletted(b, pal)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.SetColorIndex(x, y, index[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)])
		}
	}
	return out
}

func packRGBA(c color.RGBA) int64 {
	return int64(c.R)<<24 | int64(c.G)<<16 | int64(c.B)<<8 | int64(c.A)
}
