package opencl

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Program is a program built by Context.Build. It lives as long as its
// Context.
type Program struct {
	ctx     *Context
	id      uintptr // cl_program
	kernels map[string]*Kernel
}

// Kernel returns the __kernel function called name in the program.
// Kernels are cached: asking for the same name again returns the same *Kernel.
func (p *Program) Kernel(name string) (*Kernel, error) {
	if p == nil || p.ctx == nil {
		return nil, fmt.Errorf("opencl: kernel %q: program not made by Context.Build", name)
	}
	c := p.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	if k, ok := p.kernels[name]; ok {
		return k, nil
	}

	var status int32
	id := cl.createKernel(p.id, name, &status)
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: kernel %q: %w", name, err)
	}
	numArgs, err := infoScalar[uint32](func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
		return cl.getKernelInfo(id, param, size, value, sizeRet)
	}, clKernelNumArgs)
	if err != nil {
		cl.releaseKernel(id)
		return nil, fmt.Errorf("opencl: kernel %q: CL_KERNEL_NUM_ARGS: %w", name, err)
	}

	k := &Kernel{ctx: c, id: id, name: name, numArgs: int(numArgs)}
	p.kernels[name] = k
	return k, nil
}

// Kernel is a __kernel function of a Program, ready to Launch.
type Kernel struct {
	ctx     *Context
	id      uintptr // cl_kernel
	name    string
	numArgs int

	// mu serialises Launch: kernel arguments are state of the cl_kernel
	// between clSetKernelArg and clEnqueueNDRangeKernel.
	mu sync.Mutex
}

// Name returns the kernel's function name.
func (k *Kernel) Name() string { return k.name }

// NumArgs returns the number of arguments the kernel takes (CL_KERNEL_NUM_ARGS).
func (k *Kernel) NumArgs() int { return k.numArgs }

// WorkGroupInfo reports what the kernel needs and allows on the context's
// device: the largest work-group it can be launched with, the work-group size
// multiple that performs best, and the __local and private memory it uses.
func (k *Kernel) WorkGroupInfo() (maxWorkGroupSize int, preferredMultiple int, localMemBytes uint64, privateMemBytes uint64, err error) {
	c := k.ctx
	if c == nil {
		return 0, 0, 0, 0, fmt.Errorf("opencl: kernel %q: not made by Program.Kernel", k.name)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return 0, 0, 0, 0, err
	}
	query := func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
		return cl.getKernelWorkGroupInfo(k.id, c.device.id, param, size, value, sizeRet)
	}
	maxSize, err1 := infoScalar[uintptr](query, clKernelWorkGroupSize)
	multiple, err2 := infoScalar[uintptr](query, clKernelPreferredWorkGroupSizeMultiple)
	local, err3 := infoScalar[uint64](query, clKernelLocalMemSize)
	private, err4 := infoScalar[uint64](query, clKernelPrivateMemSize)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("opencl: kernel %s: work-group info: %w", k.name, err)
	}
	return int(maxSize), int(multiple), local, private, nil
}

// Local is a kernel argument that allocates a __local buffer of the given
// number of bytes for each work-group.
type Local int

// Launch enqueues k over an NDRange of global work-items, in work-groups of
// local work-items, and returns the event of the command.
//
// global has 1, 2 or 3 sizes. local is nil to let the runtime choose the
// work-group size, or has the same length as global. Before OpenCL 2.0 each
// global size must be a multiple of the local size; the device reports an
// error otherwise.
//
// args must match the kernel's parameters in number and order. Each is
// a *Buffer (for a __global pointer), *Image (for an image2d_t), Local (for a __local pointer), or one
// of int32, uint32, int64, uint64, float32 and float64 (for int, uint, long,
// ulong, float and double).
func (c *Context) Launch(k *Kernel, global, local []int, args ...any) (*Event, error) {
	if k == nil {
		return nil, errors.New("opencl: launch: nil kernel")
	}
	if err := checkNDRange(global, local); err != nil {
		return nil, fmt.Errorf("opencl: launch %s: %w", k.name, err)
	}
	if len(args) != k.numArgs {
		return nil, fmt.Errorf("opencl: launch %s: got %d arguments, kernel takes %d", k.name, len(args), k.numArgs)
	}

	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	if k.ctx != c {
		return nil, fmt.Errorf("opencl: launch %s: kernel belongs to another context", k.name)
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	for i, arg := range args {
		if err := c.setArg(k, i, arg); err != nil {
			return nil, fmt.Errorf("opencl: launch %s: argument %d: %w", k.name, i, err)
		}
	}
	var globalSize, localSize [3]uintptr
	for i := range global {
		globalSize[i] = uintptr(global[i])
	}
	var localPtr *uintptr
	if local != nil {
		for i := range local {
			localSize[i] = uintptr(local[i])
		}
		localPtr = &localSize[0]
	}
	var event uintptr
	status := cl.enqueueNDRangeKernel(c.queue, k.id, uint32(len(global)), nil, &globalSize[0], localPtr, 0, nil, &event)
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: launch %s global %v local %v: %w", k.name, global, local, err)
	}
	return newEvent(event), nil
}

