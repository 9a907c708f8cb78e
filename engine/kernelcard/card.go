// Package kernelcard says what a compiled kernel asks of the hardware,
// next to its source: registers and spilled bytes per thread, shared
// memory per block, the theoretical occupancy at its launch and what
// limits it, and the instructions that matter (global, shared and local
// loads and stores with their widths, FMAs, tensor-core and asynchronous
// copies) counted in the PTX that NVRTC made of it, with the SASS where
// cuobjdump or nvdisasm is on PATH. On OpenCL it says what the driver
// exposes (clGetKernelWorkGroupInfo), and counts the PTX where the driver
// keeps PTX (NVIDIA's).
//
// A card is built by Of, for a ladder's step or a student's kernel alike,
// and shown by Markdown; the cards of notebook 01's GEMM ladders come from
// GEMM.
package kernelcard

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// A Kernel is a kernel to describe: its source, compiled as the lab
// compiles it (CUDA with NVRTC and the lab's headers, OpenCL C with the
// driver), and its launch.
type Kernel struct {
	Label   string   // what the card is of: a step's name, "your kernel"
	Name    string   // the source's file name in NVRTC's messages, e.g. "gemm/03_smem_tiling.cu"
	Source  string   // CUDA C++ or OpenCL C, by the device's kind
	Options []string // compiler options: -D defines
	Entry   string   // the kernel's name
	// Grid and Block are the launch, in blocks (work-groups) and threads
	// (work-items) per dimension, zeros counting as ones. A zero Block is
	// a launch nobody told: the card has no occupancy.
	Grid, Block [3]int
	Shared      int // CUDA dynamic shared memory per block, bytes
	// Notes are what the caller says of the build or the launch (where
	// its parameters come from), first among the card's notes.
	Notes []string
	// Unsupported, if set, says why the device cannot run the kernel
	// ("needs sm_90 (Hopper)"): the card says so, and nothing is compiled.
	Unsupported string
}

func (k Kernel) launchKnown() bool { return k.Block != [3]int{} }

func dims(d [3]int) [3]int {
	for i := range d {
		d[i] = max(d[i], 1)
	}
	return d
}

func product(d [3]int) int {
	d = dims(d)
	return d[0] * d[1] * d[2]
}

// dimsText writes a launch shape as "32×32" (trailing ones dropped).
func dimsText(d [3]int) string {
	d = dims(d)
	n := 3
	for n > 1 && d[n-1] == 1 {
		n--
	}
	parts := make([]string, n)
	for i := range n {
		parts[i] = fmt.Sprint(d[i])
	}
	return strings.Join(parts, "×")
}

// Card is what a kernel asks of the device it was compiled for.
type Card struct {
	Label   string   `json:"label"`
	Kernel  string   `json:"kernel"`
	Device  string   `json:"device"`  // "cuda:0 (NVIDIA H100 80GB HBM3)"
	Backend string   `json:"backend"` // engine.CUDA or engine.OpenCL
	Launch  string   `json:"launch"`  // "grid 128×128 = 16384 blocks, block 32×32 = 1024 threads"
	Options []string `json:"options,omitempty"`
	// Error says why the card is empty or partial (the source does not
	// compile, the kernel is missing, the driver refused a query).
	Error string   `json:"error,omitempty"`
	Notes []string `json:"notes,omitempty"` // what the card could not say, and why

	Registers     int `json:"registers_per_thread,omitempty"`
	LocalBytes    int `json:"local_bytes_per_thread"` // CUDA: local memory (spills, arrays indexed at run time); OpenCL: private memory
	StaticShared  int `json:"static_shared_bytes"`    // CUDA: __shared__ declared; OpenCL: __local in use (CL_KERNEL_LOCAL_MEM_SIZE)
	DynamicShared int `json:"dynamic_shared_bytes,omitempty"`
	MaxThreads    int `json:"max_threads_per_block"` // the most the compiled kernel may be launched with
	// PreferredMultiple is OpenCL's preferred work-group size multiple
	// (the warp or SIMD width the driver packs work-items into).
	PreferredMultiple int `json:"preferred_multiple,omitempty"`
	// LocalUnreported is set when an OpenCL driver reports 0 bytes of
	// __local memory for a kernel that declares __local arrays (PoCL 6
	// does): StaticShared is then unknown, not 0.
	LocalUnreported bool       `json:"local_unreported,omitempty"`
	Occupancy       *Occupancy `json:"occupancy,omitempty"`
	Waves           float64    `json:"waves,omitempty"` // blocks of the grid ÷ (SMs × resident blocks per SM)

	PTX        string             `json:"ptx,omitempty"` // the kernel's function in the PTX
	PTXCounts  []InstructionCount `json:"ptx_counts,omitempty"`
	SASS       string             `json:"sass,omitempty"`
	SASSTool   string             `json:"sass_tool,omitempty"` // "cuobjdump -sass" or "nvdisasm"
	SASSCounts []InstructionCount `json:"sass_counts,omitempty"`
}

