package bandwidth

import (
	"fmt"
	"slices"
	"strings"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// What notebook 00 says about a run, built from its records, so that its
// prose never types a number the run measured.

// CopyStory says, for each device of a copy run, how much of the device's
// peak the baseline (the driver's copy, or one goroutine's) moved at the
// largest size, how each other variant compares with it there, and what
// the baseline moved at the smallest size.
func CopyStory(recs []bench.Record) string {
	var b strings.Builder
	for _, run := range copyRuns(recs) {
		id, mine, sizes := run.id, run.recs, run.sizes
		small, large := bench.OfSize(mine, sizes[0]), bench.OfSize(mine, sizes[len(sizes)-1])
		base := baseline(large)
		if base.Variant == "" {
			continue
		}
		fmt.Fprintf(&b, "- **%s** (`%s`), at %s per array: the baseline `%s` moved %s", base.DeviceName, id, base.Size, base.Variant, gbps(base.GBps))
		if base.PctPeakGBps > 0 && !bench.Effective(base) {
			fmt.Fprintf(&b, ", %.0f%% of the device's peak", base.PctPeakGBps)
		}
		b.WriteString(cacheServed(base))
		var others []string
		for _, r := range large {
			if r.Variant != base.Variant {
				others = append(others, fmt.Sprintf("`%s` %.2f×%s", r.Variant, r.Speedup, cacheServed(r)))
			}
		}
		if len(others) > 0 {
			fmt.Fprintf(&b, "; against it, %s", strings.Join(others, ", "))
		}
		if sb := baseline(small); sb.Variant != "" && len(sizes) > 1 {
			fmt.Fprintf(&b, ". At %s per array the baseline moved %s%s", sb.Size, gbps(sb.GBps), cacheServed(sb))
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// GridStrideStory sets copy_f4_grid_stride against copy_f4 at the largest
// size of each device that ran both (CUDA only), and reads the difference
// with bench.Differ: within noise, slower or faster, and what that says
// about one looping wave of blocks against a launch covering the array.
func GridStrideStory(recs []bench.Record) string {
	var b strings.Builder
	for _, run := range copyRuns(recs) {
		id, mine, sizes := run.id, run.recs, run.sizes
		var gs, f4 bench.Record
		for _, r := range bench.OfSize(mine, sizes[len(sizes)-1]) {
			switch r.Variant {
			case "copy_f4_grid_stride":
				gs = r
			case "copy_f4":
				f4 = r
			}
		}
		if gs.Variant == "" || f4.Variant == "" {
			continue
		}
		fmt.Fprintf(&b, "- **%s** (`%s`), at %s per array: `copy_f4_grid_stride` moved %s, `copy_f4` %s: ", gs.DeviceName, id, gs.Size, gbps(gs.GBps), gbps(f4.GBps))
		switch {
		case !bench.Differ(gs, f4):
			b.WriteString("within noise of each other. Launching and retiring the blocks of a plain launch cost nothing that one looping wave saves.\n")
		case bench.Slower(gs, f4):
			fmt.Fprintf(&b, "the grid-stride loop is slower, at %.2f× `copy_f4`. Its one wave of blocks has fewer loads in flight than a launch covering the array, and the loop adds index arithmetic; the block scheduler was not the cost.\n", gs.GBps/f4.GBps)
		default:
			fmt.Fprintf(&b, "the grid-stride loop is faster, at %.2f× `copy_f4`: here launching and retiring blocks cost something that one looping wave saves.\n", gs.GBps/f4.GBps)
		}
	}
	if b.Len() == 0 {
		return "*No device here ran `copy_f4_grid_stride` (a CUDA kernel): the recorded H200 run below has it.*\n"
	}
	return b.String()
}

// cacheServed is what a story says after a rate that is a cache's, not
// memory's (bench.Effective), and "" after any other: such a rate has no
// share of the memory peak, and a speedup to it is the cache's, not the
// variant's.
func cacheServed(r bench.Record) string {
	switch {
	case r.InCache:
		return " ‡ (effective: every byte it moves fits in the last-level cache, so the cache served it, not memory)"
	case bench.Effective(r):
		return " ‡ (effective: more than memory can move, so caches served part of it)"
	}
	return ""
}

// InFlight applies Little's law to each device with a known peak: to keep
// its memory busy, peak bandwidth × latency bytes must be in flight. The
// latency is a typical DRAM round trip on a GPU (about 600 ns on Hopper,
// from microbenchmark studies); on a CPU, about 100 ns.
func InFlight(devs []engine.Info) string {
	var b strings.Builder
	for _, d := range devs {
		if d.PeakGBps <= 0 {
			continue
		}
		latency := 600e-9
		if d.Kind == engine.CPU || strings.Contains(d.Platform, "Portable") {
			latency = 100e-9
		}
		fmt.Fprintf(&b, "- **%s** (`%s`): %s × %.0f ns ≈ %s in flight.\n", d.Name, d.ID, gbps(d.PeakGBps), latency*1e9, bytesText(d.PeakGBps*1e9*latency))
	}
	return b.String()
}

// baseline is the record among recs that is its own baseline.
func baseline(recs []bench.Record) bench.Record {
	for _, r := range recs {
		if r.Variant == r.Baseline {
			return r
		}
	}
	return bench.Record{}
}

// devices lists the devices of records in their order.
// copyRun is one device's passing records of the copy suite, and their
// sizes in the order measured.
type copyRun struct {
	id    string
	recs  []bench.Record
	sizes []string
}

// copyRuns is the copy runs of the devices of recs that have any.
func copyRuns(recs []bench.Record) []copyRun {
	var runs []copyRun
	for _, id := range devices(recs) {
		var mine []bench.Record
		for _, r := range recs {
			if r.Device == id && r.Suite == "copy" && r.OK {
				mine = append(mine, r)
			}
		}
		if sizes := bench.Sizes(mine); len(sizes) > 0 {
			runs = append(runs, copyRun{id, mine, sizes})
		}
	}
	return runs
}

func devices(recs []bench.Record) []string {
	var ids []string
	seen := map[string]bool{}
	for _, r := range recs {
		if !seen[r.Device] {
			seen[r.Device] = true
			ids = append(ids, r.Device)
		}
	}
	return ids
}

func gbps(g float64) string {
	if g >= 1000 {
		return fmt.Sprintf("%.3g TB/s", g/1000)
	}
	return fmt.Sprintf("%.3g GB/s", g)
}

func bytesText(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MB", n/1e6)
	case n >= 1<<10:
		return fmt.Sprintf("%.3g KB", n/1e3)
	}
	return fmt.Sprintf("%.0f bytes", n)
}

// CopyFigures draws the copy records against size: GB/s, then the share
// of the device's peak bandwidth (rows served from cache left out:
// bench.Effective), each for the devices in host memory (the CPU and
// OpenCL on it) and for the GPUs apart, one line per device and variant;
// a group with more lines than a chart holds (bench.MaxSeries) is split
// into charts of near equal size, and a chart left with a single size
// (all the others served from cache) is not drawn: the table says it all.
func CopyFigures(recs []bench.Record) []*plot.Figure {
	var figs []*plot.Figure
	for _, m := range []struct {
		metric bench.Metric
		title  string
		logY   bool
	}{{bench.GBps, "GB/s (read + write)", true}, {bench.PctPeakGBps, "% of the device's peak bandwidth, ‡ rows left out", false}} {
		for _, host := range []bool{true, false} {
			var mine []bench.Record
			for _, r := range recs {
				if r.Suite == "copy" && r.OnCPU == host {
					mine = append(mine, r)
				}
			}
			where := "on the GPUs"
			if host {
				where = "in host memory"
			}
			lines := uniqueLines(mine)
			parts := (len(lines) + bench.MaxSeries - 1) / bench.MaxSeries
			for i := range parts {
				keep := lines[i*len(lines)/parts : (i+1)*len(lines)/parts]
				var part []bench.Record
				for _, r := range mine {
					if slices.Contains(keep, bench.ByDeviceVariant(r)) {
						part = append(part, r)
					}
				}
				title := fmt.Sprintf("copy %s: %s against bytes per array", where, m.title)
				if parts > 1 {
					title += fmt.Sprintf(" (%d of %d)", i+1, parts)
				}
				f := bench.SizeLines(title, "bytes", m.metric, part, bench.ByDeviceVariant)
				if distinctX(f.Series()) < 2 {
					continue
				}
				if m.logY {
					f.LogY()
				}
				figs = append(figs, f)
			}
		}
	}
	return figs
}

// distinctX counts the distinct x values of series.
func distinctX(series []plot.Series) int {
	var xs []float64
	for _, s := range series {
		xs = append(xs, s.X...)
	}
	slices.Sort(xs)
	return len(slices.Compact(xs))
}

// uniqueLines is the device-and-variant names of recs in the order they
// first appear.
func uniqueLines(recs []bench.Record) []string {
	var out []string
	for _, r := range recs {
		if n := bench.ByDeviceVariant(r); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
