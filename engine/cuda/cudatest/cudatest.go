// Package cudatest holds what the GPU tests of every package share.
package cudatest

import (
	"testing"

	"gpulab/engine/cuda"
)

// Context returns a context on device 0, or skips the test with the reason
// CUDA is unavailable (no driver, no device), so that GPU tests run for
// real on a GPU machine and are skipped, with a reason, everywhere else.
func Context(t testing.TB) *cuda.Context {
	t.Helper()
	n, err := cuda.DeviceCount()
	if err != nil || n == 0 {
		t.Skipf("no CUDA device: %v", err)
	}
	ctx, err := cuda.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// Size returns full, or small when the tests run under compute-sanitizer
// (cuda.Sanitized): the same kernels and code paths, on a problem that is
// still a multiple of no tile.
func Size(full, small int) int {
	if cuda.Sanitized() {
		return small
	}
	return full
}
