package bandwidth

import (
	"fmt"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// cudaCases runs each kernel of the op's file, timed with CUDA events on the
// default stream; copy adds cuMemcpyDtoD as the baseline.
func (o op) cudaCases(ctx *cuda.Context, p *problem) (cases []bench.Case, closeAll func(), err error) {
	var bufs []*cuda.Buffer
	closeAll = func() {
		for _, b := range bufs {
			b.Free()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	var in []*cuda.Buffer
	for _, h := range p.in {
		b, err := cuda.Upload(ctx, h)
		if err != nil {
			return nil, closeAll, err
		}
		bufs, in = append(bufs, b), append(in, b)
	}
	out, err := cuda.AllocSlice[float32](ctx, p.n)
	if err != nil {
		return nil, closeAll, err
	}
	bufs = append(bufs, out)
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		return nil, closeAll, err
	}
	closeBufs := closeAll
	closeAll = func() { timer.Destroy(); closeBufs() }

	src, err := kernels.CUDA(o.file)
	if err != nil {
		return nil, closeAll, err
	}
	mod, err := ctx.Compile(cuda.Source{Name: o.file + ".cu", Code: src})
	if err != nil {
		return nil, closeAll, err
	}
	check := func() (bench.Checked, error) {
		got, err := cuda.Download[float32](out, p.n)
		return bench.Compare(got, p.want), err
	}
	reset := func() error { return out.Memset(0, nil) }

	if o.driverCopy {
		c := o.base("memcpy_dtod", p)
		c.Baseline, c.Reset, c.Check = true, reset, check
		c.Run = func() (time.Duration, error) {
			return timer.Time(func() error { return cuda.CopyDtoD(out, in[0], p.bytes, nil) })
		}
		cases = append(cases, c)
	}
	for _, v := range o.variants {
		fn, err := mod.Function(v.kernel)
		if err != nil {
			return nil, closeAll, err
		}
		cfg, err := launchConfig(ctx, fn, v, p.n)
		if err != nil {
			return nil, closeAll, err
		}
		args := []any{p.n}
		if o.alpha != 0 {
			args = append(args, o.alpha)
		}
		for _, b := range in {
			args = append(args, b)
		}
		args = append(args, out)
		c := o.base(v.kernel, p)
		c.Reset, c.Check = reset, check
		c.Params = bench.Params{"bytes": p.bytes, "elements": p.n, "grid": cfg.Grid.X, "block": cfg.Block.X}
		c.Run = func() (time.Duration, error) {
			return timer.Time(func() error { return fn.Launch(cfg, args...) })
		}
		cases = append(cases, c)
	}
	return cases, closeAll, nil
}

// launchConfig uses blocks of 256 threads. A grid-stride kernel gets exactly as
// many blocks as fit on the GPU at once (the occupancy query); the others get
// enough blocks to cover n elements (at least one, for the tail threads).
func launchConfig(ctx *cuda.Context, fn *cuda.Function, v variant, n int) (cuda.LaunchConfig, error) {
	const block = 256
	if !v.gridStride {
		return cuda.Grid1D(max(n/v.perThread, 1), block), nil
	}
	perSM, err := fn.MaxActiveBlocksPerSM(block, 0)
	if err != nil {
		return cuda.LaunchConfig{}, err
	}
	if perSM == 0 {
		return cuda.LaunchConfig{}, fmt.Errorf("%s: no block of %d threads fits on an SM", v.kernel, block)
	}
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: ctx.Properties().SMs * perSM}, Block: cuda.Dim3{X: block}}, nil
}
