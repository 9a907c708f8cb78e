package sqfd

import (
	"math"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/enginetest"
)

// TestSuitesCheckMemory: sqfd and kmedoids refuse, before generating the
// signatures, a size whose signatures and per-point arrays the host cannot
// hold; small sizes still run.
func TestSuitesCheckMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	// The signatures, generated and normalized: up to 10000·40 centroids
	// of 7 features and a weight, and 10001 offsets; a self term each.
	const signatures = 2*(4*10000*40*8+4*10001) + 8*10000
	for _, tc := range []struct {
		suite, big, small string
		need              uint64
	}{
		{"sqfd", "sigs:n=10000", "sigs:n=50", signatures + 3*8*10000},                  // reference and two CPU cases' distances
		{"kmedoids", "sigs:n=10000,k=10", "sigs:n=50,k=3", signatures + 2*(4+8)*10000}, // labels and distances, twice
		// 2^62 signatures: a need no uint64 holds (0 or less in uint64 arithmetic).
		{"sqfd", "sigs:n=4611686018427387904", "sigs:n=50", math.MaxUint64},
		{"kmedoids", "sigs:n=4611686018427387904,k=2", "sigs:n=50,k=3", math.MaxUint64},
	} {
		s, _ := bench.Lookup(tc.suite)
		_, err := bench.Run(s, dev, []string{tc.big}, bench.Options{})
		enginetest.WantMemoryError(t, err, tc.need, tc.suite+" "+tc.big+" needs")
		if _, err := bench.Run(s, dev, []string{tc.small}, bench.Options{}); err != nil {
			t.Errorf("%s %s: %v", tc.suite, tc.small, err)
		}
	}
}
