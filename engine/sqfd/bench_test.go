package sqfd

import (
	"strings"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

func TestSuites(t *testing.T) {
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	for suite, size := range map[string]string{"sqfd": "sigs:n=300,cmin=2,cmax=6", "kmedoids": "sigs:n=200,k=5,cmin=2,cmax=6"} {
		s, err := bench.Lookup(suite)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := bench.Run(s, dev, []string{size}, bench.Options{Warmup: 1, MinReps: 1, MaxReps: 2, MinTime: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := bench.Failed(recs); err != nil {
			t.Error(err)
		}
	}
}

func TestParseSigSpec(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"n=5", "want sigs:"},
		{"sigs:n=5,q=2", `unknown field "q"`},
		{"sigs:n=x", "is not a count"},
		{"sigs:n=5,k=9", "need 0 < k <= n"},
		{"sigs:n=50,gpus=0", "need gpus >= 1"},
	} {
		if _, err := ParseSigSpec(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
	sp, err := ParseSigSpec("sigs:n=100,k=4,cmin=3,cmax=5")
	if err != nil || sp != (SigSpec{N: 100, K: 4, CMin: 3, CMax: 5, GPUs: 1}) {
		t.Errorf("%+v %v", sp, err)
	}
}

// TestSuitesGPU: both suites on cuda:0 (with the CPU reference at this
// size), and the multi-GPU cases where there are two devices.
func TestSuitesGPU(t *testing.T) {
	cudatest.Context(t)
	dev, err := engine.Open("cuda:0")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string][]string{"sqfd": {"sigs:n=300,cmin=2,cmax=12"}, "kmedoids": {"sigs:n=400,k=5,cmin=2,cmax=12,big=10000"}}
	if n, _ := cuda.DeviceCount(); n >= 2 {
		sizes["kmedoids"] = append(sizes["kmedoids"], "sigs:n=400,k=5,cmin=2,cmax=12,gpus=2")
	}
	for suite, sz := range sizes {
		s, err := bench.Lookup(suite)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := bench.Run(s, dev, sz, bench.Options{Warmup: 1, MinReps: 1, MaxReps: 2, MinTime: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := bench.Failed(recs); err != nil {
			t.Error(err)
		}
		for _, r := range recs {
			if strings.HasPrefix(r.Variant, "cuda_assign") || strings.HasPrefix(r.Variant, "cuda_scores") {
				if ms, ok := r.Params["kernel_ms"].(float64); !ok || ms <= 0 {
					t.Errorf("%s: kernel_ms = %v", r.Variant, r.Params["kernel_ms"])
				}
			}
		}
		if suite == "kmedoids" && len(recs) < 7 {
			t.Errorf("kmedoids: %d records, want the CPU's 2 and at least 5 on CUDA", len(recs))
		}
	}
}
