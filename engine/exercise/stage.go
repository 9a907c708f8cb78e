package exercise

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/gemm"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// A kernelRunner runs one source's kernels on one device, for every
// exercise alike: a task names the entry point, the compiler options, the
// launch geometry and the arguments as Go values; the runner compiles (the
// device's context caches programs by source and options), allocates,
// uploads, launches, times and downloads. It is the worker's engine under
// lab grade, and a notebook's directly.
type kernelRunner struct {
	dev  *engine.Device
	name string // the source's file name in NVRTC's messages
	src  string
}

// newKernelRunner runs src on dev; name is its file name for NVRTC's
// messages ("" for the student's: gemm.ExerciseSourceName).
func newKernelRunner(dev *engine.Device, name, src string) *kernelRunner {
	if name == "" {
		name = gemm.ExerciseSourceName
	}
	return &kernelRunner{dev: dev, name: name, src: src}
}

// bothFamilies returns the CUDA and OpenCL flavours of an exercise whose
// reference solution is the kernel file of that name in each family, with
// each skeleton's TODO line; check gets the session and the language.
func bothFamilies(file string, todo map[string]string, check func(s *session, lang string) Result) []Flavor {
	flavor := func(lang string, source func(string) (string, error), devices func() ([]engine.Info, error)) Flavor {
		return Flavor{Lang: lang, TODO: todo[lang], devices: devices,
			Solution: func() (string, error) { return source(file) },
			check:    func(s *session) Result { return check(s, lang) }}
	}
	return []Flavor{flavor(LangCUDA, kernels.CUDA, cudaDevices), flavor(LangOpenCL, kernels.OpenCL, openCLDevices)}
}

// entry is an exercise's kernel: its name, and its declaration in each
// language, which the error for a missing kernel quotes.
type entry struct {
	name string
	decl map[string]string // by language
}

// task is a 1-D launch of the kernel in lang over n work-items in groups
// of local, with args.
func (e entry) task(lang string, n, local int, args ...any) wire.Task {
	return wire.Task{Entry: e.name, Decl: e.decl[lang], Grid: [3]int{groupsOf(n, local)}, Block: [3]int{local}, Args: args}
}

// job is a staged batch that knows its kernels' device time once
// launched.
type job interface {
	wire.Job
	deviceTime() time.Duration
}

// Run stages, launches and downloads the batch ts, and returns each task's
// outputs (raw bits, in argument order) and the kernels' device time.
func (k *kernelRunner) Run(ts []wire.Task) ([][][]uint32, time.Duration, error) {
	j, err := k.stage(ts)
	if err != nil {
		return nil, 0, err
	}
	defer j.Free()
	if err := j.Launch(); err != nil {
		return nil, 0, err
	}
	outs, err := j.Outputs()
	return outs, j.deviceTime(), err
}

