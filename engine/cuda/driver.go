package cuda

import "unsafe"

// The driver entry points, bound by Load. Pointer-sized handles (CUcontext,
// CUmodule, CUfunction, CUstream, CUevent) are uintptr; CUdeviceptr is uint64;
// CUdevice is int32. Names carry the versioned suffix that cuda.h maps them to.
var (
	cuInit                      func(flags uint32) int32
	cuDriverGetVersion          func(v *int32) int32
	cuDeviceGetCount            func(n *int32) int32
	cuDeviceGet                 func(d *int32, ordinal int32) int32
	cuDeviceGetName             func(name *byte, size int32, d int32) int32
	cuDeviceGetAttribute        func(v *int32, attr int32, d int32) int32
	cuDeviceTotalMem            func(bytes *uint64, d int32) int32
	cuDeviceCanAccessPeer       func(can *int32, d, peer int32) int32
	cuDevicePrimaryCtxRetain    func(ctx *uintptr, d int32) int32
	cuDevicePrimaryCtxRelease   func(d int32) int32
	cuCtxSetCurrent             func(ctx uintptr) int32
	cuCtxSynchronize            func() int32
	cuCtxEnablePeerAccess       func(peer uintptr, flags uint32) int32
	cuMemGetInfo                func(free, total *uint64) int32
	cuMemAlloc                  func(p *uint64, bytes uint64) int32
	cuMemFree                   func(p uint64) int32
	cuMemAllocHost              func(p *unsafe.Pointer, bytes uint64) int32
	cuMemFreeHost               func(p unsafe.Pointer) int32
	cuMemcpyHtoD                func(dst uint64, src unsafe.Pointer, bytes uint64) int32
	cuMemcpyDtoH                func(dst unsafe.Pointer, src uint64, bytes uint64) int32
	cuMemcpyDtoD                func(dst, src uint64, bytes uint64) int32
	cuMemcpyHtoDAsync           func(dst uint64, src unsafe.Pointer, bytes uint64, s uintptr) int32
	cuMemcpyDtoHAsync           func(dst unsafe.Pointer, src uint64, bytes uint64, s uintptr) int32
	cuMemcpyDtoDAsync           func(dst, src uint64, bytes uint64, s uintptr) int32
	cuMemcpyPeerAsync           func(dst uint64, dstCtx uintptr, src uint64, srcCtx uintptr, bytes uint64, s uintptr) int32
	cuMemsetD8Async             func(dst uint64, v uint8, n uint64, s uintptr) int32
	cuStreamCreate              func(s *uintptr, flags uint32) int32
	cuStreamCreateWithPriority  func(s *uintptr, flags uint32, priority int32) int32
	cuCtxGetStreamPriorityRange func(least, greatest *int32) int32
	cuStreamDestroy             func(s uintptr) int32
	cuStreamSynchronize         func(s uintptr) int32
	cuStreamWaitEvent           func(s, e uintptr, flags uint32) int32
	cuEventCreate               func(e *uintptr, flags uint32) int32
	cuEventDestroy              func(e uintptr) int32
	cuEventRecord               func(e, s uintptr) int32
	cuEventSynchronize          func(e uintptr) int32
	cuEventElapsedTime          func(ms *float32, start, end uintptr) int32
	cuEventElapsedTimeV1        func(ms *float32, start, end uintptr) int32
	cuModuleLoadData            func(m *uintptr, image unsafe.Pointer) int32
	cuModuleUnload              func(m uintptr) int32
	cuModuleGetFunction         func(f *uintptr, m uintptr, name string) int32
	cuFuncGetAttribute          func(v *int32, attr int32, f uintptr) int32
	cuFuncSetAttribute          func(f uintptr, attr int32, v int32) int32
	cuFuncGetParamInfo          func(f uintptr, index uint64, offset, size *uint64) int32
	cuFuncLoad                  func(f uintptr) int32
	cuLaunchKernel              func(f uintptr, gx, gy, gz, bx, by, bz, smem uint32, s uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
	cuOccupancyMaxActiveBlocks  func(n *int32, f uintptr, blockSize int32, dynSmem uint64) int32
)

func driverSymbols() map[string]any {
	return map[string]any{
		"cuInit":                                      &cuInit,
		"cuDriverGetVersion":                          &cuDriverGetVersion,
		"cuDeviceGetCount":                            &cuDeviceGetCount,
		"cuDeviceGet":                                 &cuDeviceGet,
		"cuDeviceGetName":                             &cuDeviceGetName,
		"cuDeviceGetAttribute":                        &cuDeviceGetAttribute,
		"cuDeviceTotalMem_v2":                         &cuDeviceTotalMem,
		"cuDeviceCanAccessPeer":                       &cuDeviceCanAccessPeer,
		"cuDevicePrimaryCtxRetain":                    &cuDevicePrimaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2":                &cuDevicePrimaryCtxRelease,
		"cuCtxSetCurrent":                             &cuCtxSetCurrent,
		"cuCtxSynchronize":                            &cuCtxSynchronize,
		"cuCtxEnablePeerAccess":                       &cuCtxEnablePeerAccess,
		"cuMemGetInfo_v2":                             &cuMemGetInfo,
		"cuMemAlloc_v2":                               &cuMemAlloc,
		"cuMemFree_v2":                                &cuMemFree,
		"cuMemAllocHost_v2":                           &cuMemAllocHost,
		"cuMemFreeHost":                               &cuMemFreeHost,
		"cuMemcpyHtoD_v2":                             &cuMemcpyHtoD,
		"cuMemcpyDtoH_v2":                             &cuMemcpyDtoH,
		"cuMemcpyDtoD_v2":                             &cuMemcpyDtoD,
		"cuMemcpyHtoDAsync_v2":                        &cuMemcpyHtoDAsync,
		"cuMemcpyDtoHAsync_v2":                        &cuMemcpyDtoHAsync,
		"cuMemcpyDtoDAsync_v2":                        &cuMemcpyDtoDAsync,
		"cuMemcpyPeerAsync":                           &cuMemcpyPeerAsync,
		"cuMemsetD8Async":                             &cuMemsetD8Async,
		"cuStreamCreate":                              &cuStreamCreate,
		"cuStreamCreateWithPriority":                  &cuStreamCreateWithPriority,
		"cuCtxGetStreamPriorityRange":                 &cuCtxGetStreamPriorityRange,
		"cuStreamDestroy_v2":                          &cuStreamDestroy,
		"cuStreamSynchronize":                         &cuStreamSynchronize,
		"cuStreamWaitEvent":                           &cuStreamWaitEvent,
		"cuEventCreate":                               &cuEventCreate,
		"cuEventDestroy_v2":                           &cuEventDestroy,
		"cuEventRecord":                               &cuEventRecord,
		"cuEventSynchronize":                          &cuEventSynchronize,
		"cuEventElapsedTime_v2?":                      &cuEventElapsedTime,
		"cuEventElapsedTime?":                         &cuEventElapsedTimeV1,
		"cuModuleLoadData":                            &cuModuleLoadData,
		"cuModuleUnload":                              &cuModuleUnload,
		"cuModuleGetFunction":                         &cuModuleGetFunction,
		"cuFuncGetAttribute":                          &cuFuncGetAttribute,
		"cuFuncSetAttribute":                          &cuFuncSetAttribute,
		"cuFuncGetParamInfo?":                         &cuFuncGetParamInfo,
		"cuFuncLoad?":                                 &cuFuncLoad,
		"cuLaunchKernel":                              &cuLaunchKernel,
		"cuOccupancyMaxActiveBlocksPerMultiprocessor": &cuOccupancyMaxActiveBlocks,
		"cuTensorMapEncodeTiled?":                     &cuTensorMapEncodeTiled,
		"cuTexObjectCreate?":                          &cuTexObjectCreate,
		"cuTexObjectDestroy?":                         &cuTexObjectDestroy,
	}
}

// eventElapsed calls whichever of cuEventElapsedTime_v2 (CUDA 12.8+) and
// cuEventElapsedTime the driver exports.
func eventElapsed(ms *float32, start, end uintptr) error {
	if cuEventElapsedTime != nil {
		return check("cuEventElapsedTime_v2", cuEventElapsedTime(ms, start, end))
	}
	if cuEventElapsedTimeV1 != nil {
		return check("cuEventElapsedTime", cuEventElapsedTimeV1(ms, start, end))
	}
	return &Error{Call: "cuEventElapsedTime", Code: 500}
}
