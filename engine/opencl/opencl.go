// Package opencl is a small binding to OpenCL for running compute kernels
// from Go without cgo.
//
// It opens the OpenCL ICD loader, libOpenCL.so.1, at run time with purego,
// so programs using it build with CGO_ENABLED=0 and fail at run time, with an
// error that says why, on machines without OpenCL.
//
// The usual sequence is:
//
//	platforms, err := opencl.Platforms()
//	devices, err := platforms[0].Devices()
//	ctx, err := opencl.NewContext(devices[0])
//	defer ctx.Release()
//	prog, err := ctx.Build(source, "-cl-fast-relaxed-math")
//	k, err := prog.Kernel("vadd")
//	a, err := ctx.Alloc(4 * n)
//	err = opencl.WriteSlice(ctx, a, xs)
//	ev, err := ctx.Launch(k, []int{n}, nil, a, b, c, int32(n))
//	d, err := ev.Duration()
//	err = opencl.ReadSlice(ctx, c, ys)
//
// A Context owns one device and one in-order command queue with profiling
// enabled, so every Event can report how long its command ran on the device.
// Programs and kernels are cached inside the Context and released with it.
// Buffers and Events are released by their Release methods, or by the
// garbage collector some time after they become unreachable.
package opencl

import (
	"fmt"
	"unsafe"
)

// Platform is an OpenCL platform: one vendor's driver (ICD), such as
// PoCL or NVIDIA CUDA.
type Platform struct {
	id uintptr // cl_platform_id
}

// Platforms returns the OpenCL platforms installed on this machine.
// A machine where the loader finds no driver has no platforms; that is not
// an error.
func Platforms() ([]Platform, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var n uint32
	status := cl.getPlatformIDs(0, nil, &n)
	if status == clPlatformNotFoundKHR || (status == clSuccess && n == 0) {
		return []Platform{}, nil
	}
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: get platforms: %w", err)
	}
	ids := make([]uintptr, n)
	if err := check(cl.getPlatformIDs(n, &ids[0], &n)); err != nil {
		return nil, fmt.Errorf("opencl: get platforms: %w", err)
	}
	platforms := make([]Platform, n)
	for i := range platforms {
		platforms[i] = Platform{id: ids[i]}
	}
	return platforms, nil
}

// Name returns the platform name, such as "Portable Computing Language",
// or "" if it cannot be read.
func (p Platform) Name() string { return p.info(clPlatformName) }

// Vendor returns the platform vendor, or "" if it cannot be read.
func (p Platform) Vendor() string { return p.info(clPlatformVendor) }

// Version returns the platform version string, of the form
// "OpenCL <major>.<minor> <vendor-specific>", or "" if it cannot be read.
func (p Platform) Version() string { return p.info(clPlatformVersion) }

func (p Platform) info(param uint32) string {
	if Load() != nil {
		return ""
	}
	s, err := infoString(p.query, param)
	if err != nil {
		return ""
	}
	return s
}

func (p Platform) query(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
	return cl.getPlatformInfo(p.id, param, size, value, sizeRet)
}

// Devices returns all devices of the platform, of every type.
// A platform with no devices returns an empty slice.
func (p Platform) Devices() ([]Device, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var n uint32
	status := cl.getDeviceIDs(p.id, clDeviceTypeAll, 0, nil, &n)
	if status == clDeviceNotFound || (status == clSuccess && n == 0) {
		return []Device{}, nil
	}
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: get devices: %w", err)
	}
	ids := make([]uintptr, n)
	if err := check(cl.getDeviceIDs(p.id, clDeviceTypeAll, n, &ids[0], &n)); err != nil {
		return nil, fmt.Errorf("opencl: get devices: %w", err)
	}
	devices := make([]Device, n)
	for i := range devices {
		devices[i] = Device{id: ids[i], platform: p}
	}
	return devices, nil
}

// Device is an OpenCL device of a Platform.
type Device struct {
	id       uintptr // cl_device_id
	platform Platform
}

// Platform returns the platform the device belongs to.
func (d Device) Platform() Platform { return d.platform }

// DeviceInfo describes a device, as reported by clGetDeviceInfo.
type DeviceInfo struct {
	Name, Vendor, Version, DriverVersion, OpenCLCVersion string

	// Type is "CPU", "GPU", "ACCELERATOR", "CUSTOM" or "DEFAULT".
	Type string

	ComputeUnits int
	MaxClockMHz  int

	GlobalMemBytes uint64
	LocalMemBytes  uint64 // __local memory per work-group
	MaxAllocBytes  uint64 // largest single buffer
	// BaseAddrAlignBits is CL_DEVICE_MEM_BASE_ADDR_ALIGN: a sub-buffer's
	// origin must be a multiple of it (in bits, as OpenCL gives it).
	BaseAddrAlignBits int

	MaxWorkGroupSize int   // work-items per work-group, over all dimensions
	MaxWorkItemSizes []int // work-items per work-group, per dimension

	PreferredVectorWidthFloat int
	NativeVectorWidthFloat    int

	GlobalMemCacheBytes     uint64
	GlobalMemCachelineBytes int

	Extensions string // space-separated
}

