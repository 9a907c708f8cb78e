package kmeans

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// The charts of notebook 04, built from a run's results.

// SpeedupFigures draws the speedup of each variant over its baseline, one
// chart per device and size, titled with the device, the size and note
// ("measured now", "recorded"). A size with no variant compared with its
// baseline gets no chart.
func SpeedupFigures(recs []bench.Record, note string) []*plot.Figure {
	var out []*plot.Figure
	for _, g := range groups(recs, nil) {
		if !slices.ContainsFunc(g.recs, func(r bench.Record) bool { return r.Speedup > 0 && r.Variant != r.Baseline }) {
			continue
		}
		n := g.spec.N
		size := fmt.Sprintf("%d × %d", n, g.spec.D)
		if n%1000000 == 0 {
			size = fmt.Sprintf("%dM × %d", n/1000000, g.spec.D)
		} else if n%1000 == 0 {
			size = fmt.Sprintf("%dk × %d", n/1000, g.spec.D)
		}
		if g.spec.Batch > 0 {
			size += ", streamed"
		}
		out = append(out, bench.SpeedupBars(fmt.Sprintf("%s, %s (%s)", g.recs[0].DeviceName, size, note), g.recs))
	}
	return out
}

// ClusterFigure draws the points of x on their two principal axes
// (Project2D), one series per cluster of labels. A principal axis has no
// sign, so the axes are oriented to leave the top right corner, where the
// legend of a scatter chart goes, as empty as they can (OrientForLegend).
func ClusterFigure(title string, x *Matrix, labels []int32, k int) *plot.Figure {
	p := Project2D(x)
	OrientForLegend(p)
	return plot.Lines(title, "axis 1", "axis 2", ClusterSeries(p, labels, k)...).Points()
}

// ClusterSeries splits points in the plane (N×2, row-major) by label into
// one series per cluster, named "cluster c".
func ClusterSeries(p []float32, labels []int32, k int) []plot.Series {
	series := make([]plot.Series, k)
	for c := range series {
		series[c].Name = fmt.Sprintf("cluster %d", c)
	}
	for i, l := range labels {
		s := &series[l]
		s.X, s.Y = append(s.X, float64(p[2*i])), append(s.Y, float64(p[2*i+1]))
	}
	return slices.DeleteFunc(series, func(s plot.Series) bool { return len(s.X) == 0 })
}

// The corner a legend may take, as a share of the data's extent: a
// scatter chart's legend of up to 8 entries stays inside it.
const legendWidth, legendHeight = 0.25, 0.35

// OrientForLegend flips the signs of the two coordinates of points in the
// plane (N×2, row-major) so that the fewest points fall in the top right
// corner (legendWidth × legendHeight of the extent). It keeps the signs
// when they already do best.
func OrientForLegend(p []float32) {
	best, bestCount := [2]float32{1, 1}, math.MaxInt
	for _, s := range [][2]float32{{1, 1}, {-1, 1}, {1, -1}, {-1, -1}} {
		if c := inCorner(p, s); c < bestCount {
			best, bestCount = s, c
		}
	}
	for i := range p {
		p[i] *= best[i%2]
	}
}

// inCorner counts the points in the top right corner once the coordinates
// are multiplied by sign.
func inCorner(p []float32, sign [2]float32) int {
	lo := [2]float32{float32(math.Inf(1)), float32(math.Inf(1))}
	hi := [2]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
	for i, v := range p {
		v *= sign[i%2]
		lo[i%2], hi[i%2] = min(lo[i%2], v), max(hi[i%2], v)
	}
	x0 := hi[0] - legendWidth*(hi[0]-lo[0])
	y0 := hi[1] - legendHeight*(hi[1]-lo[1])
	n := 0
	for i := 0; i+1 < len(p); i += 2 {
		if p[i]*sign[0] >= x0 && p[i+1]*sign[1] >= y0 {
			n++
		}
	}
	return n
}

// HistorySeries is the inertia of each iteration of r, against iterations
// 1, 2, ...
func HistorySeries(name string, r *Result) plot.Series {
	s := plot.Series{Name: name}
	for i, v := range r.History {
		s.X, s.Y = append(s.X, float64(i+1)), append(s.Y, v)
	}
	return s
}

// lane is where a span goes on a timeline: one lane per stream and kind,
// stream 0's copies at the bottom.
func lane(s Span) (level int, name string) {
	level = 2 * s.Stream
	if s.Kind == "compute" {
		level++
	}
	return level, fmt.Sprintf("stream %d · %s", s.Stream, s.Kind)
}

