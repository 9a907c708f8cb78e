package warps

// What the lesson says about a run, generated from its records: for each
// of the guide's claims, what the device measured, whether the claim held
// there, and why. The same functions read a live run (PoCL in CI, a GPU on
// a GPU machine) and the runs recorded in docs/results, so no sentence
// states a figure that the records next to it do not show.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// Verdicts on a claim.
const (
	holds       = "holds"
	partly      = "holds in part"
	doesNotHold = "does not hold"
	// untestable: the device changed more than the claim's one thing, so
	// the run cannot judge it.
	untestable = "cannot be tested here"
)

// finding is what one device's records say about one claim.
type finding struct {
	measured string // what was measured, with the figures
	verdict  string // holds, partly, doesNotHold or untestable
	why      string // what the figures mean for the claim
	key      string // the figures the verdict rests on, for the summary
}

// claim is one of the guide's claims and the judge that reads it from one
// device's records of its suite; the judge's false means the records lack
// the variants it needs.
type claim struct {
	suite, guide string
	judge        func(recs []bench.Record) (finding, bool)
}

var claims = []claim{
	{"divergence", "a warp whose lanes disagree runs both branches", judgeDivergence},
	{"fastmath", "`-cl-fast-relaxed-math` makes math faster", judgeFastFlag},
	{"fastmath", "`native_*` functions are faster", judgeNative},
	{"wgsize", "work-groups of 32 are the size to use", judgeWG32},
	{"wgsize", "declaring the work-group size helps", judgeHint},
	{"barrier", "a barrier in a one-warp group is cheap", judgeBarrier},
	{"occupancy", "resident warps hide memory latency", judgeOccupancy},
	{"intensity", "low-intensity kernels wait on memory", judgeIntensity},
	{"banks", "padding removes bank conflicts", judgeBanks},
	{"filter", "images and samplers beat buffers", judgeFilter},
}

// Findings says, device by device, what records of the lesson's suites
// measured and whether each of the guide's claims held there: Markdown, a
// paragraph per device and suite (the barrier suite's after its table).
func Findings(recs []bench.Record) string {
	if len(recs) == 0 {
		return "*No CUDA or OpenCL device ran this experiment here.*"
	}
	var b strings.Builder
	for _, suite := range bySuite(recs) {
		if suite[0].Suite == "barrier" {
			b.WriteString(BarrierTable(suite) + "\n")
		}
		for _, dev := range byDevice(suite) {
			fmt.Fprintf(&b, "**%s** (%s): ", dev[0].Device, dev[0].DeviceName)
			for _, c := range claims {
				if c.suite != dev[0].Suite {
					continue
				}
				f, ok := c.judge(dev)
				if !ok {
					fmt.Fprintf(&b, "*(these records lack the variants that judge \"%s\")* ", c.guide)
					continue
				}
				fmt.Fprintf(&b, "%s *The guide's claim that %s %s:* %s ", f.measured, c.guide, f.verdict, f.why)
			}
			b.WriteString("\n\n")
		}
	}
	return strings.TrimSpace(b.String()) + "\n"
}

// Summary is a table of the guide's claims against the devices of this
// run (live) and of recorded runs (RecordedRuns of each suite): each cell
// the verdict and the figures it rests on. Under the table, each recorded
// column's caption (bench.RecordsCaption: device, commit, date and the
// command, S standing for each suite); a recorded run without its
// provenance is an error.
func Summary(live, recorded []bench.Record) (string, error) {
	type column struct {
		label string
		recs  []bench.Record
	}
	var cols []column
	for _, dev := range byDevice(live) {
		cols = append(cols, column{fmt.Sprintf("`%s` (%s), this run", dev[0].Device, dev[0].DeviceName), dev})
	}
	var notes []string
	for i, dev := range byDevice(recorded) {
		date, _, _ := strings.Cut(dev[0].Date, "T")
		mark := strings.Repeat("†", i+1)
		cols = append(cols, column{fmt.Sprintf("`%s` (%s), recorded %s %s", dev[0].Device, dev[0].DeviceName, date, mark), dev})
		command := "" // RecordedRuns' command for this device, S for the suite
		for _, run := range RecordedRuns("S") {
			if strings.Contains(run.Command, "--device "+dev[0].Device+" ") {
				command = run.Command
			}
		}
		caption, err := bench.RecordsCaption(dev, command)
		if err != nil {
			return "", err
		}
		var suites []string
		for _, suite := range bySuite(dev) {
			suites = append(suites, suite[0].Suite)
		}
		notes = append(notes, fmt.Sprintf("%s %s, for each suite S: %s.", mark, strings.TrimSuffix(strings.Trim(caption, "*"), ":"), strings.Join(suites, ", ")))
	}
	if len(cols) == 0 {
		return "*No records to summarise.*\n", nil
	}
	var b strings.Builder
	b.WriteString("| the guide's claim |")
	for _, c := range cols {
		b.WriteString(" " + c.label + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, cl := range claims {
		b.WriteString("| " + cl.guide + " |")
		for _, c := range cols {
			cell := "not run"
			if recs := kept(c.recs, func(r bench.Record) bool { return r.Suite == cl.suite }); len(recs) > 0 {
				cell = "too few variants"
				if f, ok := cl.judge(recs); ok {
					cell = fmt.Sprintf("**%s**: %s", f.verdict, f.key)
				}
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
	return b.String(), nil
}

// BarrierTable shows each work-group size's times with and without
// barriers, and the extra time per work-group barrier executed (the
// difference spread over every barrier of the launch), or "within noise",
// in cycles of one compute unit (SM) where the records name the device's
// compute units and clock.
func BarrierTable(recs []bench.Record) string {
	var rows []string
	withCycles := false // a column of cycles only where a record names its device's clock
	for _, dev := range byDevice(recs) {
		for _, p := range barrierPairs(dev) {
			cycles := "-"
			if c, ok := p.cycles(); ok {
				withCycles = true
				if bench.Slower(p.bar, p.nobar) { // a cost: not where barriers made the kernel faster
					cycles = sig3(c)
				}
			}
			rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s |", p.bar.Device, p.local, formatTime(p.bar.MedianMS),
				formatTime(p.nobar.MedianMS), times(p.slowdown()), p.cost(), cycles))
		}
	}
	header := "| device | work-group size | with barriers | without | with / without | extra time per work-group barrier | the same, in cycles of one compute unit (SM) |\n|---|---:|---:|---:|---:|---:|---:|\n"
	if !withCycles {
		header = "| device | work-group size | with barriers | without | with / without | extra time per work-group barrier |\n|---|---:|---:|---:|---:|---:|\n"
		for i, r := range rows {
			rows[i] = strings.TrimSuffix(r, " - |")
		}
	}
	return header + strings.Join(rows, "\n") + "\n"
}

// barrierPair is one work-group size's runs with and without barriers.
type barrierPair struct {
	local      int
	bar, nobar bench.Record
}

// costMS is the extra time per work-group barrier executed, in ms.
func (p barrierPair) costMS() float64 {
	return (p.bar.MedianMS - p.nobar.MedianMS) / p.bar.Params.Float("barriers")
}

// cycles is costMS in cycles of one compute unit (SM): the device's time
// per barrier times its compute units and clock, and whether the records
// name those (runs recorded before they did, do not).
func (p barrierPair) cycles() (float64, bool) {
	units, mhz := p.bar.Params.Float("compute_units"), p.bar.Params.Float("clock_mhz")
	return p.costMS() * 1e3 * mhz * units, units > 0 && mhz > 0
}

// slowdown is the time with barriers over the time without.
func (p barrierPair) slowdown() float64 { return p.bar.MedianMS / p.nobar.MedianMS }

// cost prints costMS, or says that the difference is within noise.
func (p barrierPair) cost() string {
	switch {
	case !bench.Differ(p.bar, p.nobar):
		return "within noise"
	case p.costMS() < 0:
		return formatTime(p.costMS()) + " (faster with barriers)"
	}
	return formatTime(p.costMS())
}

// barrierPairs pairs bar_lL with nobar_lL, by increasing L.
func barrierPairs(recs []bench.Record) []barrierPair {
	var pairs []barrierPair
	for _, r := range recs {
		if r.Params["barrier"] != true || r.Params.Float("barriers") <= 0 {
			continue
		}
		if no, ok := variant(recs, strings.Replace(r.Variant, "bar_", "nobar_", 1)); ok {
			pairs = append(pairs, barrierPair{int(r.Params.Float("local")), r, no})
		}
	}
	slices.SortFunc(pairs, func(a, b barrierPair) int { return cmp.Compare(a.local, b.local) })
	return pairs
}

// variant returns the record of a variant.
func variant(recs []bench.Record, name string) (bench.Record, bool) {
	for _, r := range recs {
		if r.Variant == name {
			return r, true
		}
	}
	return bench.Record{}, false
}

// variants returns the records of the named variants, and whether all exist.
func variants(recs []bench.Record, names ...string) ([]bench.Record, bool) {
	out := make([]bench.Record, len(names))
	for i, n := range names {
		r, ok := variant(recs, n)
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

// onCPU reports whether the records come from a CPU-type device (PoCL):
// the peak bandwidth they were compared with is a CPU's (cpuLike).
func onCPU(recs []bench.Record) bool {
	_, gbps := peaksOf(recs)
	return gbps > 0 && cpuLike(engine.Info{Kind: engine.OpenCL, PeakGBps: gbps})
}

// onNVIDIA reports whether the records come from an NVIDIA GPU.
func onNVIDIA(recs []bench.Record) bool {
	return strings.Contains(strings.ToUpper(recs[0].DeviceName), "NVIDIA")
}

// against describes a's time relative to base's: "1.27× the time of
// uniform", or "the time of uniform within noise (1.02×)".
func against(a, base bench.Record, name string) string {
	if !bench.Differ(a, base) {
		return fmt.Sprintf("the time of %s within noise (%s)", name, noiseRatio(a, base))
	}
	return fmt.Sprintf("%s the time of %s", times(a.MedianMS/base.MedianMS), name)
}

// speedOver describes a's speed relative to base's: "2.05× the speed of
// precise", or "the speed of precise within noise (1.00×)".
func speedOver(a, base bench.Record, name string) string {
	if !bench.Differ(a, base) {
		return fmt.Sprintf("the speed of %s within noise (%s)", name, noiseRatio(base, a))
	}
	return fmt.Sprintf("%s the speed of %s", times(base.MedianMS/a.MedianMS), name)
}

// noiseRatio prints a's time over b's for two records within noise
// (bench.Differ): the medians' ratio, "1.02×", and where either ratio
// passes the noise floor, both, "0.902× by median, 0.99× by fastest run":
// within noise then means that the other one did not move as far.
func noiseRatio(a, b bench.Record) string {
	med := a.MedianMS / b.MedianMS
	if a.MinMS <= 0 || b.MinMS <= 0 {
		return times(med)
	}
	fast := a.MinMS / b.MinMS
	beyond := func(x float64) bool { return x > 1+bench.NoiseFloor || x < 1/(1+bench.NoiseFloor) }
	if !beyond(med) && !beyond(fast) {
		return times(med)
	}
	return fmt.Sprintf("%s by median, %s by fastest run", times(med), times(fast))
}

// randomSweep says how each random-lane run compared with uniform, every
// p in order, then which were slower, on par or faster (bench.Differ).
func randomSweep(random []bench.Record, u bench.Record) string {
	var items, slower, par, faster []string
	for _, r := range random {
		p := fmt.Sprintf("%g", r.Params.Float("p"))
		items = append(items, fmt.Sprintf("%s at p = %s (%s of the groups diverged)", times(r.MedianMS/u.MedianMS), p, share(r.Params.Float("divergent_fraction"))))
		switch {
		case bench.Slower(r, u):
			slower = append(slower, p)
		case bench.Slower(u, r):
			faster = append(faster, p)
		default:
			par = append(par, p)
		}
	}
	var groups []string
	for _, g := range []struct {
		what string
		ps   []string
	}{{"slower beyond noise", slower}, {"within noise", par}, {"faster beyond noise", faster}} {
		switch len(g.ps) {
		case 0:
		case len(random):
			groups = append(groups, g.what+" at every p")
		default:
			groups = append(groups, g.what+" at p = "+bench.JoinAnd(g.ps))
		}
	}
	return fmt.Sprintf(" With lanes drawn at random, the time against uniform was %s: %s.", bench.JoinAnd(items), bench.JoinAnd(groups))
}

func judgeDivergence(recs []bench.Record) (finding, bool) {
	rs, ok := variants(recs, "uniform", "warp_split", "alternate_lanes")
	if !ok {
		return finding{}, false
	}
	u, ws, al := rs[0], rs[1], rs[2]
	f := finding{key: fmt.Sprintf("alternate_lanes %s, warp_split %s the uniform time", times(al.MedianMS/u.MedianMS), times(ws.MedianMS/u.MedianMS))}
	f.measured = fmt.Sprintf("alternate_lanes, where every 32-lane group mixes both branches, took %s; warp_split, where half the lanes take branch B but no group mixes them, took %s.",
		against(al, u, "uniform"), against(ws, u, "uniform"))
	random := kept(recs, func(r bench.Record) bool { return r.Params["pattern"] == "random" && r.Params["branch"] != "select" })
	slices.SortFunc(random, func(a, b bench.Record) int { return cmp.Compare(a.Params.Float("p"), b.Params.Float("p")) })
	var slowestRandom bench.Record
	if len(random) > 0 {
		slowestRandom = slices.MaxFunc(random, func(a, b bench.Record) int { return cmp.Compare(a.MedianMS, b.MedianMS) })
		f.key += fmt.Sprintf("; random lanes up to %s", times(slowestRandom.MedianMS/u.MedianMS))
		f.measured += randomSweep(random, u)
	}
	if bl, ok := variant(recs, "branchless"); ok {
		f.measured += fmt.Sprintf(" branchless, which computes both chains and selects one, took %s.", against(bl, al, "alternate_lanes"))
	}
	switch {
	case bench.Slower(al, u) && !bench.Slower(ws, u):
		f.verdict, f.why = holds, "the cost comes from lanes of one 32-lane group disagreeing, not from how many lanes take branch B."
	case bench.Slower(al, u):
		f.verdict, f.why = partly, "mixed lanes cost time, but so did branches that differ only between 32-lane groups."
	case len(random) > 0 && bench.Slower(slowestRandom, u):
		f.verdict, f.why = doesNotHold, fmt.Sprintf("alternate_lanes, whose lanes disagree in a regular pattern, cost nothing measurable, while random lanes did (p = %g took %s the uniform time)",
			slowestRandom.Params.Float("p"), times(slowestRandom.MedianMS/u.MedianMS))
		// The least predictable branch is the coin flip of the largest p
		// (p <= 0.5): only if it was the slowest does the cost follow
		// how predictable the branch is.
		if coin := random[len(random)-1]; coin.Variant == slowestRandom.Variant {
			f.why += ": the cost follows how predictable the branch is, not whether 32-lane groups disagree."
			if onCPU(recs) {
				f.why += " A core that runs work-items one after another can predict a regular pattern of branches, not a random one."
			}
		} else {
			f.why += fmt.Sprintf(", and not in order of how unpredictable the branch is: p = %g, the least predictable, took %s the uniform time. This run does not say what made p = %g slower.",
				coin.Params.Float("p"), times(coin.MedianMS/u.MedianMS), slowestRandom.Params.Float("p"))
		}
	default:
		f.verdict, f.why = doesNotHold, "lanes that disagree cost nothing measurable here."
	}
	if onCPU(recs) {
		f.why += " On a CPU, PoCL runs work-items as the lanes of a core's SIMD unit, or one after another: what can mix both branches is a SIMD vector, not a 32-lane warp."
	}
	return f, true
}

// fastMathFinding compares one fast build with the precise one.
func fastMathFinding(recs []bench.Record, name, what string) (finding, bool) {
	rs, ok := variants(recs, "precise", name)
	if !ok {
		return finding{}, false
	}
	p, fast := rs[0], rs[1]
	f := finding{key: fmt.Sprintf("%s the speed, error %.2g (precise %.2g)", times(p.MedianMS/fast.MedianMS), fast.MaxRelErr, p.MaxRelErr)}
	f.measured = fmt.Sprintf("The %s build calls `%s`, the precise one `%s`. It ran at %s, with a largest relative error against a float64 reference of %.2g (precise: %.2g).",
		name, fast.Params["functions"], p.Params["functions"], speedOver(fast, p, "the precise build"), fast.MaxRelErr, p.MaxRelErr)
	errNote := ", with no larger error on this sum."
	if fast.MaxRelErr > 2*p.MaxRelErr {
		errNote = fmt.Sprintf(", at %s the precise build's error.", times(fast.MaxRelErr/p.MaxRelErr))
	}
	switch {
	case bench.Differ(fast, p) && fast.MedianMS < p.MedianMS:
		f.verdict, f.why = holds, what+" made the kernel faster"+errNote
	case bench.Differ(fast, p):
		f.verdict, f.why = doesNotHold, what+" made the kernel slower."
	default:
		f.verdict, f.why = doesNotHold, what+" changed nothing measurable"
		if fast.MaxRelErr == p.MaxRelErr {
			f.why += ", and its largest error is exactly the precise build's, which suggests that the same precise instructions ran: the build did not swap in faster functions here. Only the compiled device code (on NVIDIA, the SASS) would confirm it."
		} else {
			f.why += "."
		}
	}
	return f, true
}

func judgeFastFlag(recs []bench.Record) (finding, bool) {
	return fastMathFinding(recs, "fast_flags", "the flag alone")
}

func judgeNative(recs []bench.Record) (finding, bool) {
	return fastMathFinding(recs, "native", "the native functions")
}

func judgeWG32(recs []bench.Record) (finding, bool) {
	var parts, keys, enough, beaten, trends []string
	for _, k := range []struct{ kernel, label, unit string }{{"copy", "copy", "GB/s"}, {"fma", "FMA chain", "GFLOP/s"}} {
		plain := kept(recs, func(r bench.Record) bool { return r.Params["kernel"] == k.kernel && r.Params["hint"] != true && r.OK })
		r32, ok := variant(plain, k.kernel+"_wg32")
		if !ok {
			return finding{}, false
		}
		best := slices.MinFunc(plain, func(a, b bench.Record) int { return cmp.Compare(a.MedianMS, b.MedianMS) })
		rate := best.GBps
		if k.unit == "GFLOP/s" {
			rate = best.GFLOPS
		}
		s := fmt.Sprintf("the %s was fastest in work-groups of %g (%s %s)", k.label, best.Params.Float("local"), sig3(rate), k.unit)
		if best.Variant != r32.Variant {
			s += fmt.Sprintf(", and groups of 32 took %s", against(r32, best, fmt.Sprintf("groups of %g", best.Params.Float("local"))))
		}
		parts = append(parts, s)
		keys = append(keys, fmt.Sprintf("%s fastest at %g, 32 at %s its time", k.label, best.Params.Float("local"), times(r32.MedianMS/best.MedianMS)))
		if bench.Differ(r32, best) {
			beaten = append(beaten, fmt.Sprintf("the %s ran fastest in groups of %g", k.label, best.Params.Float("local")))
			if best.Params.Float("local") > 32 {
				trends = append(trends, growth(plain, r32, best, k.label))
			}
		} else {
			enough = append(enough, k.label)
		}
	}
	f := finding{measured: "Without the size hint, " + strings.Join(parts, "; ") + "."}
	f.key = strings.Join(keys, "; ")
	switch len(enough) {
	case 2:
		f.verdict, f.why = holds, "groups of 32 were as fast as any size for both kernels."
	case 1:
		f.verdict, f.why = partly, fmt.Sprintf("groups of 32 were enough for the %s only; %s.", enough[0], beaten[0])
	default:
		f.verdict, f.why = doesNotHold, fmt.Sprintf("other sizes beat 32 for both kernels: %s, and %s.", beaten[0], beaten[1])
	}
	switch {
	case onCPU(recs):
		f.why += " PoCL runs each work-group as a loop over its work-items on one core, so the size sets how long that loop is, not how many warps there are."
	case onNVIDIA(recs) && len(trends) > 0:
		f.why += " On NVIDIA GPUs a group of 32 is one warp. Against groups of 32, " + strings.Join(trends, "; ") +
			". The records show this trend, not its cause: how many warps stay resident and how fast the multiprocessors take up new groups would take a profiler to tell apart."
	}
	return f, true
}

// growth says how the time of the sizes above 32, up to best's, compared
// with the time at 32: "the copy took 0.52× its time at 64, ...".
func growth(plain []bench.Record, r32, best bench.Record, label string) string {
	larger := kept(plain, func(r bench.Record) bool {
		return r.Params.Float("local") > 32 && r.Params.Float("local") <= best.Params.Float("local")
	})
	slices.SortFunc(larger, func(a, b bench.Record) int { return cmp.Compare(a.Params.Float("local"), b.Params.Float("local")) })
	var items []string
	for _, r := range larger {
		items = append(items, fmt.Sprintf("%s at %g", times(r.MedianMS/r32.MedianMS), r.Params.Float("local")))
	}
	return fmt.Sprintf("the %s took %s", label, bench.JoinAnd(items))
}

func judgeHint(recs []bench.Record) (finding, bool) {
	pairs, faster, slowerN := 0, 0, 0
	largest := 0.0
	for _, h := range recs {
		if h.Params["hint"] != true {
			continue
		}
		plain, ok := variant(recs, strings.TrimSuffix(h.Variant, "_hint"))
		if !ok {
			continue
		}
		pairs++
		change := h.MedianMS/plain.MedianMS - 1
		if math.Abs(change) > math.Abs(largest) {
			largest = change
		}
		switch {
		case bench.Differ(h, plain) && change < 0:
			faster++
		case bench.Differ(h, plain):
			slowerN++
		}
	}
	if pairs == 0 {
		return finding{}, false
	}
	f := finding{
		measured: fmt.Sprintf("With the size hint, %d of %d launches were faster beyond noise and %d slower; the largest change in time was %s.",
			faster, pairs, slowerN, signedShare(largest)),
		key: fmt.Sprintf("%d of %d launches faster, %d slower", faster, pairs, slowerN),
	}
	switch {
	case faster > 0 && slowerN == 0:
		f.verdict, f.why = holds, "declaring the size made some launches faster and none slower."
	case faster == 0 && slowerN == 0:
		f.verdict, f.why = doesNotHold, "declaring the size changed nothing measurable."
	case faster == 0:
		f.verdict, f.why = doesNotHold, "declaring the size made no launch faster, and some slower."
	default:
		f.verdict, f.why = partly, "declaring the size helped some launches and slowed others."
	}
	return f, true
}

func judgeBarrier(recs []bench.Record) (finding, bool) {
	pairs := barrierPairs(recs)
	if len(pairs) < 2 {
		return finding{}, false
	}
	small, large := pairs[0], pairs[len(pairs)-1]
	f := finding{key: fmt.Sprintf("%s the time without barriers at %d, %s at %d", times(small.slowdown()), small.local, times(large.slowdown()), large.local)}
	var ratios []string
	for _, p := range pairs {
		r := times(p.slowdown())
		if !bench.Differ(p.bar, p.nobar) {
			r = "within noise (" + noiseRatio(p.bar, p.nobar) + ")"
		}
		ratios = append(ratios, fmt.Sprintf("%s in groups of %d", r, p.local))
	}
	f.measured = fmt.Sprintf("With barriers, the time against the same work without them was %s. Every work-item passes the same %g barriers at every size, so these ratios compare like with like.",
		bench.JoinAnd(ratios), small.bar.Params.Float("rounds"))
	allFaster := true
	for _, p := range pairs {
		allFaster = allFaster && bench.Differ(p.bar, p.nobar) && p.bar.MedianMS < p.nobar.MedianMS
	}
	cs, okS := small.cycles()
	cl, okL := large.cycles()
	switch {
	case allFaster:
		f.measured += fmt.Sprintf(" Spread over the barriers executed, the version with barriers saved %s per work-group barrier at %d and %s at %d.",
			formatTime(-small.costMS()), small.local, formatTime(-large.costMS()), large.local)
	case okS && okL && bench.Slower(small.bar, small.nobar) && bench.Slower(large.bar, large.nobar):
		unit, per := "compute unit", ""
		if !onCPU(recs) {
			unit = "SM"
			per = fmt.Sprintf(", or %s and %s per warp that waits at it", sig3(cs/float64(small.local/32)), sig3(cl/float64(large.local/32)))
		}
		f.measured += fmt.Sprintf(" Spread over the barriers executed and the device's %g %ss, each work-group barrier cost one %s %s cycles at %d and %s at %d%s: groups run side by side, so this is what a barrier takes from the %s's throughput, not how long one group waits at it.",
			small.bar.Params.Float("compute_units"), unit, unit, sig3(cs), small.local, sig3(cl), large.local, per, unit)
		f.key += fmt.Sprintf("; %s and %s %s cycles per barrier", sig3(cs), sig3(cl), unit)
	default:
		f.measured += fmt.Sprintf(" Spread over the barriers executed, each work-group barrier added %s at %d and %s at %d of the device's time, all its compute units together: groups run side by side, so this is a throughput cost, not the time one group waits at a barrier.",
			small.cost(), small.local, large.cost(), large.local)
	}
	smallCosts, largeCosts := bench.Slower(small.bar, small.nobar), bench.Slower(large.bar, large.nobar)
	switch {
	case allFaster:
		f.verdict, f.why = untestable, "the kernel was faster with barriers than without, at every size: with barriers the compiler built a different kernel, so the difference is not what a barrier costs."
	case !smallCosts && largeCosts:
		f.verdict, f.why = holds, fmt.Sprintf("a barrier in a group of %d cost nothing measurable, and one in a group of %d did.", small.local, large.local)
	case !smallCosts:
		f.verdict, f.why = partly, "a barrier cost nothing measurable in small groups, but nothing in large ones either."
	case small.slowdown() < large.slowdown():
		f.verdict, f.why = partly, fmt.Sprintf("barriers in groups of %d are not free, but they slowed the kernel less than in groups of %d.", small.local, large.local)
	default:
		f.verdict, f.why = doesNotHold, fmt.Sprintf("the one-warp groups suffered most: the same barriers per work-item made the kernel take %s its time without them in groups of %d, and %s in groups of %d.",
			times(small.slowdown()), small.local, times(large.slowdown()), large.local)
	}
	if onCPU(recs) {
		f.why += " PoCL compiles the code between two barriers into a loop over the group's work-items, so on a CPU a barrier is no wait: it changes how the kernel is cut into loops."
	}
	return f, true
}

func judgeOccupancy(recs []bench.Record) (finding, bool) {
	if _, ok := recs[0].Params["occupancy"]; !ok {
		return judgeLocalMemory(recs)
	}
	accs := distinct(recs, "acc")
	if len(accs) < 2 {
		return finding{}, false
	}
	// lowHigh returns one ACC's records at the lowest and the highest occupancy.
	lowHigh := func(acc float64) (lo, hi bench.Record) {
		rs := kept(recs, func(r bench.Record) bool { return r.Params.Float("acc") == acc && r.OK })
		slices.SortFunc(rs, func(a, b bench.Record) int {
			return cmp.Or(cmp.Compare(a.Params.Float("occupancy"), b.Params.Float("occupancy")), cmp.Compare(b.Params.Float("smem"), a.Params.Float("smem")))
		})
		return rs[0], rs[len(rs)-1]
	}
	describe := func(lo, hi bench.Record) string {
		return fmt.Sprintf("%s GB/s at %s occupancy and %s GB/s at %s", sig3(lo.GBps), share(lo.Params.Float("occupancy")), sig3(hi.GBps), share(hi.Params.Float("occupancy")))
	}
	lo1, hi1 := lowHigh(accs[0])
	accMax := accs[len(accs)-1]
	loM, hiM := lowHigh(accMax)
	f := finding{
		measured: fmt.Sprintf("With one load in flight per thread (ACC=%g), bandwidth was %s. With ACC=%g it was %s.", accs[0], describe(lo1, hi1), accMax, describe(loM, hiM)),
		key:      fmt.Sprintf("ACC=%g: lowest occupancy %s of the highest's GB/s; ACC=%g: %s", accs[0], share(lo1.GBps/hi1.GBps), accMax, share(loM.GBps/hiM.GBps)),
	}
	switch {
	case !bench.Slower(lo1, hi1):
		f.verdict, f.why = doesNotHold, "lower occupancy did not lower bandwidth measurably."
	case bench.Slower(loM, hiM) && loM.GBps/hiM.GBps <= lo1.GBps/hi1.GBps:
		f.verdict, f.why = holds, fmt.Sprintf("bandwidth followed occupancy, even with %g loads in flight per thread.", accMax)
	default:
		f.verdict, f.why = partly, fmt.Sprintf("bandwidth followed occupancy with one load in flight per thread; with %g, the lowest occupancy kept %s of the highest's bandwidth, against %s with one: loads in flight per thread also hide latency, as more warps do.",
			accMax, share(loM.GBps/hiM.GBps), share(lo1.GBps/hi1.GBps))
	}
	return f, true
}

// judgeLocalMemory reads the occupancy suite where no occupancy query
// exists (OpenCL): does reserving local memory, which leaves room for
// fewer work-groups at once, cost bandwidth?
func judgeLocalMemory(recs []bench.Record) (finding, bool) {
	accs := distinct(recs, "acc")
	if len(accs) == 0 {
		return finding{}, false
	}
	acc1 := kept(recs, func(r bench.Record) bool { return r.Params.Float("acc") == accs[0] && r.OK })
	slices.SortStableFunc(acc1, func(a, b bench.Record) int {
		return cmp.Compare(a.Params.Float("local_mem"), b.Params.Float("local_mem"))
	})
	none, most := acc1[0], acc1[len(acc1)-1]
	if most.Params.Float("local_mem") == none.Params.Float("local_mem") {
		return finding{}, false
	}
	noLocal := kept(recs, func(r bench.Record) bool {
		return r.Params.Float("local_mem") == none.Params.Float("local_mem") && r.OK
	})
	best := slices.MaxFunc(noLocal, func(a, b bench.Record) int { return cmp.Compare(a.GBps, b.GBps) })
	f := finding{
		measured: fmt.Sprintf("Reserving %g KiB of local memory per work-group took ACC=%g from %s GB/s to %s GB/s, %s. Without it, ACC=%g was fastest, at %s GB/s.",
			most.Params.Float("local_mem")/1024, accs[0], sig3(none.GBps), sig3(most.GBps), against(most, none, "no reservation"), best.Params.Float("acc"), sig3(best.GBps)),
		key: fmt.Sprintf("%g KiB of local memory: %s", most.Params.Float("local_mem")/1024, against(most, none, "none")),
	}
	switch {
	case bench.Slower(most, none):
		f.verdict, f.why = holds, "reserving local memory leaves room for fewer work-groups at once, and bandwidth fell: there was less to switch to while waiting on memory."
	case bench.Differ(most, none):
		f.verdict, f.why = doesNotHold, "reserving local memory, which limits resident work-groups on a GPU, did not lower bandwidth here: it rose."
	default:
		f.verdict, f.why = doesNotHold, "reserving local memory, which limits resident work-groups on a GPU, changed nothing measurable here."
	}
	if onCPU(recs) {
		f.why += " On a CPU, PoCL's local memory is ordinary cached memory, and a core runs one work-group at a time: there are no residency slots to fill."
	}
	return f, true
}

// distinct returns the sorted distinct values of a numeric parameter.
func distinct(recs []bench.Record, key string) []float64 {
	var vs []float64
	for _, r := range recs {
		if v := r.Params.Float(key); !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}

// judgeIntensity reads the sweep of F in two stages. Up to some F the
// time stays within noise of F=1: the added FMAs are free. Beyond it, a
// kernel still waits on memory while each step of the sweep raises its
// time by less than the square root of the step's factor in FMAs, the
// geometric midpoint between no cost (a time that stays put) and a cost
// in proportion (a time that follows the arithmetic): √2 for each
// doubling of F.
func judgeIntensity(recs []bench.Record) (finding, bool) {
	rs := kept(recs, func(r bench.Record) bool { return r.OK })
	slices.SortFunc(rs, func(a, b bench.Record) int { return cmp.Compare(a.Params.Float("f"), b.Params.Float("f")) })
	if len(rs) < 3 || rs[0].Params.Float("f") != 1 {
		return finding{}, false
	}
	base, last := rs[0], rs[len(rs)-1]
	fOf := func(i int) float64 { return rs[i].Params.Float("f") }
	free := 0 // the last index whose time is within noise of F=1 (or below it), with all before it
	for free+1 < len(rs) && !bench.Slower(rs[free+1], base) {
		free++
	}
	memory := free // the last index up to which every step cost less than the square root of its factor in FMAs
	for memory+1 < len(rs) && rs[memory+1].MedianMS/rs[memory].MedianMS < math.Sqrt(fOf(memory+1)/fOf(memory)) {
		memory++
	}
	f := finding{}
	if free > 0 {
		f.measured = fmt.Sprintf("The time stayed within noise of F=1 (or below it) up to F=%g", fOf(free))
	} else {
		f.measured = fmt.Sprintf("The time grew from the first added FMA: F=%g took %s", fOf(1), against(rs[1], base, "F=1"))
	}
	if memory > free {
		f.measured += fmt.Sprintf("; up to F=%g each doubling of the FMAs raised the time by less than √2, half-way (geometrically) between no cost and a cost in proportion", fOf(memory))
		if memory > 1 { // F=2's time is already told
			f.measured += fmt.Sprintf(": F=%g took %s", fOf(memory), against(rs[memory], base, "F=1"))
		}
	}
	f.measured += fmt.Sprintf("; F=%g took %s.", last.Params.Float("f"), against(last, base, "F=1"))
	peakGFLOPS, peakGBps := peaksOf(rs)
	if peakGFLOPS > 0 && peakGBps > 0 {
		ridge := peakGFLOPS / peakGBps
		f.measured += fmt.Sprintf(" At F=%g the kernel ran at %s GFLOP/s, %s of the FP32 peak of %s GFLOP/s; this device's ridge point is at %s FLOP/byte, near F=%s.",
			last.Params.Float("f"), sig3(last.GFLOPS), share(last.GFLOPS/peakGFLOPS), sig3(peakGFLOPS), sig3(ridge), sig3(4*ridge))
	}
	f.key = fmt.Sprintf("time grew from F=%g", fOf(1))
	if free > 0 {
		f.key = fmt.Sprintf("time flat up to F=%g", fOf(free))
	}
	if memory > free {
		f.key += fmt.Sprintf(", under √2 per doubling up to F=%g", fOf(memory))
	}
	f.key += fmt.Sprintf("; F=%g at %s GFLOP/s", last.Params.Float("f"), sig3(last.GFLOPS))
	switch {
	case memory > free:
		f.verdict, f.why = holds, fmt.Sprintf("up to F=%g the added FMAs cost less than their share of the time: the kernel waited on memory, and its bytes set most of the time.", fOf(memory))
	case free > 0:
		f.verdict, f.why = holds, fmt.Sprintf("up to F=%g the added FMAs were free: the kernel waited on memory, and only its bytes mattered.", fOf(free))
	default:
		f.verdict, f.why = doesNotHold, "doubling the FMAs from F=1 already raised the time by √2 or more: the arithmetic, not memory, set the time from the start."
	}
	return f, true
}

func judgeBanks(recs []bench.Record) (finding, bool) {
	rs, ok := variants(recs, "s32_p0", "s32_p1")
	if !ok {
		return finding{}, false
	}
	worst, padded := rs[0], rs[1]
	ways := distinct(recs, "ways")
	var levels []string
	for _, w := range ways {
		sum, n := 0.0, 0
		for _, r := range recs {
			if r.Params.Float("ways") == w {
				sum, n = sum+r.MedianMS, n+1
			}
		}
		levels = append(levels, fmt.Sprintf("%s (%g-way)", formatTime(sum/float64(n)), w))
	}
	var xs, ys []float64
	for _, r := range recs {
		xs, ys = append(xs, r.Params.Float("ways")), append(ys, r.MedianMS)
	}
	rho := spearman(xs, ys)
	f := finding{
		measured: fmt.Sprintf("Averaged by predicted conflict, the reads took %s. Stride 32 without padding (32-way) took %s. The rank correlation between the predicted conflict and the time is %.2f (1 would mean that more ways always took longer).",
			strings.Join(levels, ", "), against(worst, padded, "stride 32 padded by one word (conflict-free)"), rho),
		key: fmt.Sprintf("32-way: %s the conflict-free time; rank correlation %.2f", times(worst.MedianMS/padded.MedianMS), rho),
	}
	if p4, ok := variant(recs, "s32_p4"); ok {
		f.measured += fmt.Sprintf(" Padded by 4 words (4-way), stride 32 took %s.", against(p4, padded, "the conflict-free one"))
	}
	switch {
	case bench.Slower(worst, padded) && rho >= 0.8:
		f.verdict, f.why = holds, "the time follows the predicted n-way conflict, and a padding that makes the row width odd removes it."
	case bench.Slower(worst, padded):
		f.verdict, f.why = partly, "padding helped, but the time does not follow the predicted conflict closely."
	default:
		f.verdict, f.why = doesNotHold, "padding did not help, and the time does not follow the predicted conflict."
	}
	if onCPU(recs) {
		f.why += " A CPU's local memory has no banks: the stride only changes which cache lines the reads touch."
	}
	return f, true
}

// spearman is the rank correlation of x and y (ties share their mean rank).
func spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	mx, my := mean(rx), mean(ry)
	var sxy, sxx, syy float64
	for i := range rx {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks returns the rank of each value (1 for the smallest), ties sharing
// the mean of their ranks.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func judgeFilter(recs []bench.Record) (finding, bool) {
	var parts, keys []string
	faster, slowerN := 0, 0
	for _, filter := range []string{"blur", "sobel"} {
		of := kept(recs, func(r bench.Record) bool { return r.Params["filter"] == filter })
		img := kept(of, func(r bench.Record) bool { return r.Params["path"] == "image" })
		buf := kept(of, func(r bench.Record) bool { return r.Params["path"] == "buffer" })
		if len(img) != 1 || len(buf) != 1 {
			return finding{}, false
		}
		path := "`image2d_t` and a sampler"
		if strings.HasSuffix(img[0].Variant, "_texture") {
			path = "a texture object"
		}
		parts = append(parts, fmt.Sprintf("the %s through %s took %s", filter, path, against(img[0], buf[0], buf[0].Variant+" (clamped indices)")))
		keys = append(keys, fmt.Sprintf("%s %s", filter, times(img[0].MedianMS/buf[0].MedianMS)))
		switch {
		case bench.Differ(img[0], buf[0]) && img[0].MedianMS < buf[0].MedianMS:
			faster++
		case bench.Differ(img[0], buf[0]):
			slowerN++
		}
	}
	f := finding{
		measured: strings.ToUpper(parts[0][:1]) + parts[0][1:] + "; " + parts[1] + ".",
		key:      "image over buffer time: " + strings.Join(keys, ", "),
	}
	switch {
	case faster == 2:
		f.verdict, f.why = holds, "both filters were faster through images."
	case slowerN == 2:
		f.verdict, f.why = doesNotHold, "both filters were slower through images than with plain loads and clamped indices."
	default:
		f.verdict, f.why = partly, "images were not faster for both filters."
	}
	switch {
	case onCPU(recs):
		f.why += " PoCL's CPU device has no texture unit: image reads and the sampler's clamping run as software."
	case onNVIDIA(recs) && faster < 2:
		f.why += " On NVIDIA GPUs since Maxwell, plain loads are cached in the same unit as texture fetches, and only the work-items at the border take the clamping branches."
	}
	return f, true
}

// sig3 prints v with three significant digits (all digits of the integer
// part from 100 up), without an exponent from 0.001 up.
func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 99.95:
		return fmt.Sprintf("%.0f", v)
	case a >= 9.995:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.9995:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.001:
		return fmt.Sprintf("%.*f", 2-int(math.Floor(math.Log10(a))), v)
	}
	return fmt.Sprintf("%.3g", v)
}

// times prints a ratio: "1.27×".
func times(v float64) string { return sig3(v) + "×" }

// share prints a fraction as a percentage: "27%", "3.1%".
func share(frac float64) string {
	pc := 100 * frac
	if math.Abs(pc) >= 9.95 {
		return fmt.Sprintf("%.0f%%", pc)
	}
	return fmt.Sprintf("%.2g%%", pc)
}

// signedShare prints a relative change: "+3.1%", "-12%".
func signedShare(frac float64) string {
	if frac >= 0 {
		return "+" + share(frac)
	}
	return share(frac)
}

// formatTime prints a time given in ms with three significant digits in
// the unit that keeps them, from picoseconds (a barrier's share of a
// launch) to seconds: "10.2 ps", "4.31 µs", "45.6 ms".
func formatTime(ms float64) string {
	v := ms * 1e9 // picoseconds
	for _, unit := range []string{"ps", "ns", "µs", "ms"} {
		if math.Abs(v) < 999.5 {
			return sig3(v) + " " + unit
		}
		v /= 1000
	}
	return sig3(v) + " s"
}
