package gemm

import (
	"errors"
	"strings"
	"testing"

	"gpulab/engine"
)

// mustProblem parses size and draws a problem of that shape, or stops the test.
func mustProblem(t *testing.T, size string, seed uint64) *Problem {
	t.Helper()
	s, err := ParseShape(size)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProblem(s, seed)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSuiteChecksHostMemory: a shape within the 2^31-element limit that the
// host cannot hold is refused before anything is allocated, on every
// device, with what it needs and what is available; a small one runs. The
// host's memory is capped at 4 GB for the test ($GPULAB_HOST_MEMORY).
func TestSuiteChecksHostMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "4000000000")
	devs, _ := engine.Devices()
	for _, info := range devs {
		dev, err := engine.Open(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []string{"30000", "46340", "1000x2000000x1000"} {
			_, _, err := cases(dev, size)
			var me *engine.MemoryError
			s, _ := ParseShape(size)
			// A, B and C at least, in float32.
			least := 4 * (uint64(s.M)*uint64(s.K) + uint64(s.K)*uint64(s.N) + uint64(s.M)*uint64(s.N))
			if !errors.As(err, &me) || me.Where != "host" || me.Need < least || me.Available != 4e9 {
				t.Errorf("%s, %s: %v; want a *engine.MemoryError of at least %d bytes of host memory", info.ID, size, err, least)
				continue
			}
			if want := "gemm " + s.String() + " needs "; !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; 4.0 GB is available") {
				t.Errorf("%s, %s: error %q", info.ID, size, err)
			}
		}
		cs, closeAll, err := cases(dev, "64x48x40")
		if err != nil || len(cs) == 0 {
			t.Errorf("%s: a small shape: %d cases, %v", info.ID, len(cs), err)
		}
		if closeAll != nil {
			closeAll()
		}
		dev.Close()
	}
}
