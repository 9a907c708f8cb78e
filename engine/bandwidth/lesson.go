package bandwidth

import (
	"fmt"
	"strings"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// What notebook 00 says about a run, built from its records, so that its
// prose never types a number the run measured.

// CopyStory says, for each device of a copy run, how much of the device's
// peak the baseline (the driver's copy, or one goroutine's) moved at the
// largest size, how each other variant compares with it there, and what
// the baseline moved at the smallest size.
func CopyStory(recs []bench.Record) string {
	var b strings.Builder
	for _, id := range devices(recs) {
		var mine []bench.Record
		for _, r := range recs {
			if r.Device == id && r.Suite == "copy" && r.OK {
				mine = append(mine, r)
			}
		}
		sizes := bench.Sizes(mine)
		if len(sizes) == 0 {
			continue
		}
		small, large := bench.OfSize(mine, sizes[0]), bench.OfSize(mine, sizes[len(sizes)-1])
		base := baseline(large)
		if base.Variant == "" {
			continue
		}
		fmt.Fprintf(&b, "- **%s** (`%s`), at %s per array: the baseline `%s` moved %s", base.DeviceName, id, base.Size, base.Variant, gbps(base.GBps))
		if base.PctPeakGBps > 0 {
			fmt.Fprintf(&b, ", %.0f%% of the device's peak", base.PctPeakGBps)
		}
		var others []string
		for _, r := range large {
			if r.Variant != base.Variant {
				others = append(others, fmt.Sprintf("`%s` %.2f×", r.Variant, r.Speedup))
			}
		}
		if len(others) > 0 {
			fmt.Fprintf(&b, "; against it, %s", strings.Join(others, ", "))
		}
		if sb := baseline(small); sb.Variant != "" && len(sizes) > 1 {
			fmt.Fprintf(&b, ". At %s per array the baseline moved %s", sb.Size, gbps(sb.GBps))
		}
		b.WriteString(".\n")
	}
	return b.String()
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
