//go:build goexperiment.simd && amd64

package gemm

import (
	"testing"

	"simd/archsimd"

	"gpulab/engine/bench"
)

// Both kernels of step 07, whichever one this CPU would pick.
func TestCPUArchSIMDKernels(t *testing.T) {
	kernels := map[string]struct {
		nr int
		k  func(kc int, a, b, tile []float32)
		ok bool
	}{
		"avx512 4x32": {32, simdKernel4x32, archsimd.X86.AVX512()},
		"avx2 4x16":   {16, simdKernel4x16, archsimd.X86.AVX2() && archsimd.X86.FMA()},
	}
	for name, kr := range kernels {
		if !kr.ok {
			t.Logf("%s: not supported by this CPU", name)
			continue
		}
		for _, s := range append(cpuTestShapes, Shape{300, 290, 600}) {
			p, _ := NewProblem(s, 9)
			c := make([]float32, s.M*s.N)
			simdBlocked(s, p.A, p.B, c, kr.nr, kr.k)
			if chk := bench.Compare(c, p.Reference(FP32)); !(chk.MaxRelErr <= FP32.Tolerance(s.K)) {
				t.Errorf("%s %s: max relative error %.3g", name, s, chk.MaxRelErr)
			}
		}
	}
}
