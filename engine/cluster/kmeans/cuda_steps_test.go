package kmeans

import (
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
