// Package warps turns the claims of an OpenCL optimization guide (the seed
// opencl-powervr-rogue-guide.txt) into experiments that run on the user's own
// devices, in CUDA and OpenCL: NDRange mapping, divergence, work-group size,
// occupancy, arithmetic intensity, fast math, bank conflicts and image
// filtering. Each experiment is a bench suite; notebook 02 plots them.
package warps

import (
	"fmt"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// gpu is one opened CUDA or OpenCL device with the few operations the
// experiments need, so that each experiment is written once for both.
type gpu struct {
	kind  engine.Kind
	cu    *cuda.Context
	cl    *opencl.Context
	timer *cuda.Timer
	bufs  []buffer
}

// buffer is a device array of float32 (or of 4-byte ints).
type buffer struct {
	cu *cuda.Buffer
	cl *opencl.Buffer
	n  int // elements
}

// kernel is a compiled entry point.
type kernel struct {
	cu   *cuda.Function
	cl   *opencl.Kernel
	name string
}

// newGPU wraps dev; it returns an error for the CPU, which runs no kernels.
func newGPU(dev *engine.Device) (*gpu, error) {
	switch dev.Kind {
	case engine.CUDA:
		t, err := dev.CUDA.NewTimer(nil)
		if err != nil {
			return nil, err
		}
		return &gpu{kind: engine.CUDA, cu: dev.CUDA, timer: t}, nil
	case engine.OpenCL:
		return &gpu{kind: engine.OpenCL, cl: dev.OpenCL}, nil
	}
	return nil, fmt.Errorf("warps: %s runs no kernels; pick a CUDA or OpenCL device", dev.ID)
}

// gpuSuite turns build, which makes one size's cases on an opened gpu, into
// a bench.Suite's Cases: it opens the device's gpu, and closes it again if
// build fails; otherwise closing is left to the suite runner.
func gpuSuite(build func(g *gpu, dev *engine.Device, size string) ([]bench.Case, error)) func(*engine.Device, string) ([]bench.Case, func(), error) {
	return func(dev *engine.Device, size string) ([]bench.Case, func(), error) {
		g, err := newGPU(dev)
		if err != nil {
			return nil, nil, err
		}
		cases, err := build(g, dev, size)
		if err != nil {
			g.close()
			return nil, nil, err
		}
		return cases, g.close, nil
	}
}

// close frees every buffer and the timer.
func (g *gpu) close() {
	for _, b := range g.bufs {
		if b.cu != nil {
			b.cu.Free()
		}
		if b.cl != nil {
			b.cl.Release()
		}
	}
	g.bufs = nil
	if g.timer != nil {
		g.timer.Destroy()
	}
}

// alloc makes a buffer of n 4-byte elements.
func (g *gpu) alloc(n int) (buffer, error) {
	b := buffer{n: n}
	var err error
	if g.cu != nil {
		b.cu, err = cuda.AllocSlice[float32](g.cu, n)
	} else {
		b.cl, err = g.cl.Alloc(4 * n)
	}
	if err == nil {
		g.bufs = append(g.bufs, b)
	}
	return b, err
}

// upload makes a buffer holding a copy of x.
func upload[T float32 | int32](g *gpu, x []T) (buffer, error) {
	b, err := g.alloc(len(x))
	if err != nil {
		return b, err
	}
	if g.cu != nil {
		return b, cuda.CopyHtoD(b.cu, x)
	}
	return b, opencl.WriteSlice(g.cl, b.cl, x)
}

// read returns the first n elements of b.
func (g *gpu) read(b buffer, n int) ([]float32, error) {
	out := make([]float32, n)
	if g.cu != nil {
		return out, cuda.CopyDtoH(out, b.cu)
	}
	return out, opencl.ReadSlice(g.cl, b.cl, out)
}

// kernel compiles kernels/cuda/warps/<file>.cu or kernels/opencl/warps/<file>.cl
// with the given options (e.g. "-DACC=8"; on CUDA "--use_fast_math", on
// OpenCL "-cl-fast-relaxed-math") and returns the entry point name.
func (g *gpu) kernel(file, name string, options ...string) (kernel, error) {
	k := kernel{name: name}
	if g.cu != nil {
		src, err := kernels.CUDA("warps/" + file)
		if err != nil {
			return k, err
		}
		mod, err := g.cu.Compile(cuda.Source{Name: "warps/" + file + ".cu", Code: src, Options: options})
		if err != nil {
			return k, err
		}
		k.cu, err = mod.Function(name)
		return k, err
	}
	src, err := kernels.OpenCL("warps/" + file)
	if err != nil {
		return k, err
	}
	opts := ""
	for _, o := range options {
		opts += o + " "
	}
	prog, err := g.cl.Build(src, opts)
	if err != nil {
		return k, err
	}
	k.cl, err = prog.Kernel(name)
	return k, err
}

// launch runs k once over a 1D or 2D range of global work-items in groups of
// local (the same length as global; CUDA blocks and grids are derived from
// them) with dynamic shared memory smem (CUDA only), and returns the device
// time. Arguments: buffer, int (passed as a 32-bit int on both), float32,
// int32, opencl.Local (OpenCL only).
func (g *gpu) launch(k kernel, global, local []int, smem int, args ...any) (time.Duration, error) {
	if len(global) == 0 || len(global) > 2 || len(local) != len(global) {
		return 0, fmt.Errorf("warps: launch %s: want 1 or 2 dimensions of global %v and local %v", k.name, global, local)
	}
	for i := range global {
		if local[i] <= 0 || global[i] <= 0 || global[i]%local[i] != 0 {
			return 0, fmt.Errorf("warps: launch %s: global size %v must be a positive multiple of the local size %v", k.name, global, local)
		}
	}
	conv := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case buffer:
			if g.cu != nil {
				conv[i] = v.cu
			} else {
				conv[i] = v.cl
			}
		case int:
			conv[i] = int32(v)
		default:
			conv[i] = a
		}
	}
	if g.cu != nil {
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: global[0] / local[0]}, Block: cuda.Dim3{X: local[0]}, SharedMem: smem}
		if len(global) == 2 {
			cfg.Grid.Y, cfg.Block.Y = global[1]/local[1], local[1]
		}
		return g.timer.Time(func() error { return k.cu.Launch(cfg, conv...) })
	}
	if max, _, _, _, err := k.cl.WorkGroupInfo(); err == nil && prod(local) > max {
		return 0, fmt.Errorf("warps: launch %s: a work-group of %v (%d work-items) exceeds this kernel's limit of %d on this device", k.name, local, prod(local), max)
	}
	ev, err := g.cl.Launch(k.cl, global, local, conv...)
	if err != nil {
		return 0, err
	}
	defer ev.Release()
	return ev.Duration()
}

