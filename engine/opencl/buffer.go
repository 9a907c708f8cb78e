package opencl

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Buffer is a region of device memory (a cl_mem) of a fixed size in bytes.
type Buffer struct {
	ctx     *Context
	id      uintptr // cl_mem; 0 once released
	size    int
	cleanup runtime.Cleanup
}

// Alloc allocates a read-write buffer of the given number of bytes on the
// context's device. The size must be positive and at most the device's
// DeviceInfo.MaxAllocBytes. The contents are undefined until written.
func (c *Context) Alloc(bytes int) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("opencl: alloc %d bytes: size must be positive", bytes)
	}
	if uint64(bytes) > c.maxAlloc {
		return nil, fmt.Errorf("opencl: alloc %d bytes: more than the device's max allocation of %d bytes", bytes, c.maxAlloc)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	var status int32
	id := cl.createBuffer(c.context, clMemReadWrite, uintptr(bytes), nil, &status)
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: alloc %d bytes: %w", bytes, err)
	}
	b := &Buffer{ctx: c, id: id, size: bytes}
	b.cleanup = runtime.AddCleanup(b, releaseMemObject, id)
	return b, nil
}

func releaseMemObject(id uintptr) { cl.releaseMemObject(id) }

// Size returns the size of the buffer in bytes.
func (b *Buffer) Size() int { return b.size }

// SubAlign is the alignment, in bytes, of a sub-buffer's origin on the
// context's device (CL_DEVICE_MEM_BASE_ADDR_ALIGN).
func (c *Context) SubAlign() int { return c.subAlign }

// Sub returns the bytes [offset, offset+size) of b as a buffer of their
// own (clCreateSubBuffer): a kernel given it sees a pointer to b's byte
// offset, and b's bytes around it stay where they are (the exercises' guard
// zones). offset must be a multiple of the context's SubAlign and size
// positive. Release the sub-buffer before b.
func (b *Buffer) Sub(offset, size int) (*Buffer, error) {
	c := b.ctx
	if err := c.own(b); err != nil {
		return nil, fmt.Errorf("opencl: sub-buffer: %w", err)
	}
	if err := checkRange(b, offset, size); err != nil || size <= 0 {
		return nil, fmt.Errorf("opencl: sub-buffer of %d bytes at offset %d of a %d-byte buffer: outside it or empty", size, offset, b.size)
	}
	if offset%c.subAlign != 0 {
		return nil, fmt.Errorf("opencl: sub-buffer at offset %d: not a multiple of the device's base address alignment (%d bytes)", offset, c.subAlign)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	region := [2]uintptr{uintptr(offset), uintptr(size)} // cl_buffer_region: origin, size
	var status int32
	id := cl.createSubBuffer(b.id, clMemReadWrite, clBufferCreateTypeRegion, unsafe.Pointer(&region), &status)
	runtime.KeepAlive(&region)
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: sub-buffer of %d bytes at offset %d: %w", size, offset, err)
	}
	sub := &Buffer{ctx: c, id: id, size: size}
	sub.cleanup = runtime.AddCleanup(sub, releaseMemObject, id)
	return sub, nil
}

// Release frees the buffer's device memory. Calling it again does nothing.
// A Buffer that is not released is released some time after it becomes
// unreachable.
func (b *Buffer) Release() {
	if b == nil || b.id == 0 {
		return
	}
	b.cleanup.Stop()
	cl.releaseMemObject(b.id)
	b.id = 0
}

// own reports whether b is a live buffer of c.
func (c *Context) own(b *Buffer) error {
	switch {
	case b == nil:
		return errors.New("nil *Buffer")
	case b.id == 0:
		return errors.New("buffer released")
	case b.ctx != c:
		return errors.New("buffer belongs to another context")
	}
	return nil
}

// checkRange reports whether bytes [offset, offset+n) lie inside b.
func checkRange(b *Buffer, offset, n int) error {
	if offset < 0 || offset > b.size || n > b.size-offset {
		return fmt.Errorf("offset %d + len %d is outside buffer size %d", offset, n, b.size)
	}
	return nil
}

// Write copies src into dst starting at byte offset, and returns when the
// copy is complete.
func (c *Context) Write(dst *Buffer, offset int, src []byte) error {
	if err := c.own(dst); err != nil {
		return fmt.Errorf("opencl: write: %w", err)
	}
	if err := checkRange(dst, offset, len(src)); err != nil {
		return fmt.Errorf("opencl: write: %w", err)
	}
	if len(src) == 0 {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return err
	}
	status := cl.enqueueWriteBuffer(c.queue, dst.id, clTrue, uintptr(offset), uintptr(len(src)), unsafe.Pointer(&src[0]), 0, nil, nil)
	runtime.KeepAlive(src)
	if err := check(status); err != nil {
		return fmt.Errorf("opencl: write %d bytes at offset %d: %w", len(src), offset, err)
	}
	return nil
}

// Read copies bytes of src starting at byte offset into dst, filling it,
// and returns when the copy is complete.
func (c *Context) Read(src *Buffer, offset int, dst []byte) error {
	if err := c.own(src); err != nil {
		return fmt.Errorf("opencl: read: %w", err)
	}
	if err := checkRange(src, offset, len(dst)); err != nil {
		return fmt.Errorf("opencl: read: %w", err)
	}
	if len(dst) == 0 {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return err
	}
	status := cl.enqueueReadBuffer(c.queue, src.id, clTrue, uintptr(offset), uintptr(len(dst)), unsafe.Pointer(&dst[0]), 0, nil, nil)
	runtime.KeepAlive(dst)
	if err := check(status); err != nil {
		return fmt.Errorf("opencl: read %d bytes at offset %d: %w", len(dst), offset, err)
	}
	return nil
}

// CopyBuffer enqueues a device-side copy of the first bytes of src to the
// start of dst, and returns the event of the command.
func (c *Context) CopyBuffer(dst, src *Buffer, bytes int) (*Event, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("opencl: copy %d bytes: size must be positive", bytes)
	}
	if err := c.own(src); err != nil {
		return nil, fmt.Errorf("opencl: copy from: %w", err)
	}
	if err := c.own(dst); err != nil {
		return nil, fmt.Errorf("opencl: copy to: %w", err)
	}
	if err := checkRange(src, 0, bytes); err != nil {
		return nil, fmt.Errorf("opencl: copy from: %w", err)
	}
	if err := checkRange(dst, 0, bytes); err != nil {
		return nil, fmt.Errorf("opencl: copy to: %w", err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	var event uintptr
	if err := check(cl.enqueueCopyBuffer(c.queue, src.id, dst.id, 0, 0, uintptr(bytes), 0, nil, &event)); err != nil {
		return nil, fmt.Errorf("opencl: copy %d bytes: %w", bytes, err)
	}
	return newEvent(event), nil
}

// Number is the set of fixed-size numeric types that WriteSlice and
// ReadSlice move between host and device. Go's int and uint are left out:
// their size differs from OpenCL C's int and uint.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 |
		~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64
}

// WriteSlice writes src to the start of dst.
func WriteSlice[T Number](c *Context, dst *Buffer, src []T) error {
	return c.Write(dst, 0, asBytes(src))
}

// ReadSlice fills dst from the start of src.
func ReadSlice[T Number](c *Context, src *Buffer, dst []T) error {
	return c.Read(src, 0, asBytes(dst))
}

// asBytes views s as its underlying bytes, without copying.
func asBytes[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