// stage compiles the source for the batch ts, one launch on different
// inputs, and puts every task's inputs on the device.
func (k *kernelRunner) stage(ts []wire.Task) (job, error) {
	if len(ts) == 0 {
		return nil, errors.New("exercise: an empty batch")
	}
	for _, t := range ts[1:] {
		if t.Entry != ts[0].Entry || !slices.Equal(t.Options, ts[0].Options) || t.Grid != ts[0].Grid || t.Block != ts[0].Block || t.Shared != ts[0].Shared {
			return nil, errors.New("exercise: a batch of different launches")
		}
	}
	var j stagedArgs
	var err error
	if k.dev.CUDA != nil {
		j, err = k.stageCUDA(ts[0])
	} else {
		j, err = k.stageOpenCL(ts[0])
	}
	if err != nil {
		return nil, err
	}
	for i, t := range ts {
		if err := j.upload(t); err != nil {
			j.Free()
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	return j, nil
}

// stagedArgs is a compiled kernel to which each task's arguments are
// uploaded in turn.
type stagedArgs interface {
	job
	upload(t wire.Task) error
}

// compileFault is a source that does not compile, in the student's lines.
func compileFault(err error) error {
	return &wire.FaultError{Fault: wire.Fault{Kind: wire.CompileFault, Msg: buildError(err.Error())}}
}

// missingKernel is a source without the task's kernel.
func missingKernel(err error, t wire.Task) error {
	msg := err.Error()
	if t.Decl != "" {
		msg = fmt.Sprintf("%s (the kernel must be %s)", msg, t.Decl)
	}
	return &wire.FaultError{Fault: wire.Fault{Kind: wire.CompileFault, Msg: msg}}
}

// runFault is a compiled kernel that failed to run.
func runFault(err error) error {
	return &wire.FaultError{Fault: wire.Fault{Kind: wire.RunFault, Msg: "it compiled, but running it failed: " + studentLines(err.Error())}}
}

// launchArgs are one task's arguments on a device: buffers in place of
// arrays, each array's zone in its buffer (guard.go), and whether the
// task asked for guard zones.
type launchArgs[B any] struct {
	args   []any
	arrays []B
	zones  []zone
	guard  bool
}

type cudaJob struct {
	ctx    *cuda.Context
	fn     *cuda.Function
	cfg    cuda.LaunchConfig
	tasks  []launchArgs[*cuda.Buffer]
	bufs   []*cuda.Buffer
	device time.Duration
}

func (k *kernelRunner) stageCUDA(t wire.Task) (stagedArgs, error) {
	ctx := k.dev.CUDA
	mod, err := ctx.Compile(cuda.Source{Name: k.name, Code: k.src, Headers: kernels.CUDAFamily.Headers(), Options: t.Options})
	if err != nil {
		return nil, compileFault(err)
	}
	fn, err := mod.Function(t.Entry)
	if err != nil {
		return nil, missingKernel(err, t)
	}
	grid, block := wire.Dims(t.Grid), wire.Dims(t.Block)
	return &cudaJob{ctx: ctx, fn: fn, cfg: cuda.LaunchConfig{
		Grid: cuda.Dim3{X: grid[0], Y: grid[1], Z: grid[2]}, Block: cuda.Dim3{X: block[0], Y: block[1], Z: block[2]}, SharedMem: t.Shared}}, nil
}

// cudaAlign is the alignment, in words, of an array inside its guarded
// allocation: 256 bytes, as cudaMalloc's.
const cudaAlign = 64

func (j *cudaJob) upload(t wire.Task) error {
	la := launchArgs[*cuda.Buffer]{args: make([]any, len(t.Args)), guard: t.Guard > 0}
	for i, a := range t.Args {
		z, isArray := newZone(a, t.Guard, cudaAlign)
		if !isArray {
			la.args[i] = a
			continue
		}
		b, err := cuda.Upload(j.ctx, z.initial())
		if err != nil {
			return fmt.Errorf("argument %d of %s: %w", i, t.Entry, err)
		}
		j.bufs = append(j.bufs, b)
		la.args[i] = b.Ptr() + cuda.DevicePtr(4*z.pre)
		la.arrays, la.zones = append(la.arrays, b), append(la.zones, z)
	}
	j.tasks = append(j.tasks, la)
	return nil
}

// Launch queues every task's launch between one pair of events.
func (j *cudaJob) Launch() error {
	timer, err := j.ctx.NewTimer(nil)
	if err != nil {
		return err
	}
	defer timer.Destroy()
	j.device, err = timer.Time(func() error {
		for _, t := range j.tasks {
			if err := j.fn.Launch(j.cfg, t.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return runFault(err)
	}
	return nil
}

// outputs reads every task's outputs with read (an array's whole
// allocation): its Out arrays, then, for a task with guard zones, the
// damage report of all its arrays (wire.Task.Guard).
func outputs[B any](tasks []launchArgs[B], read func(b B, n int) ([]uint32, error)) ([][][]uint32, error) {
	got := make([][][]uint32, len(tasks))
	for i, t := range tasks {
		var damage []uint32
		for a, b := range t.arrays {
			z := t.zones[a]
			if z.input != nil && !t.guard {
				continue // an input without zones has nothing to report
			}
			all, err := read(b, z.words())
			if err != nil {
				return nil, runFault(err)
			}
			if z.input == nil {
				got[i] = append(got[i], z.result(all))
			}
			if t.guard {
				damage = append(damage, z.damage(all)...)
			}
		}
		if t.guard {
			got[i] = append(got[i], damage)
		}
	}
	return got, nil
}

func (j *cudaJob) Outputs() ([][][]uint32, error) { return outputs(j.tasks, cuda.Download[uint32]) }

func (j *cudaJob) Free() {
	for _, b := range j.bufs {
		b.Free()
	}
	j.bufs = nil
}

func (j *cudaJob) deviceTime() time.Duration { return j.device }

type openCLJob struct {
	ctx           *opencl.Context
	kernel        *opencl.Kernel
	global, local []int
	tasks         []launchArgs[*opencl.Buffer]
	bufs          []*opencl.Buffer
	device        time.Duration
}

func (k *kernelRunner) stageOpenCL(t wire.Task) (stagedArgs, error) {
	ctx := k.dev.OpenCL
	prog, err := ctx.Build(k.src, strings.Join(t.Options, " "))
	if err != nil {
		return nil, compileFault(err)
	}
	kernel, err := prog.Kernel(t.Entry)
	if err != nil {
		return nil, missingKernel(err, t)
	}
	grid, block := wire.Dims(t.Grid), wire.Dims(t.Block)
	dims := 1
	for i := range 3 {
		if t.Grid[i] > 1 || t.Block[i] > 1 {
			dims = i + 1
		}
	}
	j := &openCLJob{ctx: ctx, kernel: kernel}
	for i := range dims {
		j.global, j.local = append(j.global, grid[i]*block[i]), append(j.local, block[i])
	}
	return j, nil
}

func (j *openCLJob) upload(t wire.Task) error {
	la := launchArgs[*opencl.Buffer]{args: make([]any, len(t.Args)), guard: t.Guard > 0}
	for i, a := range t.Args {
		z, isArray := newZone(a, t.Guard, j.ctx.SubAlign()/4)
		if !isArray {
			if v, ok := a.(int); ok {
				a = int32(v)
			}
			la.args[i] = a
			continue
		}
		b, arg, err := j.guardedBuffer(z)
		if err != nil {
			return fmt.Errorf("argument %d of %s: %w", i, t.Entry, err)
		}
		la.args[i] = arg
		la.arrays, la.zones = append(la.arrays, b), append(la.zones, z)
	}
	j.tasks = append(j.tasks, la)
	return nil
}

// guardedBuffer allocates z's allocation and writes its initial contents;
// it returns the allocation and what the kernel gets: the allocation, or
// with guard zones a sub-buffer of the array alone.
func (j *openCLJob) guardedBuffer(z zone) (all, arg *opencl.Buffer, err error) {
	all, err = j.ctx.Alloc(4 * z.words())
	if err != nil {
		return nil, nil, err
	}
	j.bufs = append(j.bufs, all)
	if err := opencl.WriteSlice(j.ctx, all, z.initial()); err != nil {
		return nil, nil, err
	}
	if z.pre == 0 && z.post == 0 {
		return all, all, nil
	}
	arg, err = all.Sub(4*z.pre, 4*max(z.n, 1))
	if err != nil {
		return nil, nil, err
	}
	j.bufs = append(j.bufs, arg)
	return all, arg, nil
}

// Launch enqueues every task's launch, then waits for them; the device
// time is the sum of their profiled durations.
func (j *openCLJob) Launch() error {
	var events []*opencl.Event
	defer func() {
		for _, ev := range events {
			ev.Release()
		}
	}()
	for _, t := range j.tasks {
		ev, err := j.ctx.Launch(j.kernel, j.global, j.local, t.args...)
		if err != nil {
			return runFault(err)
		}
		events = append(events, ev)
	}
	j.device = 0
	for _, ev := range events {
		d, err := ev.Duration()
		if err != nil {
			return runFault(err)
		}
		j.device += d
	}
	return nil
}

func (j *openCLJob) Outputs() ([][][]uint32, error) {
	return outputs(j.tasks, func(b *opencl.Buffer, n int) ([]uint32, error) {
		w := make([]uint32, n)
		return w, opencl.ReadSlice(j.ctx, b, w)
	})
}

// Free releases the buffers, each sub-buffer before its allocation.
func (j *openCLJob) Free() {
	for i := len(j.bufs) - 1; i >= 0; i-- {
		j.bufs[i].Release()
	}
	j.bufs = nil
}

func (j *openCLJob) deviceTime() time.Duration { return j.device }

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

// blockHint says what a count that is a multiple of no block asks of a
// kernel with a thread per item.
func blockHint(name string, n, block int, item string) string {
	switch {
	case n < block:
		return fmt.Sprintf("%s=%d is less than one block of %d threads: threads with no %s (index >= %s) must do nothing", name, n, block, item, name)
	case n%block != 0:
		return fmt.Sprintf("%s=%d is not a multiple of the block (%d): the last block's threads past %s must not read or write", name, n, block, name)
	}
	return ""
}

// groupsOf is the number of groups of local items that cover n.
func groupsOf(n, local int) int { return max(1, (n+local-1)/local) }
