package warps

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// NDRangePNG draws the guide's NDRange figure for any sizes: a grid of
// global[0]×global[1] work-items (x across, y down), cellPx pixels each,
// every work-group filled with its own colour, thin lines between
// work-items and thick lines around work-groups, and each work-group
// labelled with its group id "(gx,gy)" where it fits. The picture is
// exactly global[0]·cellPx by global[1]·cellPx pixels. The guide's figure is
// NDRangePNG([2]int{32, 16}, [2]int{8, 4}, 24).
//
// It is an error when a size is not positive, when local does not divide
// global, when cellPx is below 4, or when a side would exceed 16384 pixels.
func NDRangePNG(global, local [2]int, cellPx int) ([]byte, error) {
	for d := range 2 {
		if global[d] <= 0 || local[d] <= 0 {
			return nil, fmt.Errorf("warps: NDRange picture: global %v and local %v sizes must be positive", global, local)
		}
		if global[d]%local[d] != 0 {
			return nil, fmt.Errorf("warps: NDRange picture: local size %v does not divide global size %v (dimension %d: %d %% %d = %d)",
				local, global, d, global[d], local[d], global[d]%local[d])
		}
	}
	if cellPx < 4 {
		return nil, fmt.Errorf("warps: NDRange picture: cell of %d pixels is too small (want at least 4)", cellPx)
	}
	const maxSide = 16384
	if global[0]*cellPx > maxSide || global[1]*cellPx > maxSide {
		return nil, fmt.Errorf("warps: NDRange picture: global %v at %d pixels per work-item is %d×%d pixels, more than %d a side",
			global, cellPx, global[0]*cellPx, global[1]*cellPx, maxSide)
	}
	w, h := global[0]*cellPx, global[1]*cellPx
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	groups := [2]int{global[0] / local[0], global[1] / local[1]}

	// Fill each work-group with its colour.
	for gy := range groups[1] {
		for gx := range groups[0] {
			r := image.Rect(gx*local[0]*cellPx, gy*local[1]*cellPx, (gx+1)*local[0]*cellPx, (gy+1)*local[1]*cellPx)
			draw.Draw(img, r, image.NewUniform(groupColour(gy*groups[0]+gx)), image.Point{}, draw.Src)
		}
	}
	// Thin lines between work-items, thick ones between work-groups.
	thin := color.RGBA{90, 90, 90, 255}
	thick := color.RGBA{20, 20, 20, 255}
	thickPx := max(2, cellPx/8)
	line := func(r image.Rectangle, c color.Color) {
		draw.Draw(img, r.Intersect(img.Bounds()), image.NewUniform(c), image.Point{}, draw.Src)
	}
	for x := 0; x <= global[0]; x++ {
		px := x * cellPx
		if x%local[0] == 0 {
			line(image.Rect(px-thickPx/2, 0, px-thickPx/2+thickPx, h), thick)
		} else {
			line(image.Rect(px, 0, px+1, h), thin)
		}
	}
	for y := 0; y <= global[1]; y++ {
		py := y * cellPx
		if y%local[1] == 0 {
			line(image.Rect(0, py-thickPx/2, w, py-thickPx/2+thickPx), thick)
		} else {
			line(image.Rect(0, py, w, py+1), thin)
		}
	}
	// Label each work-group with its id, on a white box, where it fits.
	face := basicfont.Face7x13
	for gy := range groups[1] {
		for gx := range groups[0] {
			label := fmt.Sprintf("(%d,%d)", gx, gy)
			d := &font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face}
			tw := d.MeasureString(label).Ceil()
			gw, gh := local[0]*cellPx, local[1]*cellPx
			if tw+6+2*thickPx > gw || 17+2*thickPx > gh {
				continue
			}
			cx, cy := gx*gw+gw/2, gy*gh+gh/2
			box := image.Rect(cx-tw/2-3, cy-8, cx-tw/2+tw+3, cy+8)
			draw.Draw(img, box, image.NewUniform(color.NRGBA{255, 255, 255, 230}), image.Point{}, draw.Over)
			d.Dot = fixed.P(cx-tw/2, cy+4)
			d.DrawString(label)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("warps: NDRange picture: %w", err)
	}
	return buf.Bytes(), nil
}

// groupColour is a light colour for group i, the hues spread by the golden
// angle so that neighbouring groups differ.
func groupColour(i int) color.RGBA {
	hue := math.Mod(float64(i)*137.508, 360)
	s, v := 0.45, 0.97
	c := v * s
	hp := hue / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r, g, b float64
	switch int(hp) {
	case 0:
		r, g = c, x
	case 1:
		r, g = x, c
	case 2:
		g, b = c, x
	case 3:
		g, b = x, c
	case 4:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := v - c
	to8 := func(f float64) uint8 { return uint8(math.Round(255 * (f + m))) }
	return color.RGBA{to8(r), to8(g), to8(b), 255}
}
