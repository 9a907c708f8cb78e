// Package bandwidth holds the memory-bound suites of notebook 00: copy,
// vecadd and saxpy, on the CPU, OpenCL and CUDA. Their arithmetic intensity
// is far below any device's ridge point, so the number that matters is GB/s
// against the device's peak bandwidth, and, for copy, against the driver's own
// copy measured in the same run.
//
// Sizes are bytes per array ("64M"): copy moves 2 arrays' worth per run (read +
// write), vecadd and saxpy 3.
package bandwidth

import (
	"fmt"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
)

// op is one memory-bound operation: out = f(inputs...), elementwise.
type op struct {
	name   string
	doc    string
	inputs int     // input arrays; there is always one output array
	flops  float64 // per element
	alpha  float32 // scalar argument after n, for saxpy; 0: none
	file   string  // kernel file name in kernels/{cuda,opencl}
	// serial is the reference (and the CPU baseline); parallel is the
	// goroutine version from engine/cpu.
	serial, parallel func(out []float32, in [][]float32, alpha float32)
	// driverCopy adds the driver's copy (cuMemcpyDtoD, clEnqueueCopyBuffer)
	// as the baseline of the GPU backends.
	driverCopy bool
	variants   []variant
}

// variant is one kernel of an op's file.
type variant struct {
	kernel     string
	perThread  int  // elements per thread (4 for float4 kernels)
	gridStride bool // grid sized to fill the GPU once instead of covering n
	cudaOnly   bool
}

func (o op) bytesPerElem() float64 { return 4 * float64(o.inputs+1) }

var ops = []op{
	{
		name: "copy", doc: "dst = src: the memory system's speed limit", inputs: 1, file: "copy", driverCopy: true,
		serial:   func(out []float32, in [][]float32, _ float32) { copy(out, in[0]) },
		parallel: func(out []float32, in [][]float32, _ float32) { cpu.Copy(out, in[0]) },
		variants: []variant{{kernel: "copy_f32", perThread: 1}, {kernel: "copy_f4", perThread: 4},
			{kernel: "copy_f4_grid_stride", perThread: 4, gridStride: true, cudaOnly: true}},
	},
	{
		name: "vecadd", doc: "c = a + b: 12 bytes per flop", inputs: 2, flops: 1, file: "vecadd",
		serial: func(out []float32, in [][]float32, _ float32) {
			for i := range out {
				out[i] = in[0][i] + in[1][i]
			}
		},
		parallel: func(out []float32, in [][]float32, _ float32) { cpu.VecAdd(out, in[0], in[1]) },
		variants: []variant{{kernel: "vec_add", perThread: 1}},
	},
	{
		name: "saxpy", doc: "out = alpha*x + y: 6 bytes per flop", inputs: 2, flops: 2, alpha: 2.5, file: "saxpy",
		serial: func(out []float32, in [][]float32, alpha float32) {
			for i := range out {
				out[i] = alpha*in[0][i] + in[1][i]
			}
		},
		parallel: func(out []float32, in [][]float32, alpha float32) { cpu.Saxpy(out, alpha, in[0], in[1]) },
		variants: []variant{{kernel: "saxpy", perThread: 1}},
	},
}

func init() {
	for _, o := range ops {
		bench.Register(bench.Suite{Name: o.name, Doc: o.doc, Sizes: defaultSizes, Cases: o.cases})
	}
}

// defaultSizes sweeps 1 MiB to 64 MiB per array on CPUs (fast on a laptop and
// in CI) and up to 1 GiB on GPUs, well past any L2 cache.
func defaultSizes(dev engine.Info) []string {
	if dev.Kind == engine.CPU || dev.PeakGBps > 0 && dev.PeakGBps < 500 {
		return []string{"1M", "4M", "16M", "64M"}
	}
	return []string{"1M", "4M", "16M", "64M", "256M", "1G"}
}

// problem is one size's host data and reference output.
type problem struct {
	n     int
	bytes int
	in    [][]float32
	want  []float32
}

// problem makes the inputs of n elements each and the reference output.
func (o op) problem(n int) *problem {
	p := &problem{n: n, bytes: 4 * n, want: make([]float32, n)}
	for k := range o.inputs {
		p.in = append(p.in, fill(n, uint32(k+1)))
	}
	o.parallel(p.want, p.in, o.alpha)
	return p
}

// memory is what a run of o on dev holds for arrays of n elements: on the
// host the inputs, the reference and the outputs (the CPU's two variants
// each write their own; the GPU backends read one back, and OpenCL's reset
// writes zeros from the host), and on the device the inputs and the output.
func (o op) memory(dev *engine.Device, n int) (host, device engine.Need) {
	array, inputs := 4*uint64(n), "the input"
	if o.inputs > 1 {
		inputs = fmt.Sprintf("the %d inputs", o.inputs)
	}
	switch dev.Kind {
	case engine.CUDA:
		host = engine.Need{Bytes: uint64(o.inputs+2) * array, Holds: inputs + ", the reference and the output read back"}
	case engine.OpenCL:
		host = engine.Need{Bytes: uint64(o.inputs+3) * array, Holds: inputs + ", the reference, the zeros that reset the output and the output read back"}
	default:
		return engine.Need{Bytes: uint64(o.inputs+3) * array, Holds: inputs + ", the reference and the outputs of the serial and parallel loops"}, device
	}
	device = engine.Need{Bytes: uint64(o.inputs+1) * array, Holds: inputs + " and the output"}
	return host, device
}

// fill makes deterministic, varied, nonzero data cheaply (in parallel), so that
// a 1 GiB problem is set up in a fraction of a second.
func fill(n int, seed uint32) []float32 {
	s := make([]float32, n)
	cpu.Parallel(n, 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			h := uint32(i)*2654435761 ^ seed*0x9e3779b9
			h ^= h >> 15
			s[i] = float32(h%1000003)/1000003 + 0.5
		}
	})
	return s
}

func (o op) params(p *problem) bench.Params {
	return bench.Params{"bytes": p.bytes, "elements": p.n}
}

func (o op) cases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	bytes, err := bench.ParseBytes(size)
	if err != nil {
		return nil, nil, err
	}
	host, device := o.memory(dev, bytes/4)
	if err := dev.CheckRun(o.name+" of "+size, host, device); err != nil {
		return nil, nil, err
	}
	p := o.problem(bytes / 4)
	switch dev.Kind {
	case engine.CUDA:
		return o.cudaCases(dev.CUDA, p)
	case engine.OpenCL:
		return o.openCLCases(dev.OpenCL, p)
	default:
		return o.cpuCases(p), nil, nil
	}
}

// base fills the fields every backend's case shares.
func (o op) base(variant string, p *problem) bench.Case {
	return bench.Case{Variant: variant, Params: o.params(p), Flops: o.flops * float64(p.n),
		Bytes: o.bytesPerElem() * float64(p.n), Tol: 1e-6}
}
