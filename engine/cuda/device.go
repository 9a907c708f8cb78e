package cuda

import (
	"fmt"
)

// Device is a CUDA device ordinal, as in cu.Device.
type Device int32

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

// The attributes gpulab reads (values from cuda.h).
const (
	MaxThreadsPerBlock               DeviceAttribute = 1
	MaxSharedMemoryPerBlock          DeviceAttribute = 8
	TotalConstantMemory              DeviceAttribute = 9
	WarpSize                         DeviceAttribute = 10
	MaxRegistersPerBlock             DeviceAttribute = 12
	ClockRate                        DeviceAttribute = 13 // kHz
	MultiprocessorCount              DeviceAttribute = 16
	MemoryClockRate                  DeviceAttribute = 36 // kHz
	GlobalMemoryBusWidth             DeviceAttribute = 37 // bits
	L2CacheSize                      DeviceAttribute = 38
	MaxThreadsPerMultiprocessor      DeviceAttribute = 39
	UnifiedAddressing                DeviceAttribute = 41
	ComputeCapabilityMajor           DeviceAttribute = 75
	ComputeCapabilityMinor           DeviceAttribute = 76
	MaxSharedMemoryPerMultiprocessor DeviceAttribute = 81
	MaxRegistersPerMultiprocessor    DeviceAttribute = 82
	MaxSharedMemoryPerBlockOptin     DeviceAttribute = 97
	MaxBlocksPerMultiprocessor       DeviceAttribute = 106
)

// DeviceCount returns the number of CUDA devices; 0 (and the reason) when
// there is no driver.
func DeviceCount() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var n int32
	if err := check("cuDeviceGetCount", cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// GetDevice returns the device with the given ordinal.
func GetDevice(ordinal int) (Device, error) {
	n, err := DeviceCount()
	if err != nil {
		return 0, err
	}
	if ordinal < 0 || ordinal >= n {
		return 0, fmt.Errorf("cuda: no device cuda:%d (%d device(s): cuda:0..cuda:%d)", ordinal, n, n-1)
	}
	var d int32
	err = check("cuDeviceGet", cuDeviceGet(&d, int32(ordinal)))
	return Device(d), err
}

// Name returns the device's marketing name, e.g. "NVIDIA H200".
func (d Device) Name() (string, error) {
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", cuDeviceGetName(&buf[0], int32(len(buf)), int32(d))); err != nil {
		return "", err
	}
	for i, c := range buf {
		if c == 0 {
			return string(buf[:i]), nil
		}
	}
	return string(buf), nil
}

// Attribute reads one device attribute.
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	var v int32
	err := check(fmt.Sprintf("cuDeviceGetAttribute(%d)", a), cuDeviceGetAttribute(&v, int32(a), int32(d)))
	return int(v), err
}

// TotalMem returns the device's memory in bytes.
func (d Device) TotalMem() (uint64, error) {
	var b uint64
	err := check("cuDeviceTotalMem_v2", cuDeviceTotalMem(&b, int32(d)))
	return b, err
}

