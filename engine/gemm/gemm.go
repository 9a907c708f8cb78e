// Package gemm is the lab's matrix-multiplication ladder: C = A·B for
// row-major float32 matrices of any shape, from a naive kernel to tensor
// cores, on the CPU (Go), OpenCL and CUDA. Every step is one variant; the
// "gemm" bench suite runs them all against the same inputs, checks each
// against a float64 reference, and compares it with the baseline of its
// device family (cuBLAS on CUDA, gonum's Sgemm on the CPU) measured in the
// same run.
package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
	"gpulab/kernels"
)

// Shape is an M×N×K product: C (M×N) = A (M×K) · B (K×N).
type Shape struct{ M, N, K int }

// ParseShape reads "4096" (a cube) or "1000x1023x999" (M×N×K).
func ParseShape(s string) (Shape, error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "x")
	var d []int
	for _, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return Shape{}, fmt.Errorf("gemm: shape %q: want N or MxNxK, e.g. 4096 or 1000x1023x999", s)
		}
		d = append(d, v)
	}
	var sh Shape
	switch len(d) {
	case 1:
		sh = Shape{d[0], d[0], d[0]}
	case 3:
		sh = Shape{d[0], d[1], d[2]}
	default:
		return Shape{}, fmt.Errorf("gemm: shape %q: want N or MxNxK, e.g. 4096 or 1000x1023x999", s)
	}
	return sh, sh.Validate()
}

// Validate rejects empty, negative and too large shapes (every matrix must
// have fewer than 2^31 elements: kernels index with 32-bit ints).
func (s Shape) Validate() error {
	if s.M <= 0 || s.N <= 0 || s.K <= 0 {
		return fmt.Errorf("gemm: shape %s: M, N and K must be positive", s)
	}
	for _, m := range []struct {
		name       string
		rows, cols int
	}{{"A", s.M, s.K}, {"B", s.K, s.N}, {"C", s.M, s.N}} {
		if float64(m.rows)*float64(m.cols) >= 1<<31 { // in float64: no product overflows
			return fmt.Errorf("gemm: shape %s: %s has %d×%d elements, more than 2^31", s, m.name, m.rows, m.cols)
		}
	}
	return nil
}

func (s Shape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.N, s.K) }

// Flops is 2·M·N·K: one multiply and one add per term.
func (s Shape) Flops() float64 { return 2 * float64(s.M) * float64(s.N) * float64(s.K) }

// MinBytes is the compulsory DRAM traffic: read A and B once, write C once.
func (s Shape) MinBytes() float64 { return 4 * float64(s.M*s.K+s.K*s.N+s.M*s.N) }

// CheckOperands returns an error unless a, b and c have the lengths shape s needs.
func CheckOperands(s Shape, a, b, c []float32) error {
	if err := s.Validate(); err != nil {
		return err
	}
	for _, m := range []struct {
		name      string
		got, rows int
		cols      int
	}{{"A", len(a), s.M, s.K}, {"B", len(b), s.K, s.N}, {"C", len(c), s.M, s.N}} {
		if m.got != m.rows*m.cols {
			return fmt.Errorf("gemm: shape %s: %s has %d elements, want %d×%d = %d", s, m.name, m.got, m.rows, m.cols, m.rows*m.cols)
		}
	}
	return nil
}

// Precision is what the multiply-adds run in; accumulation is always FP32.
type Precision string

// Precisions.
const (
	FP32 Precision = "fp32"
	TF32 Precision = "tf32" // inputs rounded to a 10-bit mantissa (tensor cores)
	BF16 Precision = "bf16" // inputs stored as bfloat16 (tensor cores)
)

// Tolerance is the largest max relative error (|got-want| / max(|want|, 1))
// that passes for a dot product of length k. FP32 and BF16 are checked against
// a reference computed from the same (rounded) inputs, so only the order of
// FP32 accumulation differs: about k·2^-23 at worst. TF32 rounds each input
// to a 10-bit mantissa inside the multiply, an error that grows like
// sqrt(k)·2^-10; it is checked against the FP32 reference.
func (p Precision) Tolerance(k int) float64 {
	if p == TF32 {
		return max(2e-2, math.Sqrt(float64(k))*math.Ldexp(1, -10))
	}
	return max(1e-4, float64(k)*math.Ldexp(1, -23))
}

