package datasets

import (
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPhotoRGB(t *testing.T) {
	const w, h = 160, 120
	a := PhotoRGB(w, h)
	if len(a) != w*h*3 {
		t.Fatalf("len %d, want %d", len(a), w*h*3)
	}
	if !slices.Equal(a, PhotoRGB(w, h)) {
		t.Error("PhotoRGB is not deterministic")
	}
	for i, v := range a {
		if !(v >= 0 && v <= 1) {
			t.Fatalf("value %d = %v outside [0,1]", i, v)
		}
	}
	// px returns the colour at a fraction (fx, fy) of the width and height.
	px := func(fx, fy float64) []float32 {
		i := 3 * (int(fy*h)*w + int(fx*w))
		return a[i : i+3]
	}
	for _, tc := range []struct {
		name   string
		fx, fy float64
		ok     func(r, g, b float32) bool
	}{
		{"sun, yellow", 0.78, 0.22, func(r, g, b float32) bool { return r > b+0.4 && g > b+0.4 }},
		{"sky, blue", 0.05, 0.05, func(r, g, b float32) bool { return b > r+0.3 && b > g+0.2 }},
		{"ground, green or brown", 0.05, 0.95, func(r, g, b float32) bool { return g > b+0.1 }},
		{"building wall, red", 0.525, 0.45, func(r, g, b float32) bool { return r > g+0.3 && r > b+0.3 }},
		{"boulder, grey", 0.25, 0.70, func(r, g, b float32) bool { return max(r, g, b)-min(r, g, b) < 0.08 }},
	} {
		if c := px(tc.fx, tc.fy); !tc.ok(c[0], c[1], c[2]) {
			t.Errorf("%s at (%v, %v): RGB %v", tc.name, tc.fx, tc.fy, c)
		}
	}
	if PhotoRGB(0, 5) != nil || PhotoRGB(5, -1) != nil {
		t.Error("PhotoRGB of a non-positive size is not nil")
	}
}

func TestWritePNGLoadRGB(t *testing.T) {
	dir := t.TempDir()
	const w, h = 37, 23
	src := PhotoRGB(w, h)
	src[0], src[1] = -0.5, 1.5 // clamped to 0 and 1
	p := filepath.Join(dir, "p.png")
	if err := WritePNG(p, src, w, h); err != nil {
		t.Fatal(err)
	}
	got, gw, gh, err := LoadRGB(p)
	if err != nil || gw != w || gh != h || len(got) != len(src) {
		t.Fatalf("LoadRGB: %d×%d, %d values, %v", gw, gh, len(got), err)
	}
	for i := range src {
		want := math.Min(1, math.Max(0, float64(src[i])))
		if d := math.Abs(float64(got[i]) - want); d > 1.0/255 {
			t.Fatalf("value %d: wrote %v, read %v", i, src[i], got[i])
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files, want only p.png", len(entries))
	}
	for _, tc := range []struct {
		name string
		rgb  []float32
		w, h int
		want string
	}{
		{"short", make([]float32, 5), 2, 1, "q.png: want w, h > 0 and len(rgb) = w × h × 3, got 2 × 1 and len 5"},
		{"zero size", nil, 0, 0, "got 0 × 0 and len 0"},
		{"NaN", []float32{0, 0, 0, 0, float32(math.NaN()), 0}, 2, 1, "q.png: pixel (1, 0) channel G is NaN"},
	} {
		q := filepath.Join(dir, "q.png")
		if err := WritePNG(q, tc.rgb, tc.w, tc.h); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: WritePNG error %v, want %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(q); !os.IsNotExist(err) {
			t.Errorf("%s: WritePNG left a file: %v", tc.name, err)
		}
	}
}

func TestLoadRGB(t *testing.T) {
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for i := range 16 * 16 {
		img.Set(i%16, i/16, color.RGBA{200, 40, 90, 255})
	}
	p := filepath.Join(dir, "a.jpg")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	err = jpeg.Encode(f, img, &jpeg.Options{Quality: 100})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	got, w, h, err := LoadRGB(p)
	if err != nil || w != 16 || h != 16 {
		t.Fatalf("JPEG: %d×%d, %v", w, h, err)
	}
	for k, want := range []float64{200.0 / 255, 40.0 / 255, 90.0 / 255} {
		if d := math.Abs(float64(got[3*40+k]) - want); d > 0.03 {
			t.Errorf("JPEG: channel %d = %v, want %v", k, got[3*40+k], want)
		}
	}
	if _, _, _, err := LoadRGB(filepath.Join(dir, "missing.png")); err == nil || !strings.Contains(err.Error(), "missing.png: no such file") {
		t.Errorf("missing file: %v", err)
	}
	bad := writeTemp(t, "bad.png", []byte("not an image"))
	if _, _, _, err := LoadRGB(bad); err == nil || !strings.Contains(err.Error(), "bad.png: not a PNG or JPEG") {
		t.Errorf("bad file: %v", err)
	}
}
