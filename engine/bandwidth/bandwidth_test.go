package bandwidth

import (
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/enginetest"
)

// TestSuitesOnEveryDevice runs copy, vecadd and saxpy on every device this
// machine has (CPU, PoCL here; CUDA and NVIDIA OpenCL on the GPU machine), at
// sizes that are not multiples of 4 elements or of a block, and requires every
// variant to match the reference.
func TestSuitesOnEveryDevice(t *testing.T) {
	devs, missing := engine.Devices()
	for _, m := range missing {
		t.Logf("not tested: %s", m)
	}
	opt := bench.Options{Warmup: 1, MinReps: 2, MinTime: time.Millisecond}
	for _, info := range devs {
		dev, err := engine.Open(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"copy", "vecadd", "saxpy"} {
			suite, err := bench.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := bench.Run(suite, dev, []string{"4", "4100", "1M"}, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := bench.Failed(recs); err != nil {
				t.Error(err)
			}
			for _, r := range recs {
				if r.GBps <= 0 || r.MedianMS <= 0 {
					t.Errorf("%s/%s on %s: no throughput %+v", name, r.Variant, info.ID, r)
				}
				if r.Baseline == "" && (name == "copy" || info.Kind == engine.CPU) {
					t.Errorf("%s/%s on %s: no baseline", name, r.Variant, info.ID)
				}
			}
			t.Logf("\n%s", bench.Table(recs))
		}
		dev.Close()
	}
}

func TestDefaultSizes(t *testing.T) {
	if got := defaultSizes(engine.Info{Kind: engine.CPU}); got[len(got)-1] != "64M" {
		t.Errorf("cpu sizes %v", got)
	}
	if got := defaultSizes(engine.Info{Kind: engine.CUDA, PeakGBps: 4800}); got[len(got)-1] != "1G" {
		t.Errorf("gpu sizes %v", got)
	}
}

func TestBadSize(t *testing.T) {
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	suite, _ := bench.Lookup("copy")
	for _, s := range []string{"0", "-5", "abc", "12Q"} {
		if _, err := bench.Run(suite, dev, []string{s}, bench.Options{}); err == nil {
			t.Errorf("size %q accepted", s)
		}
	}
}

// TestSuitesCheckMemory: a size the host cannot hold is refused with an
// *engine.MemoryError before anything is allocated (on PoCL the buffers count
// as host memory too), and a small size still runs under the same limit.
func TestSuitesCheckMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	const n = 1 << 20 // elements per array of "4M"
	for _, tc := range []struct {
		dev, suite string
		need       uint64
	}{
		// The inputs, the reference and the outputs of go_serial and go_parallel.
		{"cpu", "copy", (1 + 1 + 2) * 4 * n},
		{"cpu", "vecadd", (2 + 1 + 2) * 4 * n},
		{"cpu", "saxpy", (2 + 1 + 2) * 4 * n},
		// The inputs, the reference, the reset's zeros and the output read
		// back; then the device's inputs and output.
		{"opencl:0:0", "copy", (1+1+1+1)*4*n + (1+1)*4*n},
		{"opencl:0:0", "vecadd", (2+1+1+1)*4*n + (2+1)*4*n},
		{"opencl:0:0", "saxpy", (2+1+1+1)*4*n + (2+1)*4*n},
	} {
		dev, err := engine.Open(tc.dev)
		if err != nil {
			t.Logf("not tested on %s: %v", tc.dev, err)
			continue
		}
		suite, err := bench.Lookup(tc.suite)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bench.Run(suite, dev, []string{"4M"}, bench.Options{})
		enginetest.WantMemoryError(t, err, tc.need, tc.suite+" of 4M needs")
		recs, err := bench.Run(suite, dev, []string{"4K"}, bench.Options{Warmup: 1, MinReps: 1, MaxReps: 1, MinTime: time.Nanosecond})
		if err == nil {
			err = bench.Failed(recs)
		}
		if err != nil {
			t.Errorf("%s on %s at 4K: %v", tc.suite, tc.dev, err)
		}
		dev.Close()
	}
}
