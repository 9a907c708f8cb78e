package bandwidth

import (
	"fmt"
	"math"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// openCLCases runs each kernel of the op's file (except CUDA-only ones), timed
// by event profiling; copy adds clEnqueueCopyBuffer as the baseline.
func (o op) openCLCases(ctx *opencl.Context, p *problem) (cases []bench.Case, closeAll func(), err error) {
	if p.n > math.MaxInt32 {
		return nil, nil, fmt.Errorf("%d elements exceed the OpenCL kernels' 32-bit index", p.n)
	}
	var bufs []*opencl.Buffer
	closeAll = func() {
		for _, b := range bufs {
			b.Release()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	alloc := func() (*opencl.Buffer, error) {
		b, err := ctx.Alloc(p.bytes)
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	var in []*opencl.Buffer
	for _, h := range p.in {
		b, err := alloc()
		if err != nil {
			return nil, closeAll, err
		}
		if err := opencl.WriteSlice(ctx, b, h); err != nil {
			return nil, closeAll, err
		}
		in = append(in, b)
	}
	out, err := alloc()
	if err != nil {
		return nil, closeAll, err
	}
	src, err := kernels.OpenCL(o.file)
	if err != nil {
		return nil, closeAll, err
	}
	prog, err := ctx.Build(src, "")
	if err != nil {
		return nil, closeAll, err
	}
	zeros := make([]byte, p.bytes)
	reset := func() error { return ctx.Write(out, 0, zeros) }
	check := func() (bench.Checked, error) {
		got := make([]float32, p.n)
		err := opencl.ReadSlice(ctx, out, got)
		return bench.Compare(got, p.want), err
	}
	timed := func(ev *opencl.Event, err error) (time.Duration, error) {
		if err != nil {
			return 0, err
		}
		defer ev.Release()
		return ev.Duration()
	}

	if o.driverCopy {
		c := o.base("clEnqueueCopyBuffer", p)
		c.Baseline, c.Reset, c.Check = true, reset, check
		c.Run = func() (time.Duration, error) { return timed(ctx.CopyBuffer(out, in[0], p.bytes)) }
		cases = append(cases, c)
	}
	const local = 256
	for _, v := range o.variants {
		if v.cudaOnly {
			continue
		}
		k, err := prog.Kernel(v.kernel)
		if err != nil {
			return nil, closeAll, err
		}
		global := (max(p.n/v.perThread, 1) + local - 1) / local * local
		args := []any{int32(p.n)}
		if o.alpha != 0 {
			args = append(args, o.alpha)
		}
		for _, b := range in {
			args = append(args, b)
		}
		args = append(args, out)
		c := o.base(v.kernel, p)
		c.Reset, c.Check = reset, check
		c.Params = bench.Params{"bytes": p.bytes, "elements": p.n, "global": global, "local": local}
		c.Run = func() (time.Duration, error) {
			return timed(ctx.Launch(k, []int{global}, []int{local}, args...))
		}
		cases = append(cases, c)
	}
	return cases, closeAll, nil
}
