package nb

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		812:               "812 ns",
		4310:              "4.31 µs",
		45_600_000:        "45.6 ms",
		999_400:           "999 µs",
		999_600:           "1.00 ms",
		2_310_000_000:     "2.31 s",
		123 * time.Second: "123 s",
		0:                 "0.00 ns",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%d) = %q, want %q", int64(d), got, want)
		}
	}
}

func TestIDsOf(t *testing.T) {
	t.Setenv("GPULAB_DEVICES", "cpu,opencl:0:0,cuda:0,cuda:1")
	if got := IDsOf("cuda"); len(got) != 2 || got[0] != "cuda:0" {
		t.Errorf("cuda: %v", got)
	}
	if got := IDsOf("cuda", "opencl"); len(got) != 3 {
		t.Errorf("cuda, opencl: %v", got)
	}
	if got := IDsOf("cpu"); len(got) != 1 {
		t.Errorf("cpu: %v", got)
	}
	t.Setenv("GPULAB_SIZES", "")
	if got := SizesOr("a", "b"); len(got) != 2 {
		t.Errorf("SizesOr: %v", got)
	}
	t.Setenv("GPULAB_SIZES", "x")
	if got := SizesOr("a", "b"); len(got) != 1 || got[0] != "x" {
		t.Errorf("SizesOr with GPULAB_SIZES: %v", got)
	}
}
