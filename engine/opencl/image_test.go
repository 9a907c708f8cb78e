package opencl_test

import (
	"strings"
	"testing"

	"gpulab/engine/opencl"
)

// shiftSource reads the pixel at (x+dx, y+dy) through a clamp-to-edge sampler,
// so that reads off the image return the nearest edge pixel.
const shiftSource = `
__constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;
__kernel void shift(read_only image2d_t img, __global float *out, const int w, const int h, const int dx, const int dy) {
	int x = get_global_id(0), y = get_global_id(1);
	if (x < w && y < h) {
		out[y * w + x] = read_imagef(img, s, (int2)(x + dx, y + dy)).x;
	}
}
`

func TestImage2D(t *testing.T) {
	c := newContext(t)
	const w, h = 13, 7
	data := make([]float32, w*h)
	for i := range data {
		data[i] = float32(i) * 0.5
	}
	img, err := c.NewImage2D(w, h, data)
	if err != nil {
		if strings.Contains(err.Error(), "no image support") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer img.Release()
	if img.Width() != w || img.Height() != h {
		t.Errorf("size %d×%d", img.Width(), img.Height())
	}
	prog, err := c.Build(shiftSource, "")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("shift")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Alloc(4 * w * h)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	clamp := func(v, n int) int { return min(max(v, 0), n-1) }
	for _, d := range [][2]int{{0, 0}, {-2, 1}, {3, -4}} {
		ev, err := c.Launch(k, []int{16, 8}, []int{8, 4}, img, out, int32(w), int32(h), int32(d[0]), int32(d[1]))
		if err != nil {
			t.Fatal(err)
		}
		ev.Release()
		got := make([]float32, w*h)
		if err := opencl.ReadSlice(c, out, got); err != nil {
			t.Fatal(err)
		}
		for y := range h {
			for x := range w {
				want := data[clamp(y+d[1], h)*w+clamp(x+d[0], w)]
				if got[y*w+x] != want {
					t.Fatalf("shift %v: (%d,%d) = %v, want %v", d, x, y, got[y*w+x], want)
				}
			}
		}
	}
	img.Release()
	img.Release() // twice is fine
	if _, err := c.Launch(k, []int{16, 8}, []int{8, 4}, img, out, int32(w), int32(h), int32(0), int32(0)); err == nil || !strings.Contains(err.Error(), "image released") {
		t.Errorf("launch with a released image: %v", err)
	}
}

func TestImage2DErrors(t *testing.T) {
	c := newContext(t)
	for _, tc := range []struct {
		w, h, n int
		want    string
	}{{0, 4, 0, "positive"}, {4, -1, 4, "positive"}, {4, 4, 15, "got 15 floats, want 16"}} {
		_, err := c.NewImage2D(tc.w, tc.h, make([]float32, tc.n))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d×%d with %d floats: %v, want %q", tc.w, tc.h, tc.n, err, tc.want)
		}
	}
}
