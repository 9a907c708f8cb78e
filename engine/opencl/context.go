package opencl

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// Context owns an OpenCL context for one device and one in-order command
// queue created with profiling enabled. It caches the programs it builds
// and their kernels, and releases them in Release.
//
// A Context is safe for concurrent use by multiple goroutines.
type Context struct {
	device   Device
	maxAlloc uint64 // CL_DEVICE_MAX_MEM_ALLOC_SIZE
	subAlign int    // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes

	// mu guards the fields below. Commands hold it for reading;
	// Build, Program.Kernel and Release hold it for writing.
	mu       sync.RWMutex
	context  uintptr // cl_context; 0 once released
	queue    uintptr // cl_command_queue
	programs map[programKey]*Program
}

type programKey struct{ source, options string }

// withoutCompilerChatter runs build. On PoCL, whose in-process clang also
// prints its diagnostics summary ("1 error generated.") to the process's
// stderr, stderr points at /dev/null meanwhile: the build log already holds
// every diagnostic, and the stray line would read as a second report. Go
// code that writes to stderr during the build is silenced too; builds are
// short and hold the context's lock.
func withoutCompilerChatter(platform string, build func()) {
	if !strings.Contains(platform, "Portable Computing Language") {
		build()
		return
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		build()
		return
	}
	defer syscall.Close(saved)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		build()
		return
	}
	defer null.Close()
	if syscall.Dup3(int(null.Fd()), 2, 0) != nil {
		build()
		return
	}
	defer syscall.Dup3(saved, 2, 0)
	build()
}

var errReleased = errors.New("opencl: context released")

// NewContext creates a context and a profiling command queue on d.
// The queue is made with clCreateCommandQueueWithProperties on platforms of
// OpenCL 2.0 or later, and with clCreateCommandQueue on older ones.
func NewContext(d Device) (*Context, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	info, err := d.Info()
	if err != nil {
		return nil, err
	}

	props := [...]uintptr{clContextPlatform, d.platform.id, 0}
	dev := d.id
	var status int32
	context := cl.createContext(&props[0], 1, &dev, 0, 0, &status)
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: create context on %s: %w", info.Name, err)
	}

	var queue uintptr
	if majorVersion(d.platform.Version()) >= 2 && cl.createCommandQueueWithProperties != nil {
		qprops := [...]uint64{clQueueProperties, clQueueProfilingEnable, 0}
		queue = cl.createCommandQueueWithProperties(context, dev, &qprops[0], &status)
	} else {
		queue = cl.createCommandQueue(context, dev, clQueueProfilingEnable, &status)
	}
	if err := check(status); err != nil {
		cl.releaseContext(context)
		return nil, fmt.Errorf("opencl: create command queue on %s: %w", info.Name, err)
	}

	return &Context{
		device:   d,
		maxAlloc: info.MaxAllocBytes,
		subAlign: max(info.BaseAddrAlignBits/8, 1),
		context:  context,
		queue:    queue,
		programs: make(map[programKey]*Program),
	}, nil
}

// Device returns the device the context runs on.
func (c *Context) Device() Device { return c.device }

// Release releases the cached kernels and programs, the command queue and
// the context. Commands already enqueued still complete. Buffers and Events
// stay valid until released. Calling Release again does nothing; any other
// method of a released Context returns an error.
func (c *Context) Release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.context == 0 {
		return
	}
	for _, p := range c.programs {
		for _, k := range p.kernels {
			cl.releaseKernel(k.id)
		}
		cl.releaseProgram(p.id)
	}
	cl.releaseCommandQueue(c.queue)
	cl.releaseContext(c.context)
	c.programs = nil
	c.queue = 0
	c.context = 0
}

// live reports whether c can still be used. c.mu must be held.
func (c *Context) live() error {
	if c.context == 0 {
		return errReleased
	}
	return nil
}

// Finish blocks until every command enqueued on the context has completed.
func (c *Context) Finish() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return err
	}
	if err := check(cl.finish(c.queue)); err != nil {
		return fmt.Errorf("opencl: finish: %w", err)
	}
	return nil
}

// Build compiles OpenCL C source for the context's device with the given
// compiler options, such as "-DTILE=16 -cl-fast-relaxed-math".
// On a compile error the returned error includes the full build log.
//
// Programs are cached: building the same source with the same options
// again returns the same *Program.
func (c *Context) Build(source, options string) (*Program, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	key := programKey{source, options}
	if p, ok := c.programs[key]; ok {
		return p, nil
	}
	if source == "" {
		return nil, errors.New("opencl: build program: empty source")
	}

	src := unsafe.StringData(source)
	length := uintptr(len(source))
	var status int32
	program := cl.createProgramWithSource(c.context, 1, &src, &length, &status)
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: create program: %w", err)
	}
	dev := c.device.id
	var status2 int32
	withoutCompilerChatter(c.device.platform.Name(), func() { status2 = cl.buildProgram(program, 1, &dev, options, 0, 0) })
	if err := check(status2); err != nil {
		buildLog, logErr := infoString(func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
			return cl.getProgramBuildInfo(program, dev, param, size, value, sizeRet)
		}, clProgramBuildLog)
		if logErr != nil {
			buildLog = fmt.Sprintf("(no build log: %v)", logErr)
		}
		cl.releaseProgram(program)
		return nil, fmt.Errorf("opencl: build program: %w\n%s", err, buildLog)
	}

	p := &Program{ctx: c, id: program, kernels: make(map[string]*Kernel)}
	c.programs[key] = p
	return p, nil
}
