package cuda

import (
	"fmt"
	"unsafe"
)

// DevicePtr is a device address (CUdeviceptr), as in cu.DevicePtr.
type DevicePtr uint64

// Buffer is a device allocation that knows its size and context, so that every
// copy is bounds-checked on the Go side before it reaches the driver.
type Buffer struct {
	ctx  *Context
	ptr  DevicePtr
	size int
}

// Number is the element types that typed helpers accept.
type Number interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// Alloc allocates bytes of device memory. Asking for more than is free fails
// with an error that names the requested and the free bytes.
func (c *Context) Alloc(bytes int) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: alloc %d bytes on %s: size must be positive", bytes, c.ID())
	}
	b := &Buffer{ctx: c, size: bytes}
	err := c.Do(func() error {
		var p uint64
		if code := cuMemAlloc(&p, uint64(bytes)); code != 0 {
			var free, total uint64
			cuMemGetInfo(&free, &total)
			return fmt.Errorf("cuda: alloc %d bytes on %s: %d bytes free of %d: %w",
				bytes, c.ID(), free, total, check("cuMemAlloc_v2", code))
		}
		b.ptr = DevicePtr(p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// AllocSlice allocates room for n elements of T.
func AllocSlice[T Number](c *Context, n int) (*Buffer, error) {
	var zero T
	return c.Alloc(n * int(unsafe.Sizeof(zero)))
}

// Ptr returns the device address.
func (b *Buffer) Ptr() DevicePtr { return b.ptr }

// Size returns the allocation's size in bytes.
func (b *Buffer) Size() int { return b.size }

// Context returns the context that owns the allocation.
func (b *Buffer) Context() *Context { return b.ctx }

// Free releases the memory. Freeing twice is a no-op.
func (b *Buffer) Free() error {
	if b == nil || b.ptr == 0 {
		return nil
	}
	p := b.ptr
	b.ptr = 0
	return b.ctx.Do(func() error { return check("cuMemFree_v2", cuMemFree(uint64(p))) })
}

// span checks that [offset, offset+n) lies inside the buffer.
func (b *Buffer) span(op string, offset, n int) error {
	if b == nil || b.ptr == 0 {
		return fmt.Errorf("cuda: %s: buffer is nil or freed", op)
	}
	if offset < 0 || n < 0 || offset+n > b.size {
		return fmt.Errorf("cuda: %s: range [%d, %d) outside a buffer of %d bytes", op, offset, offset+n, b.size)
	}
	return nil
}

func bytesOf[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}

// CopyHtoD copies src to the start of dst (synchronous).
func CopyHtoD[T Number](dst *Buffer, src []T) error { return CopyHtoDAt(dst, 0, src) }

// CopyHtoDAt copies src into dst from offset bytes on (synchronous).
func CopyHtoDAt[T Number](dst *Buffer, offset int, src []T) error {
	raw := bytesOf(src)
	if err := dst.span("copy host to device", offset, len(raw)); err != nil || len(raw) == 0 {
		return err
	}
	return dst.ctx.Do(func() error {
		return check("cuMemcpyHtoD_v2", cuMemcpyHtoD(uint64(dst.ptr)+uint64(offset), unsafe.Pointer(&raw[0]), uint64(len(raw))))
	})
}

// CopyDtoH copies the start of src into dst (synchronous).
func CopyDtoH[T Number](dst []T, src *Buffer) error { return CopyDtoHAt(dst, src, 0) }

// CopyDtoHAt copies len(dst) elements from src, starting offset bytes in
// (synchronous): e.g. the last entry of a row-pointer array.
func CopyDtoHAt[T Number](dst []T, src *Buffer, offset int) error {
	raw := bytesOf(dst)
	if err := src.span("copy device to host", offset, len(raw)); err != nil || len(raw) == 0 {
		return err
	}
	return src.ctx.Do(func() error {
		return check("cuMemcpyDtoH_v2", cuMemcpyDtoH(unsafe.Pointer(&raw[0]), uint64(src.ptr)+uint64(offset), uint64(len(raw))))
	})
}

// Upload allocates a buffer holding a copy of src.
func Upload[T Number](c *Context, src []T) (*Buffer, error) {
	b, err := AllocSlice[T](c, max(len(src), 1))
	if err != nil {
		return nil, err
	}
	if err := CopyHtoD(b, src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// Download reads n elements of T from the start of src.
func Download[T Number](src *Buffer, n int) ([]T, error) {
	out := make([]T, n)
	return out, CopyDtoH(out, src)
}

// CopyDtoD copies bytes from src to dst on stream s (nil: the default stream).
// Both buffers may live on different devices when unified addressing is on.
func CopyDtoD(dst, src *Buffer, bytes int, s *Stream) error {
	if err := dst.span("copy device to device (dst)", 0, bytes); err != nil {
		return err
	}
	if err := src.span("copy device to device (src)", 0, bytes); err != nil {
		return err
	}
	return dst.ctx.Do(func() error {
		return check("cuMemcpyDtoDAsync_v2", cuMemcpyDtoDAsync(uint64(dst.ptr), uint64(src.ptr), uint64(bytes), s.handle()))
	})
}

// CopyPeer copies bytes from src (on one device) to dst (on another) on stream s
// of dst's context. Enable peer access first for a direct P2P path; without it the
// driver stages through the host.
func CopyPeer(dst, src *Buffer, bytes int, s *Stream) error {
	if err := dst.span("copy peer (dst)", 0, bytes); err != nil {
		return err
	}
	if err := src.span("copy peer (src)", 0, bytes); err != nil {
		return err
	}
	return dst.ctx.Do(func() error {
		return check("cuMemcpyPeerAsync", cuMemcpyPeerAsync(uint64(dst.ptr), dst.ctx.h, uint64(src.ptr), src.ctx.h, uint64(bytes), s.handle()))
	})
}

// Memset sets every byte of b to v, on stream s.
func (b *Buffer) Memset(v byte, s *Stream) error {
	if err := b.span("memset", 0, b.size); err != nil {
		return err
	}
	return b.ctx.Do(func() error {
		return check("cuMemsetD8Async", cuMemsetD8Async(uint64(b.ptr), v, uint64(b.size), s.handle()))
	})
}

// HostBuffer is page-locked (pinned) host memory: copies from it run at full
// PCIe/NVLink speed and can overlap with kernels.
type HostBuffer struct {
	ctx  *Context
	ptr  unsafe.Pointer
	size int
}

// AllocHost allocates bytes of pinned host memory.
func (c *Context) AllocHost(bytes int) (*HostBuffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: alloc %d pinned host bytes: size must be positive", bytes)
	}
	h := &HostBuffer{ctx: c, size: bytes}
	err := c.Do(func() error {
		return check("cuMemAllocHost_v2", cuMemAllocHost(&h.ptr, uint64(bytes)))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: alloc %d pinned host bytes: %w", bytes, err)
	}
	return h, nil
}

// Bytes views the pinned memory as a byte slice (valid until Free).
func (h *HostBuffer) Bytes() []byte { return unsafe.Slice((*byte)(h.ptr), h.size) }

// Size returns the size in bytes.
func (h *HostBuffer) Size() int { return h.size }

// HostSlice views pinned memory as a slice of T (valid until Free).
func HostSlice[T Number](h *HostBuffer) []T {
	var zero T
	return unsafe.Slice((*T)(h.ptr), h.size/int(unsafe.Sizeof(zero)))
}

// Free releases the pinned memory. Freeing twice is a no-op.
func (h *HostBuffer) Free() error {
	if h == nil || h.ptr == nil {
		return nil
	}
	p := h.ptr
	h.ptr = nil
	return h.ctx.Do(func() error { return check("cuMemFreeHost", cuMemFreeHost(p)) })
}

// CopyHtoDAsync copies bytes from pinned host memory (at hostOffset) to dst (at
// devOffset) on stream s. It returns before the copy ends.
func CopyHtoDAsync(dst *Buffer, devOffset int, src *HostBuffer, hostOffset, bytes int, s *Stream) error {
	if err := dst.span("async copy host to device", devOffset, bytes); err != nil {
		return err
	}
	if hostOffset < 0 || bytes < 0 || hostOffset+bytes > src.size {
		return fmt.Errorf("cuda: async copy host to device: host range [%d, %d) outside %d bytes", hostOffset, hostOffset+bytes, src.size)
	}
	return dst.ctx.Do(func() error {
		return check("cuMemcpyHtoDAsync_v2", cuMemcpyHtoDAsync(uint64(dst.ptr)+uint64(devOffset),
			unsafe.Add(src.ptr, hostOffset), uint64(bytes), s.handle()))
	})
}

// CopyDtoHAsync copies bytes from src (at devOffset) to pinned host memory (at
// hostOffset) on stream s.
func CopyDtoHAsync(dst *HostBuffer, hostOffset int, src *Buffer, devOffset, bytes int, s *Stream) error {
	if err := src.span("async copy device to host", devOffset, bytes); err != nil {
		return err
	}
	if hostOffset < 0 || bytes < 0 || hostOffset+bytes > dst.size {
		return fmt.Errorf("cuda: async copy device to host: host range [%d, %d) outside %d bytes", hostOffset, hostOffset+bytes, dst.size)
	}
	return src.ctx.Do(func() error {
		return check("cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync(unsafe.Add(dst.ptr, hostOffset),
			uint64(src.ptr)+uint64(devOffset), uint64(bytes), s.handle()))
	})
}
