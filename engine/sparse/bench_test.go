package sparse

import (
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// TestSuites runs spmv on the CPU and on every CUDA device, and spgemm on the
// CPU, at small sizes, and requires every variant to match its reference.
func TestSuites(t *testing.T) {
	devs, _ := engine.Devices()
	opt := bench.Options{Warmup: 1, MinReps: 1, MaxReps: 2, MinTime: time.Millisecond}
	for _, info := range devs {
		if info.Kind == engine.OpenCL {
			continue
		}
		dev, err := engine.Open(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		runs := map[string][]string{"spmv": {"uniform:n=3000,k=7", "rmat:scale=11,ef=8", "poisson:k=33", "banded:n=1000,w=3"}}
		if info.Kind == engine.CPU {
			runs["spgemm"] = []string{"uniform:n=500,k=6", "rmat:scale=9,ef=4", "poisson:k=20"}
		}
		for suite, sizes := range runs {
			s, err := bench.Lookup(suite)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := bench.Run(s, dev, sizes, opt)
			if err != nil {
				t.Fatalf("%s on %s: %v", suite, info.ID, err)
			}
			if err := bench.Failed(recs); err != nil {
				t.Error(err)
			}
			for _, r := range recs {
				if suite == "spgemm" && r.PctPeakGFLOPS+r.PctPeakGBps != 0 {
					t.Errorf("spgemm %s: a share of a peak (%+v): no peak bounds SpGEMM", r.Variant, r)
				}
			}
			t.Logf("\n%s", bench.Table(recs))
		}
	}
}

func TestSpGEMMSuiteRejects(t *testing.T) {
	dev, _ := engine.Open("cpu")
	s, _ := bench.Lookup("spgemm")
	for _, size := range []string{"uniform:n=0,k=1", "nonsense", "rmat:scale=x"} {
		if _, err := bench.Run(s, dev, []string{size}, bench.Options{}); err == nil {
			t.Errorf("size %q accepted", size)
		}
	}
}
