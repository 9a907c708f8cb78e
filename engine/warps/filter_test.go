package warps

import (
	"bytes"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
)

func TestFilterReference(t *testing.T) {
	// A constant image stays constant under the blur and has no edges, even at
	// the border (clamp-to-edge); a step has its Sobel response on the step.
	const w, h = 9, 7
	img := make([]float32, w*h)
	for i := range img {
		img[i] = 0.5
	}
	for i, v := range BlurRef(img, w, h) {
		if v != 0.5 {
			t.Fatalf("blur of a constant: pixel %d = %v", i, v)
		}
	}
	for i := range img {
		if i%w >= 4 {
			img[i] = 1
		}
	}
	s := SobelRef(img, w, h)
	for y := range h {
		for x := range w {
			want := float32(0)
			if x == 3 || x == 4 {
				want = 2 // (1+2+1)·0.5
			}
			if s[y*w+x] != want {
				t.Errorf("sobel at (%d,%d) = %v, want %v", x, y, s[y*w+x], want)
			}
		}
	}
}

func TestFilterImage(t *testing.T) {
	const w, h = 67, 45 // not multiples of the 16×16 work-group
	img := datasets.Photo(w, h)
	want := map[string][]float32{"blur": BlurRef(img, w, h), "sobel": SobelRef(img, w, h)}
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		for _, v := range FilterVariants(dev.Kind) {
			got, d, err := FilterImage(dev, v, img, w, h)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			filter, _, _ := strings.Cut(v, "_")
			if c := bench.Compare(got, want[filter]); c.MaxRelErr > filterTol {
				t.Errorf("%s: max rel err %g at %d (got %v, want %v)", v, c.MaxRelErr, c.Worst, c.Got, c.Want)
			}
			if d <= 0 {
				t.Errorf("%s: time %v", v, d)
			}
		}
		if _, _, err := FilterImage(dev, "blur_magic", img, w, h); err == nil || !strings.Contains(err.Error(), "unknown variant") {
			t.Errorf("unknown variant: %v", err)
		}
		if _, _, err := FilterImage(dev, FilterVariants(dev.Kind)[0], img, w, h+1); err == nil {
			t.Error("a short image was accepted")
		}
	})
}

func TestFilterSuite(t *testing.T) {
	suite, err := bench.Lookup("filter")
	if err != nil {
		t.Fatal(err)
	}
	if got := suite.Sizes(engine.Info{Kind: engine.CUDA}); len(got) != 1 || got[0] != "4096x4096" {
		t.Errorf("CUDA sizes %v", got)
	}
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		if cpuLikeOpenCL(dev.Info) {
			if got := suite.Sizes(dev.Info); got[0] != "512x512" {
				t.Errorf("sizes on %s: %v", dev.Name, got)
			}
		}
		size := "160x96"
		if s := os.Getenv("FILTER_SIZE"); s != "" {
			size = s
		}
		recs, err := bench.Run(suite, dev, []string{size}, bench.Options{Warmup: 1, MinReps: 3, MaxReps: 20, MinTime: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := bench.Failed(recs); err != nil {
			t.Fatal(err)
		}
		if len(recs) != 4 {
			t.Fatalf("%d records", len(recs))
		}
		for _, r := range recs {
			t.Logf("%s %s: median %.3f ms, %.2f GB/s, speedup %.2f over %s", r.Size, r.Variant, r.MedianMS, r.GBps, r.Speedup, r.Baseline)
		}
		if _, _, err := suite.Cases(dev, "12by5"); err == nil || !strings.Contains(err.Error(), "WIDTHxHEIGHT") {
			t.Errorf("bad size: %v", err)
		}
	})
}

func TestParseImageSize(t *testing.T) {
	if w, h, err := parseImageSize("1024x768"); err != nil || w != 1024 || h != 768 {
		t.Errorf("1024x768: %d %d %v", w, h, err)
	}
	for _, s := range []string{"", "1024", "0x5", "5x-1", "3x4x5", "axb", "32769x32769", "4294967296x4294967296"} { // the last two: more than 1G pixels, and 2^64 (0 in int arithmetic)
		if _, _, err := parseImageSize(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestGrayPNG(t *testing.T) {
	b, err := GrayPNG([]float32{0, 0.5, 1, 2, -1, float32(0)}, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s := img.Bounds().Size(); s.X != 3 || s.Y != 2 {
		t.Errorf("size %v", s)
	}
	for i, want := range []uint32{0, 128, 255, 255, 0, 0} {
		r, _, _, _ := img.At(i%3, i/3).RGBA()
		if r>>8 != want {
			t.Errorf("pixel %d = %d, want %d", i, r>>8, want)
		}
	}
	if _, err := GrayPNG(make([]float32, 5), 3, 2); err == nil {
		t.Error("5 values made a 3×2 PNG")
	}
}
