// Package datasets makes and loads the lab's input data.
package datasets

import (
	"fmt"
	"image"
	_ "image/jpeg" // register the JPEG decoder for LoadGray
	_ "image/png"  // register the PNG decoder for LoadGray
	"io"
	"math"
	"os"
)

// Photo returns a deterministic, photo-like grayscale image of w×h pixels,
// row-major, values in [0, 1]: a sky-to-ground gradient, a horizon, shaded
// discs (soft and hard edged), a building of sharp rectangles with windows,
// a diagonal stripe and a little pixel noise, so that blur and edge filters
// have smooth regions, hard edges, corners and texture to work on. The same
// sizes always give the same image. It returns nil for non-positive sizes.
func Photo(w, h int) []float32 {
	if w <= 0 || h <= 0 {
		return nil
	}
	img := make([]float32, w*h)
	fw, fh := float64(w), float64(h)
	s := math.Min(fw, fh)
	type disc struct{ cx, cy, r, v, soft float64 }
	discs := []disc{
		{0.78 * fw, 0.22 * fh, 0.10 * s, 0.95, 0.02 * s}, // sun: soft edge
		{0.25 * fw, 0.70 * fh, 0.16 * s, 0.30, 0},        // dark boulder: hard edge
		{0.40 * fw, 0.78 * fh, 0.08 * s, 0.65, 0.005 * s},
	}
	for y := range h {
		fy := float64(y) + 0.5
		for x := range w {
			fx := float64(x) + 0.5
			var v float64
			if fy < 0.55*fh { // sky: brighter towards the horizon, a faint horizontal tilt
				v = 0.45 + 0.35*fy/(0.55*fh) + 0.05*fx/fw
			} else { // ground: darker towards the viewer, with soft ripples
				v = 0.55 - 0.3*(fy-0.55*fh)/(0.45*fh) + 0.04*math.Sin(fx/s*40+fy/s*9)
			}
			for _, d := range discs {
				dist := math.Hypot(fx-d.cx, fy-d.cy)
				if d.soft > 0 {
					a := math.Min(1, math.Max(0, (d.r+d.soft-dist)/(2*d.soft)))
					shade := d.v - 0.15*(fy-d.cy)/d.r*a
					v = v*(1-a) + shade*a
				} else if dist < d.r {
					v = d.v + 0.2*(d.cx-fx+d.cy-fy)/(2*d.r) // lit from the top left
				}
			}
			// A building: a hard-edged block with a grid of lit windows.
			bx0, bx1, by0, by1 := 0.52*fw, 0.68*fw, 0.30*fh, 0.60*fh
			if fx >= bx0 && fx < bx1 && fy >= by0 && fy < by1 {
				v = 0.18
				wx, wy := (fx-bx0)/(bx1-bx0)*6, (fy-by0)/(by1-by0)*8
				if fx := wx - math.Floor(wx); fx > 0.3 && fx < 0.7 {
					if fy := wy - math.Floor(wy); fy > 0.3 && fy < 0.75 {
						v = 0.85
					}
				}
			}
			// A thin diagonal stripe (a power line).
			if d := math.Abs((fy - 0.1*fh) - 0.35*(fx-0.0*fw)); d < math.Max(1, 0.004*s) && fy < 0.55*fh {
				v = 0.1
			}
			// Sensor noise from a hash of the position.
			u := uint32(x)*73856093 ^ uint32(y)*19349663
			u ^= u >> 13
			u *= 0x5bd1e995
			u ^= u >> 15
			v += (float64(u%1024)/1024 - 0.5) * 0.04
			img[y*w+x] = float32(math.Min(1, math.Max(0, v)))
		}
	}
	return img
}

// LoadGray reads a PNG or JPEG file into a row-major grayscale image with
// values in [0, 1] (luma 0.299 R + 0.587 G + 0.114 B), and its width and
// height.
func LoadGray(path string) ([]float32, int, int, error) {
	src, w, h, err := decodeImage(path, 1)
	if err != nil {
		return nil, 0, 0, err
	}
	b := src.Bounds()
	out := make([]float32, w*h)
	for y := range h {
		for x := range w {
			r, g, bl, _ := src.At(b.Min.X+x, b.Min.Y+y).RGBA()
			out[y*w+x] = float32((0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 65535)
		}
	}
	return out, w, h, nil
}

// decodeBytes is the most host memory image.Decode takes a pixel of an
// image of format: 8 for a PNG (16-bit RGBA); 20 for a JPEG, 4 for the
// image (CMYK) and, in a progressive one, 4 for the coefficients of each of
// 4 components; and as many for any other format a program registers.
func decodeBytes(format string) int {
	if format == "png" {
		return 8
	}
	return 20
}

// decodeImage opens and decodes a PNG or JPEG file, with errors that name
// it, and returns the image and its (non-zero) size. The size in the file's
// header is checked against the host's memory before the decoder allocates
// the image: decodeBytes a pixel, and the floats float32 a pixel that the
// caller makes of it.
func decodeImage(path string, floats int) (image.Image, int, int, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, 0, 0, fmt.Errorf("datasets: load image %s: no such file", path)
		}
		return nil, 0, 0, fmt.Errorf("datasets: load image: %w", err)
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: load image %s: not a PNG or JPEG file: %w", path, err)
	}
	if cfg.Width == 0 || cfg.Height == 0 {
		return nil, 0, 0, fmt.Errorf("datasets: load image %s: empty %s image", path, format)
	}
	perPixel := decodeBytes(format)
	what := fmt.Sprintf("a %d×%d %s image decoded (%d bytes a pixel at most) and %d float32 a pixel", cfg.Width, cfg.Height, format, perPixel, floats)
	if err := checkHostMemory(path, what, float64(cfg.Width)*float64(cfg.Height)*float64(perPixel+4*floats)); err != nil {
		return nil, 0, 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: load image %s: %w", path, err)
	}
	src, _, err := image.Decode(f)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: load image %s: not a PNG or JPEG file: %w", path, err)
	}
	w, h := src.Bounds().Dx(), src.Bounds().Dy()
	return src, w, h, nil
}
