package warps

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda"
	"gpulab/engine/opencl"
)

// The "filter" suite: the guide's image-filtering case study. A 5×5 Gaussian
// blur and a Sobel magnitude, each read through the texture path (an OpenCL
// image2d_t with a clamp-to-edge sampler; a CUDA texture object with clamp
// addressing) and through plain buffer loads with the clamp in the kernel.
// Every variant is checked against a Go reference with the same
// clamp-to-edge border. Sizes are "WxH", e.g. "1024x768".

func init() {
	bench.Register(bench.Suite{
		Name: "filter",
		Doc:  "5×5 Gaussian blur and Sobel: images/textures with hardware borders vs buffers with clamped loads",
		Sizes: func(dev engine.Info) []string {
			if cpuLikeOpenCL(dev) {
				return []string{"512x512"}
			}
			return []string{"4096x4096"}
		},
		Cases: filterCases,
	})
}

// cpuLikeOpenCL reports whether dev is an OpenCL device of CPU type (PoCL),
// which engine.Devices marks by giving it the host CPU's peaks.
func cpuLikeOpenCL(dev engine.Info) bool {
	return dev.Kind == engine.OpenCL && (strings.Contains(dev.PeakNote, "host CPU") ||
		strings.Contains(strings.ToLower(dev.Name), "pthread") || strings.Contains(strings.ToLower(dev.Platform), "portable computing"))
}

// filterVariants are the kernels of each backend: image/texture first, then
// the buffer version of the same filter.
var filterVariants = map[engine.Kind][]string{
	engine.OpenCL: {"blur_image", "blur_buffer", "sobel_image", "sobel_buffer"},
	engine.CUDA:   {"blur_texture", "blur_plain", "sobel_texture", "sobel_plain"},
}

// FilterVariants lists the variants that FilterImage accepts on a device kind.
func FilterVariants(kind engine.Kind) []string { return slices.Clone(filterVariants[kind]) }

// filterTol is the largest relative error (against max(|want|, 1)) accepted:
// the kernels may fuse multiply-adds and OpenCL's sqrt may be 3 ulp off.
const filterTol = 1e-4

// parseImageSize parses "WxH".
func parseImageSize(s string) (w, h int, err error) {
	if _, err := fmt.Sscanf(strings.ToLower(s), "%dx%d", &w, &h); err != nil || w <= 0 || h <= 0 ||
		fmt.Sprintf("%dx%d", w, h) != strings.ToLower(s) {
		return 0, 0, fmt.Errorf("warps: filter size %q: want WIDTHxHEIGHT with positive sizes, e.g. \"1024x768\"", s)
	}
	if float64(w)*float64(h) > 1<<30 { // in float64: no product overflows
		return 0, 0, fmt.Errorf("warps: filter size %q: at most 1G pixels (kernels index with 32-bit ints)", s)
	}
	return w, h, nil
}

// filterRig holds one image on one device: the input read the two ways, the
// output buffer and the kernels.
type filterRig struct {
	g       *gpu
	w, h    int
	in      buffer // the buffer variants' input (rows pitch elements apart); on CUDA also the texture's memory
	pitch   int    // elements
	out     buffer
	clImg   *opencl.Image
	cuTex   *cuda.Texture
	texErr  error // why the image/texture could not be made
	kernels map[string]kernel
}

// newFilterRig uploads img (w×h, row-major) to dev and compiles the kernels.
func newFilterRig(dev *engine.Device, img []float32, w, h int) (*filterRig, error) {
	if w <= 0 || h <= 0 || len(img) != w*h {
		return nil, fmt.Errorf("warps: filter: image of %d values is not %d×%d", len(img), w, h)
	}
	g, err := newGPU(dev)
	if err != nil {
		return nil, err
	}
	r := &filterRig{g: g, w: w, h: h, pitch: w, kernels: map[string]kernel{}}
	fail := func(err error) (*filterRig, error) {
		r.close()
		return nil, err
	}
	if g.cu != nil {
		pitchBytes, err := g.cu.TexturePitch(w)
		if err != nil {
			return fail(err)
		}
		r.pitch = pitchBytes / 4
		padded := make([]float32, r.pitch*h)
		for y := range h {
			copy(padded[y*r.pitch:y*r.pitch+w], img[y*w:(y+1)*w])
		}
		if r.in, err = upload(g, padded); err != nil {
			return fail(err)
		}
		r.cuTex, r.texErr = g.cu.NewTexture2D(r.in.cu, w, h, pitchBytes)
	} else {
		if r.in, err = upload(g, img); err != nil {
			return fail(err)
		}
		r.clImg, r.texErr = g.cl.NewImage2D(w, h, img)
	}
	if r.out, err = g.alloc(w * h); err != nil {
		return fail(err)
	}
	for _, v := range filterVariants[g.kind] {
		if r.kernels[v], err = g.kernel("filter", v); err != nil {
			return fail(err)
		}
	}
	return r, nil
}

