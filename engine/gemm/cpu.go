package gemm

// The CPU ladder: plain Go, one step per file (cpu_00_gonum_sgemm.go,
// cpu_01_naive_ijk.go, ...). Each file opens with the idea of its step, the
// memory traffic it saves over the previous one and what it costs; this file
// only lists the steps and turns them into bench cases.
//
// Every step has the same signature, CPUFunc, so that notebooks and
// exercises can swap one for another:
//
//	f, err := gemm.CPUStep("04_cache_blocking")
//	err = f(gemm.Shape{M: 512, N: 512, K: 512}, a, b, c)

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
)

// CPUFunc computes C = A·B for shape s: A is M×K, B is K×N and C is M×N,
// all row-major and densely packed (leading dimensions K, N and N). C is
// overwritten, not accumulated into. Operands of the wrong length or a bad
// shape are an error; nothing is written then.
type CPUFunc func(s Shape, a, b, c []float32) error

// cpuStep is one rung of the CPU ladder: its variant (name, doc, traffic
// model) and its kernel, which may assume validated operands.
type cpuStep struct {
	Variant
	kernel func(s Shape, a, b, c []float32)
}

// cpuSteps is the CPU ladder, baseline first. Each entry lives in its own
// file. optionalCPUSteps are those that only some builds have (step 07 needs
// GOEXPERIMENT=simd).
var cpuSteps = append([]cpuStep{
	{gonumSgemmVariant, gonumSgemm},
	{naiveIJKVariant, naiveIJK},
	{loopOrderIKJVariant, loopOrderIKJ},
	{transposedBVariant, transposedB},
	{cacheBlockingVariant, cacheBlocking},
	{parallelBlockingVariant, parallelBlocking},
	{registerKernelVariant, registerKernel},
}, optionalCPUSteps...)

// runChecked runs kernel after CheckOperands: what every exported step does.
func runChecked(kernel func(s Shape, a, b, c []float32), s Shape, a, b, c []float32) error {
	if err := CheckOperands(s, a, b, c); err != nil {
		return err
	}
	kernel(s, a, b, c)
	return nil
}

// checked is kernel as a CPUFunc that validates its operands.
func checked(kernel func(s Shape, a, b, c []float32)) CPUFunc {
	return func(s Shape, a, b, c []float32) error { return runChecked(kernel, s, a, b, c) }
}

// CPUSteps lists the names of the CPU steps, baseline ("gonum_sgemm") first.
func CPUSteps() []string {
	names := make([]string, len(cpuSteps))
	for i, st := range cpuSteps {
		names[i] = st.Name
	}
	return names
}

// CPUStep returns the step called name (see CPUSteps), validating its
// operands on every call. An unknown name is an error listing the known ones.
func CPUStep(name string) (CPUFunc, error) {
	for _, st := range cpuSteps {
		if st.Name == name {
			return checked(st.kernel), nil
		}
	}
	return nil, fmt.Errorf("gemm: unknown CPU step %q (have: %s)", name, strings.Join(CPUSteps(), ", "))
}

func cpuVariants() []Variant {
	vs := make([]Variant, len(cpuSteps))
	for i, st := range cpuSteps {
		vs[i] = st.Variant
	}
	return vs
}

// cpuCases times one call of each step with the wall clock, each writing its
// own output buffer (cleared before the runs, so that a step that does
// nothing cannot pass on another's result).
func cpuCases(p *Problem) []bench.Case {
	var cases []bench.Case
	for _, st := range cpuSteps {
		f := checked(st.kernel)
		out := make([]float32, p.M*p.N)
		c := p.Case(st.Variant, func() ([]float32, error) { return out, nil })
		c.Reset = func() error { clear(out); return nil }
		c.Run = func() (time.Duration, error) {
			t := time.Now()
			err := f(p.Shape, p.A, p.B, out)
			return time.Since(t), err
		}
		cases = append(cases, c)
	}
	return cases
}

// cpuVariant fills in what every CPU step shares.
func cpuVariant(name, doc string, traffic func(Shape) float64) Variant {
	return Variant{Name: name, Kind: engine.CPU, Doc: doc, Precision: FP32, Traffic: traffic}
}

// cpuDims returns the dimensions of s as float64s, for the traffic formulas
// (byte counts overflow nothing there).
func cpuDims(s Shape) (m, n, k float64) { return float64(s.M), float64(s.N), float64(s.K) }

// cpuBlocks is ⌈n/size⌉ as a float64: how many blocks of size cover n.
func cpuBlocks(n, size int) float64 { return float64((n + size - 1) / size) }

// parallelBlocks runs blocks 0..n-1 on cpu.Workers() goroutines that each
// take the next block from a shared counter when they finish one, so that a
// core slowed down by other work simply takes fewer (cpu.Parallel's fixed
// equal shares would wait for it). setup runs once per goroutine, to make
// its scratch buffers, and returns the function that computes one block.
func parallelBlocks(n int, setup func() func(block int)) {
	var next atomic.Int64
	cpu.Parallel(min(cpu.Workers(), n), 1, func(lo, hi int) {
		block := setup()
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return
			}
			block(i)
		}
	})
}
