package warps

import (
	"fmt"
	"math"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
)

// The divergence suite: every work-item runs one of two equally long chains of
// dependent multiply-adds, chosen by a per-element mask; the variants differ
// only in the mask (and branchless in the kernel). Size is a number of
// elements, written like a byte count: "1M" is 1<<20 elements, "16K" 16384.
//
// Params: "divergent_fraction" is the fraction of 32-lane groups (warps on
// NVIDIA) whose lanes disagree, computed from the actual mask; "pattern" names
// the mask; "b_fraction" is the fraction of lanes taking branch B.
// Flops count the useful work, 2*divIters per element, in every variant
// (branchless does twice that).

const (
	divIters = 128 // multiply-adds per branch, the kernels' ITERS
	divLocal = 256 // work-group (block) size
	divWarp  = 32
)

// divVariant is one mask pattern and kernel.
type divVariant struct {
	name, pattern string
	p             float64 // random_p: probability of branch B
	branchless    bool
}

var divVariants = []divVariant{
	{name: "uniform", pattern: "uniform"},
	{name: "warp_split", pattern: "warp_split"},
	{name: "alternate_lanes", pattern: "alternate_lanes"},
	{name: "random_p0.01", pattern: "random", p: 0.01},
	{name: "random_p0.05", pattern: "random", p: 0.05},
	{name: "random_p0.1", pattern: "random", p: 0.1},
	{name: "random_p0.25", pattern: "random", p: 0.25},
	{name: "random_p0.5", pattern: "random", p: 0.5},
	{name: "branchless", pattern: "alternate_lanes", branchless: true},
}

func init() {
	bench.Register(bench.Suite{
		Name: "divergence",
		Doc: "branch divergence: lanes of one 32-lane warp taking different branches of equal cost " +
			"(uniform, warp_split, alternate_lanes, random_p*, branchless); size = elements",
		Sizes: sizes("1M", "16M"),
		Cases: gpuSuite(divergenceBuild),
	})
}

// divHash is a deterministic pseudo-random number in [0, 1) for element i.
func divHash(i int, seed uint32) float64 {
	h := uint32(i)*2654435761 ^ seed*0x9e3779b9
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return float64(h) / (1 << 32)
}

// takesB reports whether element i takes branch B under v's mask.
func (v divVariant) takesB(i int) bool {
	switch v.pattern {
	case "warp_split":
		return (i/divWarp)%2 == 1
	case "alternate_lanes":
		return i%2 == 1
	case "random":
		return divHash(i, 7) < v.p
	}
	return false
}

// mask materializes v's mask for n elements.
func (v divVariant) mask(n int) []int32 {
	m := make([]int32, n)
	cpu.Parallel(n, 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if v.takesB(i) {
				m[i] = 1
			}
		}
	})
	return m
}

// fractions returns the fraction of 32-lane groups whose lanes disagree and
// the fraction of lanes taking B (a last partial group counts over its lanes).
func (v divVariant) fractions(n int) (divergent, b float64) {
	groups, mixed, bs := 0, 0, 0
	for lo := 0; lo < n; lo += divWarp {
		cnt := 0
		hi := min(lo+divWarp, n)
		for i := lo; i < hi; i++ {
			if v.takesB(i) {
				cnt++
			}
		}
		groups++
		bs += cnt
		if cnt != 0 && cnt != hi-lo {
			mixed++
		}
	}
	return float64(mixed) / float64(groups), float64(bs) / float64(n)
}

// divChain is the kernels' branch: iters float32 multiply-adds from v, each
// rounded once as an FMA does.
func divChain(v, a, c float32, iters int) float32 {
	for range iters {
		v = float32(math.FMA(float64(v), float64(a), float64(c)))
	}
	return v
}

func divergenceBuild(g *gpu, dev *engine.Device, size string) (cases []bench.Case, err error) {
	n, err := elements(size)
	if err != nil {
		return nil, err
	}
	if err := checkArrays(dev, "divergence", size, uint64(6+len(divVariants))*uint64(n), 3*uint64(n),
		fmt.Sprintf("the input, the zeros that reset the output, the two branches' references, the expected and the read-back output, and a mask for each of the %d patterns", len(divVariants)),
		"the input, the mask and the output"); err != nil {
		return nil, err
	}
	x := make([]float32, n)
	cpu.Parallel(n, 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x[i] = float32(2*divHash(i, 1) - 1) // [-1, 1)
		}
	})
	xb, err := upload(g, x)
	if err != nil {
		return nil, err
	}
	maskBuf, err := g.alloc(n)
	if err != nil {
		return nil, err
	}
	out, err := g.alloc(n)
	if err != nil {
		return nil, err
	}
	opt := fmt.Sprintf("-DITERS=%d", divIters)
	kBranchy, err := g.kernel("divergence", "branchy", opt)
	if err != nil {
		return nil, err
	}
	kBranchless, err := g.kernel("divergence", "branchless", opt)
	if err != nil {
		return nil, err
	}

	// The references of both branches for every element, computed once on
	// the first check; a variant's reference picks one by its mask.
	var refA, refB []float32
	refs := func() {
		if refA != nil {
			return
		}
		refA, refB = make([]float32, n), make([]float32, n)
		cpu.Parallel(n, 1<<12, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				refA[i] = divChain(x[i], 0.999, 0.0005, divIters)
				refB[i] = divChain(x[i], 0.998, -0.001, divIters)
			}
		})
	}

	global, local := []int{roundUp(n, divLocal)}, []int{divLocal}
	zeros := make([]float32, n)
	for _, v := range divVariants {
		k := kBranchy
		if v.branchless {
			k = kBranchless
		}
		divergent, bFrac := v.fractions(n)
		params := bench.Params{"elements": n, "iters": divIters, "pattern": v.pattern,
			"divergent_fraction": divergent, "b_fraction": bFrac, "branch": "if"}
		if v.pattern == "random" {
			params["p"] = v.p
		}
		if v.branchless {
			params["branch"] = "select"
		}
		var mask []int32
		cases = append(cases, bench.Case{
			Variant:  v.name,
			Params:   params,
			Baseline: v.name == "uniform",
			Flops:    2 * divIters * float64(n),
			Bytes:    12 * float64(n), // mask, x and out
			Tol:      1e-5,
			Reset: func() error {
				mask = v.mask(n)
				if err := write(g, maskBuf, mask); err != nil {
					return err
				}
				return write(g, out, zeros)
			},
			Run: func() (time.Duration, error) {
				return g.launch(k, global, local, 0, n, maskBuf, xb, out)
			},
			Check: func() (bench.Checked, error) {
				got, err := g.read(out, n)
				if err != nil {
					return bench.Checked{}, err
				}
				if mask == nil {
					return bench.Checked{}, fmt.Errorf("divergence %s: check before reset", v.name)
				}
				refs()
				want := make([]float32, n)
				for i := range want {
					want[i] = refA[i]
					if mask[i] != 0 {
						want[i] = refB[i]
					}
				}
				return bench.Compare(got, want), nil
			},
		})
	}
	return cases, nil
}
