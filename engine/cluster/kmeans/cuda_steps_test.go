package kmeans

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gpulab/kernels"
)

// TestVariantsMatchKernelFiles checks the variant table against the kernel
// files, where no GPU is needed: each row's assignment and update files are
// numbered steps that open with their idea, traffic and cost; the
// assignment file defines the row's entry point; and every numbered file
// is some row's, so that what the lesson shows (LadderSteps) is what the
// suite runs.
func TestVariantsMatchKernelFiles(t *testing.T) {
	steps, err := kernels.CUDAFamily.Steps("kmeans", "")
	if err != nil {
		t.Fatal(err)
	}
	code := map[string]string{}
	for _, s := range steps {
		code[s.Name] = s.Code
	}
	used := map[string]bool{}
	for _, v := range gpuVariants {
		for _, file := range []string{v.assign, v.update.file} {
			src, ok := code[file]
			if !ok {
				t.Errorf("%s: %s is not a numbered file of kernels/cuda/kmeans", v.Name, file)
				continue
			}
			used[file] = true
			header := kernels.Header(src)
			for _, part := range []string{"Idea", "Traffic", "Cost"} {
				if !strings.Contains(header, part) {
					t.Errorf("%s.cu: the header says nothing of %s:\n%s", file, part, header)
				}
			}
		}
		if !regexp.MustCompile(`__global__[^;{]*\b` + v.kernel + `\s*\(`).MatchString(code[v.assign]) {
			t.Errorf("%s: %s.cu defines no __global__ %s", v.Name, v.assign, v.kernel)
		}
		if v.launch == nil {
			t.Errorf("%s: no launch", v.Name)
		}
	}
	for _, s := range steps {
		if !used[s.Name] {
			t.Errorf("%s.cu is a numbered step that no variant runs", s.Name)
		}
	}
	if names := variantNames(); !slices.Equal(Variants, names) || len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("variant names %v: not unique", names)
	}
}

// TestTensorHeaderStride: step 10's header derives its fragment loads'
// banks from the BK the host passes; it must name that BK and stride.
func TestTensorHeaderStride(t *testing.T) {
	steps, err := kernels.CUDAFamily.Steps("kmeans", "")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(steps, func(s kernels.Step) bool { return s.Name == "10_tensor_3xtf32" })
	if i < 0 {
		t.Fatal("no step 10_tensor_3xtf32")
	}
	header := strings.Join(strings.Fields(kernels.Header(steps[i].Code)), " ")
	stride := pipelineBK + 4
	for _, want := range []string{fmt.Sprintf("BK = %d", pipelineBK), fmt.Sprintf("is %d floats", stride), fmt.Sprintf("(%d ≡ %d mod 32)", stride, stride%32)} {
		if !strings.Contains(header, want) {
			t.Errorf("step 10's header lacks %q:\n%s", want, header)
		}
	}
	// Conflict-free: lane (g, q) of a fragment load reads word stride·g + q.
	banks := map[int]bool{}
	for lane := range 32 {
		banks[(stride*(lane/4)+lane%4)%32] = true
	}
	if len(banks) != 32 {
		t.Errorf("a fragment load at stride %d touches %d banks, not 32", stride, len(banks))
	}
}
