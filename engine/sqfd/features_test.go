package sqfd

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gpulab/datasets"
)

// TestLab checks the sRGB to CIELAB conversion at reference colours.
func TestLab(t *testing.T) {
	for _, tc := range []struct {
		r, g, b    float32
		l, a, bb   float64
		colourName string
	}{
		{1, 1, 1, 100, 0, 0, "white"},
		{0, 0, 0, 0, 0, 0, "black"},
		{1, 0, 0, 53.24, 80.09, 67.20, "red"},
	} {
		l, a, bb := toLab(tc.r, tc.g, tc.b)
		if math.Abs(l-tc.l) > 0.05 || math.Abs(a-tc.a) > 0.05 || math.Abs(bb-tc.bb) > 0.05 {
			t.Errorf("%s: Lab (%.3f, %.3f, %.3f), want (%g, %g, %g)", tc.colourName, l, a, bb, tc.l, tc.a, tc.bb)
		}
	}
}

// TestNeighbourhoodFeatures works contrast and coarseness out by hand on an
// 8×8 image, black in columns 0-3 and white in 4-7. At (3, 4), the 5×5 window
// holds 15 black and 10 white pixels: L has mean 40 and standard deviation
// 100·√(0.6·0.4) = 48.99; the pixels beside it differ by 100 already at
// k = 0. At (1, 4), the window is all black. Only column 0 lies left of it,
// so the windows to its left all hold column 0; those to its right, columns
// 2-3, 2-5 and 2-7, average L 0, 50 and 66.7 for k = 1, 2, 3: k = 3 wins.
func TestNeighbourhoodFeatures(t *testing.T) {
	const w, h = 8, 8
	img := make([]float32, 3*w*h)
	for p := range w * h {
		if p%w >= 4 {
			img[3*p], img[3*p+1], img[3*p+2] = 1, 1, 1
		}
	}
	f, err := PixelFeatures(img, w, h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ x, y, contrast, coarse float64 }{
		{3, 4, 100 * math.Sqrt(0.24), 0},
		{1, 4, 0, 3},
	} {
		row := f[(int(tc.y)*w+int(tc.x))*Features:][:Features]
		if math.Abs(float64(row[5])-tc.contrast) > 1e-3 || float64(row[6]) != tc.coarse {
			t.Errorf("(%g, %g): contrast %g coarseness %g, want %g and %g", tc.x, tc.y, row[5], row[6], tc.contrast, tc.coarse)
		}
	}
}

func TestPixelFeatures(t *testing.T) {
	const w, h = 96, 64
	img := datasets.PhotoRGB(w, h)
	f, err := PixelFeatures(img, w, h, 500, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 500*Features {
		t.Fatalf("%d values, want 500×%d", len(f), Features)
	}
	lo := []float32{0, 0, 0, -128, -128, 0, 0}
	hi := []float32{1, 1, 100, 128, 128, 50, 3}
	for i, v := range f {
		if j := i % Features; !(v >= lo[j] && v <= hi[j]) || (j == 6 && v != float32(int(v))) {
			t.Fatalf("sample %d, feature %d = %g, outside [%g, %g]", i/Features, j, v, lo[j], hi[j])
		}
	}
	again, _ := PixelFeatures(img, w, h, 500, 3)
	other, _ := PixelFeatures(img, w, h, 500, 4)
	if !slices.Equal(f, again) || slices.Equal(f, other) {
		t.Error("samples are not a function of the seed")
	}
	all, err := PixelFeatures(img, w, h, 0, 3)
	if err != nil || len(all) != w*h*Features || all[0] != 0.5/w || all[1] != 0.5/h || all[Features] != 1.5/w {
		t.Errorf("all pixels: %d values, first rows %v (%v)", len(all), all[:2*Features], err)
	}
}

// TestExtract: a signature of PhotoRGB is deterministic, with 1 to k
// centroids whose weights sum to 1, at distance 0 from itself and not from
// the signature of the mirrored image.
func TestExtract(t *testing.T) {
	const w, h, k = 96, 64, 8
	img := datasets.PhotoRGB(w, h)
	flip := slices.Clone(img)
	for y := range h {
		for x := range w {
			copy(flip[3*(y*w+x):][:3], img[3*(y*w+w-1-x):][:3])
		}
	}
	s, err := Extract(img, w, h, k, 3000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s) / (Features + 1); len(s)%(Features+1) != 0 || n < 1 || n > k {
		t.Fatalf("%d values: not 1 to %d centroids", len(s), k)
	}
	var sum float64
	for i := Features; i < len(s); i += Features + 1 {
		sum += float64(s[i])
	}
	if math.Abs(sum-1) > 1e-6 {
		t.Errorf("weights sum to %v", sum)
	}
	again, _ := Extract(img, w, h, k, 3000, 1)
	if !slices.Equal(s, again) {
		t.Error("Extract is not deterministic")
	}
	f, err := Extract(flip, w, h, k, 3000, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, kern := range []Kernel{{Gaussian, 1e-3}, {Heuristic, 1}} {
		self, _ := Distance(s, s, Features, kern)
		d, err := Distance(s, f, Features, kern)
		if err != nil || self != 0 || !(d > 0) {
			t.Errorf("%v: SQFD to itself %v, to the mirror image %v (%v)", kern.Sim, self, d, err)
		}
		t.Logf("%v: SQFD(photo, mirrored photo) = %.4g", kern.Sim, d)
	}
	// More clusters than pixels: one centroid per pixel.
	if tiny, err := Extract(img[:6], 2, 1, k, 0, 1); err != nil || len(tiny) != 2*(Features+1) {
		t.Errorf("2 pixels, k = %d: %v (%v)", k, tiny, err)
	}
}

func TestFeatureErrors(t *testing.T) {
	img := make([]float32, 3*4*2)
	bad := slices.Clone(img)
	bad[3*5+2] = 1.5
	nan := slices.Clone(img)
	nan[4] = float32(math.NaN())
	for _, tc := range []struct {
		rgb     []float32
		w, h, k int
		want    string
	}{
		{img, 0, 2, 1, "image of 0×2 pixels"},
		{img, 4, 3, 1, "24 values for a 4×3 RGB image (want 36)"},
		{bad, 4, 2, 1, "pixel (1, 1), channel 2 is 1.5, outside [0, 1]"},
		{nan, 4, 2, 1, "pixel (1, 0), channel 1 is NaN"},
		{img, 4, 2, 0, "k = 0 clusters"},
	} {
		_, err := Extract(tc.rgb, tc.w, tc.h, tc.k, 0, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Extract(%d×%d, k = %d): %v, want %q", tc.w, tc.h, tc.k, err, tc.want)
		}
	}
}
