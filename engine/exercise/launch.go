package exercise

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/gemm"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// One launcher per family runs the kernels of the sqfd and lfm2 exercises:
// a call names the source, the entry point and a 1-D launch, and lists the
// arguments as Go values; the launcher compiles, uploads, launches, times
// and downloads, so that an exercise's check is the same code for CUDA and
// OpenCL.

// bothFamilies returns the CUDA and OpenCL flavours of an exercise whose
// reference solution is the kernel file of that name in each family: check
// gets the device, its launcher, the reference solution in the device's
// language and the source to check.
func bothFamilies(file string, check func(dev *engine.Device, run launcher, solution, src string) Result) []Flavor {
	flavor := func(lang string, source func(string) (string, error), devices func() ([]engine.Info, error), run func(*engine.Device) launcher) Flavor {
		solution := func() (string, error) { return source(file) }
		return Flavor{Lang: lang, Solution: solution, devices: devices, check: func(dev *engine.Device, src string) Result {
			sol, err := solution()
			if err != nil {
				return Result{Error: err.Error()}
			}
			return check(dev, run(dev), sol, src)
		}}
	}
	return []Flavor{
		flavor(LangCUDA, kernels.CUDA, cudaDevices, func(dev *engine.Device) launcher { return cudaLauncher(dev.CUDA) }),
		flavor(LangOpenCL, kernels.OpenCL, openCLDevices, func(dev *engine.Device) launcher { return openCLLauncher(dev.OpenCL) }),
	}
}

// entry is an exercise's kernel: its name, and its declaration in each
// language, which the error for a missing kernel quotes.
type entry struct {
	name string
	decl map[string]string // by language
}

// missing adds the expected declaration to the error of a kernel that the
// compiled source does not define.
func (e entry) missing(err error, lang string) error {
	if d, ok := e.decl[lang]; ok {
		return fmt.Errorf("%w (the kernel must be %s)", err, d)
	}
	return err
}

// call is one launch of a kernel over groups work-groups (CUDA blocks) of
// local work-items (threads).
type call struct {
	name    string   // the source's file name in NVRTC's messages; "" for the student's (gemm.ExerciseSourceName)
	source  string   // the kernel source
	options []string // compiler options, such as -DLFM2_BF16=0
	entry   entry
	groups  int
	local   int
	// args, in the kernel's order: []float32 and []int32 are inputs
	// (uploaded), an output is allocated, int and float32 are scalars.
	args []any
}

// output is an output argument of that many 4-byte elements, filled with
// all-ones bits before the launch: -1 as an int, NaN as a float, so that an
// element the kernel skips cannot pass.
type output int

// launcher runs a call on one device and returns the outputs, in argument
// order, as raw bits, and the kernel's device time.
type launcher func(c call) ([][]uint32, time.Duration, error)

func cudaLauncher(ctx *cuda.Context) launcher {
	return func(c call) (_ [][]uint32, _ time.Duration, err error) {
		name := c.name
		if name == "" {
			name = gemm.ExerciseSourceName
		}
		mod, err := ctx.Compile(cuda.Source{Name: name, Code: c.source, Headers: kernels.CUDAFamily.Headers(), Options: c.options})
		if err != nil {
			return nil, 0, err
		}
		fn, err := mod.Function(c.entry.name)
		if err != nil {
			return nil, 0, c.entry.missing(err, LangCUDA)
		}
		var bufs, outs []*cuda.Buffer
		var sizes []int
		defer func() {
			for _, b := range bufs {
				b.Free()
			}
		}()
		args := make([]any, len(c.args))
		for i, a := range c.args {
			var b *cuda.Buffer
			switch v := a.(type) {
			case []float32:
				b, err = cuda.Upload(ctx, v)
			case []int32:
				b, err = cuda.Upload(ctx, v)
			case output:
				if b, err = cuda.AllocSlice[uint32](ctx, int(v)); err == nil {
					outs, sizes = append(outs, b), append(sizes, int(v))
				}
			default:
				args[i] = a
				continue
			}
			if err != nil {
				return nil, 0, fmt.Errorf("argument %d of %s: %w", i, c.entry.name, err)
			}
			bufs, args[i] = append(bufs, b), b
		}
		for _, b := range outs {
			if err := b.Memset(0xff, nil); err != nil {
				return nil, 0, err
			}
		}
		timer, err := ctx.NewTimer(nil)
		if err != nil {
			return nil, 0, err
		}
		defer timer.Destroy()
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: c.groups}, Block: cuda.Dim3{X: c.local}}
		t, err := timer.Time(func() error { return fn.Launch(cfg, args...) })
		if err != nil {
			return nil, 0, err
		}
		got := make([][]uint32, len(outs))
		for i, b := range outs {
			if got[i], err = cuda.Download[uint32](b, sizes[i]); err != nil {
				return nil, 0, err
			}
		}
		return got, t, nil
	}
}

