package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"gpulab/engine/atomicfile"
)

// Artifacts are what NVRTC makes of a source for a context's device: the
// PTX (the virtual ISA, one text per translation unit) and the CUBIN (the
// machine code that Compile loads), from one compile with the options
// Compile uses. A kernel card reads its instruction counts from the PTX and
// its SASS from the CUBIN.
type Artifacts struct {
	PTX     string
	CUBIN   []byte
	Options []string // the options NVRTC was given, the device's architecture included
}

// NVRTC's PTX entry points, bound on first use by loadPTX: loadNVRTC binds
// what Compile needs, and these come from the same library.
var (
	nvrtcGetPTXSize func(p uintptr, size *uint64) int32
	nvrtcGetPTX     func(p uintptr, ptx *byte) int32

	ptxOnce sync.Once
	ptxErr  error
)

func loadPTX() error {
	ptxOnce.Do(func() {
		if ptxErr = loadNVRTC(); ptxErr == nil {
			ptxErr = nvrtcLib.bind(map[string]any{"nvrtcGetPTXSize": &nvrtcGetPTXSize, "nvrtcGetPTX": &nvrtcGetPTX})
		}
	})
	return ptxErr
}

// Artifacts compiles src as Compile would (the device's architecture,
// C++17, the toolkit's headers) and returns its PTX and CUBIN. Both are
// kept in the CUBIN cache directory under the key Compile uses (.ptx next
// to .cubin), so a notebook's cards do not recompile what a cell before
// them compiled. Nothing is loaded on the device.
func (c *Context) Artifacts(src Source) (Artifacts, error) {
	if src.Name == "" {
		src.Name = "kernel.cu"
	}
	opts := c.compileOptions(src.Options)
	key := cacheKey(src, opts)
	a := Artifacts{Options: opts, CUBIN: readCachedCUBIN(key)}
	if ptx, err := os.ReadFile(filepath.Join(CacheDir(), key+".ptx")); err == nil && len(ptx) > 0 && a.CUBIN != nil {
		a.PTX = string(ptx)
		return a, nil
	}
	if err := loadPTX(); err != nil {
		return a, err
	}
	var err error
	a.PTX, a.CUBIN, err = compilePTXAndCUBIN(src, opts)
	if err != nil {
		return a, err
	}
	writeCachedCUBIN(key, a.CUBIN)
	if os.MkdirAll(CacheDir(), 0o755) == nil { // best effort, as for CUBINs
		atomicfile.WriteBytes(filepath.Join(CacheDir(), key+".ptx"), []byte(a.PTX))
	}
	return a, nil
}

// compilePTXAndCUBIN runs NVRTC over src once and returns both products.
func compilePTXAndCUBIN(src Source, options []string) (string, []byte, error) {
	var ptx string
	cubin, _, err := compileWith(src, options, func(prog uintptr) error {
		var size uint64
		if code := nvrtcGetPTXSize(prog, &size); code != 0 {
			return fmt.Errorf("nvrtc: PTX size of %s: %s", src.Name, nvrtcResult(code))
		}
		if size <= 1 {
			return fmt.Errorf("nvrtc: %s compiled to no PTX", src.Name)
		}
		buf := make([]byte, size)
		if code := nvrtcGetPTX(prog, &buf[0]); code != 0 {
			return fmt.Errorf("nvrtc: PTX of %s: %s", src.Name, nvrtcResult(code))
		}
		ptx = string(buf[:size-1]) // without the terminating NUL
		return nil
	})
	return ptx, cubin, err
}

// The profiler's range: Nsight Compute started with --profile-from-start
// off profiles only the kernels launched between ProfilerStart and
// ProfilerStop, so that lab profile sees one step's launch and not the
// compiles, uploads and warm-up around it.
var (
	cuProfilerStart func() int32
	cuProfilerStop  func() int32
	profilerOnce    sync.Once
	profilerErr     error
)

func loadProfiler() error {
	if err := Load(); err != nil {
		return err
	}
	profilerOnce.Do(func() {
		profilerErr = driverLib.bind(map[string]any{"cuProfilerStart": &cuProfilerStart, "cuProfilerStop": &cuProfilerStop})
	})
	return profilerErr
}

// ProfilerStart opens the profiled range on the context's device (a no-op
// when no profiler is attached).
func (c *Context) ProfilerStart() error {
	if err := loadProfiler(); err != nil {
		return err
	}
	return c.Do(func() error { return check("cuProfilerStart", cuProfilerStart()) })
}

// ProfilerStop closes it, once the work in it has finished.
func (c *Context) ProfilerStop() error {
	if err := loadProfiler(); err != nil {
		return err
	}
	return c.Do(func() error {
		if err := check("cuCtxSynchronize", cuCtxSynchronize()); err != nil {
			return err
		}
		return check("cuProfilerStop", cuProfilerStop())
	})
}

// ReservedSharedPerBlock is CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
// shared memory the system keeps for every resident block (1 KiB from
// sm_80 on), which the occupancy calculation adds to a kernel's own.
const ReservedSharedPerBlock DeviceAttribute = 111
