// Package engine is gpulab's one view of the devices on a machine: the Go CPU
// backend, every OpenCL device and every CUDA device, each named by an id
// that selects it everywhere in the lab (the CLI's --device, notebooks,
// benchmark records):
//
//	cpu           the Go reference backend (engine/cpu)
//	opencl:P:D    OpenCL platform P, device D (engine/opencl)
//	cuda:N        CUDA device N (engine/cuda)
//	all-gpus      every CUDA device of the host together ([AllGPUs]), for
//	              work spread over several GPUs
//
// A missing driver is not an error: its family is simply absent, and
// [Devices] says why.
package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gpulab/engine/atomicfile"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda"
	"gpulab/engine/opencl"
)

// Kind is a device family.
type Kind string

// The device families.
const (
	CPU    Kind = "cpu"
	OpenCL Kind = "opencl"
	CUDA   Kind = "cuda"
)

// Info describes one usable device.
type Info struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Kind         Kind   `json:"kind"`
	Platform     string `json:"platform,omitempty"` // OpenCL platform name
	ComputeUnits int    `json:"compute_units"`      // SMs, OpenCL compute units, or CPU threads
	ClockMHz     int    `json:"clock_mhz"`
	MemoryBytes  uint64 `json:"memory_bytes"`
	// InHostMemory is set for a device whose buffers are host memory: an
	// OpenCL CPU device such as PoCL (the CPU backend's arrays are host
	// memory by definition).
	InHostMemory bool    `json:"in_host_memory,omitempty"`
	PeakGFLOPS   float64 `json:"peak_gflops"` // FP32; 0 when unknown
	// TensorPeaks are the dense tensor-core peaks in GFLOP/s by input
	// precision (tf32, bf16), where known.
	TensorPeaks map[string]float64 `json:"tensor_peaks,omitempty"`
	PeakGBps    float64            `json:"peak_gbps"` // memory bandwidth; 0 when unknown
	PeakNote    string             `json:"peak_note"` // where the peaks come from
	// CacheBytes is the last-level cache in front of PeakGBps's memory,
	// where known (0 otherwise): the host's for the CPU and OpenCL CPU
	// devices. Traffic that fits in it is served from cache, not memory.
	CacheBytes uint64 `json:"cache_bytes,omitempty"`
}

// PeakFor is the peak GFLOP/s of the unit that computes in precision:
// the FP32 lanes for "fp32" (or ""), the tensor cores for "tf32" and
// "bf16"; 0 when unknown.
func (i Info) PeakFor(precision string) float64 {
	if precision == "" || precision == "fp32" {
		return i.PeakGFLOPS
	}
	return i.TensorPeaks[precision]
}

// OnCPU reports whether the device computes on the host's CPU cores: the
// Go backend, or an OpenCL CPU device such as PoCL, whose work-items are
// loop iterations and SIMD lanes of a core rather than the lanes of a warp.
func (i Info) OnCPU() bool { return i.Kind == CPU || i.Kind == OpenCL && i.InHostMemory }

// Missing is a device family that could not be used, and why.
type Missing struct {
	Kind   Kind   `json:"kind"`
	Reason string `json:"reason"`
}

func (m Missing) String() string { return fmt.Sprintf("%s: %s", m.Kind, m.Reason) }

// Devices lists every usable device, CPU first, then OpenCL, then CUDA.
// missing explains each family that contributed no device.
func Devices() (devices []Info, missing []Missing) {
	devices = append(devices, cpuInfo())
	cudaDevs, err := cudaInfos()
	if err != nil {
		missing = append(missing, Missing{CUDA, err.Error()})
	}
	clDevs, err := openCLInfos(cudaDevs)
	if err != nil {
		missing = append(missing, Missing{OpenCL, err.Error()})
	}
	devices = append(devices, clDevs...)
	return append(devices, cudaDevs...), missing
}

// IDs returns the ids of Devices().
func IDs() []string {
	devs, _ := Devices()
	ids := make([]string, len(devs))
	for i, d := range devs {
		ids[i] = d.ID
	}
	return ids
}