// checkNDRange validates the shape of an NDRange on the Go side.
func checkNDRange(global, local []int) error {
	if len(global) < 1 || len(global) > 3 {
		return fmt.Errorf("global %v has %d dimensions, want 1, 2 or 3", global, len(global))
	}
	if local != nil && len(local) != len(global) {
		return fmt.Errorf("local %v has %d dimensions, global %v has %d", local, len(local), global, len(global))
	}
	for i := range global {
		if global[i] <= 0 {
			return fmt.Errorf("global %v: sizes must be positive", global)
		}
		if local != nil && local[i] <= 0 {
			return fmt.Errorf("local %v: sizes must be positive", local)
		}
	}
	return nil
}

// setArg sets argument i of k. k.mu and c.mu must be held.
func (c *Context) setArg(k *Kernel, i int, arg any) error {
	switch v := arg.(type) {
	case *Buffer:
		if err := c.own(v); err != nil {
			return err
		}
		return setScalarArg(k, i, v.id)
	case *Image:
		if err := c.ownImage(v); err != nil {
			return err
		}
		return setScalarArg(k, i, v.id)
	case Local:
		if v <= 0 {
			return fmt.Errorf("Local(%d): size must be positive", v)
		}
		return check(cl.setKernelArg(k.id, uint32(i), uintptr(v), nil))
	case int32:
		return setScalarArg(k, i, v)
	case uint32:
		return setScalarArg(k, i, v)
	case int64:
		return setScalarArg(k, i, v)
	case uint64:
		return setScalarArg(k, i, v)
	case float32:
		return setScalarArg(k, i, v)
	case float64:
		return setScalarArg(k, i, v)
	case int, uint:
		return fmt.Errorf("unsupported type %T: use int32 or int64 (uint32 or uint64) to match the kernel's parameter", arg)
	}
	return fmt.Errorf("unsupported type %T: want *Buffer, *Image, Local, int32, uint32, int64, uint64, float32 or float64", arg)
}

// setScalarArg passes v by value as argument i of k. For a *Buffer, v is
// its cl_mem handle.
func setScalarArg[T int32 | uint32 | int64 | uint64 | float32 | float64 | uintptr](k *Kernel, i int, v T) error {
	err := check(cl.setKernelArg(k.id, uint32(i), unsafe.Sizeof(v), unsafe.Pointer(&v)))
	runtime.KeepAlive(&v)
	return err
}

// Event is an enqueued command. It can be waited on and, once complete,
// asked how long the command ran on the device.
type Event struct {
	id      uintptr // cl_event; 0 once released
	cleanup runtime.Cleanup
}

func newEvent(id uintptr) *Event {
	e := &Event{id: id}
	e.cleanup = runtime.AddCleanup(e, releaseEvent, id)
	return e
}

func releaseEvent(id uintptr) { cl.releaseEvent(id) }

// Wait blocks until the command has completed.
func (e *Event) Wait() error {
	if e == nil || e.id == 0 {
		return errors.New("opencl: wait: event released")
	}
	id := e.id
	if err := check(cl.waitForEvents(1, &id)); err != nil {
		return fmt.Errorf("opencl: wait for event: %w", err)
	}
	return nil
}

// Duration waits for the command to complete and returns how long it ran on
// the device: CL_PROFILING_COMMAND_END - CL_PROFILING_COMMAND_START.
func (e *Event) Duration() (time.Duration, error) {
	if err := e.Wait(); err != nil {
		return 0, err
	}
	query := func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
		return cl.getEventProfilingInfo(e.id, param, size, value, sizeRet)
	}
	start, err := infoScalar[uint64](query, clProfilingCommandStart)
	if err != nil {
		return 0, fmt.Errorf("opencl: event profiling: CL_PROFILING_COMMAND_START: %w", err)
	}
	end, err := infoScalar[uint64](query, clProfilingCommandEnd)
	if err != nil {
		return 0, fmt.Errorf("opencl: event profiling: CL_PROFILING_COMMAND_END: %w", err)
	}
	if end < start {
		return 0, fmt.Errorf("opencl: event profiling: end %d ns before start %d ns", end, start)
	}
	return time.Duration(end - start), nil
}

// Release releases the event. Calling it again does nothing. An Event that
// is not released is released some time after it becomes unreachable.
func (e *Event) Release() {
	if e == nil || e.id == 0 {
		return
	}
	e.cleanup.Stop()
	cl.releaseEvent(e.id)
	e.id = 0
}
