package cudatest

import (
	"testing"

	"gpulab/engine/cuda"
)

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{{"", 3001}, {"racecheck", 301}} {
		t.Setenv(cuda.SanitizeEnv, tc.env)
		if got := Size(3001, 301); got != tc.want || cuda.Sanitized() != (tc.env != "") {
			t.Errorf("%s=%q: Size %d, Sanitized %v; want %d", cuda.SanitizeEnv, tc.env, got, cuda.Sanitized(), tc.want)
		}
	}
}
