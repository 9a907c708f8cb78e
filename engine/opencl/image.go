package opencl

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Constants from cl.h for images.
const (
	clDeviceImageSupport     = 0x1016 // cl_bool
	clDeviceImage2DMaxWidth  = 0x1011 // size_t
	clDeviceImage2DMaxHeight = 0x1012 // size_t
	clMemReadOnly            = 1 << 2
	clMemCopyHostPtr         = 1 << 5
	clMemObjectImage2D       = 0x10F1
	clR                      = 0x10B0 // cl_channel_order CL_R
	clFloat                  = 0x10DE // cl_channel_type CL_FLOAT
)

// clImageFormat is cl_image_format: two cl_uints.
type clImageFormat struct {
	order, typ uint32
}

// clImageDesc is cl_image_desc (OpenCL 1.2) on a 64-bit host, 72 bytes:
// image_type at 0, image_width 8, image_height 16, image_depth 24,
// image_array_size 32, image_row_pitch 40, image_slice_pitch 48,
// num_mip_levels 56, num_samples 60, buffer (mem_object) 64.
// Only 2-D images are made, so the fields after the height stay zero:
// they are there for the layout.
type clImageDesc struct {
	imageType     uint32
	_             uint32
	width, height uintptr
	_             [4]uintptr // depth, array size, row pitch, slice pitch
	_             [2]uint32  // mip levels, samples
	_             uintptr    // buffer
}

var (
	imageOnce     sync.Once
	imageLoadErr  error
	clCreateImage func(context uintptr, flags uint64, format *clImageFormat, desc *clImageDesc, hostPtr unsafe.Pointer, errcode *int32) uintptr
)

// loadImage resolves clCreateImage (OpenCL 1.2), which Load leaves alone.
func loadImage() error {
	imageOnce.Do(func() {
		if imageLoadErr = Load(); imageLoadErr != nil {
			return
		}
		lib, err := purego.Dlopen(libName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			imageLoadErr = fmt.Errorf("opencl: %s not found: %w", libName, err)
			return
		}
		sym, err := purego.Dlsym(lib, "clCreateImage")
		if err != nil {
			imageLoadErr = fmt.Errorf("opencl: %s has no clCreateImage (OpenCL 1.2): %w", libName, err)
			return
		}
		purego.RegisterFunc(&clCreateImage, sym)
	})
	return imageLoadErr
}

// Image is a read-only 2D image of one float channel (CL_R, CL_FLOAT), read
// in a kernel as a read_only image2d_t through a sampler, which does the
// border handling (e.g. CLK_ADDRESS_CLAMP_TO_EDGE) and goes through the
// device's texture path where it has one.
type Image struct {
	ctx           *Context
	id            uintptr // cl_mem; 0 once released
	width, height int
	cleanup       runtime.Cleanup
}

// NewImage2D makes a width×height image holding data (row-major, len
// width·height), copied at creation. The device must support images
// (CL_DEVICE_IMAGE_SUPPORT) and images of that size
// (CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT).
func (c *Context) NewImage2D(width, height int, data []float32) (*Image, error) {
	if width <= 0 || height <= 0 {
		return nil, fmt.Errorf("opencl: image %d×%d: sizes must be positive", width, height)
	}
	if len(data) != width*height {
		return nil, fmt.Errorf("opencl: image %d×%d: got %d floats, want %d", width, height, len(data), width*height)
	}
	if err := loadImage(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	q := c.device.query
	support, err := infoScalar[uint32](q, clDeviceImageSupport)
	if err != nil {
		return nil, fmt.Errorf("opencl: image %d×%d: CL_DEVICE_IMAGE_SUPPORT: %w", width, height, err)
	}
	name, _ := infoString(q, clDeviceName)
	if support == 0 {
		return nil, fmt.Errorf("opencl: image %d×%d: device %q has no image support (CL_DEVICE_IMAGE_SUPPORT is false)", width, height, name)
	}
	maxW, err1 := infoScalar[uintptr](q, clDeviceImage2DMaxWidth)
	maxH, err2 := infoScalar[uintptr](q, clDeviceImage2DMaxHeight)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("opencl: image %d×%d: CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT: %w", width, height, err)
	}
	if uintptr(width) > maxW || uintptr(height) > maxH {
		return nil, fmt.Errorf("opencl: image %d×%d: device %q allows 2D images up to %d×%d", width, height, name, maxW, maxH)
	}
	format := clImageFormat{order: clR, typ: clFloat}
	desc := clImageDesc{imageType: clMemObjectImage2D, width: uintptr(width), height: uintptr(height)}
	var status int32
	id := clCreateImage(c.context, clMemReadOnly|clMemCopyHostPtr, &format, &desc, unsafe.Pointer(&data[0]), &status)
	runtime.KeepAlive(data)
	if err := check(status); err != nil {
		return nil, fmt.Errorf("opencl: create image %d×%d CL_R/CL_FLOAT on %q: %w", width, height, name, err)
	}
	img := &Image{ctx: c, id: id, width: width, height: height}
	img.cleanup = runtime.AddCleanup(img, releaseMemObject, id)
	return img, nil
}

// Width returns the image's width in pixels.
func (m *Image) Width() int { return m.width }

// Height returns the image's height in pixels.
func (m *Image) Height() int { return m.height }

// Release frees the image. Calling it again does nothing. An Image that is
// not released is released some time after it becomes unreachable.
func (m *Image) Release() {
	if m == nil || m.id == 0 {
		return
	}
	m.cleanup.Stop()
	cl.releaseMemObject(m.id)
	m.id = 0
}

// ownImage reports whether m is a live image of c.
func (c *Context) ownImage(m *Image) error {
	switch {
	case m == nil:
		return errors.New("nil *Image")
	case m.id == 0:
		return errors.New("image released")
	case m.ctx != c:
		return errors.New("image belongs to another context")
	}
	return nil
}
