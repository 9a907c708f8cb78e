package sqfd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gpulab/engine/cluster/kmeans"
)

// Features is the number of features per pixel, in this order: x and y (the
// pixel centre's position, as fractions of the width and height, in (0, 1)),
// L, a and b (CIELAB of the sRGB pixel under D65, L in [0, 100]), contrast
// (the standard deviation of L over the 5×5 neighbourhood) and coarseness (a
// simplified Tamura coarseness, in [0, 3]: log2 of the window size 2^k,
// k = 0..3, whose averages of L differ most between the neighbourhoods on
// opposite sides of the pixel, horizontally or vertically).
const Features = 7

// Scales are the factors Extract multiplies the features by before
// clustering, so that no feature dominates the Euclidean distance: each
// feature's range becomes about 100 units, the span of L. x and y ×100 (a move
// across the image weighs like black to white), L, a, b ×1 (CIELAB is already
// in units of perceived colour difference; a and b stay within about ±100 in
// sRGB), contrast ×2 (the standard deviation of values in [0, 100] is at most
// 50), coarseness ×100/3. They are fixed, not fitted to each image, so that
// signatures of different images live in the same space and can be compared.
var Scales = [Features]float32{100, 100, 1, 1, 1, 2, 100.0 / 3}

// PixelFeatures returns the Features of samples pixels of a w×h sRGB image
// (rgb: w·h·3 values in [0, 1], row-major), samples×Features row-major, in
// raster order. The pixels are drawn uniformly without replacement with the
// seed; samples <= 0 or >= w·h takes every pixel.
func PixelFeatures(rgb []float32, w, h, samples int, seed uint64) ([]float32, error) {
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("sqfd: image of %d×%d pixels", w, h)
	}
	n := w * h
	if len(rgb) != 3*n {
		return nil, fmt.Errorf("sqfd: %d values for a %d×%d RGB image (want %d)", len(rgb), w, h, 3*n)
	}
	for i, v := range rgb {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("sqfd: pixel (%d, %d), channel %d is %g, outside [0, 1]", i/3%w, i/3/w, i%3, v)
		}
	}
	// The neighbourhood features need L everywhere.
	light := make([]float64, n)
	for p := range light {
		light[p], _, _ = toLab(rgb[3*p], rgb[3*p+1], rgb[3*p+2])
	}
	sums := newTable(light, w, h)
	pick := sample(n, samples, seed)
	out := make([]float32, len(pick)*Features)
	for r, p := range pick {
		x, y := p%w, p/w
		l, a, b := toLab(rgb[3*p], rgb[3*p+1], rgb[3*p+2])
		f := out[r*Features : (r+1)*Features]
		f[0], f[1] = float32((float64(x)+0.5)/float64(w)), float32((float64(y)+0.5)/float64(h))
		f[2], f[3], f[4] = float32(l), float32(a), float32(b)
		f[5] = float32(contrast(light, w, h, x, y))
		f[6] = float32(coarseness(sums, x, y))
	}
	return out, nil
}

// Extract returns the signature of a w×h sRGB image: PixelFeatures of samples
// pixels, multiplied by Scales, clustered by k-means (K = k, at most the
// number of pixels; seeded, k-means++), as one record per non-empty cluster:
// its mean, in the scaled space, and its share of the pixels as the weight
// (the weights sum to 1). Empty clusters are dropped, so there may be fewer
// than k centroids.
func Extract(rgb []float32, w, h, k, samples int, seed uint64) ([]float32, error) {
	if k <= 0 {
		return nil, fmt.Errorf("sqfd: k = %d clusters; need at least 1", k)
	}
	x, err := PixelFeatures(rgb, w, h, samples, seed)
	if err != nil {
		return nil, err
	}
	for i := range x {
		x[i] *= Scales[i%Features]
	}
	n := len(x) / Features
	r, err := kmeans.Fit(&kmeans.Matrix{N: n, D: Features, X: x}, kmeans.Config{K: min(k, n), Seed: seed, Tol: 1e-6})
	if err != nil {
		return nil, err
	}
	sig := make([]float32, 0, r.K*(Features+1))
	for c, size := range r.Sizes {
		if size > 0 {
			sig = append(sig, r.Centers[c*Features:(c+1)*Features]...)
			sig = append(sig, float32(float64(size)/float64(n)))
		}
	}
	return sig, nil
}