// Of builds the card of k on dev, a CUDA or OpenCL device; a CPU has no
// kernels to describe. It never fails: what it cannot learn is said in the
// card (Error, Notes).
func Of(dev *engine.Device, k Kernel) Card {
	c := Card{Label: k.Label, Kernel: k.Entry, Device: dev.ID + " (" + dev.Name + ")", Backend: string(dev.Kind), Options: k.Options,
		Notes: slices.Clone(k.Notes)}
	switch {
	case k.Unsupported != "":
		c.Error = k.Unsupported
	case dev.CUDA != nil:
		cudaCard(&c, dev.CUDA, k)
	case dev.OpenCL != nil:
		openCLCard(&c, dev.OpenCL, k)
	default:
		c.Error = fmt.Sprintf("%s runs no kernels: a card describes CUDA and OpenCL kernels", dev.ID)
	}
	return c
}

// cudaCard compiles k with NVRTC and reads its attributes, its occupancy
// at the launch, its PTX and its SASS.
func cudaCard(c *Card, ctx *cuda.Context, k Kernel) {
	src := cuda.Source{Name: k.Name, Code: k.Source, Headers: kernels.CUDAFamily.Headers(), Options: k.Options}
	mod, err := ctx.Compile(src)
	if err != nil {
		c.Error = "it does not compile: " + err.Error()
		return
	}
	fn, err := mod.Function(k.Entry)
	if err != nil {
		c.Error = err.Error()
		return
	}
	for _, a := range []struct {
		attr cuda.FunctionAttribute
		dst  *int
	}{
		{cuda.FuncNumRegs, &c.Registers}, {cuda.FuncLocalSizeBytes, &c.LocalBytes},
		{cuda.FuncSharedSizeBytes, &c.StaticShared}, {cuda.FuncMaxThreadsPerBlock, &c.MaxThreads},
	} {
		if *a.dst, err = fn.Attribute(a.attr); err != nil {
			c.Notes = append(c.Notes, fmt.Sprintf("cuFuncGetAttribute: %v", err))
		}
	}
	props := ctx.Properties()
	if k.launchKnown() {
		c.DynamicShared = k.Shared
		blocks, threads := product(k.Grid), product(k.Block)
		c.Launch = fmt.Sprintf("grid %s = %d blocks, block %s = %d threads", dimsText(k.Grid), blocks, dimsText(k.Block), threads)
		if k.Shared > 0 {
			c.Launch += fmt.Sprintf(", %s of dynamic shared memory", bytesText(k.Shared))
		}
		reserved, err := ctx.Device().Attribute(cuda.ReservedSharedPerBlock)
		if err != nil {
			c.Notes = append(c.Notes, fmt.Sprintf("reserved shared memory per block: %v (counted as 0)", err))
		}
		driver, err := fn.MaxActiveBlocksPerSM(threads, k.Shared)
		if err != nil {
			c.Notes = append(c.Notes, err.Error())
			driver = -1
		}
		o := Theoretical(LimitsOf(props, reserved), Resources{Threads: threads, Registers: c.Registers, StaticShared: c.StaticShared, DynamicShared: k.Shared}, driver)
		c.Occupancy = &o
		if o.Blocks > 0 && props.SMs > 0 {
			c.Waves = float64(blocks) / float64(props.SMs*o.Blocks)
		}
	} else {
		c.Launch = "launch not known here"
		c.Notes = append(c.Notes, "no occupancy: it depends on the launch (threads per block, dynamic shared memory), which this card was not given")
	}
	art, err := ctx.Artifacts(src)
	if err != nil {
		c.Notes = append(c.Notes, "no PTX: "+err.Error())
		return
	}
	c.Options = art.Options
	if c.PTX, err = PTXFunction(art.PTX, k.Entry); err == nil {
		c.PTXCounts, _ = CountPTX(art.PTX, k.Entry)
	} else {
		c.Notes = append(c.Notes, err.Error())
	}
	sass, tool, err := Disassemble(art.CUBIN)
	if err != nil {
		c.Notes = append(c.Notes, "no SASS: "+err.Error())
		return
	}
	c.SASSTool = tool
	if fn, ok := SASSFunctions(sass)[k.Entry]; ok {
		c.SASS, c.SASSCounts = strings.TrimSpace(fn), CountSASS(fn)
	} else {
		c.Notes = append(c.Notes, fmt.Sprintf("%s printed no function %s", tool, k.Entry))
	}
}

