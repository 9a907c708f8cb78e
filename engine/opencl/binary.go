package opencl

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

const (
	clProgramBinarySizes = 0x1165
	clProgramBinaries    = 0x1166
)

var (
	programInfoOnce  sync.Once
	programInfoErr   error
	clGetProgramInfo func(program uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
)

// loadProgramInfo resolves clGetProgramInfo, which Load leaves alone.
func loadProgramInfo() error {
	programInfoOnce.Do(func() {
		if programInfoErr = Load(); programInfoErr != nil {
			return
		}
		lib, err := purego.Dlopen(libName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			programInfoErr = fmt.Errorf("opencl: %s not found: %w", libName, err)
			return
		}
		sym, err := purego.Dlsym(lib, "clGetProgramInfo")
		if err != nil {
			programInfoErr = fmt.Errorf("opencl: %s has no clGetProgramInfo: %w", libName, err)
			return
		}
		purego.RegisterFunc(&clGetProgramInfo, sym)
	})
	return programInfoErr
}

// Binary is the built program as its driver keeps it (CL_PROGRAM_BINARIES
// for the context's one device): PTX text on NVIDIA's driver, a driver's
// own format elsewhere (PoCL's is not text).
func (p *Program) Binary() ([]byte, error) {
	if p == nil || p.ctx == nil {
		return nil, errors.New("opencl: program binary: program not made by Context.Build")
	}
	if err := loadProgramInfo(); err != nil {
		return nil, err
	}
	c := p.ctx
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	var size uintptr // one device: one size_t
	if err := check(clGetProgramInfo(p.id, clProgramBinarySizes, unsafe.Sizeof(size), unsafe.Pointer(&size), nil)); err != nil {
		return nil, fmt.Errorf("opencl: CL_PROGRAM_BINARY_SIZES: %w", err)
	}
	if size == 0 {
		return nil, errors.New("opencl: the driver keeps no binary of this program")
	}
	buf := make([]byte, size)
	ptr := &buf[0]
	if err := check(clGetProgramInfo(p.id, clProgramBinaries, unsafe.Sizeof(ptr), unsafe.Pointer(&ptr), nil)); err != nil {
		return nil, fmt.Errorf("opencl: CL_PROGRAM_BINARIES: %w", err)
	}
	for len(buf) > 0 && buf[len(buf)-1] == 0 {
		buf = buf[:len(buf)-1]
	}
	return buf, nil
}
