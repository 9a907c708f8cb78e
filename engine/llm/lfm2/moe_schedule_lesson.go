package lfm2

// What notebook 06 shows of the moe-schedule experiment: its records as a
// figure (tokens/s of the MoE layer step by schedule and load) and as a
// story written from the numbers, set against the devlog's occupancy claim.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// The devlog's figures for its persistent MoE kernel (the seed
// lfm2-8b-gpu-inference-devlog.md, "Persistent Kernel 구현"): SM occupancy
// from Nsight before and after, and the throughput gain.
const (
	logMoEOccupancyBefore = 23.4
	logMoEOccupancyAfter  = 78.3
	logMoESpeedup         = 2.3
)

// moeMaxSeries is the most lines MoEScheduleFigure draws.
const moeMaxSeries = 8

// moeRun is one device's moe-schedule records: the passing ones by size
// and schedule, sizes in the order they first appear, and the failures.
type moeRun struct {
	device, name string
	sizes        []string
	bySize       map[string]map[string]bench.Record
	failed       []bench.Record
}

// moeRuns groups the moe-schedule records of recs by device, in the order
// the devices first appear; records of other suites are left out.
func moeRuns(recs []bench.Record) []*moeRun {
	var runs []*moeRun
	byDevice := map[string]*moeRun{}
	for _, r := range recs {
		if r.Suite != moeScheduleSuite {
			continue
		}
		run := byDevice[r.Device]
		if run == nil {
			run = &moeRun{device: r.Device, name: r.DeviceName, bySize: map[string]map[string]bench.Record{}}
			byDevice[r.Device] = run
			runs = append(runs, run)
		}
		if !r.OK {
			run.failed = append(run.failed, r)
			continue
		}
		if run.bySize[r.Size] == nil {
			run.sizes = append(run.sizes, r.Size)
			run.bySize[r.Size] = map[string]bench.Record{}
		}
		run.bySize[r.Size][r.Variant] = r
	}
	return runs
}

// moeTokensPerSec is the record's tokens over its median time.
func moeTokensPerSec(r bench.Record) float64 {
	if r.MedianMS <= 0 {
		return 0
	}
	return r.Params.Float("tokens") / (r.MedianMS / 1e3)
}

// moeLoadLabel names a load by its skew: "even load" or "90% skewed".
func moeLoadLabel(skew float64) string {
	if skew == 0 {
		return "even load"
	}
	return fmt.Sprintf("%g%% skewed", skew)
}

// moeSizeLabel names a size by its tokens and load: "64 tokens, 90% skewed".
func moeSizeLabel(r bench.Record) string {
	return fmt.Sprintf("%g tokens, %s", r.Params.Float("tokens"), moeLoadLabel(r.Params.Float("skew")))
}

// moeSeries is one line per schedule and load (skew) of the run: tokens/s
// against the step's tokens. With more lines than moeMaxSeries, only the
// lowest and the highest skew are kept.
func moeSeries(run *moeRun) []plot.Series {
	var skews []float64
	for _, size := range run.sizes {
		for _, r := range run.bySize[size] {
			if s := r.Params.Float("skew"); !slices.Contains(skews, s) {
				skews = append(skews, s)
			}
		}
	}
	slices.Sort(skews)
	if len(skews)*len(moeSchedules) > moeMaxSeries {
		skews = []float64{skews[0], skews[len(skews)-1]}
	}
	var out []plot.Series
	for _, schedule := range moeSchedules {
		for _, skew := range skews {
			type point struct{ x, y float64 }
			var ps []point
			for _, size := range run.sizes {
				if r, ok := run.bySize[size][schedule]; ok && r.Params.Float("skew") == skew {
					ps = append(ps, point{r.Params.Float("tokens"), moeTokensPerSec(r)})
				}
			}
			if len(ps) == 0 {
				continue
			}
			slices.SortStableFunc(ps, func(a, b point) int { return cmp.Compare(a.x, b.x) })
			s := plot.Series{Name: schedule + ", " + moeLoadLabel(skew)}
			for _, p := range ps {
				s.X, s.Y = append(s.X, p.x), append(s.Y, p.y)
			}
			out = append(out, s)
		}
	}
	return out
}

// moeSpansDecades reports whether the positive values of each series' X (or
// Y) reach ten times their smallest: then the axis is logarithmic.
func moeSpansDecades(series []plot.Series, x bool) bool {
	var all []float64
	for _, s := range series {
		if x {
			all = append(all, s.X...)
		} else {
			all = append(all, s.Y...)
		}
	}
	return spansDecades(all)
}

// spansDecades reports whether values are all positive and the largest is
// at least 10 times the smallest: where a logarithmic axis shows each.
func spansDecades(values []float64) bool {
	if len(values) == 0 {
		return false
	}
	return slices.Min(values) > 0 && slices.Max(values) >= 10*slices.Min(values)
}

// decadeBars is plot.Bars, with a logarithmic y axis where the values span
// decades (spansDecades).
func decadeBars(title, ylabel string, labels []string, values []float64) *plot.Figure {
	f := plot.Bars(title, ylabel, labels, values)
	if spansDecades(values) {
		f.LogY()
	}
	return f
}

// MoEScheduleFigure draws the moe-schedule records of the first device in
// recs: tokens/s of the MoE layer step against the step's tokens, one line
// per schedule and load (at most eight: with more loads, the least and the
// most skewed), each axis logarithmic when its values span a decade or
// more. Without a passing record the figure is empty, and showing it is an
// error that says so.
func MoEScheduleFigure(recs []bench.Record) *plot.Figure {
	const xlabel, ylabel = "tokens in the step", "tokens/s of the MoE layer step"
	runs := moeRuns(recs)
	if len(runs) == 0 {
		return plot.Lines("moe-schedule: no records", xlabel, ylabel)
	}
	series := moeSeries(runs[0])
	f := plot.Lines(fmt.Sprintf("MoE layer step on %s: tokens/s by schedule", runs[0].name), xlabel, ylabel, series...)
	if moeSpansDecades(series, true) {
		f.LogX()
	}
	if moeSpansDecades(series, false) {
		f.LogY()
	}
	return f
}

// MoEScheduleStory interprets the moe-schedule records in Markdown, device
// by device: a table of every measurement, which schedule wins at each size
// and by how much, the kernels' theoretical occupancy, and how that
// compares with the devlog's occupancy claim.
func MoEScheduleStory(recs []bench.Record) string {
	runs := moeRuns(recs)
	if len(runs) == 0 {
		return "No moe-schedule records: the experiment runs on a CUDA GPU (`lab bench moe-schedule --device cuda:0`).\n"
	}
	var b strings.Builder
	for _, run := range runs {
		fmt.Fprintf(&b, "### The MoE layer step on %s (%s)\n\n", run.name, run.device)
		writeMoETable(&b, run)
		writeMoEWinners(&b, run)
		writeMoEOccupancy(&b, run)
		writeMoEFailures(&b, run)
	}
	return b.String()
}

// moeDuration prints milliseconds in µs below 1 ms, with three significant digits.
func moeDuration(ms float64) string {
	if ms < 1 {
		return fmt.Sprintf("%.3g µs", ms*1e3)
	}
	return fmt.Sprintf("%.3g ms", ms)
}

// moeRate prints a count per second with k or M and three significant digits.
func moeRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3g k", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// moeRatio prints a speedup with two decimals: "1.52×".
func moeRatio(v float64) string { return fmt.Sprintf("%.2f×", v) }

// writeMoETable writes one row per passing record.
func writeMoETable(b *strings.Builder, run *moeRun) {
	b.WriteString("| tokens | load | schedule | median | tokens/s | effective weight GB/s | % of DRAM peak | launches | wave fill (model) | vs per-expert |\n")
	b.WriteString("| ---: | :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, size := range run.sizes {
		base, hasBase := run.bySize[size][schedulePerExpert]
		for _, schedule := range moeSchedules {
			r, ok := run.bySize[size][schedule]
			if !ok {
				continue
			}
			vs := "-"
			if hasBase {
				vs = moeRatio(base.MedianMS / r.MedianMS)
			}
			peak := "-" // the device's DRAM peak unknown
			if r.PctPeakGBps > 0 {
				peak = fmt.Sprintf("%.0f%%", r.PctPeakGBps)
			}
			fmt.Fprintf(b, "| %g | %s | %s | %s | %s | %.0f | %s | %g | %.0f%% | %s |\n", r.Params.Float("tokens"),
				moeLoadLabel(r.Params.Float("skew")), schedule, moeDuration(r.MedianMS), moeRate(moeTokensPerSec(r)), r.GBps, peak,
				r.Params.Float("launches"), r.Params.Float("wave_fill"), vs)
		}
	}
	b.WriteString("\nEffective weight bandwidth counts the chosen experts' weights once per step: a lower bound on the " +
		"bytes the step moves (weights re-read per token tile, from L2 or DRAM, and the activations are not counted), " +
		"so its share of the DRAM peak is not a measurement of DRAM traffic. The wave fill is a model: the share of the " +
		"warp slots a schedule holds that do work, if every unit took the same time.\n\n")
}

// moeLead is the persistent schedules' lead over one grid per expert at one
// size: the per-expert record, and its time over the faster persistent
// schedule's.
type moeLead struct {
	base  bench.Record
	ratio float64
}

// writeMoEWinners says which schedule is fastest at each size and by how
// much, then what the sizes have in common.
func writeMoEWinners(b *strings.Builder, run *moeRun) {
	b.WriteString("**Which schedule wins.**\n\n")
	var leads []moeLead
	var queueVsStatic []float64 // static time over queue time: above 1, the queue is faster
	var queueSizes []string
	for _, size := range run.sizes {
		rs := run.bySize[size]
		var present []bench.Record
		for _, schedule := range moeSchedules {
			if r, ok := rs[schedule]; ok {
				present = append(present, r)
			}
		}
		if len(present) == 0 {
			continue
		}
		best := slices.MinFunc(present, func(a, c bench.Record) int { return cmp.Compare(a.MedianMS, c.MedianMS) })
		var others []string
		for _, r := range present {
			switch x := r.MedianMS / best.MedianMS; {
			case r.Variant == best.Variant:
			case x < 1.005:
				others = append(others, fmt.Sprintf("level with the %s schedule", r.Variant))
			default:
				others = append(others, fmt.Sprintf("%s the %s schedule's speed", moeRatio(x), r.Variant))
			}
		}
		line := fmt.Sprintf("- %s: **%s** is fastest (%s, %s tokens/s)", moeSizeLabel(best), best.Variant, moeDuration(best.MedianMS),
			moeRate(moeTokensPerSec(best)))
		if len(others) > 0 {
			line += ": " + strings.Join(others, ", ")
		}
		b.WriteString(line + ".\n")
		base, okBase := rs[schedulePerExpert]
		static, okStatic := rs[scheduleStatic]
		queue, okQueue := rs[scheduleQueue]
		if okBase && (okStatic || okQueue) {
			fastest := math.Inf(1)
			for _, r := range []bench.Record{static, queue} {
				if r.MedianMS > 0 {
					fastest = min(fastest, r.MedianMS)
				}
			}
			leads = append(leads, moeLead{base, base.MedianMS / fastest})
		}
		if okStatic && okQueue {
			queueVsStatic = append(queueVsStatic, static.MedianMS/queue.MedianMS)
			queueSizes = append(queueSizes, moeSizeLabel(queue))
		}
	}
	b.WriteString("\n")
	if len(leads) > 0 {
		lo := slices.MinFunc(leads, func(a, c moeLead) int { return cmp.Compare(a.ratio, c.ratio) })
		hi := slices.MaxFunc(leads, func(a, c moeLead) int { return cmp.Compare(a.ratio, c.ratio) })
		switch {
		case hi.ratio < 1:
			fmt.Fprintf(b, "One grid per expert beats both persistent schedules at every size measured (their best is %s of its speed at %s).",
				moeRatio(hi.ratio), moeSizeLabel(hi.base))
		case len(leads) == 1:
			fmt.Fprintf(b, "The faster persistent schedule runs the step %s as fast as one grid per expert.", moeRatio(hi.ratio))
		default:
			fmt.Fprintf(b, "The faster persistent schedule runs the step %s as fast as one grid per expert at %s, and %s at %s.",
				moeRatio(hi.ratio), moeSizeLabel(hi.base), moeRatio(lo.ratio), moeSizeLabel(lo.base))
		}
		writeSkewEffect(b, leads)
		b.WriteString("\n\n")
	}
	if len(queueVsStatic) > 0 {
		lo, hi := slices.Min(queueVsStatic), slices.Max(queueVsStatic)
		switch {
		case lo >= 0.98 && hi <= 1.02:
			b.WriteString("The atomic queue and the static turn are within 2% of each other at every size: units of equal " +
				"cost balance as well with a fixed turn, and the queue's atomics neither help nor cost measurably.\n")
		case hi <= 1:
			fmt.Fprintf(b, "The atomic queue is never faster than the static turn, and takes up to %.0f%% longer (%s): the "+
				"units cost about the same, so a fixed turn balances them, and the queue adds its atomics.\n",
				100*(1/lo-1), queueSizes[slices.Index(queueVsStatic, lo)])
		case lo >= 1:
			fmt.Fprintf(b, "The static turn is never faster than the atomic queue, and takes up to %.0f%% longer (%s), which "+
				"suggests that units of the same size still take unequal times (their weights from L2 or from DRAM), and that "+
				"the queue hands the remaining ones to the warps that finish first.\n",
				100*(hi-1), queueSizes[slices.Index(queueVsStatic, hi)])
		default:
			fmt.Fprintf(b, "Between the atomic queue and the static turn there is no winner: the static turn takes up to %.0f%% "+
				"longer (%s), the queue up to %.0f%% longer (%s).\n", 100*(hi-1), queueSizes[slices.Index(queueVsStatic, hi)],
				100*(1/lo-1), queueSizes[slices.Index(queueVsStatic, lo)])
		}
	}
	b.WriteString("\n")
}

// writeSkewEffect compares, for each token count measured both evenly and
// skewed, the persistent schedules' lead over one grid per expert.
func writeSkewEffect(b *strings.Builder, leads []moeLead) {
	for i, even := range leads {
		if even.base.Params.Float("skew") != 0 {
			continue
		}
		for _, skewed := range leads[i+1:] {
			if skewed.base.Params.Float("tokens") != even.base.Params.Float("tokens") || skewed.base.Params.Float("skew") == 0 {
				continue
			}
			fmt.Fprintf(b, " At %g tokens the skewed load %s: %s with an even load, %s %s.", even.base.Params.Float("tokens"),
				skewEffect(even.ratio, skewed.ratio), moeRatio(even.ratio), moeRatio(skewed.ratio), moeLoadLabel(skewed.base.Params.Float("skew")))
		}
	}
}

// skewEffect says what a skewed load does to a lead of even (a ratio)
// when it becomes skewed: "widens that lead", "narrows that lead", or
// "leaves that lead unchanged (within 2%)" where the two differ by 2% or
// less.
func skewEffect(even, skewed float64) string {
	switch {
	case math.Abs(skewed/even-1) <= 0.02:
		return "leaves that lead unchanged (within 2%)"
	case skewed < even:
		return "narrows that lead"
	}
	return "widens that lead"
}

