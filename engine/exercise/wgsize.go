package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"gpulab/engine/exercise/wire"
	"gpulab/kernels"
)

// opencl/wgsize: the work-group-size experiment of notebook 02. The student
// writes wg_fma (ITERS dependent FMAs per element, compute bound), declaring
// reqd_work_group_size(WG, 1, 1) when WG is defined; the check verifies it
// at every local size from 8 to 1024 that the device and kernel allow, with
// and without the hint, on a length that is a multiple of none of them, and
// times it at 256 with the hint. In a notebook it then charts the speed of
// every launch next to the lab's own kernel.
func init() {
	register(Exercise{
		Name: "opencl/wgsize",
		Doc:  "wg_fma(n, src, dst) with reqd_work_group_size(WG, 1, 1) under -DWG: swept over local sizes 8..1024 (notebook 02)",
		Flavors: []Flavor{{
			Lang:     LangOpenCL,
			TODO:     "// TODO: when WG is defined, declare the work-group size:",
			Solution: func() (string, error) { return kernels.OpenCL(wgsizeFile) },
			devices:  openCLDevices,
			check:    checkWGSize,
		}},
	})
}

const (
	wgsizeFile  = "warps/wgsize" // the lab's kernel, the reference solution
	wgsizeIters = 256            // FMAs per element: 64 flop per byte moved
)

var wgsizeEntry = entry{name: "wg_fma", decl: map[string]string{
	LangOpenCL: "__kernel void wg_fma(int n, __global const float* src, __global float* dst)",
}}

// wgProblem is wg_fma over n elements in groups of local, built with
// -DWG=local when hint.
type wgProblem struct {
	n, local int
	hint     bool
	x        []float32
}

func (p wgProblem) options() []string {
	o := []string{"-DITERS=" + strconv.Itoa(wgsizeIters)}
	if p.hint {
		o = append(o, "-DWG="+strconv.Itoa(p.local))
	}
	return o
}

func (p wgProblem) String() string {
	return fmt.Sprintf("n=%d, %d FMAs, local size %d, %v", p.n, wgsizeIters, p.local, p.options())
}

func (p wgProblem) rows() int     { return p.n }
func (p wgProblem) work() float64 { return 2 * float64(wgsizeIters) * float64(p.n) }

func (p wgProblem) task() wire.Task {
	t := wgsizeEntry.task(LangOpenCL, p.n, p.local, p.n, p.x, wire.Out(p.n))
	t.Options = p.options()
	return t
}

// mismatch compares dst with a <- fma(a, 0.999, 0.001) applied ITERS
// times, with float32 rounding after each correctly rounded FMA.
func (p wgProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	dst := floats(out[0])
	tol := 1e-6 + 1.2e-7*wgsizeIters // one rounding per FMA, shrunk by 0.999 each step
	return each(p.n, rows, func(i int) string {
		a := p.x[i]
		for range wgsizeIters {
			a = float32(math.FMA(float64(a), 0.999, 0.001))
		}
		if d := wrongValue(dst[i], float64(a), tol); d != "" {
			return fmt.Sprintf("first wrong element: dst[%d] %s", i, d)
		}
		return ""
	}), nil
}

// wgDraw draws n inputs in [0.5, 1.5).
func wgDraw(n, local int, hint bool) draw {
	return func(rng *rand.Rand) (problem, error) {
		x := make([]float32, n)
		for i := range x {
			x[i] = 0.5 + rng.Float32()
		}
		return wgProblem{n: n, local: local, hint: hint, x: x}, nil
	}
}

func checkWGSize(s *session) Result {
	var r Result
	n, timingN := 1<<16+3, 1<<20+3 // multiples of no local size
	if s.smallTiming() {
		n, timingN = 1<<13+3, 1<<15+3
	}
	var sweep []draw
	for _, local := range []int{8, 16, 32, 64, 128, 256, 512, 1024} {
		for _, hint := range []bool{false, true} {
			p, _ := wgDraw(n, local, hint)(s.rng)
			out, err := s.runGuarded(s.student, p)
			if se, ok := asStray(err); ok {
				s.ran, r.Compiled = true, true
				se.report(&r, p, false)
				return r
			}
			if err != nil {
				if local > 64 && r.Compiled { // the kernel's registers may allow fewer work-items than the device
					continue
				}
				s.fail(&r, err)
				return r
			}
			s.ran, r.Compiled = true, true
			if d, _ := p.mismatch(out, nil); d != "" {
				r.Error, r.Detail = "wrong result for "+p.String(), d
				r.Hint = blockHint("n", p.(wgProblem).n, local, "element")
				return r
			}
			sweep = append(sweep, wgDraw(timingN, local, hint))
		}
	}
	// The hint must be declared: a kernel built for groups of 64 has to
	// refuse groups of 32 (CL_INVALID_WORK_GROUP_SIZE).
	p, _ := wgDraw(n, 32, false)(s.rng)
	t := p.task()
	t.Options = append(t.Options, "-DWG=64")
	if _, err := runOne(s.student, t); err == nil {
		r.Error = "built with -DWG=64, your kernel ran with work-groups of 32: declare __attribute__((reqd_work_group_size(WG, 1, 1))) when WG is defined"
		return r
	}
	timing := wgDraw(timingN, 256, true)
	speed, tp, err := s.speed(s.student, timing)
	if err != nil {
		s.fail(&r, err)
		return r
	}
	r.Correct, r.GFLOPS, r.Size = true, speed, tp.String()
	if s.solution != nil {
		if ref, _, err := s.speed(s.solution, timing); err == nil {
			r.Ladder = append(r.Ladder, Rung{Name: "the lab's, local 256 + hint", GFLOPS: ref})
			r.PctOfRef = 100 * speed / ref
		}
	}
	if s.local { // the sweep's speeds, for the notebook's chart
		for _, d := range sweep {
			g, p, err := s.speed(s.student, d)
			if err == nil {
				wp := p.(wgProblem)
				name := fmt.Sprintf("yours, local %d", wp.local)
				if wp.hint {
					name += " + hint"
				}
				r.Ladder = append(r.Ladder, Rung{Name: name, GFLOPS: g})
			}
		}
	}
	return r
}
