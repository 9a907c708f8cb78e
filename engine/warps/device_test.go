package warps

import (
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/enginetest"
)

// eachGPU runs fn on every CUDA and OpenCL device of this machine (PoCL here,
// the H200 through CUDA and NVIDIA OpenCL on the GPU machine), or skips.
func eachGPU(t *testing.T, fn func(t *testing.T, dev *engine.Device, g *gpu)) {
	t.Helper()
	devs, _ := engine.Devices()
	ran := false
	for _, info := range devs {
		if info.Kind == engine.CPU {
			continue
		}
		dev, err := engine.Open(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		g, err := newGPU(dev)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(info.ID, func(t *testing.T) { fn(t, dev, g) })
		g.close()
		dev.Close()
		ran = true
	}
	if !ran {
		t.Skip("no CUDA or OpenCL device")
	}
}

func TestLaunchRejectsBadRanges(t *testing.T) {
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		for _, tc := range []struct {
			global, local []int
		}{{[]int{100}, []int{32}}, {[]int{64}, []int{0}}, {[]int{64, 64}, []int{8}}, {nil, nil}} {
			_, err := g.launch(kernel{name: "k"}, tc.global, tc.local, 0)
			if err == nil || !strings.Contains(err.Error(), "local") {
				t.Errorf("global %v local %v: %v", tc.global, tc.local, err)
			}
		}
	})
	// A work-group larger than the device allows names the limit.
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		k, err := g.kernel("intensity", "intensity", "-DF=1")
		if err != nil {
			t.Skipf("no test kernel: %v", err)
		}
		out, _ := g.alloc(1 << 16)
		_, err = g.launch(k, []int{1 << 16}, []int{1 << 15}, 0, 1<<16, out, out)
		if err == nil || !strings.Contains(err.Error(), "32768") || !strings.Contains(err.Error(), "exceeds") {
			t.Errorf("oversized work-group: %v", err)
		}
	})
	dev, _ := engine.Open("cpu")
	if _, err := newGPU(dev); err == nil {
		t.Error("the CPU device became a gpu")
	}
}

// rejectsCPU checks that a suite's Cases fails on the CPU device, naming
// the device kinds that run kernels.
func rejectsCPU(t *testing.T, suite string) {
	t.Helper()
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	s, err := bench.Lookup(suite)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Cases(dev, "64K"); err == nil || !strings.Contains(err.Error(), "CUDA or OpenCL") {
		t.Errorf("%s on the CPU: %v, want an error naming CUDA or OpenCL", suite, err)
	}
}

// TestSuitesCheckMemory: on PoCL, whose buffers are host memory, a size the
// host cannot hold is refused with an *engine.MemoryError before anything is
// allocated, and a small size still runs under the same limit.
func TestSuitesCheckMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	dev, err := engine.Open("opencl:0:0")
	if err != nil {
		t.Skipf("no PoCL: %v", err)
	}
	defer dev.Close()
	const n = 1 << 20 // elements of "1M", and pixels of "1024x1024"
	for _, tc := range []struct {
		suite, size, small string
		need               uint64 // host arrays, then device arrays
	}{
		// The reset's NaNs, the output read back and the expected output; the output.
		{"banks", "1M", "1K", 3*4*n + 1*4*n},
		// The input, 4 references, the reset's zeros and the output read back; input and output.
		{"barrier", "1M", "1K", (1+4+1+1)*4*n + 2*4*n},
		// The input, the zeros, 2 references, the expected and read-back
		// outputs and 9 masks; input, mask and output.
		{"divergence", "1M", "1K", (1+1+2+2+9)*4*n + 3*4*n},
		// The input, the zeros, the reference and the output read back; input and output.
		{"fastmath", "1M", "1K", (1+1+1+1)*4*n + 2*4*n},
		// The input, the FMA chain, 10 references, the zeros and the output read back.
		{"intensity", "1M", "1K", (1+1+10+1+1)*4*n + 2*4*n},
		// The input, the NaNs, the output read back and the references of ACC 1..32.
		{"occupancy", "1M", "1K", 3*4*n + 4*(n+n/2+n/4+n/8+n/16+n/32) + 2*4*n},
		// The input, the FMA reference, the zeros and the output read back.
		{"wgsize", "1M", "1K", 4*4*n + 2*4*n},
		// The image, 2 references, the zeros and the output read back; the
		// input buffer, the image object and the output.
		{"filter", "1024x1024", "40x24", 5*4*n + 3*4*n},
	} {
		s, err := bench.Lookup(tc.suite)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bench.Run(s, dev, []string{tc.size}, bench.Options{})
		enginetest.WantMemoryError(t, err, tc.need, tc.suite+" of "+tc.size+" needs")
		measureSuite(t, dev, tc.suite, tc.small)
	}
}
