package sparse

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gpulab/kernels"
)

// TestStepTablesMatchKernelFiles checks each CUDA ladder's table against its
// numbered kernel files, where no GPU is needed: every row's file is a
// numbered step that opens with its idea, traffic and cost and defines the
// row's entry point; rows follow the files' order; and every numbered file
// is some row's, so that what a lesson shows (nb.ShowKernels) is what the
// suite runs. A SpGEMM row's symbolicSpan must be its file's SYMBOLIC_SPAN.
func TestStepTablesMatchKernelFiles(t *testing.T) {
	var spmvFiles, spmvKernels, spgemmFiles []string
	for _, st := range spmvSteps {
		spmvFiles, spmvKernels = append(spmvFiles, st.File), append(spmvKernels, st.Kernel)
	}
	span := regexp.MustCompile(`(?m)^#define SYMBOLIC_SPAN (\d+)`)
	for _, st := range spgemmSteps {
		spgemmFiles = append(spgemmFiles, "spgemm_"+st.Name)
		src, err := kernels.CUDA(st.file())
		if err != nil {
			t.Fatal(err)
		}
		want := "1" // the default of spgemm_window.cuh
		if m := span.FindStringSubmatch(src); m != nil {
			want = m[1]
		}
		if got := strconv.Itoa(max(1, st.symbolicSpan)); got != want {
			t.Errorf("%s: symbolicSpan %s, but its file's SYMBOLIC_SPAN is %s", st.Name, got, want)
		}
	}
	for _, ladder := range []struct {
		prefix  string
		files   []string // each row's file, in table order
		kernels []string // each row's entry point ("" where rows name none)
	}{
		{"spmv_", spmvFiles, spmvKernels},
		{"spgemm_", spgemmFiles, make([]string, len(spgemmFiles))},
	} {
		steps, err := kernels.CUDAFamily.Steps("sparse", ladder.prefix)
		if err != nil {
			t.Fatal(err)
		}
		var numbered []string
		code := map[string]string{}
		for _, s := range steps {
			numbered = append(numbered, s.Name)
			code[s.Name] = s.Code
		}
		if rows := slices.Compact(slices.Clone(ladder.files)); !slices.Equal(rows, numbered) {
			t.Errorf("%s ladder: the table's files are %v; the numbered files are %v", ladder.prefix, rows, numbered)
		}
		for i, file := range ladder.files {
			src, ok := code[file]
			if !ok {
				continue // reported above
			}
			header := kernels.Header(src)
			for _, part := range []string{"Idea", "Traffic", "Cost"} {
				if !strings.Contains(header, part) {
					t.Errorf("%s.cu: the header says nothing of %s:\n%s", file, part, header)
				}
			}
			if k := ladder.kernels[i]; k != "" && !regexp.MustCompile(`__global__[^;{]*\b`+k+`\s*\(`).MatchString(src) {
				t.Errorf("%s.cu defines no __global__ %s", file, k)
			}
		}
	}
}
