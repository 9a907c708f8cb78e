package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gpulab/engine"
	"gpulab/engine/cluster/kmeans"
	"gpulab/engine/cuda"
	"gpulab/engine/gemm"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// kmeans/assign: the assignment step of k-means (notebook 04), a thread or
// work-item per point: labels[i] = the nearest center, dist[i] = the squared
// distance to it. The reference is step 01 of the k-means ladder (CUDA, or
// its OpenCL twin), and the Go CPU assignment is timed next to it.
func init() {
	register(Exercise{
		Name: "kmeans/assign",
		Doc:  "k-means assignment: assign_naive(x, centers, n, d, k, labels, dist), a thread per point (step 01 of notebook 04)",
		Flavors: []Flavor{
			{Lang: LangCUDA, Solution: func() (string, error) { return kernels.CUDA(assignStep) }, devices: cudaDevices,
				check: func(dev *engine.Device, src string) Result {
					return checkAssign(cudaAssign(dev.CUDA), src, assignTiming(false))
				}},
			{Lang: LangOpenCL, Solution: func() (string, error) { return kernels.OpenCL(assignStep) }, devices: openCLDevices,
				check: func(dev *engine.Device, src string) Result {
					return checkAssign(openCLAssign(dev.OpenCL), src, assignTiming(isPoCL(dev.Info)))
				}},
		},
	})
}

const (
	assignStep   = "kmeans/01_naive" // the reference kernel, in both families
	assignKernel = "assign_naive"    // its entry point, which the student's kernel keeps
	assignBlock  = 256               // threads per block / work-items per group
)

// assignProblem is one assignment: n points and k centers of d dimensions.
type assignProblem struct {
	n, d, k    int
	x, centers []float32
}

func (p assignProblem) String() string { return fmt.Sprintf("n=%d d=%d k=%d", p.n, p.d, p.k) }

// flops counts a subtraction and a fused multiply-add per dimension, center
// and point, as the kmeans suite does.
func (p assignProblem) flops() float64 { return 2 * float64(p.n) * float64(p.d) * float64(p.k) }

// newAssignProblem draws points uniformly in [-1, 1)^d and takes the
// centers among them (so that some distances are exactly 0).
func newAssignProblem(rng *rand.Rand, n, d, k int) assignProblem {
	p := assignProblem{n: n, d: d, k: k, x: randomMatrix(rng, n*d), centers: make([]float32, k*d)}
	for c := range k {
		i := rng.IntN(n)
		copy(p.centers[c*d:(c+1)*d], p.x[i*d:(i+1)*d])
	}
	return p
}

// assignShapes are the check's problems: one point, more centers than
// points, one dimension, and counts that are multiples of no block size.
var assignShapes = [][3]int{{1, 1, 1}, {5, 3, 7}, {300, 1, 3}, {1000, 37, 5}, {777, 128, 25}}

// assignTiming is the timing problem's shape: small on PoCL (the CPU).
func assignTiming(small bool) [3]int {
	if small {
		return [3]int{8192, 64, 16}
	}
	return [3]int{1 << 17, 128, 32}
}

// assignRun runs an assignment kernel once (src, or the reference when src
// is "") and returns labels, distances and the kernel's device time.
type assignRun func(src string, p assignProblem) ([]int32, []float32, time.Duration, error)

