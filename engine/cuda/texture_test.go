package cuda

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// TestTextureDescLayout checks the descriptor bytes against the cuda.h 13.0
// offsets on 64-bit Linux; it needs no GPU.
func TestTextureDescLayout(t *testing.T) {
	res := pitch2DResourceDesc(0x7f0012345600, 640, 480, 2560)
	if unsafe.Sizeof(*res) != 144 {
		t.Fatalf("CUDA_RESOURCE_DESC is %d bytes, want 144", unsafe.Sizeof(*res))
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&res[0])), 144)
	le := binary.LittleEndian
	for _, f := range []struct {
		name string
		off  int
		size int
		want uint64
	}{{"resType", 0, 4, 3}, {"padding", 4, 4, 0}, {"devPtr", 8, 8, 0x7f0012345600}, {"format", 16, 4, 0x20},
		{"numChannels", 20, 4, 1}, {"width", 24, 8, 640}, {"height", 32, 8, 480}, {"pitchInBytes", 40, 8, 2560},
		{"flags", 136, 4, 0}} {
		var got uint64
		if f.size == 4 {
			got = uint64(le.Uint32(b[f.off:]))
		} else {
			got = le.Uint64(b[f.off:])
		}
		if got != f.want {
			t.Errorf("CUDA_RESOURCE_DESC.%s at %d = %#x, want %#x", f.name, f.off, got, f.want)
		}
	}
	for i := 48; i < 144; i++ {
		if b[i] != 0 {
			t.Errorf("CUDA_RESOURCE_DESC byte %d = %#x, want 0", i, b[i])
		}
	}

	tex := clampPointTextureDesc()
	if unsafe.Sizeof(*tex) != 104 {
		t.Fatalf("CUDA_TEXTURE_DESC is %d bytes, want 104", unsafe.Sizeof(*tex))
	}
	tb := unsafe.Slice((*byte)(unsafe.Pointer(&tex[0])), 104)
	for i, want := range []uint32{1, 1, 1, 0, 0, 0, 0, math.Float32bits(0)} {
		if got := le.Uint32(tb[4*i:]); got != want {
			t.Errorf("CUDA_TEXTURE_DESC word at %d = %d, want %d", 4*i, got, want)
		}
	}
	for i := 12; i < 104; i++ {
		if tb[i] != 0 {
			t.Errorf("CUDA_TEXTURE_DESC byte %d = %#x, want 0", i, tb[i])
		}
	}
}

const texShiftSrc = `
extern "C" __global__ void shift(cudaTextureObject_t tex, float* out, int w, int h, int dx, int dy) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + dx + 0.5f, y + dy + 0.5f);
}`

// TestTexture2D reads a pitched image through a clamp-to-edge texture.
func TestTexture2D(t *testing.T) {
	c := gpu(t)
	const w, h = 37, 11
	pitch, err := c.TexturePitch(w)
	if err != nil {
		t.Fatal(err)
	}
	if pitch < 4*w {
		t.Fatalf("TexturePitch(%d) = %d", w, pitch)
	}
	host := make([]float32, pitch/4*h)
	for y := range h {
		for x := range w {
			host[y*pitch/4+x] = float32(y*w + x)
		}
	}
	buf, err := Upload(c, host)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	if _, err := c.NewTexture2D(buf, w, h, 4*w+4); err == nil || !strings.Contains(err.Error(), "alignment") {
		if 4*w+4 != pitch { // the odd pitch happens to be aligned only on an exotic device
			t.Errorf("unaligned pitch: %v", err)
		}
	}
	if _, err := c.NewTexture2D(buf, w, h+1, pitch); err == nil {
		t.Error("a texture taller than its buffer was made")
	}
	tex, err := c.NewTexture2D(buf, w, h, pitch)
	if err != nil {
		t.Fatal(err)
	}
	if tex.Handle() == 0 {
		t.Error("zero handle")
	}
	mod, err := c.Compile(Source{Name: "texshift.cu", Code: texShiftSrc})
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("shift")
	if err != nil {
		t.Fatal(err)
	}
	out, err := AllocSlice[float32](c, w*h)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	clamp := func(v, n int) int { return min(max(v, 0), n-1) }
	for _, d := range [][2]int{{0, 0}, {-3, 2}, {5, -7}} {
		cfg := LaunchConfig{Grid: Dim3{X: (w + 15) / 16, Y: (h + 15) / 16, Z: 1}, Block: Dim3{X: 16, Y: 16, Z: 1}}
		if err := fn.Launch(cfg, tex, out, w, h, d[0], d[1]); err != nil {
			t.Fatal(err)
		}
		got, err := Download[float32](out, w*h)
		if err != nil {
			t.Fatal(err)
		}
		for y := range h {
			for x := range w {
				if want := float32(clamp(y+d[1], h)*w + clamp(x+d[0], w)); got[y*w+x] != want {
					t.Fatalf("shift %v: (%d,%d) = %v, want %v", d, x, y, got[y*w+x], want)
				}
			}
		}
	}
	if err := tex.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := tex.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if err := fn.Launch(LaunchConfig{Grid: Dim3{X: 1, Y: 1, Z: 1}, Block: Dim3{X: 1, Y: 1, Z: 1}}, tex, out, w, h, 0, 0); err == nil {
		t.Error("launch with a destroyed texture succeeded")
	}
}