func (r *filterRig) close() {
	if r.cuTex != nil {
		r.cuTex.Destroy()
	}
	if r.clImg != nil {
		r.clImg.Release()
	}
	r.g.close()
}

// run launches one variant over the image in 16×16 work-groups.
func (r *filterRig) run(variant string) (time.Duration, error) {
	k, ok := r.kernels[variant]
	if !ok {
		return 0, fmt.Errorf("warps: filter: unknown variant %q on %s (have: %s)", variant, r.g.kind, strings.Join(filterVariants[r.g.kind], ", "))
	}
	global := []int{roundUp(r.w, 16), roundUp(r.h, 16)}
	local := []int{16, 16}
	if strings.HasSuffix(variant, "_image") || strings.HasSuffix(variant, "_texture") {
		if r.texErr != nil {
			return 0, r.texErr
		}
		var src any = r.clImg
		if r.cuTex != nil {
			src = r.cuTex
		}
		return r.g.launch(k, global, local, 0, src, r.out, r.w, r.h)
	}
	return r.g.launch(k, global, local, 0, r.in, r.out, r.w, r.h, r.pitch)
}

// clearOut zeroes the output.
func (r *filterRig) clearOut() error {
	zeros := make([]float32, r.w*r.h)
	if r.g.cu != nil {
		return cuda.CopyHtoD(r.out.cu, zeros)
	}
	return opencl.WriteSlice(r.g.cl, r.out.cl, zeros)
}

// FilterImage runs one variant ("blur_image", "sobel_buffer" ... on OpenCL;
// "blur_texture", "sobel_plain" ... on CUDA) on img (w×h, row-major) and
// returns the filtered image and the kernel's device time (the second of two
// runs, so that compilation and first-touch costs are left out).
func FilterImage(dev *engine.Device, variant string, img []float32, w, h int) ([]float32, time.Duration, error) {
	if dev == nil {
		return nil, 0, fmt.Errorf("warps: filter: nil device")
	}
	if !slices.Contains(filterVariants[dev.Kind], variant) {
		return nil, 0, fmt.Errorf("warps: filter: unknown variant %q on %s (have: %s)", variant, dev.ID, strings.Join(filterVariants[dev.Kind], ", "))
	}
	r, err := newFilterRig(dev, img, w, h)
	if err != nil {
		return nil, 0, err
	}
	defer r.close()
	if _, err := r.run(variant); err != nil {
		return nil, 0, err
	}
	d, err := r.run(variant)
	if err != nil {
		return nil, 0, err
	}
	out, err := r.g.read(r.out, w*h)
	return out, d, err
}

// filterCheck refuses an image of w×h that dev cannot hold: on the host the
// image, the blur and Sobel references, the zeros that reset the output and
// the output read back, plus on CUDA the image with rows padded to the
// texture pitch; on the device the input buffer (padded on CUDA), the output
// and, on OpenCL, the image object.
func filterCheck(dev *engine.Device, size string, w, h int) error {
	px := uint64(w) * uint64(h)
	if dev.Kind != engine.CUDA {
		return checkArrays(dev, "filter", size, 5*px, 3*px,
			"the image, the blur and Sobel references, the zeros that reset the output and the output read back",
			"the input buffer, the image object and the output")
	}
	pitchBytes, err := dev.CUDA.TexturePitch(w)
	if err != nil {
		return err
	}
	padded := uint64(pitchBytes/4) * uint64(h)
	return checkArrays(dev, "filter", size, 5*px+padded, px+padded,
		"the image, its copy with rows padded to the texture pitch, the blur and Sobel references, the zeros that reset the output and the output read back",
		"the padded input (the texture's memory) and the output")
}

func filterCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	w, h, err := parseImageSize(size)
	if err != nil {
		return nil, nil, err
	}
	if err := filterCheck(dev, size, w, h); err != nil {
		return nil, nil, err
	}
	img := datasets.Photo(w, h) // deterministic: gradients, discs, a building, noise
	r, err := newFilterRig(dev, img, w, h)
	if err != nil {
		return nil, nil, err
	}
	want := map[string][]float32{"blur": BlurRef(img, w, h), "sobel": SobelRef(img, w, h)}
	vs := filterVariants[dev.Kind]
	var cases []bench.Case
	for i, v := range vs {
		filter, _, _ := strings.Cut(v, "_")
		c := bench.Case{
			Variant:  v,
			Params:   bench.Params{"filter": filter, "width": w, "height": h, "path": map[bool]string{true: "image", false: "buffer"}[i%2 == 0]},
			Baseline: v == vs[1], // blur_buffer / blur_plain
			Bytes:    8 * float64(w*h),
			Reset:    r.clearOut,
			Run:      func() (time.Duration, error) { return r.run(v) },
			Check: func() (bench.Checked, error) {
				got, err := r.g.read(r.out, w*h)
				if err != nil {
					return bench.Checked{}, err
				}
				return bench.Compare(got, want[filter]), nil
			},
			Tol: filterTol,
		}
		if filter == "blur" {
			c.Flops = 60 * float64(w*h) // 30 multiplies and 30 adds per pixel
		} else {
			c.Flops = 18 * float64(w*h) // 4 doublings, 10 adds/subtracts, 3 for gx²+gy², 1 sqrt
			c.CompareWith = vs[3]       // sobel_image against sobel_buffer; sobel_buffer against itself
		}
		cases = append(cases, c)
	}
	return cases, r.close, nil
}

// gaussW are the 5-tap weights [1 4 6 4 1]/16 of the blur.
var gaussW = [5]float32{0.0625, 0.25, 0.375, 0.25, 0.0625}

// clampAt reads img at (x, y) clamped to the edge.
func clampAt(img []float32, w, h, x, y int) float32 {
	return img[min(max(y, 0), h-1)*w+min(max(x, 0), w-1)]
}

// BlurRef is the 5×5 Gaussian blur of img with clamp-to-edge borders, summed
// in the kernels' order.
func BlurRef(img []float32, w, h int) []float32 {
	out := make([]float32, w*h)
	cpu.Parallel(h, 1, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			for x := range w {
				var acc float32
				for j := range 5 {
					var row float32
					for i := range 5 {
						row += gaussW[i] * clampAt(img, w, h, x+i-2, y+j-2)
					}
					acc += gaussW[j] * row
				}
				out[y*w+x] = acc
			}
		}
	})
	return out
}

// SobelRef is the Sobel gradient magnitude of img with clamp-to-edge borders.
func SobelRef(img []float32, w, h int) []float32 {
	out := make([]float32, w*h)
	cpu.Parallel(h, 1, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			for x := range w {
				p := func(dx, dy int) float32 { return clampAt(img, w, h, x+dx, y+dy) }
				gx := (p(1, -1) + 2*p(1, 0) + p(1, 1)) - (p(-1, -1) + 2*p(-1, 0) + p(-1, 1))
				gy := (p(-1, 1) + 2*p(0, 1) + p(1, 1)) - (p(-1, -1) + 2*p(0, -1) + p(1, -1))
				out[y*w+x] = float32(math.Sqrt(float64(gx*gx + gy*gy)))
			}
		}
	})
	return out
}

// GrayPNG encodes a w×h grayscale image of values in [0, 1] (clamped; NaN is
// black) as an 8-bit PNG.
func GrayPNG(img []float32, w, h int) ([]byte, error) {
	if w <= 0 || h <= 0 || len(img) != w*h {
		return nil, fmt.Errorf("warps: gray PNG: %d values is not a %d×%d image", len(img), w, h)
	}
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range img {
		if !(v > 0) {
			v = 0
		}
		g.Pix[i/w*g.Stride+i%w] = color.Gray{Y: uint8(math.Round(float64(min(v, 1)) * 255))}.Y
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, g); err != nil {
		return nil, fmt.Errorf("warps: gray PNG: %w", err)
	}
	return buf.Bytes(), nil
}