// Variant is one step of a ladder.
type Variant struct {
	Name      string      // e.g. "03_smem_tiling"; the kernel file is gemm/<Name> for GPU kinds
	Kind      engine.Kind // the device family it runs on
	Doc       string      // what this step changes, in one line
	Precision Precision
	Baseline  bool // the family's reference library (cuBLAS, gonum)
	// Traffic is the global-memory traffic in bytes that the algorithm
	// implies for shape s, ignoring caches (for the roofline). Nil: MinBytes.
	Traffic func(s Shape) float64
}

// Problem is one shape's inputs and its references, computed once and shared
// by every variant.
type Problem struct {
	Shape
	A, B []float32

	mu   sync.Mutex
	refs map[Precision][]float32
	bf16 [2][]float32 // A and B rounded to bfloat16, as float32
}

// NewProblem draws A and B uniformly from [-1, 1) with a fixed seed.
func NewProblem(s Shape, seed uint64) (*Problem, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p := &Problem{Shape: s, A: make([]float32, s.M*s.K), B: make([]float32, s.K*s.N), refs: map[Precision][]float32{}}
	for i, m := range [][]float32{p.A, p.B} {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		for j := range m {
			m[j] = r.Float32()*2 - 1
		}
	}
	return p, nil
}

// Inputs returns A and B as the given precision sees them: BF16 rounds them
// to bfloat16 (the device copies hold exactly these values).
func (p *Problem) Inputs(prec Precision) (a, b []float32) {
	if prec != BF16 {
		return p.A, p.B
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bf16[0] == nil {
		p.bf16 = [2][]float32{RoundBF16(p.A), RoundBF16(p.B)}
	}
	return p.bf16[0], p.bf16[1]
}

// Reference returns C for the inputs of prec, accumulated in float64.
func (p *Problem) Reference(prec Precision) []float32 {
	if prec == TF32 {
		prec = FP32
	}
	a, b := p.Inputs(prec)
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.refs[prec]; ok {
		return c
	}
	c := make([]float32, p.M*p.N)
	referenceGEMM(p.Shape, a, b, c)
	p.refs[prec] = c
	return c
}

// Reference computes C = A·B in float64 (rounded to float32 at the end): the
// lab's ground truth. It is goroutine-parallel over rows and slow on purpose:
// clarity over speed. Bad shapes or lengths are errors.
func Reference(s Shape, a, b []float32) ([]float32, error) {
	c := make([]float32, s.M*s.N)
	if err := CheckOperands(s, a, b, c); err != nil {
		return nil, err
	}
	referenceGEMM(s, a, b, c)
	return c, nil
}

func referenceGEMM(s Shape, a, b, c []float32) {
	cpu.Parallel(s.M, 1, func(lo, hi int) {
		row := make([]float64, s.N)
		for i := lo; i < hi; i++ {
			clear(row)
			for p := 0; p < s.K; p++ {
				aip := float64(a[i*s.K+p])
				for j, bpj := range b[p*s.N : (p+1)*s.N] {
					row[j] += aip * float64(bpj)
				}
			}
			for j, v := range row {
				c[i*s.N+j] = float32(v)
			}
		}
	})
}

// RoundBF16 rounds each value to the nearest bfloat16 (ties to even),
// returned as float32. NaN stays NaN.
func RoundBF16(s []float32) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = math.Float32frombits(uint32(ToBF16(v)) << 16)
	}
	return out
}

