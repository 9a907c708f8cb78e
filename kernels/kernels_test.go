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

func TestSteps(t *testing.T) {
	steps, err := CUDAFamily.Steps("sparse", "spmv_")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < 4 || steps[0].Name != "spmv_01_scalar" || steps[0].File != "sparse/spmv_01_scalar.cu" {
		t.Errorf("spmv steps: %+v", steps[0])
	}
	for i, s := range steps {
		if i > 0 && s.Name <= steps[i-1].Name {
			t.Errorf("out of order: %s after %s", s.Name, steps[i-1].Name)
		}
		if !strings.HasPrefix(Header(s.Code), "SpMV step") {
			t.Errorf("%s: header %q", s.File, Header(s.Code))
		}
	}
	gemm, err := OpenCLFamily.Steps("gemm", "")
	if err != nil || gemm[0].Name != "01_naive" {
		t.Errorf("opencl gemm: %v %v", gemm, err)
	}
	if _, err := CUDAFamily.Steps("gemm", "nope_"); err == nil || !strings.Contains(err.Error(), "no cuda steps gemm/nope_NN_*") {
		t.Errorf("no steps: %v", err)
	}
	for code, want := range map[string]string{
		"// a\n//\n// b\ncode // c\n":                    "a\n\nb",
		"package gemm\n\n// Step 05: a.\n// b\nfunc f()": "Step 05: a.\nb",
		"int x; // not a header\n":                       "",
	} {
		if h := Header(code); h != want {
			t.Errorf("Header(%q) = %q, want %q", code, h, want)
		}
	}
}
