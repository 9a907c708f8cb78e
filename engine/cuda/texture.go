package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// Texture objects over pitched linear memory: a kernel reads them with
// tex2D<float>(tex, x, y), through the texture cache, and the texture unit
// handles reads outside the image by its address mode (here clamp to edge).

var (
	cuTexObjectCreate  func(tex *uint64, resDesc, texDesc, viewDesc unsafe.Pointer) int32
	cuTexObjectDestroy func(tex uint64) int32
)

// Values from cuda.h.
const (
	TexturePitchAlignment DeviceAttribute = 51 // CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT
	texture2DLinearWidth  DeviceAttribute = 55 // CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH
	texture2DLinearHeight DeviceAttribute = 56 // CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT
	texture2DLinearPitch  DeviceAttribute = 57 // CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH

	resourceTypePitch2D = 3    // CU_RESOURCE_TYPE_PITCH2D
	adFormatFloat       = 0x20 // CU_AD_FORMAT_FLOAT
	addressModeClamp    = 1    // CU_TR_ADDRESS_MODE_CLAMP
	filterModePoint     = 0    // CU_TR_FILTER_MODE_POINT
)

// Byte layouts of the two descriptors, following cuda.h 13.0 on 64-bit Linux
// (LP64: size_t and CUdeviceptr are 8 bytes, enums and unsigned int 4).
//
// CUDA_RESOURCE_DESC, 144 bytes:
//
//	0   CUresourcetype resType (uint32)
//	4   4 bytes of padding (the union holds 8-byte members)
//	8   union res, 128 bytes (its largest member is int reserved[32]); as pitch2D:
//	      8   CUdeviceptr devPtr (uint64)
//	      16  CUarray_format format (uint32)
//	      20  unsigned int numChannels (uint32)
//	      24  size_t width (elements)
//	      32  size_t height (rows)
//	      40  size_t pitchInBytes
//	136 unsigned int flags (uint32, must be 0)
//	140 4 bytes of tail padding to the struct's 8-byte alignment
//
// CUDA_TEXTURE_DESC, 104 bytes:
//
//	0   CUaddress_mode addressMode[3] (uint32 each)
//	12  CUfilter_mode filterMode (uint32)
//	16  unsigned int flags (CU_TRSF_*; 0: read as float, unnormalized coordinates)
//	20  unsigned int maxAnisotropy
//	24  CUfilter_mode mipmapFilterMode
//	28  float mipmapLevelBias
//	32  float minMipmapLevelClamp
//	36  float maxMipmapLevelClamp
//	40  float borderColor[4]
//	56  int reserved[12]
const (
	resourceDescSize    = 144
	resDescResType      = 0
	resDescDevPtr       = 8
	resDescFormat       = 16
	resDescNumChannels  = 20
	resDescWidth        = 24
	resDescHeight       = 32
	resDescPitchInBytes = 40
	resDescFlags        = 136

	textureDescSize        = 104
	texDescAddressMode     = 0 // three uint32
	texDescFilterMode      = 12
	texDescFlags           = 16
	texDescMaxAnisotropy   = 20
	texDescMipmapFilter    = 24
	texDescMipmapBias      = 28
	texDescMinMipmapClamp  = 32
	texDescMaxMipmapClamp  = 36
	texDescBorderColor     = 40 // four float32
	texDescReservedOffset  = 56 // twelve int32
	texDescReservedEntries = 12
)

// pitch2DResourceDesc builds the CUDA_RESOURCE_DESC of a one-channel float
// image of width×height elements at ptr, rows pitchBytes apart. The buffer is
// uint64 words so that it is 8-byte aligned like the C struct.
func pitch2DResourceDesc(ptr uint64, width, height, pitchBytes int) *[resourceDescSize / 8]uint64 {
	var words [resourceDescSize / 8]uint64
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), resourceDescSize)
	le := binary.LittleEndian
	le.PutUint32(b[resDescResType:], resourceTypePitch2D)
	le.PutUint64(b[resDescDevPtr:], ptr)
	le.PutUint32(b[resDescFormat:], adFormatFloat)
	le.PutUint32(b[resDescNumChannels:], 1)
	le.PutUint64(b[resDescWidth:], uint64(width))
	le.PutUint64(b[resDescHeight:], uint64(height))
	le.PutUint64(b[resDescPitchInBytes:], uint64(pitchBytes))
	le.PutUint32(b[resDescFlags:], 0)
	return &words
}