// toLab converts an sRGB colour (components in [0, 1]) to CIELAB under the
// D65 white: undo the sRGB gamma, go to XYZ, then to L, a, b.
func toLab(r, g, b float32) (l, a, bb float64) {
	lin := func(c float32) float64 {
		if c <= 0.04045 {
			return float64(c) / 12.92
		}
		return math.Pow((float64(c)+0.055)/1.055, 2.4)
	}
	R, G, B := lin(r), lin(g), lin(b)
	// XYZ over the D65 white point (0.95047, 1, 1.08883), the rows' sums.
	X := (0.4124564*R + 0.3575761*G + 0.1804375*B) / 0.95047
	Y := 0.2126729*R + 0.7151522*G + 0.0721750*B
	Z := (0.0193339*R + 0.1191920*G + 0.9503041*B) / 1.08883
	f := func(t float64) float64 {
		const e = 6.0 / 29
		if t > e*e*e {
			return math.Cbrt(t)
		}
		return t/(3*e*e) + 4.0/29
	}
	fx, fy, fz := f(X), f(Y), f(Z)
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}

// sample returns m of the indices [0, n), uniform without replacement and
// sorted, or all of them when m <= 0 or m >= n.
func sample(n, m int, seed uint64) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if m <= 0 || m >= n {
		return idx
	}
	rng := rand.New(rand.NewPCG(seed, 0x73716664))
	for i := range m { // the first m steps of a Fisher–Yates shuffle
		j := i + rng.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	idx = idx[:m]
	slices.Sort(idx)
	return idx
}

// contrast is the standard deviation of L over the 5×5 neighbourhood of
// (x, y), clipped to the image.
func contrast(light []float64, w, h, x, y int) float64 {
	var sum, sq float64
	var n int
	for yy := max(y-2, 0); yy <= min(y+2, h-1); yy++ {
		for xx := max(x-2, 0); xx <= min(x+2, w-1); xx++ {
			sum += light[yy*w+xx]
			n++
		}
	}
	mean := sum / float64(n)
	for yy := max(y-2, 0); yy <= min(y+2, h-1); yy++ {
		for xx := max(x-2, 0); xx <= min(x+2, w-1); xx++ {
			d := light[yy*w+xx] - mean
			sq += d * d
		}
	}
	return math.Sqrt(sq / float64(n))
}

// coarseness is the k in 0..3 whose s×s windows (s = 2^k) just left and
// right of (x, y), or just above and below it, differ most in mean L; the
// smallest such k on ties, so flat regions get 0. Windows are clipped to
// the image, and one entirely outside it compares with nothing.
func coarseness(t table, x, y int) float64 {
	best, bestE := 0, -1.0
	for k := range 4 {
		s := 1 << k
		lo := -s / 2 // the window's extent across the direction of comparison
		e := max(t.diff(x-s, y+lo, x, y+lo+s, x+1, y+lo, x+1+s, y+lo+s),
			t.diff(x+lo, y-s, x+lo+s, y, x+lo, y+1, x+lo+s, y+1+s))
		if e > bestE+1e-6 { // a tie within rounding keeps the smaller k
			best, bestE = k, e
		}
	}
	return float64(best)
}

// table is a summed-area table: s[y*(w+1)+x] is the sum over [0, x)×[0, y).
type table struct {
	w, h int
	s    []float64
}

func newTable(v []float64, w, h int) table {
	s := make([]float64, (w+1)*(h+1))
	for y := range h {
		var row float64
		for x := range w {
			row += v[y*w+x]
			s[(y+1)*(w+1)+x+1] = s[y*(w+1)+x+1] + row
		}
	}
	return table{w, h, s}
}

// mean returns the mean over [x0, x1)×[y0, y1) clipped to the image, and
// false if nothing is left.
func (t table) mean(x0, y0, x1, y1 int) (float64, bool) {
	x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, t.w), min(y1, t.h)
	if x0 >= x1 || y0 >= y1 {
		return 0, false
	}
	w := t.w + 1
	sum := t.s[y1*w+x1] - t.s[y0*w+x1] - t.s[y1*w+x0] + t.s[y0*w+x0]
	return sum / float64((x1-x0)*(y1-y0)), true
}

// diff returns |mean(A) − mean(B)| for two rectangles, or 0 if either lies
// outside the image.
func (t table) diff(ax0, ay0, ax1, ay1, bx0, by0, bx1, by1 int) float64 {
	a, okA := t.mean(ax0, ay0, ax1, ay1)
	b, okB := t.mean(bx0, by0, bx1, by1)
	if !okA || !okB {
		return 0
	}
	return math.Abs(a - b)
}