// Info reads the device's properties.
func (d Device) Info() (DeviceInfo, error) {
	if err := Load(); err != nil {
		return DeviceInfo{}, err
	}
	var firstErr error
	note := func(name string, err error) {
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("opencl: device info %s: %w", name, err)
		}
	}
	// One reader per C type of the properties; each notes the first error.
	str := func(param uint32, name string) string {
		s, err := infoString(d.query, param)
		note(name, err)
		return s
	}
	clUint := func(param uint32, name string) int { // cl_uint
		v, err := infoScalar[uint32](d.query, param)
		note(name, err)
		return int(v)
	}
	clUlong := func(param uint32, name string) uint64 { // cl_ulong
		v, err := infoScalar[uint64](d.query, param)
		note(name, err)
		return v
	}
	sizeT := func(param uint32, name string) int { // size_t
		v, err := infoScalar[uintptr](d.query, param)
		note(name, err)
		return int(v)
	}

	info := DeviceInfo{
		Name:                      str(clDeviceName, "CL_DEVICE_NAME"),
		Vendor:                    str(clDeviceVendor, "CL_DEVICE_VENDOR"),
		Version:                   str(clDeviceVersion, "CL_DEVICE_VERSION"),
		DriverVersion:             str(clDriverVersion, "CL_DRIVER_VERSION"),
		OpenCLCVersion:            str(clDeviceOpenCLCVersion, "CL_DEVICE_OPENCL_C_VERSION"),
		Type:                      deviceType(clUlong(clDeviceType, "CL_DEVICE_TYPE")),
		ComputeUnits:              clUint(clDeviceMaxComputeUnits, "CL_DEVICE_MAX_COMPUTE_UNITS"),
		MaxClockMHz:               clUint(clDeviceMaxClockFrequency, "CL_DEVICE_MAX_CLOCK_FREQUENCY"),
		GlobalMemBytes:            clUlong(clDeviceGlobalMemSize, "CL_DEVICE_GLOBAL_MEM_SIZE"),
		LocalMemBytes:             clUlong(clDeviceLocalMemSize, "CL_DEVICE_LOCAL_MEM_SIZE"),
		MaxAllocBytes:             clUlong(clDeviceMaxMemAllocSize, "CL_DEVICE_MAX_MEM_ALLOC_SIZE"),
		BaseAddrAlignBits:         clUint(clDeviceMemBaseAddrAlign, "CL_DEVICE_MEM_BASE_ADDR_ALIGN"),
		MaxWorkGroupSize:          sizeT(clDeviceMaxWorkGroupSize, "CL_DEVICE_MAX_WORK_GROUP_SIZE"),
		PreferredVectorWidthFloat: clUint(clDevicePreferredVectorWidthFloat, "CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT"),
		NativeVectorWidthFloat:    clUint(clDeviceNativeVectorWidthFloat, "CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT"),
		GlobalMemCacheBytes:       clUlong(clDeviceGlobalMemCacheSize, "CL_DEVICE_GLOBAL_MEM_CACHE_SIZE"),
		GlobalMemCachelineBytes:   clUint(clDeviceGlobalMemCachelineSize, "CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE"),
		Extensions:                str(clDeviceExtensions, "CL_DEVICE_EXTENSIONS"),
	}
	sizes, err := infoSlice[uintptr](d.query, clDeviceMaxWorkItemSizes)
	note("CL_DEVICE_MAX_WORK_ITEM_SIZES", err)
	for _, s := range sizes {
		info.MaxWorkItemSizes = append(info.MaxWorkItemSizes, int(s))
	}
	if firstErr != nil {
		return DeviceInfo{}, firstErr
	}
	return info, nil
}

func (d Device) query(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
	return cl.getDeviceInfo(d.id, param, size, value, sizeRet)
}

// deviceType names a cl_device_type bitfield by its most specific bit.
func deviceType(t uint64) string {
	switch {
	case t&clDeviceTypeGPU != 0:
		return "GPU"
	case t&clDeviceTypeCPU != 0:
		return "CPU"
	case t&clDeviceTypeAccelerator != 0:
		return "ACCELERATOR"
	case t&clDeviceTypeCustom != 0:
		return "CUSTOM"
	case t&clDeviceTypeDefault != 0:
		return "DEFAULT"
	}
	return fmt.Sprintf("UNKNOWN(%#x)", t)
}

// majorVersion parses the major version from the "OpenCL <major>.<minor> ..."
// strings returned for platform and device versions. It returns 0 if s has
// another form.
func majorVersion(s string) int {
	var major, minor int
	if _, err := fmt.Sscanf(s, "OpenCL %d.%d", &major, &minor); err != nil {
		return 0
	}
	return major
}
