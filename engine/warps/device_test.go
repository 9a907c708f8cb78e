package warps

import (
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
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
