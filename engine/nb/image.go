package nb

import (
	"fmt"
	"image"
	"image/color"
	"math"

	"github.com/janpfeifer/gonb/gonbui"
)

// Image shows w×h RGB values in [0, 1] (row-major, 3 per pixel) in a
// notebook; elsewhere it prints a one-line description.
func Image(title string, rgb []float32, w, h int) {
	if len(rgb) != 3*w*h || w <= 0 || h <= 0 {
		Must(fmt.Errorf("nb.Image %q: %d values for %d×%d pixels", title, len(rgb), w, h))
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	to8 := func(v float32) uint8 { return uint8(math.Round(float64(min(1, max(0, v))) * 255)) }
	for i := range w * h {
		img.Set(i%w, i/w, color.RGBA{to8(rgb[3*i]), to8(rgb[3*i+1]), to8(rgb[3*i+2]), 255})
	}
	if !gonbui.IsNotebook {
		fmt.Printf("[image %q, %d×%d]\n", title, w, h)
		return
	}
	gonbui.DisplayMarkdown("**" + title + "**")
	Must(gonbui.DisplayImage(img))
	gonbui.Sync() // as in Markdown
}