// clampPointTextureDesc builds the CUDA_TEXTURE_DESC for clamp-to-edge
// addressing in all three dimensions, point (nearest) filtering,
// unnormalized coordinates, elements read as float, no mipmaps.
func clampPointTextureDesc() *[textureDescSize / 8]uint64 {
	var words [textureDescSize / 8]uint64
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), textureDescSize)
	le := binary.LittleEndian
	for i := range 3 {
		le.PutUint32(b[texDescAddressMode+4*i:], addressModeClamp)
	}
	le.PutUint32(b[texDescFilterMode:], filterModePoint)
	le.PutUint32(b[texDescFlags:], 0)
	le.PutUint32(b[texDescMaxAnisotropy:], 0)
	le.PutUint32(b[texDescMipmapFilter:], filterModePoint)
	le.PutUint32(b[texDescMipmapBias:], math.Float32bits(0))
	le.PutUint32(b[texDescMinMipmapClamp:], math.Float32bits(0))
	le.PutUint32(b[texDescMaxMipmapClamp:], math.Float32bits(0))
	// borderColor (unused with clamp) and reserved stay zero.
	return &words
}

// TexturePitch returns the smallest row pitch in bytes, a multiple of the
// device's CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, that holds width
// float32 elements: allocate rows this far apart for NewTexture2D.
func (c *Context) TexturePitch(width int) (int, error) {
	if width <= 0 {
		return 0, fmt.Errorf("cuda: texture pitch for width %d: width must be positive", width)
	}
	align, err := c.dev.Attribute(TexturePitchAlignment)
	if err != nil {
		return 0, err
	}
	if align <= 0 {
		align = 32
	}
	return (4*width + align - 1) / align * align, nil
}

// Texture is a CUDA texture object (CUtexObject) over a Buffer. It does not
// own the buffer, which must outlive it.
type Texture struct {
	ctx *Context
	h   uint64 // CUtexObject; 0 once destroyed
	buf *Buffer
}

// NewTexture2D makes a texture object that reads b as a width×height image
// of float32 (one channel), rows pitchBytes apart, with clamp-to-edge
// addressing and point filtering. pitchBytes must be at least 4·width and a
// multiple of the device's texture pitch alignment (see TexturePitch), and b
// must hold height rows. Pass the *Texture to Launch for a
// cudaTextureObject_t parameter and read it with tex2D<float>(tex, x+0.5f,
// y+0.5f).
func (c *Context) NewTexture2D(b *Buffer, width, height, pitchBytes int) (*Texture, error) {
	what := fmt.Sprintf("texture %d×%d, pitch %d bytes", width, height, pitchBytes)
	if cuTexObjectCreate == nil || cuTexObjectDestroy == nil {
		return nil, fmt.Errorf("cuda: %s: this driver has no cuTexObjectCreate/cuTexObjectDestroy", what)
	}
	if width <= 0 || height <= 0 {
		return nil, fmt.Errorf("cuda: %s: sizes must be positive", what)
	}
	if b == nil || b.ctx != c {
		return nil, fmt.Errorf("cuda: %s: buffer is nil or belongs to another context", what)
	}
	if pitchBytes < 4*width {
		return nil, fmt.Errorf("cuda: %s: the pitch is less than a row of %d bytes", what, 4*width)
	}
	align, err := c.dev.Attribute(TexturePitchAlignment)
	if err != nil {
		return nil, err
	}
	if align > 0 && pitchBytes%align != 0 {
		return nil, fmt.Errorf("cuda: %s: the pitch is not a multiple of the device's texture pitch alignment of %d bytes (use TexturePitch)", what, align)
	}
	maxW, err1 := c.dev.Attribute(texture2DLinearWidth)
	maxH, err2 := c.dev.Attribute(texture2DLinearHeight)
	maxP, err3 := c.dev.Attribute(texture2DLinearPitch)
	if err1 == nil && err2 == nil && err3 == nil && (width > maxW || height > maxH || pitchBytes > maxP) {
		return nil, fmt.Errorf("cuda: %s: the device allows pitched 2D textures up to %d×%d with a pitch of %d bytes", what, maxW, maxH, maxP)
	}
	if err := b.span(what, 0, pitchBytes*height); err != nil {
		return nil, err
	}
	res := pitch2DResourceDesc(uint64(b.ptr), width, height, pitchBytes)
	tex := clampPointTextureDesc()
	t := &Texture{ctx: c, buf: b}
	err = c.Do(func() error {
		return check("cuTexObjectCreate", cuTexObjectCreate(&t.h, unsafe.Pointer(res), unsafe.Pointer(tex), nil))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: %w", what, err)
	}
	return t, nil
}

// Handle returns the CUtexObject, the value of a cudaTextureObject_t.
func (t *Texture) Handle() uint64 {
	if t == nil {
		return 0
	}
	return t.h
}

// Destroy destroys the texture object (not its buffer). Twice is a no-op.
func (t *Texture) Destroy() error {
	if t == nil || t.h == 0 {
		return nil
	}
	h := t.h
	t.h = 0
	return t.ctx.Do(func() error { return check("cuTexObjectDestroy", cuTexObjectDestroy(h)) })
}
