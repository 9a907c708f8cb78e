package nb

import (
	"slices"
	"testing"
)

func TestMeasuredFigures(t *testing.T) {
	for md, want := range map[string][]string{
		"11.8× faster (0.50 → 5.89 TFLOP/s), 90% of cuBLAS":   {"11.8×", "5.89 TFLOP/s", "90%"},
		"a decode step of 2.50 ms, 401 tokens/s, 1456 seq/s":  {"2.50 ms", "401 tokens/s", "1456 seq/s"},
		"the H100 streams 3.35 TB/s; copies reach 3,020 GB/s": {"3.35 TB/s", "3,020 GB/s"},
		"1.93 s for 10 iterations, 4.9x torch":                {"1.93 s", "4.9x"},
		// sizes, counts, code and comments are not measurements
		"sizes 1000x1023x999 and 4096³, 132 SMs, 64 blocks, 3xTF32, 8 steps": nil,
		"`GPULAB_SIZES=1000x1023x999` and `45 ms` in code":                   nil,
		"32×32 tiles, a 128 × 256 tile, 2 × 2 FMA units":                     nil,
		"```\n12 ms\n```\n<!-- 5% -->":                                       nil,
	} {
		if got := MeasuredFigures(md); !slices.Equal(got, want) {
			t.Errorf("MeasuredFigures(%q) = %q, want %q", md, got, want)
		}
	}
}