// TimelineSeries draws the spans of a streamed iteration as one square wave
// per lane, named "stream S · copy" or "stream S · compute": at its lane's
// level plus 0.3 while busy, minus 0.3 while idle, with time in ms. Lane
// levels are 2·stream for copies and 2·stream + 1 for kernels.
func TimelineSeries(spans []Span) []plot.Series {
	byLevel := map[int]*plot.Series{}
	sorted := slices.Clone(spans)
	slices.SortStableFunc(sorted, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	for _, s := range sorted {
		level, name := lane(s)
		ser := byLevel[level]
		if ser == nil {
			ser = &plot.Series{Name: name}
			byLevel[level] = ser
		}
		t0, t1 := ms(s.Start), ms(s.End)
		lo, hi := float64(level)-0.3, float64(level)+0.3
		ser.X = append(ser.X, t0, t0, t1, t1)
		ser.Y = append(ser.Y, lo, hi, hi, lo)
	}
	var out []plot.Series
	for _, level := range slices.Sorted(maps.Keys(byLevel)) {
		out = append(out, *byLevel[level])
	}
	return out
}

// TimelineFigure draws the spans of a streamed iteration (TimelineSeries)
// with each lane's name on the y axis at its level.
func TimelineFigure(title string, spans []Span) *plot.Figure {
	var names []string
	for _, s := range spans {
		level, name := lane(s)
		for len(names) <= level {
			names = append(names, "")
		}
		names[level] = name
	}
	return plot.Lines(title, "ms", "", TimelineSeries(spans)...).WithYNames(names...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// busy is the total length of the union of intervals.
func busy(iv [][2]time.Duration) time.Duration {
	slices.SortFunc(iv, func(a, b [2]time.Duration) int { return cmp.Compare(a[0], b[0]) })
	var total, end time.Duration
	started := false
	for _, v := range iv {
		switch {
		case !started || v[0] > end:
			total += v[1] - v[0]
			end, started = v[1], true
		case v[1] > end:
			total += v[1] - end
			end = v[1]
		}
	}
	return total
}

// TimelineMarkdown says what a streamed iteration's timeline shows: how
// long copies and kernels were running, and for how long both were.
func TimelineMarkdown(spans []Span) string {
	if len(spans) == 0 {
		return "*(no timeline: the iteration was not streamed)*"
	}
	var copies, kernels, all [][2]time.Duration
	start, end := spans[0].Start, spans[0].End
	for _, s := range spans {
		iv := [2]time.Duration{s.Start, s.End}
		all = append(all, iv)
		if s.Kind == "copy" {
			copies = append(copies, iv)
		} else {
			kernels = append(kernels, iv)
		}
		start, end = min(start, s.Start), max(end, s.End)
	}
	c, k := busy(copies), busy(kernels)
	both := c + k - busy(all) // inclusion-exclusion: time with a copy and a kernel running
	total := end - start
	share := func(d time.Duration) string { return fmt.Sprintf("%.0f%%", 100*float64(d)/float64(total)) }
	var b strings.Builder
	fmt.Fprintf(&b, "The iteration took %s from its first copy to its last kernel. Copies were running for %s of it (%s), kernels for %s (%s), and both at once for %s.",
		durationText(total), durationText(c), share(c), durationText(k), share(k), durationText(both))
	shorter := min(c, k)
	switch {
	case shorter > 0 && both >= shorter/2:
		fmt.Fprintf(&b, " Most of the %s hides behind the %s: while one stream copies its batch, the other computes on its own, the seed's two halves.",
			map[bool]string{true: "copying", false: "computing"}[c <= k], map[bool]string{true: "kernels", false: "copies"}[c <= k])
	default:
		b.WriteString(" Little of it overlaps: the two streams mostly wait for each other.")
	}
	return b.String()
}

// A WarpRead is one shared-memory read of a warp: the 4-byte word that each
// of its 32 lanes reads.
type WarpRead struct {
	Name string
	Word func(lane int) int
}

// CenterReads are three ways for a warp to read a chunk of centers of d
// floats in shared memory: step 02's (every lane reads the same word), a
// lane per center, and step 03's (lane t reads dimension t).
func CenterReads(d int) []WarpRead {
	return []WarpRead{
		{"02: all lanes read one word", func(int) int { return 3*d + 7 }},
		{"lane t reads center t", func(t int) int { return t*d + 7 }},
		{"03: lane t reads dimension t", func(t int) int { return 3*d + t }},
	}
}

// Banks returns, for each of the 32 banks, the distinct words that r reads
// from it (lanes reading the same word share one broadcast), and the passes
// the read takes: the most words that one bank must serve.
func Banks(r WarpRead) (words [32]int, passes int) {
	seen := map[int]bool{}
	for t := range 32 {
		if w := r.Word(t); !seen[w] {
			seen[w] = true
			words[w%32]++
		}
	}
	return words, slices.Max(words[:])
}

// BankFigure draws the distinct words r reads from each bank on a scale of
// 0 to 32 for every read, titled with the passes it takes: a broadcast is
// one word in one bank, a conflict many words in one bank, a conflict-free
// spread one word in each.
func BankFigure(r WarpRead) *plot.Figure {
	words, passes := Banks(r)
	var banks []string
	var values []float64
	for b, n := range words {
		banks = append(banks, fmt.Sprint(b))
		values = append(values, float64(n))
	}
	title := fmt.Sprintf("%s: %d-way", r.Name, passes)
	if passes == 1 {
		title = r.Name + ": no conflict"
	}
	// One scale for every read (32 lanes: at most 32 words in a bank), so
	// that a broadcast's one word and a conflict's 32 do not look alike.
	return plot.Bars(title, "distinct words read from each bank (banks 0 to 31)", banks, values).WithYAtLeast(32)
}
