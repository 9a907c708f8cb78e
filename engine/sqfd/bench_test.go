package sqfd

import (
	"strings"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
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
	} {
		if _, err := ParseSigSpec(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
	sp, err := ParseSigSpec("sigs:n=100,k=4,cmin=3,cmax=5")
	if err != nil || sp != (SigSpec{100, 4, 3, 5}) {
		t.Errorf("%+v %v", sp, err)
	}
}