// cpuLike reports whether dev is the CPU or a CPU-type OpenCL device (PoCL):
// the heuristic of bandwidth.defaultSizes, a peak bandwidth under 500 GB/s.
func cpuLike(dev engine.Info) bool {
	return dev.Kind == engine.CPU || dev.PeakGBps > 0 && dev.PeakGBps < 500
}

// sizes is a suite's default sweep: one size on CPU-like devices, another on GPUs.
func sizes(cpu, gpu string) func(engine.Info) []string {
	return func(dev engine.Info) []string {
		if cpuLike(dev) {
			return []string{cpu}
		}
		return []string{gpu}
	}
}

// elements reads an element count such as "64K", "1M" or "16M".
func elements(size string) (int, error) {
	n, err := bench.ParseBytes(size)
	if err != nil {
		return 0, fmt.Errorf("size %q is a number of elements: %w", size, err)
	}
	if n > 1<<30 {
		return 0, fmt.Errorf("size %q: at most 1G elements (kernels index with 32-bit ints)", size)
	}
	return n, nil
}

// checkArrays refuses, with dev.CheckRun and before anything is allocated, a
// run of suite at size that holds host elements of 4 bytes (float32 or int32)
// on the host and device elements on the device; the holds strings say what
// they are.
func checkArrays(dev *engine.Device, suite, size string, host, device uint64, hostHolds, deviceHolds string) error {
	return dev.CheckRun(suite+" of "+size, engine.Need{Bytes: 4 * host, Holds: hostHolds}, engine.Need{Bytes: 4 * device, Holds: deviceHolds})
}

// write copies x into an existing buffer b.
func write[T float32 | int32](g *gpu, b buffer, x []T) error {
	if g.cu != nil {
		return cuda.CopyHtoD(b.cu, x)
	}
	return opencl.WriteSlice(g.cl, b.cl, x)
}

func prod(s []int) int {
	p := 1
	for _, v := range s {
		p *= v
	}
	return p
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }
