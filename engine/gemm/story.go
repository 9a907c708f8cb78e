package gemm

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/kernels"
)

// The story of a run: what each step did to the speed on each device, the
// steps that were slower than the one before them, and why, in words that
// fit the device the records came from. Each device is a GPU, an OpenCL
// device on the CPU's cores (PoCL), or the Go ladder on the CPU: a reason
// for a GPU (coalescing, shared memory, occupancy) is no reason on a CPU.

// platform is what ran a ladder, as far as the reasons go.
type platform int

const (
	gpu         platform = iota // CUDA, or OpenCL on a GPU
	openCLOnCPU                 // an OpenCL CPU device (PoCL)
	goOnCPU                     // the Go ladder on the host's cores
)

// platformOf says what ran a record: the Go backend, an OpenCL device on
// the CPU (the record's on_cpu), or a GPU.
func platformOf(r bench.Record) platform {
	switch {
	case kindOf(r) == engine.CPU:
		return goOnCPU
	case r.OnCPU:
		return openCLOnCPU
	}
	return gpu
}

// kindOf is the device family of a record, from its device id.
func kindOf(r bench.Record) engine.Kind {
	kind, _, _ := strings.Cut(r.Device, ":")
	return engine.Kind(kind)
}

// platformNote says what sets the pace on a platform, ahead of its story.
var platformNote = map[platform]string{
	gpu: "A GPU: each step changes how the lanes of a warp reach memory (coalescing, shared memory, registers) " +
		"and how many warps an SM keeps busy.",
	openCLOnCPU: "OpenCL on the CPU's cores (PoCL): a work-group runs as a loop over its work-items on one core, " +
		"vectorised across work-items where it can and cut into separate loops at every barrier, and `__local` memory is " +
		"ordinary cached memory. There are no warps, no coalescing and no shared-memory banks here: a step pays through " +
		"how that loop vectorises and what each work-item keeps across the barriers.",
	goOnCPU: "Plain Go on the CPU's cores: loop order and blocking for the caches, goroutines for the cores, registers for " +
		"the loads. The Go compiler does not vectorise, so the arithmetic stays scalar.",
}

// whyNoGain says, for each platform and step, why the step can gain
// nothing over the step before it there, or lose: what it costs on that
// platform, or what it fixes that was not the limit. Every step with a
// step before it has one on each platform its family runs on
// (TestWhyNoGainCoversTheLadders).
var whyNoGain = map[platform]map[string]string{
	gpu: {
		// CUDA
		"02_coalesced":          "only the thread mapping changed, so where L1 and L2 already absorbed step 01's scattered loads there was little left to gain",
		"03_smem_tiling":        "every FMA still waits on two shared-memory loads, and two barriers per tile stall the block",
		"04_1d_register_tiling": "A still comes from shared memory for every FMA, and 8 accumulators per thread take registers that more resident warps would use",
		"05_2d_register_tiling": "its 8×8 block of accumulators and the operands that feed it take well over 128 registers per thread, so an SM holds a single block of 8 warps, far fewer than step 04 kept, too few to hide the latency of its loads and barriers; its shared-memory loads are not the limit, since the compiler merges them into 16-byte loads, 4 per k for 64 FMAs",
		"06_vectorized":         "float4 needs rows aligned to 16 bytes: where K or N is not a multiple of 4, its loads are guarded scalars again",
		"07_bank_conflict_free": "the conflicts it removes were real but were not the main cost",
		"08_double_buffering":   "loading the next tile during the FMAs pays only where the block waited on its loads, and twice the shared memory leaves room for fewer blocks per SM",
		"09_warp_tiling":        "warp tiling pays only once its tile sizes fit the GPU: step 10 tunes them",
		"10_autotuned":          "the search keeps the configuration that was fastest when it timed the candidates; in another run it can land within noise of step 09's defaults",
		"12_wgmma_tma":          "its 128×256 tiles and one block per SM leave SMs idle wherever the matrix has fewer tiles than the GPU has SMs",
		// OpenCL on a GPU
		"02_local_tiling":         "every FMA still waits on two __local loads, and two barriers per tile stall the work-group",
		"03_more_work_per_thread": "more work per work-item raises register pressure as much as it saves loads",
		"04_wider_types":          "the loads already coalesce across the warp, so wider ones save few transactions while the bounds logic for odd shapes costs instructions",
		"05_2d_register_blocking": "its block of accumulators takes about 100 to 128 registers per work-item, so an SM holds few work-groups, and its large tiles make few groups on a small matrix",
		"06_prefetching":          "prefetching hides global latency only where the work-group waited on it, and it takes twice the __local memory and more registers per work-item",
	},
	openCLOnCPU: {
		"02_local_tiling":         "`__local` memory is ordinary cached memory on a CPU, so staging tiles copies what the caches already held, and the two barriers per tile cut the work-group's loop in separate loops",
		"03_more_work_per_thread": "work-items are iterations of PoCL's loop, not threads to save, so more outputs per work-item save no scheduling, and its accumulators live across the barriers, where PoCL keeps them in per-work-item arrays in memory",
		"04_wider_types":          "where PoCL already vectorised the loop across work-items, explicit float4 loads add the bounds logic for odd shapes and little else",
		"05_2d_register_blocking": "a work-item's block of accumulators must outlive the barriers of every slice of K, and PoCL keeps what lives across a barrier in per-work-item arrays in memory, not in registers: the register block becomes memory traffic on every slice",
		"06_prefetching":          "its prefetched values also live across a barrier, in PoCL's per-work-item arrays, and a CPU's caches and hardware prefetcher already overlap loads with arithmetic",
	},
	goOnCPU: {
		"02_loop_order_ikj":    "it stores to C on every term, where step 01 kept its sum in a register, and where B's columns stayed in cache the column walk it removes cost little",
		"03_transposed_b":      "it transposes B on every call, and its dot products are bound by their own two loads per multiply-add, as step 02's axpy was",
		"04_cache_blocking":    "step 03 was not waiting for memory: a scalar Go dot product, limited by its own loads, is slower than the caches that feed it, so the blocks save misses that did not set the time",
		"05_parallel_blocking": "the rows are cut into one fixed slab per core in advance, so a core slowed by another program leaves the others waiting, and a short M makes a single slab",
		"06_register_kernel":   "it packs blocks of A and B before computing, and on a small matrix the copies weigh against the loads it saves",
		"07_archsimd":          "without AVX-512, or AVX2 with FMA, it runs step 06's kernel, and otherwise it packs wider strips of A and B, which weigh on a small matrix",
	},
}

