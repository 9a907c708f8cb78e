package warps

// Suite "barrier": the cost of a work-group barrier. bar_l<L> runs
// barrierRounds rounds of (write to local/shared memory, barrier, read the
// neighbour's slot) in work-groups of L; nobar_l<L> does the same loads,
// stores and arithmetic reading its own slot, which needs no barrier.
//
// Params: "local", "rounds" (barriers per work-group), "groups" and
// "barriers" (work-group barriers executed in one run: rounds x groups; 0 for
// nobar), and the device's "compute_units" (SMs) and "clock_mhz", which turn
// the cost into cycles of one compute unit. The cost of one barrier is
//
//	ns_per_barrier = (median_ms(bar_lL) - median_ms(nobar_lL)) * 1e6 / barriers
//
// an amortised, throughput cost over the whole device (groups run
// concurrently), and ns_per_round = the same difference / rounds is the
// latency one round adds to the whole launch. Both are also filled into the
// bar record's Params after its runs (from the medians of the runs this
// process timed, warm-ups included, so they are close to, not exactly, the
// records' medians); the notebook can recompute them from the records.
//
// Each bar_lL is compared with nobar_lL (CompareWith), so its "vs baseline"
// is the slowdown the barriers cause; the suite's baseline is nobar_l256.
// Sizes are element counts ("1M" = 1<<20), a multiple of 1024.

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
)

// barrierLocals are the work-group sizes tried.
var barrierLocals = []int{32, 64, 128, 256}

// barrierRounds is the number of barriers per work-group in bar_l<L>.
const barrierRounds = 64

func init() {
	bench.Register(bench.Suite{
		Name: "barrier",
		Doc: "cost of a work-group barrier at local sizes 32..256: rounds of local-memory exchange " +
			"with a barrier (bar_lL) against the same work without one (nobar_lL); sizes: elements",
		Sizes: sizes("1M", "16M"),
		Cases: gpuSuite(barrierBuild),
	})
}

// barrierRef is what bar_sync computes: per group of l, rounds of
// v[j] = 0.5 * (v[j] + v[(j+1) % l]).
func barrierRef(x []float32, l, rounds int) []float32 {
	out := make([]float32, len(x))
	cpu.Parallel(len(x)/l, 16, func(lo, hi int) {
		v, w := make([]float32, l), make([]float32, l)
		for grp := lo; grp < hi; grp++ {
			copy(v, x[grp*l:(grp+1)*l])
			for range rounds {
				for j := range l {
					w[j] = 0.5 * (v[j] + v[(j+1)%l])
				}
				v, w = w, v
			}
			copy(out[grp*l:], v)
		}
	})
	return out
}

// medianOf returns the median of ds (0 for none).
func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func barrierBuild(g *gpu, dev *engine.Device, size string) (cases []bench.Case, err error) {
	n, err := elements(size)
	if err != nil {
		return nil, err
	}
	if n%1024 != 0 {
		return nil, fmt.Errorf("barrier: size %s: want a multiple of 1024 elements (1K, 64K, 1M)", size)
	}
	if err := checkArrays(dev, "barrier", size, uint64(3+len(barrierLocals))*uint64(n), 2*uint64(n),
		fmt.Sprintf("the input, a reference for each of the %d work-group sizes, the zeros that reset the output and the output read back", len(barrierLocals)),
		"the input and the output"); err != nil {
		return nil, err
	}
	x := sweepInput(n)
	src, dst, devMax, err := sweepBuffers(g, x)
	if err != nil {
		return nil, err
	}
	for _, local := range localsUpTo(barrierLocals, devMax) {
		groups := n / local
		// nobar's times, kept so that bar's Check can fill ns_per_barrier.
		var noTimes []time.Duration
		for _, sync := range []bool{false, true} {
			name, variant, want := "bar_none", fmt.Sprintf("nobar_l%d", local), x
			if sync {
				name, variant, want = "bar_sync", fmt.Sprintf("bar_l%d", local), barrierRef(x, local, barrierRounds)
			}
			k, err := g.kernel("barrier", name, "-DL="+strconv.Itoa(local))
			if err != nil {
				return nil, err
			}
			lim, err := kernelLimit(g, k)
			if err != nil {
				return nil, err
			}
			if local > lim {
				continue
			}
			barriers := 0
			if sync {
				barriers = barrierRounds * groups
			}
			params := bench.Params{"local": local, "rounds": barrierRounds, "groups": groups,
				"barriers": barriers, "barrier": sync, "elements": n,
				"compute_units": dev.Info.ComputeUnits, "clock_mhz": dev.Info.ClockMHz}
			c := bench.Case{
				Variant: variant, Params: params,
				Baseline: !sync && local == 256,
				// 0.5*(v+w): an add and a multiply per element and round.
				Flops: 2 * barrierRounds * float64(n), Bytes: 8 * float64(n), Tol: 1e-6,
			}
			if sync {
				c.CompareWith = fmt.Sprintf("nobar_l%d", local)
			}
			var times []time.Duration
			c.Reset = func() error {
				times = times[:0]
				return zeroBuffer(g, dst)
			}
			c.Run = func() (time.Duration, error) {
				d, err := g.launch(k, []int{n}, []int{local}, 0, n, barrierRounds, src, dst)
				if err == nil {
					times = append(times, d)
					if !sync {
						noTimes = times
					}
				}
				return d, err
			}
			c.Check = func() (bench.Checked, error) {
				if sync && len(noTimes) > 0 {
					delta := float64(medianOf(times) - medianOf(noTimes))
					params["ns_per_barrier"] = delta / float64(barriers)
					params["ns_per_round"] = delta / barrierRounds
				}
				got, err := g.read(dst, n)
				return bench.Compare(got, want), err
			}
			cases = append(cases, c)
		}
	}
	return cases, nil
}
