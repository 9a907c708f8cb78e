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

// What notebook 01 says about the ladder, built from the records of a
// run, so that its prose never types a number the run measured.

// Steps is the ladder of one family as a lesson shows it: the steps with
// a source file, in order (the library baselines have none).
func Steps(kind engine.Kind) []kernels.Step {
	var steps []kernels.Step
	for _, v := range Variants(kind) {
		file, code, err := Source(v)
		if err != nil {
			continue
		}
		if len(steps) > 0 && steps[len(steps)-1].Code == code {
			continue // a step that runs the previous file with other parameters
		}
		steps = append(steps, kernels.Step{Name: v.Name, File: strings.TrimPrefix(file, "kernels/"), Code: code})
	}
	return steps
}

// RidgeMarkdown is a table of each device's ridge point (peak FLOP/s ÷ peak
// bytes/s) next to the arithmetic intensity of an n³ product under three
// traffic models: each byte moved once (the least any kernel can move), a
// kernel with 32×32 tiles in shared memory, and the naive kernel (two loads
// per FMA). A model above the ridge can reach the compute roof; one below
// it is bound by memory, whatever the size.
func RidgeMarkdown(devs []engine.Info, n int) string {
	s := Shape{M: n, N: n, K: n}
	models := []struct {
		name    string
		traffic float64
	}{
		{"each byte once", s.MinBytes()},
		{"32×32 tiles", clTiledTraffic(s, 32, 32)},
		{"naive (2 loads per FMA)", 8*s.Flops()/2 + 4*float64(s.M*s.N)},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "At n = %d:\n\n| device | ridge (FLOP/byte) |", n)
	for _, m := range models {
		fmt.Fprintf(&b, " %s |", m.name)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---|", len(models)) + "\n")
	for _, d := range devs {
		if d.PeakGBps <= 0 || d.PeakGFLOPS <= 0 {
			continue
		}
		ridge := d.PeakGFLOPS / d.PeakGBps
		fmt.Fprintf(&b, "| `%s` %s | %.1f |", d.ID, d.Name, ridge)
		for _, m := range models {
			ai := s.Flops() / m.traffic
			verdict := "memory-bound"
			if ai > ridge {
				verdict = "can reach the compute roof"
			}
			fmt.Fprintf(&b, " %.3g: %s |", ai, verdict)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ladder is one precision's steps of one device at one size, in ladder
// order, and the baseline they are compared with.
type ladder struct {
	precision Precision
	baseline  bench.Record
	steps     []bench.Record
}

// ladders splits records of one device and size into a ladder per
// precision, steps in the family's order (Variants), baselines apart.
func ladders(recs []bench.Record) []ladder {
	if len(recs) == 0 {
		return nil
	}
	order := map[string]int{}
	for i, v := range Variants(engine.Kind(strings.SplitN(recs[0].Device, ":", 2)[0])) {
		order[v.Name] = i
	}
	byPrecision := map[Precision]*ladder{}
	var out []*ladder
	for _, r := range recs {
		p, _ := r.Params["precision"].(string)
		l := byPrecision[Precision(p)]
		if l == nil {
			l = &ladder{precision: Precision(p)}
			byPrecision[Precision(p)] = l
			out = append(out, l)
		}
		if r.Variant == r.Baseline {
			l.baseline = r
		} else {
			l.steps = append(l.steps, r)
		}
	}
	var ls []ladder
	for _, l := range out {
		slices.SortStableFunc(l.steps, func(a, b bench.Record) int { return order[a.Variant] - order[b.Variant] })
		ls = append(ls, *l)
	}
	return ls
}

// whyNoGain says, for a step that gains little or nothing over the step
// before it, what usually still limits it.
var whyNoGain = map[string]string{
	"05_2d_register_tiling":   "its 8×8 outer product still needs 16 scalar shared-memory loads per k, so loads, not FMAs, can still set the pace",
	"07_bank_conflict_free":   "the conflicts it removes were real but were not the main cost",
	"09_warp_tiling":          "warp tiling pays only once its tile sizes fit the GPU: step 10 tunes them",
	"04_wider_types":          "the loads already coalesce across the warp, so wider ones save few transactions while the bounds logic for odd shapes costs instructions",
	"03_more_work_per_thread": "more work per work-item raises register pressure as much as it saves loads",
}

// LadderStory tells what each step did to the speed in records of one
// device and one size: the speedup over the step before (or the
// baseline), the two speeds, and for a step that gained little the usual
// reason. Steps that failed their check are named as such.
func LadderStory(recs []bench.Record) string {
	if len(recs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s (`%s`) at %s:**\n\n", recs[0].DeviceName, recs[0].Device, recs[0].Size)
	for _, l := range ladders(recs) {
		prev := l.baseline
		if l.baseline.Variant != "" {
			fmt.Fprintf(&b, "- %s baseline `%s`: %s%s.\n", l.precision, l.baseline.Variant, gflops(l.baseline.GFLOPS), impossible(l.baseline))
		}
		first := true
		for _, r := range l.steps {
			if !r.OK {
				fmt.Fprintf(&b, "- `%s` failed its check: %s\n", r.Variant, r.Error)
				continue
			}
			switch {
			case first:
				fmt.Fprintf(&b, "- `%s`: %s, %s `%s`%s.\n", r.Variant, gflops(r.GFLOPS), share(r.PctOfBaseline), r.Baseline, impossible(r))
			default:
				gain := r.GFLOPS / prev.GFLOPS
				fmt.Fprintf(&b, "- `%s`: %.2f× `%s` (%s → %s)", r.Variant, gain, prev.Variant, gflops(prev.GFLOPS), gflops(r.GFLOPS))
				if why, ok := whyNoGain[r.Variant]; ok && gain < 1.05 {
					fmt.Fprintf(&b, ": little or nothing gained, and %s", why)
				}
				b.WriteString(impossible(r) + ".\n")
			}
			prev, first = r, false
		}
		if n := len(l.steps); n > 0 && l.baseline.Variant != "" {
			best := slices.MaxFunc(l.steps, func(a, b bench.Record) int { return cmp.Compare(a.GFLOPS, b.GFLOPS) })
			fmt.Fprintf(&b, "- The best %s step, `%s`, reaches %s `%s`.\n", l.precision, best.Variant, share(best.PctOfBaseline), l.baseline.Variant)
		}
	}
	return b.String()
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
// the step before them in their ladder ("" when none did).
func SlowerSteps(recs []bench.Record) string {
	var slower []string
	for _, l := range ladders(recs) {
		for i := 1; i < len(l.steps); i++ {
			if a, b := l.steps[i-1], l.steps[i]; a.OK && b.OK && b.GFLOPS < a.GFLOPS {
				slower = append(slower, fmt.Sprintf("`%s` (%s, after %s for `%s`)", b.Variant, gflops(b.GFLOPS), gflops(a.GFLOPS), a.Variant))
			}
		}
	}
	if len(slower) == 0 {
		return "No step was slower than the one before it."
	}
	return "Slower than the step before: " + strings.Join(slower, "; ") + "."
}

// A ChartGroup is a title and the records of the variants that share a
// chart.
type ChartGroup struct {
	Title string
	Recs  []bench.Record
}

// ChartGroups splits a run's records (one device, several sizes) into
// charts of at most 8 variants: the FP32 steps, in halves when there are
// more than 7, each with the FP32 baseline, then the tensor-core steps with
// their library calls.
func ChartGroups(recs []bench.Record) []ChartGroup {
	var groups []ChartGroup
	add := func(title string, names []string) {
		g := ChartGroup{Title: title}
		for _, r := range recs {
			if slices.Contains(names, r.Variant) {
				g.Recs = append(g.Recs, r)
			}
		}
		if len(g.Recs) > 0 {
			groups = append(groups, g)
		}
	}
	var tensor []string
	for _, l := range ladders(bench.OfSize(recs, lastSize(recs))) {
		var names []string
		for _, r := range l.steps {
			names = append(names, r.Variant)
		}
		switch {
		case l.precision != FP32:
			tensor = append(append(tensor, names...), l.baseline.Variant)
		case len(names) > 7:
			half := (len(names) + 1) / 2
			add("FP32 steps "+names[0][:2]+"–"+names[half-1][:2], append(slices.Clone(names[:half]), l.baseline.Variant))
			add("FP32 steps "+names[half][:2]+"–"+names[len(names)-1][:2], append(slices.Clone(names[half:]), l.baseline.Variant))
		default:
			add("FP32 steps", append(names, l.baseline.Variant))
		}
	}
	if len(tensor) > 0 {
		add("tensor-core steps", tensor)
	}
	return groups
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

// devices lists the devices of records in their order.
func devices(recs []bench.Record) []string {
	var ids []string
	for _, r := range recs {
		if !slices.Contains(ids, r.Device) {
			ids = append(ids, r.Device)
		}
	}
	return ids
}

func lastSize(recs []bench.Record) string {
	sizes := bench.Sizes(recs)
	if len(sizes) == 0 {
		return ""
	}
	return sizes[len(sizes)-1]
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
		ratio := median / at1024.GFLOPS
		fmt.Fprintf(&b, "**%s:** at K = 1024 the naive step runs at %s; at the other K its median is %s. ", at1024.DeviceName, gflops(at1024.GFLOPS), gflops(median))
		switch {
		case ratio > 1.2:
			fmt.Fprintf(&b, "The power-of-two stride costs it a factor of %.2g.\n\n", ratio)
		case ratio < 1/1.2:
			fmt.Fprintf(&b, "Here K = 1024 is the faster one, by a factor of %.2g.\n\n", 1/ratio)
		default:
			b.WriteString("Within a fifth of each other: no power-of-two effect on this device.\n\n")
		}
	}
	return b.String()
}
