package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"gpulab/engine/atomicfile"
)

// Source is a CUDA C++ translation unit for NVRTC.
type Source struct {
	Name    string            // file name used in diagnostics, e.g. "vecadd.cu"
	Code    string            // the source text
	Headers map[string]string // include name -> text, for #include "name"
	Options []string          // e.g. "-DTILE=32", "--use_fast_math"
}

// Module is loaded device code.
type Module struct {
	ctx  *Context
	h    uintptr
	Name string
	Log  string // NVRTC's log (warnings) of a fresh compile; empty when loaded from the cache
	// params is the parameter count of each kernel, read from the CUBIN
	// (cubin.go); a kernel missing from it is launched unchecked.
	params map[string]int
}

// Compile builds src with NVRTC for the context's device and loads it.
// Unless src.Options names an architecture, it compiles for sm_XY of the
// device. Modules are cached by source, headers, options and architecture:
// in memory for the process, and as CUBIN files under the user cache
// directory ($GPULAB_CACHE_DIR, else os.UserCacheDir()/gpulab/cubin) so that
// notebook cells, each its own process, do not recompile.
func (c *Context) Compile(src Source) (*Module, error) {
	if src.Name == "" {
		src.Name = "kernel.cu"
	}
	opts := c.compileOptions(src.Options)
	key := cacheKey(src, opts)

	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.modules[key]; ok {
		return m, nil
	}
	cubin, log := readCachedCUBIN(key), ""
	if cubin == nil {
		var err error
		cubin, log, err = compileCUBIN(src, opts)
		if err != nil {
			return nil, err
		}
		writeCachedCUBIN(key, cubin)
	}
	params, err := cubinParamCounts(cubin)
	if err != nil {
		return nil, fmt.Errorf("load module %s: %w", src.Name, err)
	}
	m := &Module{ctx: c, Name: src.Name, Log: log, params: params}
	err = c.Do(func() error {
		return check("cuModuleLoadData", cuModuleLoadData(&m.h, unsafe.Pointer(&cubin[0])))
	})
	if err != nil {
		return nil, fmt.Errorf("load module %s: %w", src.Name, err)
	}
	c.modules[key] = m
	return m, nil
}

// compileOptions adds the device's architecture, C++17 and the toolkit's include
// directory to the caller's options, and, to a --use_fast_math program, a
// ptxas option (fastMathPtxas).
func (c *Context) compileOptions(user []string) []string {
	opts := append([]string{}, user...)
	hasArch, fastMath, ptxas := false, false, false
	for _, o := range user {
		switch {
		case strings.HasPrefix(o, "--gpu-architecture") || strings.HasPrefix(o, "-arch"):
			hasArch = true
		case o == "--use_fast_math" || o == "-use_fast_math":
			fastMath = true
		case strings.HasPrefix(o, "-Xptxas") || strings.HasPrefix(o, "--ptxas-options"):
			ptxas = true
		}
	}
	if !hasArch {
		opts = append(opts, fmt.Sprintf("--gpu-architecture=sm_%d%d", c.props.Major, c.props.Minor))
	}
	if fastMath && !ptxas {
		opts = append(opts, fastMathPtxas...)
	}
	opts = append(opts, "--std=c++17")
	for _, dir := range libDirs() {
		inc := filepath.Join(filepath.Dir(dir), "include")
		if _, err := os.Stat(filepath.Join(inc, "cuda_runtime.h")); err == nil {
			opts = append(opts, "-I"+inc)
			break
		}
	}
	return opts
}

// fastMathPtxas is added to the options of a --use_fast_math program.
// NVRTC 13.0, asked for the CUBIN of such a program, returns one whose SASS
// is the precise code (sinf's range reduction and polynomial: no MUFU.SIN)
// though its PTX has the approximations (sin.approx); given any ptxas
// option, it builds the CUBIN from that PTX, as nvcc does, and the SASS has
// them. -O3 is ptxas's default level. Measured on an H200 (CUDA 13.0) with
// kernels/cuda/warps/fastmath.cu: 0 MUFU.SIN without it, 32 with it, as
// many as the __sinf build; TestFastMathReachesSASS checks it.
var fastMathPtxas = []string{"-Xptxas", "-O3"}

