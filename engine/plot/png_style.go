package plot

import (
	"fmt"
	"image/color"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot/font"
)

// The look shared by every PNG chart: the colour cycle (which the HTML
// charts use as well), fonts and greys.

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
