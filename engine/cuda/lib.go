package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// ErrNoDriver is wrapped by every error that comes from a missing CUDA driver.
var ErrNoDriver = errors.New("cuda: no CUDA driver")

// library is one dlopened shared object.
type library struct {
	name   string // what we looked for, e.g. "libnvrtc"
	path   string // what was opened
	handle uintptr
}

// libDirs lists the directories searched for the toolkit libraries (NVRTC,
// cuBLAS) before the dynamic loader's own path: $CUDA_HOME/lib64,
// $CUDA_PATH/lib64 and /usr/local/cuda/lib64.
func libDirs() []string {
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if v := os.Getenv(env); v != "" {
			dirs = append(dirs, filepath.Join(v, "lib64"), filepath.Join(v, "lib"))
		}
	}
	return append(dirs, "/usr/local/cuda/lib64")
}

// openLibrary dlopens the first candidate that loads. Each candidate is either
// a bare soname (resolved by the loader) or a glob pattern tried in each of
// dirs, newest version first. The error lists every attempt.
func openLibrary(name string, dirs []string, globs []string, sonames []string) (*library, error) {
	var tried []string
	try := func(path string) *library {
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", path, err))
			return nil
		}
		return &library{name: name, path: path, handle: h}
	}
	for _, dir := range dirs {
		for _, g := range globs {
			matches, _ := filepath.Glob(filepath.Join(dir, g))
			sort.Sort(sort.Reverse(sort.StringSlice(matches)))
			for _, m := range matches {
				if l := try(m); l != nil {
					return l, nil
				}
			}
		}
	}
	for _, so := range sonames {
		if l := try(so); l != nil {
			return l, nil
		}
	}
	if len(tried) == 0 {
		tried = append(tried, "no candidate file found in "+strings.Join(dirs, ", "))
	}
	if len(dirs) > 0 && len(sonames) > 0 {
		tried = append(tried, "searched "+strings.Join(dirs, ", "))
	}
	return nil, fmt.Errorf("%s not found (%s)", name, strings.Join(tried, "; "))
}

// bind resolves each symbol in syms (name -> pointer to a Go func variable).
// Names ending in "?" are optional: they are left nil when missing.
func (l *library) bind(syms map[string]any) error {
	for name, fptr := range syms {
		optional := strings.HasSuffix(name, "?")
		name = strings.TrimSuffix(name, "?")
		addr, err := purego.Dlsym(l.handle, name)
		if err != nil || addr == 0 {
			if optional {
				continue
			}
			return fmt.Errorf("%s: symbol %s missing: %v", l.path, name, err)
		}
		purego.RegisterFunc(fptr, addr)
	}
	return nil
}

var (
	driverOnce sync.Once
	driverErr  error
	driverLib  *library
)

// Load opens libcuda.so.1 and calls cuInit. It is called by everything that
// needs the driver; calling it directly tells why CUDA is unavailable. The
// returned error wraps ErrNoDriver when the library or a device is missing.
func Load() error {
	driverOnce.Do(func() {
		dirs := []string{"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"}
		lib, err := openLibrary("libcuda.so.1", dirs, []string{"libcuda.so.1"}, []string{"libcuda.so.1"})
		if err != nil {
			driverErr = fmt.Errorf("%w: %v", ErrNoDriver, err)
			return
		}
		if err := lib.bind(driverSymbols()); err != nil {
			driverErr = fmt.Errorf("%w: %v", ErrNoDriver, err)
			return
		}
		if err := check("cuInit", cuInit(0)); err != nil {
			driverErr = fmt.Errorf("%w: %v", ErrNoDriver, err)
			return
		}
		driverLib = lib
	})
	return driverErr
}

// DriverPath is the path libcuda was opened from, or "" when it is not loaded.
func DriverPath() string {
	if Load() != nil {
		return ""
	}
	return driverLib.path
}

// DriverVersion returns the CUDA version the driver supports, e.g. 13000 for 13.0.
func DriverVersion() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var v int32
	err := check("cuDriverGetVersion", cuDriverGetVersion(&v))
	return int(v), err
}