func cacheKey(src Source, opts []string) string {
	h := sha256.New()
	v, _ := NVRTCVersion()
	fmt.Fprintf(h, "nvrtc %s\x00%s\x00%s\x00", v, src.Name, src.Code)
	for _, n := range sortedKeys(src.Headers) {
		fmt.Fprintf(h, "%s\x00%s\x00", n, src.Headers[n])
	}
	for _, o := range opts {
		fmt.Fprintf(h, "%s\x00", o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// CacheDir is where compiled CUBINs are kept.
func CacheDir() string {
	if d := os.Getenv("GPULAB_CACHE_DIR"); d != "" {
		return filepath.Join(d, "cubin")
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "gpulab", "cubin")
}

func readCachedCUBIN(key string) []byte {
	b, err := os.ReadFile(filepath.Join(CacheDir(), key+".cubin"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// writeCachedCUBIN stores a compiled module; the cache is best effort, so a
// failure only costs a recompile next time. Files are renamed into place so a
// reader never sees half a file.
func writeCachedCUBIN(key string, cubin []byte) {
	dir := CacheDir()
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	atomicfile.WriteBytes(filepath.Join(dir, key+".cubin"), cubin)
}

// Unload releases the module. Functions taken from it become invalid.
func (m *Module) Unload() error {
	m.ctx.mu.Lock()
	for k, v := range m.ctx.modules {
		if v == m {
			delete(m.ctx.modules, k)
		}
	}
	m.ctx.mu.Unlock()
	return m.ctx.Do(func() error { return check("cuModuleUnload", cuModuleUnload(m.h)) })
}

// Function is a kernel entry point (__global__, extern "C").
type Function struct {
	mod    *Module
	name   string
	h      uintptr
	params []int // byte size of each parameter; nil when the driver cannot tell
}

// Function looks up a kernel by name. Declare kernels extern "C" so that the
// name is not mangled.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{mod: m, name: name}
	err := m.ctx.Do(func() error {
		if err := check("cuModuleGetFunction", cuModuleGetFunction(&f.h, m.h, name)); err != nil {
			return fmt.Errorf("kernel %q in %s: %w (is it declared extern \"C\" __global__?)", name, m.Name, err)
		}
		if cuFuncLoad != nil {
			cuFuncLoad(f.h) // lazy loading: make parameter info available
		}
		n, known := m.params[name]
		if cuFuncGetParamInfo == nil || !known {
			return nil
		}
		// The count comes from the CUBIN, so that no call asks for a
		// parameter past the end: an API error that compute-sanitizer
		// would report at every launch.
		f.params = make([]int, n)
		for i := range f.params {
			var off, size uint64
			if err := check("cuFuncGetParamInfo", cuFuncGetParamInfo(f.h, uint64(i), &off, &size)); err != nil {
				return fmt.Errorf("kernel %q in %s: parameter %d of the %d its CUBIN records: %w", name, m.Name, i, n, err)
			}
			f.params[i] = int(size)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// NumParams returns the number of kernel parameters, or -1 if the driver
// (older than CUDA 12.4) cannot tell.
func (f *Function) NumParams() int {
	if f.params == nil {
		return -1
	}
	return len(f.params)
}

// FunctionAttribute is a CUfunction_attribute.
type FunctionAttribute int32

// Function attributes (cuda.h).
const (
	FuncMaxThreadsPerBlock    FunctionAttribute = 0
	FuncSharedSizeBytes       FunctionAttribute = 1
	FuncConstSizeBytes        FunctionAttribute = 2
	FuncLocalSizeBytes        FunctionAttribute = 3
	FuncNumRegs               FunctionAttribute = 4
	FuncMaxDynamicSharedBytes FunctionAttribute = 8
)

// Attribute reads a function attribute, e.g. FuncNumRegs.
func (f *Function) Attribute(a FunctionAttribute) (int, error) {
	var v int32
	err := f.mod.ctx.Do(func() error {
		return check(fmt.Sprintf("cuFuncGetAttribute(%d) %s", a, f.name), cuFuncGetAttribute(&v, int32(a), f.h))
	})
	return int(v), err
}

// MaxActiveBlocksPerSM is the occupancy query: how many blocks of blockSize
// threads using dynSmem bytes of dynamic shared memory fit on one SM at once.
// Above 48 KiB it opts the kernel in to dynSmem first, as Launch does: the
// driver answers 0 for a kernel that has not.
func (f *Function) MaxActiveBlocksPerSM(blockSize, dynSmem int) (int, error) {
	var n int32
	err := f.mod.ctx.Do(func() error {
		if err := f.optInShared(dynSmem); err != nil {
			return err
		}
		return check("cuOccupancyMaxActiveBlocksPerMultiprocessor",
			cuOccupancyMaxActiveBlocks(&n, f.h, int32(blockSize), uint64(dynSmem)))
	})
	if err != nil {
		return 0, fmt.Errorf("occupancy of %s: %w", f.name, err)
	}
	return int(n), nil
}

// Dim3 is a grid or block shape; zero components count as 1.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) norm() Dim3 {
	if d.Y == 0 {
		d.Y = 1
	}
	if d.Z == 0 {
		d.Z = 1
	}
	return d
}

// LaunchConfig is how a kernel is launched.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedMem   int     // dynamic shared memory in bytes
	Stream      *Stream // nil: the default stream
}

// Grid1D covers n elements with blocks of block threads.
func Grid1D(n, block int) LaunchConfig {
	return LaunchConfig{Grid: Dim3{X: max(1, (n+block-1)/block)}, Block: Dim3{X: block}}
}

// Launch queues the kernel with typed Go arguments. Accepted types: *Buffer and
// DevicePtr (pointers), int (sized to the parameter), int8..int64,
// uint8..uint64, float32, float64, bool, and *TensorMap (a 128-byte
// __grid_constant__ parameter). An argument count or size that does
// not match the kernel's parameters is an error, never a crash.
func (f *Function) Launch(cfg LaunchConfig, args ...any) error {
	g, b := cfg.Grid.norm(), cfg.Block.norm()
	if g.X <= 0 || g.Y <= 0 || g.Z <= 0 || b.X <= 0 || b.Y <= 0 || b.Z <= 0 {
		return fmt.Errorf("launch %s: grid %v and block %v must be positive", f.name, cfg.Grid, cfg.Block)
	}
	props := f.mod.ctx.props
	if threads := b.X * b.Y * b.Z; threads > props.MaxThreadsPerBlock {
		return fmt.Errorf("launch %s: block of %d threads exceeds the device's %d", f.name, threads, props.MaxThreadsPerBlock)
	}
	if cfg.SharedMem > props.SharedPerBlockOptin {
		return fmt.Errorf("launch %s: %d bytes of dynamic shared memory exceed the device's %d", f.name, cfg.SharedMem, props.SharedPerBlockOptin)
	}
	packed, err := f.pack(args)
	if err != nil {
		return err
	}
	ptrs := make([]unsafe.Pointer, len(packed))
	for i := range packed {
		ptrs[i] = unsafe.Pointer(&packed[i][0])
	}
	var params unsafe.Pointer
	if len(ptrs) > 0 {
		params = unsafe.Pointer(&ptrs[0])
	}
	return f.mod.ctx.Do(func() error {
		if err := f.optInShared(cfg.SharedMem); err != nil {
			return fmt.Errorf("launch %s: %w", f.name, err)
		}
		code := cuLaunchKernel(f.h, uint32(g.X), uint32(g.Y), uint32(g.Z), uint32(b.X), uint32(b.Y), uint32(b.Z),
			uint32(cfg.SharedMem), cfg.Stream.handle(), params, nil)
		if code != 0 {
			return fmt.Errorf("launch %s (grid %v, block %v): %w", f.name, g, b, check("cuLaunchKernel", code))
		}
		return nil
	})
}

// optInShared lets the kernel have bytes of dynamic shared memory per
// block: above the device's default limit (48 KiB) a kernel must opt in to
// more. It runs inside the context's Do.
func (f *Function) optInShared(bytes int) error {
	if bytes <= f.mod.ctx.props.SharedPerBlock {
		return nil
	}
	return check("cuFuncSetAttribute", cuFuncSetAttribute(f.h, int32(FuncMaxDynamicSharedBytes), int32(bytes)))
}

// pack turns each argument into the bytes the kernel parameter expects. Every
// value gets its own 8-byte-aligned slot.
func (f *Function) pack(args []any) ([][]byte, error) {
	if f.params != nil && len(args) != len(f.params) {
		return nil, fmt.Errorf("launch %s: %d arguments given, the kernel takes %d", f.name, len(args), len(f.params))
	}
	out := make([][]byte, len(args))
	for i, a := range args {
		want := 0
		if f.params != nil {
			want = f.params[i]
		}
		if tm, ok := a.(*TensorMap); ok { // 128 bytes, passed by value
			if want != 0 && want != len(tm) {
				return nil, fmt.Errorf("launch %s: argument %d is a TensorMap (%d bytes) but the kernel parameter has %d bytes", f.name, i, len(tm), want)
			}
			slot := make([]uint64, len(tm)/8)
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&slot[0])), len(tm)), tm[:])
			out[i] = unsafe.Slice((*byte)(unsafe.Pointer(&slot[0])), len(tm))
			continue
		}
		v, size, err := argBits(a, want)
		if err != nil {
			return nil, fmt.Errorf("launch %s: argument %d: %w", f.name, i, err)
		}
		if want != 0 && size != want {
			return nil, fmt.Errorf("launch %s: argument %d is %T (%d bytes) but the kernel parameter has %d bytes", f.name, i, a, size, want)
		}
		slot := make([]uint64, 1)
		slot[0] = v
		out[i] = unsafe.Slice((*byte)(unsafe.Pointer(&slot[0])), 8)
	}
	return out, nil
}

// argBits returns an argument's little-endian bits and its size in bytes.
func argBits(a any, want int) (uint64, int, error) {
	switch v := a.(type) {
	case *Buffer:
		if v == nil || v.ptr == 0 {
			return 0, 8, fmt.Errorf("nil or freed *Buffer")
		}
		return uint64(v.ptr), 8, nil
	case DevicePtr:
		return uint64(v), 8, nil
	case *Texture: // a cudaTextureObject_t parameter: the 64-bit handle
		if v == nil || v.h == 0 {
			return 0, 8, fmt.Errorf("nil or destroyed *Texture")
		}
		return v.h, 8, nil
	case int:
		if want == 8 {
			return uint64(int64(v)), 8, nil
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return 0, 4, fmt.Errorf("int %d does not fit the kernel's 32-bit parameter", v)
		}
		return uint64(uint32(int32(v))), 4, nil
	case int8:
		return uint64(uint8(v)), 1, nil
	case uint8:
		return uint64(v), 1, nil
	case bool:
		if v {
			return 1, 1, nil
		}
		return 0, 1, nil
	case int16:
		return uint64(uint16(v)), 2, nil
	case uint16:
		return uint64(v), 2, nil
	case int32:
		return uint64(uint32(v)), 4, nil
	case uint32:
		return uint64(v), 4, nil
	case float32:
		return uint64(math.Float32bits(v)), 4, nil
	case int64:
		return uint64(v), 8, nil
	case uint64:
		return v, 8, nil
	case float64:
		return math.Float64bits(v), 8, nil
	default:
		return 0, 0, fmt.Errorf("unsupported type %T (use *cuda.Buffer, DevicePtr, *cuda.Texture, int, sized integers, float32, float64 or bool)", a)
	}
}
