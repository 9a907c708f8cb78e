package warps

import (
	"bytes"
	"image/png"
	"os"
	"strings"
	"testing"
)

func TestNDRangePNG(t *testing.T) {
	b, err := NDRangePNG([2]int{32, 16}, [2]int{8, 4}, 24)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s := img.Bounds().Size(); s.X != 32*24 || s.Y != 16*24 {
		t.Errorf("size %v, want 768×384", s)
	}
	// Two work-items of different groups get different fills; two of the same group the same.
	at := func(x, y int) [3]uint32 {
		r, g, b, _ := img.At(x*24+5, y*24+5).RGBA()
		return [3]uint32{r, g, b}
	}
	if at(0, 0) != at(1, 1) || at(0, 0) == at(8, 0) || at(0, 0) == at(0, 4) {
		t.Errorf("group colours: %v %v %v %v", at(0, 0), at(1, 1), at(8, 0), at(0, 4))
	}
	if os.Getenv("NDRANGE_PNG") != "" {
		os.WriteFile(os.Getenv("NDRANGE_PNG"), b, 0o644)
	}
	if _, err := NDRangePNG([2]int{5, 3}, [2]int{5, 1}, 4); err != nil {
		t.Errorf("small picture: %v", err)
	}
	for _, tc := range []struct {
		global, local [2]int
		cell          int
		want          string
	}{
		{[2]int{32, 16}, [2]int{6, 4}, 10, "[6 4] does not divide global size [32 16]"},
		{[2]int{32, 16}, [2]int{8, 0}, 10, "[32 16] and local [8 0] sizes must be positive"},
		{[2]int{-32, 16}, [2]int{8, 4}, 10, "must be positive"},
		{[2]int{32, 16}, [2]int{8, 4}, 2, "too small"},
		{[2]int{4096, 16}, [2]int{8, 4}, 10, "more than"},
	} {
		if _, err := NDRangePNG(tc.global, tc.local, tc.cell); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("global %v local %v cell %d: %v, want %q", tc.global, tc.local, tc.cell, err, tc.want)
		}
	}
}