func cpuInfo() Info {
	h, bw := cpu.Host(), cpuBandwidth()
	return Info{
		ID: "cpu", Name: h.Model, Kind: CPU, ComputeUnits: h.Threads, ClockMHz: int(h.ClockMHz),
		PeakGFLOPS: h.PeakGFLOPS(), PeakGBps: bw.GBps, CacheBytes: h.LLCBytes,
		PeakNote: fmt.Sprintf("FLOP/s: %d threads x %.0f MHz x %d %s lanes x FMA x 2 units; GB/s: a parallel 128 MiB copy measured %s and kept in %s (no spec is readable from software; lab devices --remeasure measures again)",
			h.Threads, h.ClockMHz, h.FP32Lanes(), h.SIMD, bw.MeasuredAt.Format("2006-01-02 15:04 MST"), CPUPeaksPath()),
	}
}

// cpuBW is the host's bandwidth once read or measured in this process.
var cpuBW struct {
	sync.Mutex
	kept *CPUPeaks
}

// CPUPeaks is the host's measured copy bandwidth, kept once per machine in
// the user cache (CPUPeaksPath) so that every notebook cell and command
// uses the same figure.
type CPUPeaks struct {
	Model      string    `json:"model"`
	Threads    int       `json:"threads"`
	GBps       float64   `json:"gbps"` // bytes read + written per second
	MeasuredAt time.Time `json:"measured_at"`
	// Method is how GBps was measured (cpuCopyMethod); a kept figure
	// measured another way is measured again.
	Method string `json:"method"`
}

// cpuCopyMethod names RemeasureCPU's measurement. The source is written
// before it is timed: an unwritten one maps every page to the kernel's
// one zero page, whose reads hit in cache, and the copy ran about 3.5
// times faster than DRAM allows (a figure kept by earlier versions, which
// have no method).
const cpuCopyMethod = "parallel copy of 128 MiB from a written source, best of 3"

// CPUPeaksPath is where the host's measured bandwidth is kept:
// <user cache>/gpulab/cpu-peaks.json ("" when there is no user cache).
func CPUPeaksPath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "gpulab", "cpu-peaks.json")
}

// cpuBandwidth is the host's copy bandwidth: the kept measurement when it
// is of this CPU, else a new one, kept.
func cpuBandwidth() CPUPeaks {
	cpuBW.Lock()
	kept := cpuBW.kept
	cpuBW.Unlock()
	if kept != nil {
		return *kept
	}
	h := cpu.Host()
	if data, err := os.ReadFile(CPUPeaksPath()); err == nil {
		var p CPUPeaks
		if json.Unmarshal(data, &p) == nil && p.Model == h.Model && p.Threads == h.Threads && p.GBps > 0 && p.Method == cpuCopyMethod {
			cpuBW.Lock()
			cpuBW.kept = &p
			cpuBW.Unlock()
			return p
		}
	}
	p, _ := RemeasureCPU() // an unwritable cache still gives this process its figure
	return p
}

// RemeasureCPU measures the host's copy bandwidth again (a parallel copy
// of 128 MiB, best of 3) and keeps it for every later cell and command.
func RemeasureCPU() (CPUPeaks, error) {
	const n = 32 << 20 // 128 MiB of float32, well past any L3
	src, dst := make([]float32, n), make([]float32, n)
	for i := range src { // written, so that each page is its own (cpuCopyMethod)
		src[i] = float32(i)
	}
	cpu.Copy(dst, src) // touch the destination's pages
	best := time.Duration(1 << 62)
	for range 3 {
		t := time.Now()
		cpu.Copy(dst, src)
		best = min(best, time.Since(t))
	}
	h := cpu.Host()
	p := CPUPeaks{Model: h.Model, Threads: h.Threads, GBps: 2 * 4 * n / best.Seconds() / 1e9,
		MeasuredAt: time.Now().UTC().Truncate(time.Second), Method: cpuCopyMethod}
	cpuBW.Lock()
	cpuBW.kept = &p
	cpuBW.Unlock()
	path := CPUPeaksPath()
	if path == "" {
		return p, errors.New("engine: no user cache directory to keep the CPU's bandwidth in")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return p, err
	}
	data, _ := json.MarshalIndent(p, "", "  ")
	return p, atomicfile.WriteBytes(path, append(data, '\n'))
}

