package datasets

import (
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPhoto(t *testing.T) {
	a := Photo(160, 120)
	if len(a) != 160*120 {
		t.Fatalf("len %d", len(a))
	}
	if !slices.Equal(a, Photo(160, 120)) {
		t.Error("Photo is not deterministic")
	}
	lo, hi, edges := float32(1), float32(0), 0
	for y := range 120 {
		for x := range 160 {
			v := a[y*160+x]
			if v < 0 || v > 1 || math.IsNaN(float64(v)) {
				t.Fatalf("(%d,%d) = %v outside [0,1]", x, y, v)
			}
			lo, hi = min(lo, v), max(hi, v)
			if x > 0 && math.Abs(float64(v-a[y*160+x-1])) > 0.3 {
				edges++
			}
		}
	}
	if hi-lo < 0.6 || edges < 50 {
		t.Errorf("a dull picture: range [%v, %v], %d hard edges", lo, hi, edges)
	}
	if Photo(0, 5) != nil {
		t.Error("Photo(0, 5) is not nil")
	}
}

func TestLoadGray(t *testing.T) {
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(0, 0, color.White)
	img.Set(1, 0, color.RGBA{255, 0, 0, 255})
	img.Set(2, 1, color.RGBA{0, 0, 255, 255})
	for _, name := range []string{"a.png", "a.jpg"} {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".png") {
			err = png.Encode(f, img)
		} else {
			err = jpeg.Encode(f, img, &jpeg.Options{Quality: 100})
		}
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		g, w, h, err := LoadGray(p)
		if err != nil || w != 3 || h != 2 {
			t.Fatalf("%s: %d×%d, %v", name, w, h, err)
		}
		tol := 1e-6
		if strings.HasSuffix(name, ".jpg") {
			tol = 0.15 // chroma subsampling smears the colours of a 3×2 image
		}
		for i, want := range []float64{1, 0.299, 0, 0, 0, 0.114} {
			if math.Abs(float64(g[i])-want) > tol {
				t.Errorf("%s: pixel %d = %v, want %v", name, i, g[i], want)
			}
		}
	}
	if _, _, _, err := LoadGray(filepath.Join(dir, "missing.png")); err == nil || !strings.Contains(err.Error(), "missing.png: no such file") {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "bad.png"), []byte("not an image"), 0o644)
	if _, _, _, err := LoadGray(filepath.Join(dir, "bad.png")); err == nil || !strings.Contains(err.Error(), "not a PNG or JPEG") {
		t.Errorf("bad file: %v", err)
	}
}
