package opencl

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libName is the OpenCL ICD loader. It dispatches every call to the vendor
// drivers (ICDs) registered in /etc/OpenCL/vendors.
const libName = "libOpenCL.so.1"

// Constants from cl.h used by this package.
const (
	clSuccess             = 0
	clDeviceNotFound      = -1
	clPlatformNotFoundKHR = -1001

	clTrue = 1

	clPlatformVersion = 0x0901
	clPlatformName    = 0x0902
	clPlatformVendor  = 0x0903

	clDeviceTypeDefault     = 1 << 0
	clDeviceTypeCPU         = 1 << 1
	clDeviceTypeGPU         = 1 << 2
	clDeviceTypeAccelerator = 1 << 3
	clDeviceTypeCustom      = 1 << 4
	clDeviceTypeAll         = 0xFFFFFFFF

	clDeviceType                      = 0x1000
	clDeviceMaxComputeUnits           = 0x1002
	clDeviceMaxWorkGroupSize          = 0x1004
	clDeviceMaxWorkItemSizes          = 0x1005
	clDevicePreferredVectorWidthFloat = 0x100A
	clDeviceMaxClockFrequency         = 0x100C
	clDeviceMaxMemAllocSize           = 0x1010
	clDeviceMemBaseAddrAlign          = 0x1019
	clDeviceGlobalMemCachelineSize    = 0x101D
	clDeviceGlobalMemCacheSize        = 0x101E
	clDeviceGlobalMemSize             = 0x101F
	clDeviceLocalMemSize              = 0x1023
	clDeviceName                      = 0x102B
	clDeviceVendor                    = 0x102C
	clDriverVersion                   = 0x102D
	clDeviceVersion                   = 0x102F
	clDeviceExtensions                = 0x1030
	clDeviceNativeVectorWidthFloat    = 0x103A
	clDeviceOpenCLCVersion            = 0x103D

	clContextPlatform                      = 0x1084
	clQueueProperties                      = 0x1093
	clQueueProfilingEnable                 = 1 << 1
	clMemReadWrite                         = 1 << 0
	clBufferCreateTypeRegion               = 0x1220
	clProgramBuildLog                      = 0x1183
	clKernelNumArgs                        = 0x1191
	clKernelWorkGroupSize                  = 0x11B0
	clKernelLocalMemSize                   = 0x11B2
	clKernelPreferredWorkGroupSizeMultiple = 0x11B3
	clKernelPrivateMemSize                 = 0x11B4
	clProfilingCommandStart                = 0x1282
	clProfilingCommandEnd                  = 0x1283
)

// infoFunc is the shape shared by the clGet*Info calls once the object
// (and device, for per-device queries) is bound.
type infoFunc func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32