// ToBF16 converts to bfloat16 bits, rounding to nearest even.
func ToBF16(v float32) uint16 {
	u := math.Float32bits(v)
	if v != v {
		return uint16(u>>16) | 0x40 // keep NaN a NaN
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// Case builds the bench case of variant v on problem p, without Run and
// Reset, which the backend supplies. got reads the backend's output.
func (p *Problem) Case(v Variant, got func() ([]float32, error)) bench.Case {
	bytes := p.MinBytes()
	if v.Traffic != nil {
		bytes = v.Traffic(p.Shape)
	}
	return bench.Case{
		Variant: v.Name, Baseline: v.Baseline,
		Params: bench.Params{"m": p.M, "n": p.N, "k": p.K, "precision": string(v.Precision)},
		Flops:  p.Flops(), Bytes: bytes, Tol: v.Precision.Tolerance(p.K),
		Check: func() (bench.Checked, error) {
			out, err := got()
			if err != nil {
				return bench.Checked{}, err
			}
			return bench.Compare(out, p.Reference(v.Precision)), nil
		},
	}
}

// Variants returns the ladder of one device family, baseline first.
func Variants(kind engine.Kind) []Variant {
	switch kind {
	case engine.CUDA:
		return cudaVariants()
	case engine.OpenCL:
		return openCLVariants()
	default:
		return cpuVariants()
	}
}

func init() {
	bench.Register(bench.Suite{
		Name:  "gemm",
		Doc:   "C = A·B, row-major FP32 (and TF32/BF16 tensor cores): the whole ladder against cuBLAS or gonum",
		Sizes: defaultSizes,
		Cases: cases,
	})
}

// defaultSizes: small cubes and an odd shape on CPUs (the naive steps are
// slow), up to 4096 on GPUs.
func defaultSizes(dev engine.Info) []string {
	if dev.Kind == engine.CPU || dev.PeakGFLOPS < 5000 {
		return []string{"128", "255x257x129", "256"}
	}
	return []string{"1000x1023x999", "1024", "2048", "4096"}
}

func cases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	s, err := ParseShape(size)
	if err != nil {
		return nil, nil, err
	}
	host, device := suiteMemory(dev, s)
	if err := dev.CheckRun("gemm "+s.String(), host, device); err != nil {
		return nil, nil, err
	}
	p, err := NewProblem(s, 1)
	if err != nil {
		return nil, nil, err
	}
	switch dev.Kind {
	case engine.CUDA:
		return cudaCases(dev.CUDA, p)
	case engine.OpenCL:
		return openCLCases(dev.OpenCL, p)
	default:
		return cpuCases(p), nil, nil
	}
}

// suiteMemory is the memory the gemm suite holds for shape s on dev: on the
// host and on the device (nothing on the CPU, whose outputs count as host
// memory), so that a size too large for either is refused before anything
// is allocated.
func suiteMemory(dev *engine.Device, s Shape) (host, device engine.Need) {
	a, b, c := uint64(s.M)*uint64(s.K), uint64(s.K)*uint64(s.N), uint64(s.M)*uint64(s.N)
	switch dev.Kind {
	case engine.CUDA:
		host = engine.Need{Bytes: 4*(a+b) + 2*(a+b) + 4*(a+b) + 2*4*c + 4*c,
			Holds: "A and B (FP32, BF16 bits to upload, BF16-rounded), the FP32 and BF16 references and C read back"}
		device = engine.Need{Bytes: 4*(a+b) + 2*(a+b) + 4*c, Holds: "A and B in FP32 and BF16, and C"}
		if dev.CUDA.Properties().Major == 9 { // step 12's copies with rows padded to 16 bytes
			roundUp8 := func(n int) uint64 { return uint64((n + 7) / 8 * 8) }
			if s.K%8 != 0 {
				device.Bytes += 2 * uint64(s.M) * roundUp8(s.K)
			}
			if s.N%8 != 0 {
				device.Bytes += 2 * uint64(s.K) * roundUp8(s.N)
			}
			device.Holds += ", and step 12's padded copies"
		}
	case engine.OpenCL:
		host = engine.Need{Bytes: 4*(a+b) + 3*4*c, Holds: "A, B, the zeros that reset C, the reference and C read back"}
		device = engine.Need{Bytes: 4 * (a + b + c), Holds: "A, B and C"}
	default:
		host = engine.Need{Bytes: 4*(a+b) + 4*b + 4*c + uint64(len(cpuSteps))*4*c,
			Holds: fmt.Sprintf("A, B, a transposed B, the reference and a C for each of the %d steps", len(cpuSteps))}
	}
	return host, device
}

// Source returns the file a variant's code lives in and its text: the kernel
// file for CUDA and OpenCL steps, the Go file for CPU steps. Library
// baselines (cuBLAS, gonum) have no source here and return an error.
func Source(v Variant) (file, code string, err error) {
	switch v.Kind {
	case engine.CUDA:
		for _, st := range cudaSteps() {
			if st.Name == v.Name && st.kernel != "" {
				file = "gemm/" + st.fileName()
			}
		}
		if v.Name == autotunedVariant().Name {
			file = "gemm/" + v.Name
		}
		if file == "" {
			return "", "", fmt.Errorf("gemm: %s is a library call, with no source here", v.Name)
		}
		code, err = kernels.CUDA(file)
		return "kernels/cuda/" + file + ".cu", code, err
	case engine.OpenCL:
		code, err = kernels.OpenCL("gemm/" + v.Name)
		return "kernels/opencl/gemm/" + v.Name + ".cl", code, err
	default:
		return cpuSource(v.Name)
	}
}