func cudaInfos() ([]Info, error) {
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("the driver reports no CUDA device")
	}
	var out []Info
	for i := range n {
		d, err := cuda.GetDevice(i)
		if err != nil {
			return out, err
		}
		p, err := d.Properties()
		if err != nil {
			return out, err
		}
		out = append(out, Info{
			ID: fmt.Sprintf("cuda:%d", i), Name: p.Name, Kind: CUDA, ComputeUnits: p.SMs, ClockMHz: p.ClockMHz,
			MemoryBytes: p.MemoryBytes, PeakGFLOPS: p.PeakFP32GFLOPS, PeakGBps: p.PeakGBps, TensorPeaks: p.PeakTensorGFLOPS,
			PeakNote: fmt.Sprintf("sm_%d%d: %d SMs x %d FP32 lanes x 2 x %d MHz; %d-bit bus x 2 x %d MHz",
				p.Major, p.Minor, p.SMs, p.FP32LanesPerSM, p.ClockMHz, p.BusWidthBits, p.MemoryClockMHz),
		})
	}
	return out, nil
}

// openCLInfos lists OpenCL devices. A GPU that CUDA also sees (same name) takes
// CUDA's peaks; a CPU device takes the host's; others have unknown peaks.
func openCLInfos(cudaDevs []Info) ([]Info, error) {
	if err := opencl.Load(); err != nil {
		return nil, err
	}
	plats, err := opencl.Platforms()
	if err != nil {
		return nil, err
	}
	var out []Info
	for pi, p := range plats {
		devs, err := p.Devices()
		if err != nil {
			return out, fmt.Errorf("platform %d (%s): %w", pi, p.Name(), err)
		}
		for di, d := range devs {
			di2, err := d.Info()
			if err != nil {
				return out, fmt.Errorf("opencl:%d:%d: %w", pi, di, err)
			}
			info := Info{
				ID: fmt.Sprintf("opencl:%d:%d", pi, di), Name: di2.Name, Kind: OpenCL, Platform: p.Name(),
				ComputeUnits: di2.ComputeUnits, ClockMHz: di2.MaxClockMHz, MemoryBytes: di2.GlobalMemBytes,
				PeakNote: "unknown for this device type",
			}
			switch {
			case di2.Type == "CPU":
				h := cpuInfo()
				info.PeakGFLOPS, info.PeakGBps, info.PeakNote = h.PeakGFLOPS, h.PeakGBps, "the host CPU's (see cpu)"
				info.CacheBytes = h.CacheBytes
				info.InHostMemory = true
			default:
				for _, c := range cudaDevs {
					if c.Name == di2.Name {
						info.PeakGFLOPS, info.PeakGBps, info.PeakNote = c.PeakGFLOPS, c.PeakGBps, "the same GPU's as "+c.ID
						break
					}
				}
			}
			out = append(out, info)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no OpenCL device (install pocl-opencl-icd for the CPU, or a GPU vendor's ICD)")
	}
	return out, nil
}

// Device is an opened device: its Info plus the backend handle for its kind.
type Device struct {
	Info
	CUDA   *cuda.Context   // set when Kind == CUDA
	OpenCL *opencl.Context // set when Kind == OpenCL
}

// Open returns the device with the given id. An unknown id is an error that
// lists the valid ones.
func Open(id string) (*Device, error) {
	devs, missing := Devices()
	for _, info := range devs {
		if info.ID != id {
			continue
		}
		d := &Device{Info: info}
		var err error
		switch info.Kind {
		case CUDA:
			n, _ := strconv.Atoi(strings.TrimPrefix(id, "cuda:"))
			d.CUDA, err = cuda.NewContext(n)
		case OpenCL:
			d.OpenCL, err = openCLContext(id)
		}
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", id, err)
		}
		return d, nil
	}
	ids := make([]string, len(devs))
	for i, d := range devs {
		ids[i] = d.ID
	}
	sort.Strings(ids)
	msg := fmt.Sprintf("unknown device %q; valid ids: %s", id, strings.Join(ids, ", "))
	for _, m := range missing {
		if strings.HasPrefix(id, string(m.Kind)) {
			msg += fmt.Sprintf(" (%s unavailable: %s)", m.Kind, m.Reason)
		}
	}
	return nil, fmt.Errorf("%s", msg)
}

func openCLContext(id string) (*opencl.Context, error) {
	var pi, di int
	if _, err := fmt.Sscanf(id, "opencl:%d:%d", &pi, &di); err != nil {
		return nil, err
	}
	plats, err := opencl.Platforms()
	if err != nil {
		return nil, err
	}
	devs, err := plats[pi].Devices()
	if err != nil {
		return nil, err
	}
	return opencl.NewContext(devs[di])
}

// AllGPUs is the id of every CUDA device of the host together: what
// spreads its work over several GPUs takes it (lab lfm2's pipeline, the
// kmedoids suite's gpus=N). OpenAllGPUs opens them.
const AllGPUs = "all-gpus"

// OpenAllGPUs opens every CUDA device of the host, cuda:0 first. A host
// without one is an error that says so and why (no driver, or the driver
// reports no device).
func OpenAllGPUs() ([]*Device, error) {
	infos, err := cudaInfos()
	if err != nil {
		return nil, fmt.Errorf("no CUDA device to open for %s (%w)", AllGPUs, err)
	}
	devs := make([]*Device, len(infos))
	for i, info := range infos {
		ctx, err := cuda.NewContext(i)
		if err != nil {
			return nil, fmt.Errorf("%s: open %s: %w", AllGPUs, info.ID, err)
		}
		devs[i] = &Device{Info: info, CUDA: ctx}
	}
	return devs, nil
}

// OpenDevices opens the devices that id names: every CUDA device of the
// host for AllGPUs (OpenAllGPUs), else the one device of Open.
func OpenDevices(id string) ([]*Device, error) {
	if id == AllGPUs {
		return OpenAllGPUs()
	}
	d, err := Open(id)
	if err != nil {
		return nil, err
	}
	return []*Device{d}, nil
}

// Close releases the device's OpenCL context. CUDA primary contexts live for
// the whole process and are shared, so Close leaves them.
func (d *Device) Close() {
	if d.OpenCL != nil {
		d.OpenCL.Release()
	}
}

// CheckMemory returns a *MemoryError when need bytes, which what needs for
// purpose, exceed the memory of d: the free memory of a CUDA device
// (cuMemGetInfo); the global memory of an OpenCL device (OpenCL tells no
// free figure; unknown is not checked), and no more than the host has free
// where its buffers are host memory (PoCL); and the host's for the CPU
// (CheckHostMemory).
func (d *Device) CheckMemory(what, purpose string, need uint64) error {
	var avail uint64
	switch d.Kind {
	case CUDA:
		free, _, err := d.CUDA.MemInfo()
		if err != nil {
			return fmt.Errorf("%s: %w", d.ID, err)
		}
		avail = free
	case OpenCL:
		if d.InHostMemory {
			if err := CheckHostMemory(what, purpose+" (in host memory, as the device's buffers are)", need); err != nil {
				return err
			}
		}
		if d.MemoryBytes == 0 {
			return nil
		}
		avail = d.MemoryBytes
	default:
		return CheckHostMemory(what, purpose, need)
	}
	if need > avail {
		return &MemoryError{What: what, For: purpose, Where: d.ID, Need: need, Available: avail}
	}
	return nil
}

// A Need is bytes of memory, and what they hold ("A, B and C").
type Need struct {
	Bytes uint64
	Holds string
}

// CheckRun refuses, with a *MemoryError, a run of what on d that needs
// more memory than there is: host bytes (inputs, references, results read
// back) against HostMemoryAvailable, then, on a CUDA or OpenCL device,
// device bytes against CheckMemory. Where the device's buffers are host
// memory (PoCL), both needs are counted against the host's. On the CPU
// backend the device need is not checked: its arrays are host memory, and
// the caller counts them in host. Suites call it with the sizes a flag or a file gave, before they
// allocate anything.
func (d *Device) CheckRun(what string, host, device Need) error {
	if d.InHostMemory && device.Bytes > 0 { // the device's buffers come out of the same memory
		host = Need{Bytes: host.Bytes + device.Bytes, Holds: host.Holds + "; on " + d.ID + ", whose buffers are host memory: " + device.Holds}
	}
	if err := CheckHostMemory(what, host.Holds, host.Bytes); err != nil {
		return err
	}
	if d.Kind == CPU || device.Bytes == 0 {
		return nil
	}
	return d.CheckMemory(what, device.Holds, device.Bytes)
}