func cudaAssign(ctx *cuda.Context) assignRun {
	return func(src string, p assignProblem) ([]int32, []float32, time.Duration, error) {
		source := cuda.Source{Name: gemm.ExerciseSourceName, Code: src, Headers: kernels.CUDAFamily.Headers()}
		if src == "" {
			source.Name = assignStep + ".cu"
			var err error
			if source.Code, err = kernels.CUDA(assignStep); err != nil {
				return nil, nil, 0, err
			}
		}
		mod, err := ctx.Compile(source)
		if err != nil {
			return nil, nil, 0, err
		}
		fn, err := mod.Function(assignKernel)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w (the kernel must be extern \"C\" __global__ void %s(const float* x, const float* centers, int n, int d, int k, int* labels, float* dist))", err, assignKernel)
		}
		var bufs []*cuda.Buffer
		defer func() {
			for _, b := range bufs {
				b.Free()
			}
		}()
		alloc := func(b *cuda.Buffer, err error) (*cuda.Buffer, error) {
			if err == nil {
				bufs = append(bufs, b)
			}
			return b, err
		}
		x, err := alloc(cuda.Upload(ctx, p.x))
		if err != nil {
			return nil, nil, 0, err
		}
		centers, err := alloc(cuda.Upload(ctx, p.centers))
		if err != nil {
			return nil, nil, 0, err
		}
		labels, err := alloc(cuda.AllocSlice[int32](ctx, p.n))
		if err != nil {
			return nil, nil, 0, err
		}
		dist, err := alloc(cuda.AllocSlice[float32](ctx, p.n))
		if err != nil {
			return nil, nil, 0, err
		}
		for _, b := range []*cuda.Buffer{labels, dist} { // -1 and NaN: a point the kernel skips cannot pass
			if err := b.Memset(0xff, nil); err != nil {
				return nil, nil, 0, err
			}
		}
		timer, err := ctx.NewTimer(nil)
		if err != nil {
			return nil, nil, 0, err
		}
		defer timer.Destroy()
		t, err := timer.Time(func() error {
			return fn.Launch(cuda.Grid1D(p.n, assignBlock), x, centers, p.n, p.d, p.k, labels, dist)
		})
		if err != nil {
			return nil, nil, 0, err
		}
		lab, err := cuda.Download[int32](labels, p.n)
		if err != nil {
			return nil, nil, 0, err
		}
		dd, err := cuda.Download[float32](dist, p.n)
		return lab, dd, t, err
	}
}

func openCLAssign(ctx *opencl.Context) assignRun {
	return func(src string, p assignProblem) ([]int32, []float32, time.Duration, error) {
		if src == "" {
			var err error
			if src, err = kernels.OpenCL(assignStep); err != nil {
				return nil, nil, 0, err
			}
		}
		prog, err := ctx.Build(src, "")
		if err != nil {
			return nil, nil, 0, err
		}
		k, err := prog.Kernel(assignKernel)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w (the kernel must be __kernel void %s(const __global float* x, const __global float* centers, int n, int d, int k, __global int* labels, __global float* dist))", err, assignKernel)
		}
		var bufs []*opencl.Buffer
		defer func() {
			for _, b := range bufs {
				b.Release()
			}
		}()
		buffer := func(bytes int) (*opencl.Buffer, error) {
			b, err := ctx.Alloc(bytes)
			if err == nil {
				bufs = append(bufs, b)
			}
			return b, err
		}
		x, err := buffer(4 * len(p.x))
		if err != nil {
			return nil, nil, 0, err
		}
		centers, err := buffer(4 * len(p.centers))
		if err != nil {
			return nil, nil, 0, err
		}
		labels, err := buffer(4 * p.n)
		if err != nil {
			return nil, nil, 0, err
		}
		dist, err := buffer(4 * p.n)
		if err != nil {
			return nil, nil, 0, err
		}
		unset := make([]int32, p.n) // -1 and NaN: a point the kernel skips cannot pass
		for i := range unset {
			unset[i] = -1
		}
		for _, w := range []struct {
			b    *opencl.Buffer
			data []int32
		}{{labels, unset}, {dist, unset}} {
			if err := opencl.WriteSlice(ctx, w.b, w.data); err != nil {
				return nil, nil, 0, err
			}
		}
		if err := opencl.WriteSlice(ctx, x, p.x); err != nil {
			return nil, nil, 0, err
		}
		if err := opencl.WriteSlice(ctx, centers, p.centers); err != nil {
			return nil, nil, 0, err
		}
		global := (p.n + assignBlock - 1) / assignBlock * assignBlock
		ev, err := ctx.Launch(k, []int{global}, []int{assignBlock}, x, centers, int32(p.n), int32(p.d), int32(p.k), labels, dist)
		if err != nil {
			return nil, nil, 0, err
		}
		defer ev.Release()
		t, err := ev.Duration()
		if err != nil {
			return nil, nil, 0, err
		}
		lab, dd := make([]int32, p.n), make([]float32, p.n)
		if err := opencl.ReadSlice(ctx, labels, lab); err != nil {
			return nil, nil, 0, err
		}
		return lab, dd, t, opencl.ReadSlice(ctx, dist, dd)
	}
}