// writeMoEOccupancy lists each kernel's theoretical occupancy and sets it
// against the devlog's achieved occupancy.
func writeMoEOccupancy(b *strings.Builder, run *moeRun) {
	type kernel struct {
		name, schedule   string
		regs, blocks, pc float64
	}
	var ks []kernel
	fill := map[string][]float64{} // wave fill by schedule
	for _, size := range run.sizes {
		for _, schedule := range moeSchedules {
			r, ok := run.bySize[size][schedule]
			if !ok {
				continue
			}
			fill[schedule] = append(fill[schedule], r.Params.Float("wave_fill"))
			for _, kind := range []string{"gate_up", "down"} {
				name, _ := r.Params[kind+"_kernel"].(string)
				if name == "" || slices.ContainsFunc(ks, func(k kernel) bool { return k.name == name }) {
					continue
				}
				ks = append(ks, kernel{name, schedule, r.Params.Float(kind + "_regs"), r.Params.Float(kind + "_blocks_per_sm"),
					r.Params.Float(kind + "_occupancy")})
			}
		}
	}
	if len(ks) == 0 {
		return
	}
	fmt.Fprintf(b, "**Occupancy, theoretical.** The driver's occupancy query (`cuOccupancyMaxActiveBlocksPerMultiprocessor`, "+
		"blocks of %d threads) says how many blocks of each kernel fit on one SM, given its registers per thread; their "+
		"warps over the most an SM holds is the theoretical occupancy:\n\n", persistentThreads)
	b.WriteString("| kernel | schedule | registers/thread | blocks/SM | theoretical occupancy |\n| :--- | :--- | ---: | ---: | ---: |\n")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range ks {
		fmt.Fprintf(b, "| `%s` | %s | %g | %g | %.1f%% |\n", k.name, k.schedule, k.regs, k.blocks, k.pc)
		lo, hi = min(lo, k.pc), max(hi, k.pc)
	}
	b.WriteString("\n")
	if hi-lo < 0.5 {
		fmt.Fprintf(b, "Every kernel has the same ceiling, %.1f%%: they run the same units with the same launch bounds, "+
			"so the schedule cannot change it.", hi)
	} else {
		fmt.Fprintf(b, "The ceilings range from %.1f%% to %.1f%%.", lo, hi)
	}
	if f := fill[schedulePerExpert]; len(f) > 0 {
		var persistent []float64
		persistent = append(append(persistent, fill[scheduleStatic]...), fill[scheduleQueue]...)
		fmt.Fprintf(b, " What the schedule changes is how much of it stays filled: by the wave model, one grid per expert "+
			"fills %s of the warp slots it holds", moePercentRange(f))
		if len(persistent) > 0 {
			fmt.Fprintf(b, ", the persistent grids %s", moePercentRange(persistent))
		}
		b.WriteString(".")
	}
	b.WriteString("\n\n")
	fmt.Fprintf(b, "**Against the devlog's %.1f%% → %.1f%%.** The log reports SM occupancy of %.1f%% for its first MoE "+
		"kernels and %.1f%% with the persistent kernel and its atomic queue, from Nsight, and a %.1f× throughput gain. A "+
		"profiler measures *achieved* occupancy: the warps resident on average while the kernel runs, which SMs holding fewer "+
		"blocks than fit (small grids, tails) pull down. The numbers above are *theoretical*: the most warps the kernel's registers and "+
		"block size allow on an SM, whatever the schedule. The two cannot be set side by side: achieved occupancy is at "+
		"most the theoretical one.", logMoEOccupancyBefore, logMoEOccupancyAfter, logMoEOccupancyBefore, logMoEOccupancyAfter, logMoESpeedup)
	if hi < logMoEOccupancyAfter {
		fmt.Fprintf(b, " Here the ceiling, %.1f%% at most, is below the log's achieved %.1f%%: these kernels keep bytes in "+
			"flight with registers (several 16-byte loads per lane in `rows_dot`) rather than with many resident warps, so "+
			"no schedule of them could reach the log's figure.", hi, logMoEOccupancyAfter)
	}
	b.WriteString(" To see achieved occupancy, profile the step with Nsight Compute " +
		"(`ncu --metrics sm__warps_active.avg.pct_of_peak_sustained_active`).\n\n")
}

// moePercentRange prints the least and the most of vs as "62–91%", or one
// percentage when they round alike.
func moePercentRange(vs []float64) string {
	lo, hi := fmt.Sprintf("%.0f", slices.Min(vs)), fmt.Sprintf("%.0f", slices.Max(vs))
	if lo == hi {
		return hi + "%"
	}
	return lo + "–" + hi + "%"
}

// writeMoEFailures lists the records that failed, with their errors.
func writeMoEFailures(b *strings.Builder, run *moeRun) {
	if len(run.failed) == 0 {
		return
	}
	b.WriteString("**Failed, and left out above:**\n\n")
	for _, r := range run.failed {
		fmt.Fprintf(b, "- %s at %s: %s\n", r.Variant, r.Size, r.Error)
	}
	b.WriteString("\n")
}
