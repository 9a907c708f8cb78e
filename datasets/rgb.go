package datasets

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
)

// LoadRGB decodes a PNG or JPEG file into w×h×3 float32 values in [0,1],
// row-major, channels R, G, B per pixel: pixel (x, y) is
// rgb[3*(y*w+x) : 3*(y*w+x)+3]. Transparency is ignored.
func LoadRGB(path string) ([]float32, int, int, error) {
	src, w, h, err := decodeImage(path, 3)
	if err != nil {
		return nil, 0, 0, err
	}
	b := src.Bounds()
	out := make([]float32, 0, 3*w*h)
	for y := range h {
		for x := range w {
			// NRGBA64 keeps 16-bit PNGs exact and undoes the alpha premultiplication of RGBA.
			c := color.NRGBA64Model.Convert(src.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
			out = append(out, float32(c.R)/65535, float32(c.G)/65535, float32(c.B)/65535)
		}
	}
	return out, w, h, nil
}

// PhotoRGB is a deterministic colour version of Photo: w×h×3 values in
// [0,1], laid out as LoadRGB's. It has a sky fading from deep blue to pale
// blue at the horizon, green ground with brown furrows, a soft-edged yellow
// sun, a grey boulder and stone, a red brick building with a grey roof and
// pale windows, a dark power line and a little per-channel noise: distinct
// coloured regions, so that colour signatures have several clusters, and
// hard edges and texture for the other features. The same sizes always give
// the same image. It returns nil for non-positive sizes.
func PhotoRGB(w, h int) []float32 {
	if w <= 0 || h <= 0 {
		return nil
	}
	img := make([]float32, 0, 3*w*h)
	fw, fh := float64(w), float64(h)
	s := math.Min(fw, fh)
	type rgb [3]float64
	mix := func(a, b rgb, t float64) rgb {
		return rgb{a[0] + (b[0]-a[0])*t, a[1] + (b[1]-a[1])*t, a[2] + (b[2]-a[2])*t}
	}
	sunX, sunY, sunR, sunSoft := 0.78*fw, 0.22*fh, 0.10*s, 0.02*s
	type stone struct{ cx, cy, r float64 }
	stones := []stone{{0.25 * fw, 0.70 * fh, 0.16 * s}, {0.40 * fw, 0.78 * fh, 0.08 * s}}
	bx0, bx1, by0, by1 := 0.52*fw, 0.68*fw, 0.30*fh, 0.60*fh
	for y := range h {
		fy := float64(y) + 0.5
		for x := range w {
			fx := float64(x) + 0.5
			var c rgb
			if t := fy / (0.55 * fh); t < 1 { // sky: deep blue above, pale at the horizon
				c = mix(rgb{0.15, 0.35, 0.80}, rgb{0.70, 0.82, 0.95}, t)
			} else { // ground: grass darkening towards the viewer, brown furrows
				t := (fy - 0.55*fh) / (0.45 * fh)
				c = rgb{0.25 - 0.1*t, 0.60 - 0.25*t, 0.15}
				if math.Sin(fx/s*40+fy/s*9) > 0.5 {
					c = rgb{0.45, 0.30, 0.15}
				}
			}
			// The sun: a yellow disc whose edge blends into the sky.
			if a := (sunR + sunSoft - math.Hypot(fx-sunX, fy-sunY)) / (2 * sunSoft); a > 0 {
				c = mix(c, rgb{1, 0.88, 0.25}, math.Min(1, a))
			}
			// Grey stones with hard edges, lit from the top left.
			for _, st := range stones {
				if math.Hypot(fx-st.cx, fy-st.cy) < st.r {
					l := 0.45 + 0.2*(st.cx-fx+st.cy-fy)/(2*st.r)
					c = rgb{l, l, 0.95 * l}
				}
			}
			// The building: red brick, a grey roof and a grid of pale windows.
			if fx >= bx0 && fx < bx1 && fy >= by0 && fy < by1 {
				wx, wy := (fx-bx0)/(bx1-bx0)*6, (fy-by0)/(by1-by0)*8
				switch fx, fy := wx-math.Floor(wx), wy-math.Floor(wy); {
				case wy < 0.6:
					c = rgb{0.40, 0.40, 0.42}
				case fx > 0.3 && fx < 0.7 && fy > 0.3 && fy < 0.75:
					c = rgb{0.80, 0.85, 0.88}
				default:
					c = rgb{0.70, 0.18, 0.12}
				}
			}
			// A thin diagonal power line across the sky.
			if d := math.Abs((fy - 0.1*fh) - 0.35*fx); d < math.Max(1, 0.004*s) && fy < 0.55*fh {
				c = rgb{0.08, 0.08, 0.10}
			}
			for k, v := range c {
				v += (pixelNoise(x, y, k) - 0.5) * 0.04
				img = append(img, float32(math.Min(1, math.Max(0, v))))
			}
		}
	}
	return img
}

// pixelNoise returns a pseudo-random value in [0, 1) from a hash of a pixel
// position and a channel, the same on every call.
func pixelNoise(x, y, ch int) float64 {
	u := uint32(x)*73856093 ^ uint32(y)*19349663 ^ uint32(ch)*83492791
	u ^= u >> 13
	u *= 0x5bd1e995
	u ^= u >> 15
	return float64(u%1024) / 1024
}

// WritePNG writes w×h×3 RGB values in [0,1], laid out as LoadRGB returns
// them, to path as an 8-bit PNG. Values outside [0,1] are clamped; a NaN is
// an error, as it means a bug upstream. The file is written under a
// temporary name and renamed into place, so that path never holds half a
// file.
func WritePNG(path string, rgb []float32, w, h int) error {
	if w <= 0 || h <= 0 || len(rgb) != 3*w*h {
		return fmt.Errorf("datasets: write %s: want w, h > 0 and len(rgb) = w × h × 3, got %d × %d and len %d",
			path, w, h, len(rgb))
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i, v := range rgb {
		if math.IsNaN(float64(v)) {
			return fmt.Errorf("datasets: write %s: pixel (%d, %d) channel %c is NaN", path, i/3%w, i/3/w, "RGB"[i%3])
		}
		img.Pix[i/3*4+i%3] = uint8(math.Round(255 * math.Min(1, math.Max(0, float64(v)))))
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255 // opaque
	}
	return writeAtomic(path, func(bw *bufio.Writer) error {
		return png.Encode(bw, img)
	})
}