// localArray finds a __local (or local) array declared in OpenCL C source,
// such as "__local float tile[TS][TS];". A __local pointer parameter is no
// declaration: its bytes are set at each launch.
var localArray = regexp.MustCompile(`\b(?:__)?local\s+(?:(?:const|volatile|unsigned|signed)\s+)*[A-Za-z_]\w*\s+[A-Za-z_]\w*\s*\[`)

// openCLCard builds k with the driver and reads what it tells of the
// kernel (clGetKernelWorkGroupInfo), and the PTX where its program binary
// is PTX.
func openCLCard(c *Card, ctx *opencl.Context, k Kernel) {
	options := strings.Join(k.Options, " ")
	prog, err := ctx.Build(k.Source, options)
	if err != nil {
		c.Error = "it does not build: " + err.Error()
		return
	}
	kernel, err := prog.Kernel(k.Entry)
	if err != nil {
		c.Error = err.Error()
		return
	}
	maxItems, multiple, local, private, err := kernel.WorkGroupInfo()
	if err != nil {
		c.Error = err.Error()
		return
	}
	c.MaxThreads, c.PreferredMultiple, c.StaticShared, c.LocalBytes = maxItems, multiple, int(local), int(private)
	if local == 0 && localArray.MatchString(k.Source) {
		c.LocalUnreported = true
		c.Notes = append(c.Notes, "this driver reports 0 bytes of `__local` memory for a kernel that declares `__local` arrays: it does not count them, so their size is not known here")
	}
	if k.launchKnown() {
		items := product(k.Block)
		global := dims(k.Grid)
		for i, b := range dims(k.Block) {
			global[i] *= b
		}
		c.Launch = fmt.Sprintf("NDRange %s in work-groups of %s = %d work-items", dimsText(global), dimsText(k.Block), items)
		if items > maxItems {
			c.Notes = append(c.Notes, fmt.Sprintf("work-groups of %d work-items are more than this kernel allows here (%d): the launch fails", items, maxItems))
		}
		if multiple > 0 && items%multiple != 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%d work-items per group is not a multiple of the preferred %d: the last %d-wide bundle of each group runs part empty", items, multiple, multiple))
		}
	} else {
		c.Launch = "launch not known here"
	}
	c.Notes = append(c.Notes, "no occupancy: OpenCL exposes no occupancy query (and no register count)")
	binary, err := prog.Binary()
	switch {
	case err != nil:
		c.Notes = append(c.Notes, "no PTX: "+err.Error())
	case !strings.Contains(string(binary), ".entry"):
		c.Notes = append(c.Notes, "no instruction counts: this driver keeps its programs in its own format, not PTX (NVIDIA's OpenCL keeps PTX)")
	default:
		ptx := string(binary)
		if c.PTX, err = PTXFunction(ptx, k.Entry); err == nil {
			c.PTXCounts, _ = CountPTX(ptx, k.Entry)
		} else {
			c.Notes = append(c.Notes, err.Error())
		}
	}
}