// cl holds the OpenCL entry points, filled in by Load.
// Handles (cl_platform_id, cl_context, cl_mem ...) are passed as uintptr.
var cl struct {
	getPlatformIDs                   func(num uint32, platforms *uintptr, numRet *uint32) int32
	getPlatformInfo                  func(platform uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	getDeviceIDs                     func(platform uintptr, typ uint64, num uint32, devices *uintptr, numRet *uint32) int32
	getDeviceInfo                    func(device uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	createContext                    func(props *uintptr, numDevices uint32, devices *uintptr, notify, userData uintptr, errcode *int32) uintptr
	releaseContext                   func(context uintptr) int32
	createCommandQueue               func(context, device uintptr, props uint64, errcode *int32) uintptr
	createCommandQueueWithProperties func(context, device uintptr, props *uint64, errcode *int32) uintptr
	releaseCommandQueue              func(queue uintptr) int32
	finish                           func(queue uintptr) int32
	createProgramWithSource          func(context uintptr, count uint32, sources **byte, lengths *uintptr, errcode *int32) uintptr
	buildProgram                     func(program uintptr, numDevices uint32, devices *uintptr, options string, notify, userData uintptr) int32
	getProgramBuildInfo              func(program, device uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	releaseProgram                   func(program uintptr) int32
	createKernel                     func(program uintptr, name string, errcode *int32) uintptr
	getKernelInfo                    func(kernel uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	getKernelWorkGroupInfo           func(kernel, device uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	setKernelArg                     func(kernel uintptr, index uint32, size uintptr, value unsafe.Pointer) int32
	releaseKernel                    func(kernel uintptr) int32
	createBuffer                     func(context uintptr, flags uint64, size uintptr, hostPtr unsafe.Pointer, errcode *int32) uintptr
	releaseMemObject                 func(mem uintptr) int32
	createSubBuffer                  func(buffer uintptr, flags uint64, createType uint32, info unsafe.Pointer, errcode *int32) uintptr
	enqueueWriteBuffer               func(queue, buffer uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, numEvents uint32, waitList, event *uintptr) int32
	enqueueReadBuffer                func(queue, buffer uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, numEvents uint32, waitList, event *uintptr) int32
	enqueueCopyBuffer                func(queue, src, dst uintptr, srcOffset, dstOffset, size uintptr, numEvents uint32, waitList, event *uintptr) int32
	enqueueNDRangeKernel             func(queue, kernel uintptr, workDim uint32, offset, global, local *uintptr, numEvents uint32, waitList, event *uintptr) int32
	waitForEvents                    func(num uint32, events *uintptr) int32
	getEventProfilingInfo            func(event uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	releaseEvent                     func(event uintptr) int32
}

var (
	loadOnce sync.Once
	loadErr  error
)

// Load opens libOpenCL.so.1, the OpenCL ICD loader, and resolves the
// functions this package calls. It does the work once; later calls return
// the first result. Every other function in the package calls Load, so
// calling it directly is only needed to learn early whether OpenCL is
// available.
//
// Load does not look for drivers: a loader with no ICD registered is not an
// error here, and Platforms then returns an empty slice.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

func load() error {
	lib, err := purego.Dlopen(libName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("opencl: %s not found: %w", libName, err)
	}
	symbols := []struct {
		name     string
		fptr     any
		optional bool
	}{
		{"clGetPlatformIDs", &cl.getPlatformIDs, false},
		{"clGetPlatformInfo", &cl.getPlatformInfo, false},
		{"clGetDeviceIDs", &cl.getDeviceIDs, false},
		{"clGetDeviceInfo", &cl.getDeviceInfo, false},
		{"clCreateContext", &cl.createContext, false},
		{"clReleaseContext", &cl.releaseContext, false},
		{"clCreateCommandQueue", &cl.createCommandQueue, false},
		// OpenCL 2.0; an older loader may lack it.
		{"clCreateCommandQueueWithProperties", &cl.createCommandQueueWithProperties, true},
		{"clReleaseCommandQueue", &cl.releaseCommandQueue, false},
		{"clFinish", &cl.finish, false},
		{"clCreateProgramWithSource", &cl.createProgramWithSource, false},
		{"clBuildProgram", &cl.buildProgram, false},
		{"clGetProgramBuildInfo", &cl.getProgramBuildInfo, false},
		{"clReleaseProgram", &cl.releaseProgram, false},
		{"clCreateKernel", &cl.createKernel, false},
		{"clGetKernelInfo", &cl.getKernelInfo, false},
		{"clGetKernelWorkGroupInfo", &cl.getKernelWorkGroupInfo, false},
		{"clSetKernelArg", &cl.setKernelArg, false},
		{"clReleaseKernel", &cl.releaseKernel, false},
		{"clCreateBuffer", &cl.createBuffer, false},
		{"clReleaseMemObject", &cl.releaseMemObject, false},
		{"clCreateSubBuffer", &cl.createSubBuffer, false},
		{"clEnqueueWriteBuffer", &cl.enqueueWriteBuffer, false},
		{"clEnqueueReadBuffer", &cl.enqueueReadBuffer, false},
		{"clEnqueueCopyBuffer", &cl.enqueueCopyBuffer, false},
		{"clEnqueueNDRangeKernel", &cl.enqueueNDRangeKernel, false},
		{"clWaitForEvents", &cl.waitForEvents, false},
		{"clGetEventProfilingInfo", &cl.getEventProfilingInfo, false},
		{"clReleaseEvent", &cl.releaseEvent, false},
	}
	for _, s := range symbols {
		sym, err := purego.Dlsym(lib, s.name)
		if err != nil {
			if s.optional {
				continue
			}
			return fmt.Errorf("opencl: %s: missing symbol %s: %w", libName, s.name, err)
		}
		purego.RegisterFunc(s.fptr, sym)
	}
	return nil
}

// infoString reads a string-valued property: it asks for the size, then
// fetches the bytes and strips the trailing NUL.
func infoString(query infoFunc, param uint32) (string, error) {
	var size uintptr
	if err := check(query(param, 0, nil, &size)); err != nil {
		return "", err
	}
	if size == 0 {
		return "", nil
	}
	buf := make([]byte, size)
	if err := check(query(param, size, unsafe.Pointer(&buf[0]), nil)); err != nil {
		return "", err
	}
	for len(buf) > 0 && buf[len(buf)-1] == 0 {
		buf = buf[:len(buf)-1]
	}
	return string(buf), nil
}

// infoScalar reads a fixed-size property such as a cl_uint, cl_ulong or size_t.
func infoScalar[T any](query infoFunc, param uint32) (T, error) {
	var v T
	err := check(query(param, unsafe.Sizeof(v), unsafe.Pointer(&v), nil))
	return v, err
}

// infoSlice reads an array property such as CL_DEVICE_MAX_WORK_ITEM_SIZES.
func infoSlice[T any](query infoFunc, param uint32) ([]T, error) {
	var size uintptr
	if err := check(query(param, 0, nil, &size)); err != nil {
		return nil, err
	}
	var zero T
	n := int(size / unsafe.Sizeof(zero))
	if n == 0 {
		return nil, nil
	}
	v := make([]T, n)
	err := check(query(param, uintptr(n)*unsafe.Sizeof(zero), unsafe.Pointer(&v[0]), nil))
	return v, err
}
