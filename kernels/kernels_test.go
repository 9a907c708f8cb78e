package kernels

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, f := range []Family{CUDAFamily, OpenCLFamily} {
		names := f.Names()
		for _, want := range []string{"copy", "vecadd", "saxpy"} {
			src, err := f.Source(want)
			if err != nil || !strings.Contains(src, "__kernel") && !strings.Contains(src, "__global__") {
				t.Errorf("%s/%s: %v", f.Dir, want, err)
			}
		}
		if _, err := f.Source("nope"); err == nil || !strings.Contains(err.Error(), "vecadd") {
			t.Errorf("%s: unknown kernel error %v should list names %v", f.Dir, err, names)
		}
	}
}