// isStep reports whether a record's variant is a step of its ladder, with
// a source here (OpenCL's naive kernel, which is also its baseline), not
// a library call (cuBLAS, gonum).
func isStep(r bench.Record) bool {
	return slices.ContainsFunc(Steps(kindOf(r)), func(s kernels.Step) bool { return s.Name == r.Variant })
}

// change is one step measured against the step before it in its ladder.
type change struct {
	prev, step bench.Record
}

// gain is how many times faster the step ran than the one before it.
func (c change) gain() float64 { return c.step.GFLOPS / c.prev.GFLOPS }

// why is the reason the step can gain nothing or lose on its platform.
func (c change) why() string {
	if why, ok := whyNoGain[platformOf(c.step)][c.step.Variant]; ok {
		return why
	}
	return "nothing in this lesson explains it on this kind of device"
}

// verdict says whether the step lost or gained nothing beyond noise, with
// the reason on its platform: ": slower: …", ": no faster beyond noise:
// …", or "" for a gain.
func (c change) verdict() string {
	switch {
	case bench.Slower(c.step, c.prev):
		return ": slower: " + c.why()
	case !bench.Differ(c.step, c.prev):
		return ": no faster beyond noise: " + c.why()
	}
	return ""
}

// describe is "`06_x`: 1.23× `05_y` (17.7 GFLOP/s → 21.7 GFLOP/s)".
func (c change) describe() string {
	return fmt.Sprintf("`%s`: %.2f× `%s` (%s → %s)", c.step.Variant, c.gain(), c.prev.Variant, gflops(c.prev.GFLOPS), gflops(c.step.GFLOPS))
}

// changes lists the passing steps of a ladder with the passing step before
// each. The first step has one only where the baseline is itself a step
// (OpenCL's naive kernel); a library baseline is a yardstick, not a step.
func (l ladder) changes() []change {
	var out []change
	prev := l.baseline
	if prev.Variant == "" || !isStep(prev) || !prev.OK {
		prev = bench.Record{}
	}
	for _, r := range l.steps {
		if !r.OK {
			continue
		}
		if prev.Variant != "" {
			out = append(out, change{prev, r})
		}
		prev = r
	}
	return out
}

