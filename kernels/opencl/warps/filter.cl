// filter.cl: image filtering through image2d_t + sampler versus plain buffers.
//
// Claim (seed opencl-powervr-rogue-guide.txt, image-filtering case study):
// "For image processing tasks, declare your kernel parameters as image and
// sampler data types (as opposed to character arrays) to benefit from TPU
// acceleration": the texture unit fetches pixels through its own cache and
// does the border handling that the sampler specifies, so the kernel needs no
// conditional edge code and diverges less.
//
// Measured: a 5x5 Gaussian blur (weights [1 4 6 4 1]/16 in each direction)
// and the Sobel gradient magnitude sqrt(gx^2 + gy^2) of a one-channel float
// image, one work-item per output pixel, written to a buffer. The *_image
// kernels read a read_only image2d_t (CL_R, CL_FLOAT) through a sampler with
// CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST, so the border comes from the
// sampler. The *_buffer kernels read a __global float array and clamp each
// coordinate to [0, w-1] x [0, h-1] themselves (clamp() compiles to min/max,
// the usual way to write it; an if/else version would diverge more). Both
// give the same clamp-to-edge result, checked against Go.
//
// Why: on a GPU, image reads go through the texture units (2D-blocked texture
// cache, address clamping in hardware), while buffer reads go through L1/L2
// with the clamp arithmetic in the kernel; on a Rogue GPU the guide says the
// TPU wins. On NVIDIA, L1 and the texture cache are one unit since Maxwell,
// so the gap is expected to be small. PoCL's CPU device has no texture unit:
// read_imagef is a software function, so there the image versions are
// expected to be slower, which is itself the lesson: the advice is about
// hardware that has a TPU.

__constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;

__constant float gw[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};

#define IMG(xx, yy) read_imagef(in, smp, (int2)((xx), (yy))).x
#define BUF(xx, yy) in[clamp((yy), 0, h - 1) * pitch + clamp((xx), 0, w - 1)]

__kernel void blur_image(read_only image2d_t in, __global float *out, const int w, const int h) {
	int x = get_global_id(0), y = get_global_id(1);
	if (x >= w || y >= h) return;
	float acc = 0.0f;
	for (int j = 0; j < 5; j++) {
		float row = 0.0f;
		for (int i = 0; i < 5; i++) row += gw[i] * IMG(x + i - 2, y + j - 2);
		acc += gw[j] * row;
	}
	out[y * w + x] = acc;
}

__kernel void blur_buffer(__global const float *in, __global float *out, const int w, const int h, const int pitch) {
	int x = get_global_id(0), y = get_global_id(1);
	if (x >= w || y >= h) return;
	float acc = 0.0f;
	for (int j = 0; j < 5; j++) {
		float row = 0.0f;
		for (int i = 0; i < 5; i++) row += gw[i] * BUF(x + i - 2, y + j - 2);
		acc += gw[j] * row;
	}
	out[y * w + x] = acc;
}

#define SOBEL(P)                                                                        \
	float gx = (P(x + 1, y - 1) + 2.0f * P(x + 1, y) + P(x + 1, y + 1)) -            \
	           (P(x - 1, y - 1) + 2.0f * P(x - 1, y) + P(x - 1, y + 1));              \
	float gy = (P(x - 1, y + 1) + 2.0f * P(x, y + 1) + P(x + 1, y + 1)) -            \
	           (P(x - 1, y - 1) + 2.0f * P(x, y - 1) + P(x + 1, y - 1));              \
	out[y * w + x] = sqrt(gx * gx + gy * gy);

__kernel void sobel_image(read_only image2d_t in, __global float *out, const int w, const int h) {
	int x = get_global_id(0), y = get_global_id(1);
	if (x >= w || y >= h) return;
	SOBEL(IMG)
}

__kernel void sobel_buffer(__global const float *in, __global float *out, const int w, const int h, const int pitch) {
	int x = get_global_id(0), y = get_global_id(1);
	if (x >= w || y >= h) return;
	SOBEL(BUF)
}