// CanAccessPeer reports whether d can read and write peer's memory directly.
func (d Device) CanAccessPeer(peer Device) (bool, error) {
	var v int32
	err := check("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer(&v, int32(d), int32(peer)))
	return v != 0, err
}

// Properties are the attributes that the lab's plots and notebooks use.
type Properties struct {
	Ordinal             int     `json:"ordinal"`
	Name                string  `json:"name"`
	Major, Minor        int     `json:"-"`
	ComputeCapability   string  `json:"compute_capability"`
	SMs                 int     `json:"sms"`
	ClockMHz            int     `json:"clock_mhz"`
	MemoryClockMHz      int     `json:"memory_clock_mhz"`
	BusWidthBits        int     `json:"bus_width_bits"`
	MemoryBytes         uint64  `json:"memory_bytes"`
	L2Bytes             int     `json:"l2_bytes"`
	WarpSize            int     `json:"warp_size"`
	MaxThreadsPerBlock  int     `json:"max_threads_per_block"`
	MaxThreadsPerSM     int     `json:"max_threads_per_sm"`
	MaxBlocksPerSM      int     `json:"max_blocks_per_sm"`
	SharedPerBlock      int     `json:"shared_per_block"`
	SharedPerBlockOptin int     `json:"shared_per_block_optin"`
	SharedPerSM         int     `json:"shared_per_sm"`
	RegistersPerBlock   int     `json:"registers_per_block"`
	RegistersPerSM      int     `json:"registers_per_sm"`
	FP32LanesPerSM      int     `json:"fp32_lanes_per_sm"`
	PeakFP32GFLOPS      float64 `json:"peak_fp32_gflops"`
	// PeakTensorGFLOPS is the dense tensor-core peak by input precision
	// ("tf32", "bf16"; FP32 accumulation), where the architecture is known.
	PeakTensorGFLOPS map[string]float64 `json:"peak_tensor_gflops,omitempty"`
	PeakGBps         float64            `json:"peak_gbps"`
}

// Properties reads every attribute in one go.
func (d Device) Properties() (Properties, error) {
	p := Properties{Ordinal: int(d)}
	var err error
	if p.Name, err = d.Name(); err != nil {
		return p, err
	}
	if p.MemoryBytes, err = d.TotalMem(); err != nil {
		return p, err
	}
	for _, f := range []struct {
		attr DeviceAttribute
		dst  *int
	}{
		{ComputeCapabilityMajor, &p.Major}, {ComputeCapabilityMinor, &p.Minor},
		{MultiprocessorCount, &p.SMs}, {ClockRate, &p.ClockMHz}, {MemoryClockRate, &p.MemoryClockMHz},
		{GlobalMemoryBusWidth, &p.BusWidthBits}, {L2CacheSize, &p.L2Bytes}, {WarpSize, &p.WarpSize},
		{MaxThreadsPerBlock, &p.MaxThreadsPerBlock}, {MaxThreadsPerMultiprocessor, &p.MaxThreadsPerSM},
		{MaxBlocksPerMultiprocessor, &p.MaxBlocksPerSM}, {MaxSharedMemoryPerBlock, &p.SharedPerBlock},
		{MaxSharedMemoryPerBlockOptin, &p.SharedPerBlockOptin},
		{MaxSharedMemoryPerMultiprocessor, &p.SharedPerSM}, {MaxRegistersPerBlock, &p.RegistersPerBlock},
		{MaxRegistersPerMultiprocessor, &p.RegistersPerSM},
	} {
		v, err := d.Attribute(f.attr)
		if err != nil {
			return p, fmt.Errorf("cuda:%d: %w", d, err)
		}
		*f.dst = v
	}
	p.ClockMHz /= 1000 // the driver reports kHz
	p.MemoryClockMHz /= 1000
	p.ComputeCapability = fmt.Sprintf("%d.%d", p.Major, p.Minor)
	p.FP32LanesPerSM = fp32LanesPerSM(p.Major, p.Minor)
	// Peak FP32: every lane retires one FMA (2 flops) per clock.
	p.PeakFP32GFLOPS = float64(p.SMs*p.FP32LanesPerSM) * 2 * float64(p.ClockMHz) / 1e3
	for prec, flops := range tensorFlopsPerSM(p.Major, p.Minor) {
		if p.PeakTensorGFLOPS == nil {
			p.PeakTensorGFLOPS = map[string]float64{}
		}
		p.PeakTensorGFLOPS[prec] = float64(p.SMs*flops) * float64(p.ClockMHz) / 1e3
	}
	// Peak DRAM bandwidth: double data rate on a bus of BusWidthBits.
	p.PeakGBps = 2 * float64(p.MemoryClockMHz) * 1e6 * float64(p.BusWidthBits/8) / 1e9
	return p, nil
}

// tensorFlopsPerSM is the dense tensor-core rate of one SM, in flops per
// clock, by input precision with FP32 accumulation (NVIDIA's architecture
// whitepapers: A100, GA102, AD102, H100). At the SM clock the driver
// reports, these peaks sit a little above the datasheets', which assume a
// lower clock under tensor load (H100 SXM: 989 TFLOP/s BF16 dense).
func tensorFlopsPerSM(major, minor int) map[string]int {
	switch {
	case major == 8 && minor == 0:
		return map[string]int{"tf32": 1024, "bf16": 2048}
	case major == 8: // 8.6, 8.7, 8.9
		return map[string]int{"tf32": 256, "bf16": 512}
	case major == 9:
		return map[string]int{"tf32": 2048, "bf16": 4096}
	}
	return nil
}

// fp32LanesPerSM is the number of FP32 units per SM for each architecture
// (CUDA C Programming Guide, "Arithmetic Instructions" throughput table).
func fp32LanesPerSM(major, minor int) int {
	switch {
	case major == 3:
		return 192
	case major == 6 && minor == 0, major == 7, major == 8 && minor == 0:
		return 64
	default: // 5.x, 6.1+, 8.6+, 9.0 and later
		return 128
	}
}