// assignMismatch checks labels and distances against the problem, in
// float64: each label must be a nearest center (any of equals) and its
// distance the squared distance to it. It describes the first point that
// is wrong.
func assignMismatch(p assignProblem, labels []int32, dist []float32) string {
	sq := func(i, c int) float64 {
		var s float64
		for j := range p.d {
			t := float64(p.x[i*p.d+j]) - float64(p.centers[c*p.d+j])
			s += t * t
		}
		return s
	}
	for i := range p.n {
		l := int(labels[i])
		if l < 0 || l >= p.k {
			return fmt.Sprintf("labels[%d] is %d, not a center (0..%d)", i, l, p.k-1)
		}
		mine := sq(i, l)
		tol := 1e-5*mine + 1e-6*float64(p.d)
		for c := range p.k {
			if dc := sq(i, c); dc < mine-tol {
				return fmt.Sprintf("point %d: labels[%d] is %d (squared distance %.6g), but center %d is nearer (%.6g)", i, i, l, mine, c, dc)
			}
		}
		if g := float64(dist[i]); !(math.Abs(g-mine) <= tol) {
			return fmt.Sprintf("point %d: dist[%d] is %g, expected %.6g (the squared distance to center %d)", i, i, dist[i], mine, l)
		}
	}
	return ""
}

// checkAssign checks src on assignShapes, then times it, the reference
// kernel and the Go CPU assignment on the timing problem.
func checkAssign(run assignRun, src string, timing [3]int) Result {
	r := Result{}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range assignShapes {
		p := newAssignProblem(rng, s[0], s[1], s[2])
		labels, dist, _, err := run(src, p)
		if err != nil {
			r.Compiled, r.Error = runError(err)
			return r
		}
		r.Compiled = true
		if d := assignMismatch(p, labels, dist); d != "" {
			r.Error, r.Detail = "wrong result for "+p.String(), d
			return r
		}
	}
	r.Correct = true
	p := newAssignProblem(rng, timing[0], timing[1], timing[2])
	r.Size = p.String()
	gflops := func(src string) (float64, error) {
		t, err := best(func() (time.Duration, error) {
			_, _, t, err := run(src, p)
			return t, err
		})
		return p.flops() / t.Seconds() / 1e9, err
	}
	var err error
	if r.GFLOPS, err = gflops(src); err != nil {
		r.Correct, r.Error = false, fmt.Sprintf("correct on the small problems, but it failed at %s: %v", p, err)
		return r
	}
	x := &kmeans.Matrix{N: p.n, D: p.d, X: p.x}
	if t, err := best(func() (time.Duration, error) {
		start := time.Now()
		_, _, err := kmeans.Assign(x, p.centers, p.k)
		return time.Since(start), err
	}); err == nil {
		r.Ladder = append(r.Ladder, Rung{Name: "Go CPU (all cores)", GFLOPS: p.flops() / t.Seconds() / 1e9})
	}
	if g, err := gflops(""); err == nil {
		r.Ladder = append(r.Ladder, Rung{Name: "step " + assignStep, GFLOPS: g})
		r.PctOfRef = 100 * r.GFLOPS / g
	}
	return r
}