func openCLLauncher(ctx *opencl.Context) launcher {
	return func(c call) (_ [][]uint32, _ time.Duration, err error) {
		prog, err := ctx.Build(c.source, strings.Join(c.options, " "))
		if err != nil {
			return nil, 0, err
		}
		k, err := prog.Kernel(c.entry.name)
		if err != nil {
			return nil, 0, c.entry.missing(err, LangOpenCL)
		}
		var bufs, outs []*opencl.Buffer
		defer func() {
			for _, b := range bufs {
				b.Release()
			}
		}()
		upload := func(n int, write func(*opencl.Buffer) error) (*opencl.Buffer, error) {
			b, err := ctx.Alloc(4 * n)
			if err != nil {
				return nil, err
			}
			bufs = append(bufs, b)
			return b, write(b)
		}
		args := make([]any, len(c.args))
		for i, a := range c.args {
			var b *opencl.Buffer
			switch v := a.(type) {
			case []float32:
				b, err = upload(len(v), func(b *opencl.Buffer) error { return opencl.WriteSlice(ctx, b, v) })
			case []int32:
				b, err = upload(len(v), func(b *opencl.Buffer) error { return opencl.WriteSlice(ctx, b, v) })
			case output:
				unset := make([]uint32, v)
				for j := range unset {
					unset[j] = 0xffffffff
				}
				b, err = upload(len(unset), func(b *opencl.Buffer) error { return opencl.WriteSlice(ctx, b, unset) })
				outs = append(outs, b)
			case int:
				args[i] = int32(v)
				continue
			default:
				args[i] = a
				continue
			}
			if err != nil {
				return nil, 0, fmt.Errorf("argument %d of %s: %w", i, c.entry.name, err)
			}
			args[i] = b
		}
		ev, err := ctx.Launch(k, []int{c.groups * c.local}, []int{c.local}, args...)
		if err != nil {
			return nil, 0, err
		}
		defer ev.Release()
		t, err := ev.Duration()
		if err != nil {
			return nil, 0, err
		}
		got := make([][]uint32, len(outs))
		for i, b := range outs {
			got[i] = make([]uint32, b.Size()/4)
			if err := opencl.ReadSlice(ctx, b, got[i]); err != nil {
				return nil, 0, err
			}
		}
		return got, t, nil
	}
}

// floats reads raw output bits as float32s.
func floats(bits []uint32) []float32 {
	out := make([]float32, len(bits))
	for i, b := range bits {
		out[i] = math.Float32frombits(b)
	}
	return out
}

// ints reads raw output bits as int32s.
func ints(bits []uint32) []int32 {
	out := make([]int32, len(bits))
	for i, b := range bits {
		out[i] = int32(b)
	}
	return out
}

// groupsOf is the number of groups of local items that cover n.
func groupsOf(n, local int) int { return max(1, (n+local-1)/local) }
