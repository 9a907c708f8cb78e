package exercise

import (
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/kernelcard"
)

// TestReportSpeedOfLight: a passing result is placed against the device's
// peak for its unit, and a share above 100% is called a measurement error.
func TestReportSpeedOfLight(t *testing.T) {
	info := engine.Info{ID: "cuda:0", Name: "GPU", PeakGFLOPS: 60000, PeakGBps: 4000}
	for _, tc := range []struct {
		e     Exercise
		speed float64
		pct   float64
		want  string
	}{
		{Exercise{Name: "gemm/tiled"}, 9000, 15, "Speed of light: 15.0% of the device's FP32 peak (60000 GFLOP/s)."},
		{Exercise{Name: "lfm2/rmsnorm", Unit: UnitGBps}, 3000, 75, "Speed of light: 75.0% of the device's DRAM bandwidth (4000 GB/s)."},
		{Exercise{Name: "gemm/tiled"}, 78000, 130, "**✗ 130% of the device's FP32 peak (60000 GFLOP/s): faster than the hardware's peak allows: the timing is a measurement error"},
		{Exercise{Name: "lfm2/router", Unit: UnitGBps}, 4400, 110, "**‡ 110% of the device's DRAM bandwidth (4000 GB/s): effective bandwidth: more bytes per second than DRAM can move, so caches served part of the bytes counted, or the timing is wrong"},
	} {
		r := tc.e.finish(Result{Correct: true, Compiled: true, GFLOPS: tc.speed, Size: "M=2048 N=2048 K=2048"}, info, "src", "")
		if r.PctOfPeak != tc.pct {
			t.Errorf("%s at %g: %g%% of peak, want %g%%", tc.e.Name, tc.speed, r.PctOfPeak, tc.pct)
		}
		if md := r.Markdown(); !strings.Contains(md, tc.want) {
			t.Errorf("%s at %g:\n%s\nwant %q", tc.e.Name, tc.speed, md, tc.want)
		}
	}
	failed := Exercise{Name: "gemm/tiled"}.finish(Result{Compiled: true, Error: "wrong result for M=1 N=1 K=1"}, info, "src", "")
	if failed.PctOfPeak != 0 || strings.Contains(failed.Markdown(), "Speed of light") {
		t.Errorf("a failed result has a speed of light: %+v", failed)
	}
}

// TestReportDiagnosisAndCard: the report ends with the diagnosis, then
// the kernel card.
func TestReportDiagnosisAndCard(t *testing.T) {
	r := Result{Exercise: "gemm/tiled", Compiled: true, Error: "wrong result for M=1 N=1 K=1",
		Diagnosis: "compute-sanitizer (memcheck), rerunning the small problems: thread (0,0,0) of block (0,0,0) read `A[1]`",
		Card:      &kernelcard.Card{Kernel: "sgemm", Device: "cuda:0 (GPU)", Backend: string(engine.CUDA), Registers: 40}}
	md := r.Markdown()
	d, c := strings.Index(md, "**Diagnosis:** compute-sanitizer (memcheck)"), strings.Index(md, "**Kernel card: `sgemm`**")
	if d < 0 || c < d {
		t.Errorf("diagnosis at %d, card at %d:\n%s", d, c, md)
	}
}