// LadderStory tells what each step did to the speed in records of one
// device and one size, in words for the device's platform: the speedup
// over the step before, the two speeds, and for a step that was slower or
// gained nothing beyond noise (bench.Differ) the reason on that platform.
// A first step is set against its baseline; steps that failed their check
// are named as such.
func LadderStory(recs []bench.Record) string {
	if len(recs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s (`%s`) at %s.** %s\n\n", recs[0].DeviceName, recs[0].Device, recs[0].Size, platformNote[platformOf(recs[0])])
	for _, l := range ladders(recs) {
		if l.baseline.Variant != "" {
			fmt.Fprintf(&b, "- %s baseline `%s`: %s%s.\n", l.precision, l.baseline.Variant, gflops(l.baseline.GFLOPS), impossible(l.baseline))
		}
		changes := l.changes()
		for _, r := range l.steps {
			if !r.OK {
				fmt.Fprintf(&b, "- `%s` failed its check: %s\n", r.Variant, r.Error)
				continue
			}
			i := slices.IndexFunc(changes, func(c change) bool { return c.step.Variant == r.Variant })
			if i < 0 {
				fmt.Fprintf(&b, "- `%s`%s: %s, %s `%s`%s.\n", r.Variant, tunedTiles(r), gflops(r.GFLOPS), share(r.PctOfBaseline), r.Baseline, impossible(r))
				continue
			}
			fmt.Fprintf(&b, "- %s%s%s%s.\n", changes[i].describe(), tunedTiles(r), changes[i].verdict(), impossible(r))
		}
		if len(l.steps) > 0 && l.baseline.Variant != "" {
			best := slices.MaxFunc(l.steps, func(a, b bench.Record) int { return cmp.Compare(a.GFLOPS, b.GFLOPS) })
			fmt.Fprintf(&b, "- The best %s step, `%s`, reaches %s `%s`.\n", l.precision, best.Variant, share(best.PctOfBaseline), l.baseline.Variant)
		}
	}
	return b.String()
}

// tunedTiles names the tiles step 10 ran with, which the search picked for
// the GPU and shape (the record's "tuned" parameter), as " with tiles …
// (tuned here for this shape)"; "" for other records.
func tunedTiles(r bench.Record) string {
	t, _ := r.Params["tuned"].(string)
	if t == "" {
		return ""
	}
	return fmt.Sprintf(" with tiles %s (tuned here for this shape)", t)
}

// impossible is what a story says after a speed above the compute peak of
// its precision ("" for any other): a measurement error, not a result.
func impossible(r bench.Record) string {
	if !bench.BeyondComputePeak(r) {
		return ""
	}
	return fmt.Sprintf(" ✗ (%.0f%% of the peak: %s)", r.PctPeakGFLOPS, bench.ImpossibleNote)
}

// SlowerSteps names the steps of one device and size that ran slower than
// the step before them beyond noise, and explains the largest regression
// of them for the device's platform.
func SlowerSteps(recs []bench.Record) string {
	var slower []change
	for _, l := range ladders(recs) {
		for _, c := range l.changes() {
			if bench.Slower(c.step, c.prev) {
				slower = append(slower, c)
			}
		}
	}
	if len(slower) == 0 {
		return "No step was slower than the one before it beyond noise."
	}
	var names []string
	for _, c := range slower {
		names = append(names, fmt.Sprintf("`%s` (%.2f× `%s`)", c.step.Variant, c.gain(), c.prev.Variant))
	}
	worst := slices.MinFunc(slower, func(a, b change) int { return cmp.Compare(a.gain(), b.gain()) })
	return fmt.Sprintf("**Slower than the step before** beyond noise: %s. The largest regression is `%s`, at %.2f× the speed of `%s` (%s → %s): %s.",
		strings.Join(names, ", "), worst.step.Variant, worst.gain(), worst.prev.Variant, gflops(worst.prev.GFLOPS), gflops(worst.step.GFLOPS), worst.why())
}

// RunStory is LadderStory and SlowerSteps for each device of a run, at
// its largest size.
func RunStory(recs []bench.Record) string {
	var b strings.Builder
	for _, id := range devices(recs) {
		var mine []bench.Record
		for _, r := range recs {
			if r.Device == id {
				mine = append(mine, r)
			}
		}
		at := bench.OfSize(mine, lastSize(mine))
		fmt.Fprintf(&b, "%s\n%s\n\n", LadderStory(at), SlowerSteps(at))
	}
	return b.String()
}

// share says how a speed compares with a baseline's: "84% of", or "8.17×"
// when it is more than twice as fast.
func share(pctOfBaseline float64) string {
	if pctOfBaseline > 200 {
		return fmt.Sprintf("%.3g×", pctOfBaseline/100)
	}
	return fmt.Sprintf("%.0f%% of", pctOfBaseline)
}

// gflops prints a speed in the unit that keeps it short.
func gflops(g float64) string {
	if g >= 1000 {
		return fmt.Sprintf("%.3g TFLOP/s", g/1000)
	}
	return fmt.Sprintf("%.3g GFLOP/s", g)
}

// StrideSweep is a sweep of K around 1024 with M = N = 1024: the naive
// step's threads read rows of A that lie 4·K bytes apart, and at K = 1024
// those 32 addresses of a warp fall 4 KiB apart, a power of two.
func StrideSweep() []string {
	var sizes []string
	for k := 1008; k <= 1040; k += 4 {
		sizes = append(sizes, fmt.Sprintf("1024x1024x%d", k))
	}
	return sizes
}

// StrideStory compares the naive step at K = 1024 with the median of the
// other K of a StrideSweep run, for each device.
func StrideStory(recs []bench.Record) string {
	var b strings.Builder
	for _, id := range devices(recs) {
		var at1024 bench.Record
		var others []float64
		for _, r := range recs {
			if r.Device != id || r.Variant != "01_naive" || !r.OK {
				continue
			}
			if k, _ := r.Params["k"].(float64); k == 1024 || r.Size == "1024x1024x1024" {
				at1024 = r
			} else {
				others = append(others, r.GFLOPS)
			}
		}
		if at1024.Variant == "" || len(others) == 0 {
			continue
		}
		slices.Sort(others)
		median := others[len(others)/2]
		fmt.Fprintf(&b, "**%s:** at K = 1024 the naive step runs at %s; at the other K its median is %s. %s\n\n",
			at1024.DeviceName, gflops(at1024.GFLOPS), gflops(median), strideVerdict(median/at1024.GFLOPS, walksRows(at1024)))
	}
	return b.String()
}

// StridePair is two sizes of the lesson's GPU defaults that show the
// power-of-two stride without a sweep: an odd shape, and the power of two
// next to it.
var StridePair = [2]string{"1000x1023x999", "1024"}

// AtStridePair keeps the naive step's records at the two StridePair sizes.
func AtStridePair(r bench.Record) bool {
	return r.Variant == "01_naive" && (r.Size == StridePair[0] || r.Size == StridePair[1])
}

// StridePairStory compares, for each device that ran both StridePair
// sizes, the naive step's speed at the odd shape with its speed at the
// power of two.
func StridePairStory(recs []bench.Record) string {
	var b strings.Builder
	for _, id := range devices(recs) {
		var odd, pow2 bench.Record
		for _, r := range recs {
			switch {
			case r.Device != id || !AtStridePair(r) || !r.OK:
			case r.Size == StridePair[0]:
				odd = r
			default:
				pow2 = r
			}
		}
		if odd.Variant == "" || pow2.Variant == "" {
			continue
		}
		fmt.Fprintf(&b, "**%s (`%s`):** the naive step runs at %s at `%s` and at %s at `%s`. %s\n\n",
			odd.DeviceName, id, gflops(odd.GFLOPS), odd.Size, gflops(pow2.GFLOPS), pow2.Size, strideVerdict(odd.GFLOPS/pow2.GFLOPS, walksRows(odd)))
	}
	if b.Len() == 0 {
		return fmt.Sprintf("*No device here ran both `%s` and `%s`.*\n", StridePair[0], StridePair[1])
	}
	return b.String()
}

// walksRows says whether a record's naive step has the row-walking layout
// that the stride effect needs: CUDA's 01_naive puts threadIdx.x along
// the rows of C, so the threads of a warp read A 4·K bytes apart. OpenCL's
// 01_naive puts dimension 0 along the columns: a warp's B loads are
// consecutive and its A load is one address, so no load strides by K.
func walksRows(r bench.Record) bool { return kindOf(r) == engine.CUDA }

// strideVerdict reads the ratio of the naive step's speed away from the
// power of two to its speed at it, for a kernel whose warps walk rows
// (walksRows) or columns.
func strideVerdict(ratio float64, rows bool) string {
	switch {
	case !rows && ratio > 1.2:
		return fmt.Sprintf("The odd shape is faster by a factor of %.2g, but this kernel's warps walk columns, so none of its loads strides by `4·K` bytes: the difference is not the row-walking kernel's stride effect.", ratio)
	case !rows && ratio >= 1/1.2:
		return "Within a fifth of each other, as this kernel's layout predicts: its warps walk columns (consecutive B loads, one A address), so none of its loads strides by `4·K` bytes for the power of two to act on. The effect belongs to the row-walking layout, not to the device."
	case ratio > 1.2:
		return fmt.Sprintf("The power-of-two stride costs it a factor of %.2g.", ratio)
	case ratio < 1/1.2:
		return fmt.Sprintf("Here the power of two is the faster one, by a factor of %.2g.", 1/ratio)
	}
	return "Within a fifth of each other: although this kernel's warps read A `4·K` bytes apart, the power of two costs it nothing on this device."
}
