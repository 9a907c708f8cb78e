package sparse

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// The benchmark runs of notebook 03 (the spgemm and spmv suites, measured
// now or read from docs/results): a figure per ladder and the sentences
// that say what the records show. Each function reads the records of one
// device.

// SpMVLadder is the CUDA SpMV ladder in the spmv suite's variant names:
// 01 scalar, 02 vector (lanes matched to the mean row length), 03 stream,
// 04 vector with rows in flight, 05 SELL-C-σ (a thread per row, coalesced by the layout).
var SpMVLadder = []string{"spmv_scalar", "spmv_vector_adaptive", "spmv_stream", "spmv_vector_rows", "spmv_sell"}

// LadderFigure draws each step's speedup over the baseline, one line per
// matrix, the steps 1, 2, ... on the x axis, named in its label
// (stepsLabel), and a logarithmic y axis (the steps differ by decades);
// refLabel names the baseline's line at 1.
func LadderFigure(title, ylabel, refLabel string, recs []bench.Record, steps []string) *plot.Figure {
	r := indexRun(recs)
	var series []plot.Series
	for _, size := range r.sizes {
		line := plot.Series{Name: Label(size)}
		for i, step := range steps {
			if rec, ok := r.get(size, step); ok && rec.Speedup > 0 {
				line.X, line.Y = append(line.X, float64(i+1)), append(line.Y, rec.Speedup)
			}
		}
		if len(line.X) > 0 {
			series = append(series, line)
		}
	}
	return plot.Lines(title, stepsLabel(steps), ylabel, series...).LogY().WithReference(1, refLabel)
}

// stepsLabel is the x axis label of a ladder: each step's number and its
// variant without the suite's prefix, "step: 1 scalar · 2 vector_adaptive".
func stepsLabel(steps []string) string {
	names := make([]string, len(steps))
	for i, s := range steps {
		s = strings.TrimPrefix(s, "spmv_")
		if len(s) > 3 && s[2] == '_' && strings.Trim(s[:2], "0123456789") == "" {
			s = s[3:]
		}
		names[i] = fmt.Sprintf("%d %s", i+1, s)
	}
	return "step: " + strings.Join(names, " · ")
}

// CPUMarkdown says, for each matrix of a CPU run, how each variant compares
// with the serial baseline, counting the cores for the parallel ones.
func CPUMarkdown(recs []bench.Record, cores int) string {
	r := indexRun(recs)
	var b strings.Builder
	for _, size := range r.sizes {
		var parts []string
		var base bench.Record
		for _, rec := range recs {
			if rec.Size != size || !rec.OK || rec.Speedup == 0 {
				continue
			}
			if rec.Variant == rec.Baseline {
				base = rec
				continue
			}
			s := fmt.Sprintf("%s %s", rec.Variant, times(rec.Speedup))
			if strings.Contains(rec.Variant, "parallel") {
				s += fmt.Sprintf(" on %d cores", cores)
				if rec.Speedup < 1 {
					s += " (slower than serial here: other work on the cores, or too little work to share)"
				}
			}
			parts = append(parts, s)
		}
		fmt.Fprintf(&b, "- **%s:** against %s (%s): %s.\n", Label(size), base.Variant, msText(base.MedianMS), bench.JoinAnd(parts))
	}
	return b.String()
}

// matrixTimes lists, for each size with both variants, "label T1 → T2"
// of their median times, and counts the sizes where the second is slower
// beyond noise (bench.Slower).
func matrixTimes(r recordSet, from, to string) (items []string, slower, n int) {
	for _, size := range r.sizes {
		a, okA := r.get(size, from)
		b, okB := r.get(size, to)
		if !okA || !okB {
			continue
		}
		n++
		if bench.Slower(b, a) {
			slower++
		}
		items = append(items, fmt.Sprintf("%s %s → %s", Label(size), msText(a.MedianMS), msText(b.MedianMS)))
	}
	return items, slower, n
}

// gains returns, for each size with both variants, how many times faster
// to is than from, and the sizes, in measured order.
func gains(r recordSet, from, to string) (ratios []float64, sizes []string) {
	for _, size := range r.sizes {
		a, okA := r.get(size, from)
		b, okB := r.get(size, to)
		if okA && okB && b.MedianMS > 0 {
			ratios, sizes = append(ratios, a.MedianMS/b.MedianMS), append(sizes, size)
		}
	}
	return ratios, sizes
}

// extremes returns the indices of the smallest and the largest value.
func extremes(v []float64) (lo, hi int) {
	for i := range v {
		if v[i] < v[lo] {
			lo = i
		}
		if v[i] > v[hi] {
			hi = i
		}
	}
	return lo, hi
}

// lead is 1 where x ran faster than y beyond noise (bench.Differ), -1
// where it ran slower, and 0 where the two are on par.
func lead(x, y bench.Record) int {
	switch {
	case bench.Slower(y, x):
		return 1
	case bench.Slower(x, y):
		return -1
	}
	return 0
}

// SpGEMMLadderMarkdown reads a CUDA spgemm run (cuSPARSE and the steps of
// GPUSteps): a table of peak memory, then what each step changed, where
// the best step wins or loses against cuSPARSE, and the geometric means.
func SpGEMMLadderMarkdown(recs []bench.Record) string {
	r := indexRun(recs)
	if len(r.sizes) == 0 {
		return "*(no passing records)*\n"
	}
	var b strings.Builder
	b.WriteString(peakMemoryTable(r, append([]string{"cusparse"}, GPUSteps...)))
	var bullets []string
	add := func(format string, args ...any) { bullets = append(bullets, fmt.Sprintf(format, args...)) }

	// 01 -> 02: exact allocation.
	if items, slower, n := matrixTimes(r, GPUSteps[0], GPUSteps[1]); n > 0 {
		smaller := 0
		for _, size := range r.sizes {
			a, okA := r.get(size, GPUSteps[0])
			c, okC := r.get(size, GPUSteps[1])
			if okA && okC && c.Params.Float("peak_bytes") < a.Params.Float("peak_bytes") {
				smaller++
			}
		}
		s := fmt.Sprintf("**01 → 02, exact allocation.** Step 02 needs less memory than step 01 on %d of %d matrices (the table above), and is slower on %d of them: %s.",
			smaller, n, slower, strings.Join(items, "; "))
		if slower == n {
			s += " The second pass over a dense accumulator costs more than the allocation it saves; a two-phase product pays only once each pass is cheap."
		}
		add("%s", s)
	}
	// 02 -> 03: hash tables in shared memory.
	if ratios, sizes := gains(r, GPUSteps[1], GPUSteps[2]); len(ratios) > 0 {
		lo, hi := extremes(ratios)
		add("**02 → 03, shared-memory hash tables.** Step 03 is from %s as fast as step 02's dense accumulator in global memory on %s to %s on %s.",
			times(ratios[lo]), Label(sizes[lo]), times(ratios[hi]), Label(sizes[hi]))
	}
	// 03 -> 04: binning.
	if ratios, sizes := gains(r, GPUSteps[2], GPUSteps[3]); len(ratios) > 0 {
		var items, ties []string
		for i, size := range sizes {
			rec, _ := r.get(size, GPUSteps[3])
			if math.Abs(ratios[i]-1) <= 0.1 {
				ties = append(ties, Label(size))
				continue
			}
			items = append(items, fmt.Sprintf("%s on %s at %.0f products per row", times(ratios[i]), Label(size), perRow(rec, "products")))
		}
		s := "**03 → 04, binning.** "
		if len(items) > 0 {
			s += "Step 04, with a table sized to each row, runs " + bench.JoinAnd(items) + " as fast as step 03's one table for every row. "
		}
		if len(ties) > 0 {
			s += fmt.Sprintf("On %s the two are within 10%%: the time is in the long rows, which both send to the same dense windows (section 6 times them).", bench.JoinAnd(ties))
		}
		add("%s", s)
	}
	// The best step against cuSPARSE: a win or a loss beyond noise, else on par.
	var wins, losses, par []string
	winPerRow, lossPerRow := math.Inf(1), 0.0 // entries of C per row
	for _, size := range r.sizes {
		best, ok := bestOf(r, size, GPUSteps)
		cu, okCu := r.get(size, "cusparse")
		if !ok || !okCu {
			continue
		}
		item := fmt.Sprintf("%s with step %s at %s", Label(size), best.Variant[:2], times(best.Speedup))
		switch lead(best, cu) {
		case 1:
			wins = append(wins, item)
			winPerRow = min(winPerRow, perRow(best, "nnz_c"))
		case -1:
			losses = append(losses, item)
			lossPerRow = max(lossPerRow, perRow(best, "nnz_c"))
		default:
			par = append(par, item)
		}
	}
	if len(wins)+len(losses)+len(par) > 0 {
		clauses := phrases(phrase{"wins on ", wins}, phrase{"loses on ", losses}, phrase{"is on par with it, within noise, on ", par})
		s := "**Against cuSPARSE,** the best step " + bench.JoinAnd(clauses)
		if len(wins) > 0 && len(losses) > 0 && lossPerRow < winPerRow {
			s += fmt.Sprintf(". Where it loses, the rows of C are short (at most %.0f entries on average, against at least %.0f where it wins): each row is cheap, and cuSPARSE's fixed costs are lower than the binning round trips", lossPerRow, winPerRow)
		}
		add("%s.", s)
	}
	// Peak memory where cuSPARSE needs the most.
	if size, ok := largestPeak(r, "cusparse"); ok {
		cu, _ := r.get(size, "cusparse")
		if best, ok := bestOf(r, size, GPUSteps); ok {
			add("**Memory.** On %s, cuSPARSE peaked at %s of device memory, step %s at %s.",
				Label(size), bytesText(cu.Params.Float("peak_bytes")), best.Variant[:2], bytesText(best.Params.Float("peak_bytes")))
		}
	}
	// 05: ESC.
	if ratios, sizes := gains(r, GPUSteps[3], GPUSteps[4]); len(ratios) > 0 {
		lo, _ := extremes(ratios)
		slower := 0
		for _, size := range sizes {
			a, _ := r.get(size, GPUSteps[3])
			c, _ := r.get(size, GPUSteps[4])
			if bench.Slower(c, a) {
				slower++
			}
		}
		a, _ := r.get(sizes[lo], GPUSteps[3])
		c, _ := r.get(sizes[lo], GPUSteps[4])
		add("**05, outer product (ESC),** is slower than step 04 on %d of %d matrices, furthest behind on %s: %s against %s. Every product goes through global memory before any is merged.",
			slower, len(ratios), Label(sizes[lo]), msText(c.MedianMS), msText(a.MedianMS))
	}
	// 04 -> 06: the long rows.
	if ratios, sizes := gains(r, GPUSteps[3], GPUSteps[5]); len(ratios) > 0 {
		var same, faster []string
		for i, size := range sizes {
			a, _ := r.get(size, GPUSteps[3])
			b, _ := r.get(size, GPUSteps[5])
			if !bench.Differ(a, b) {
				same = append(same, Label(size))
			} else {
				faster = append(faster, fmt.Sprintf("%s on %s", times(ratios[i]), Label(size)))
			}
		}
		s := "**04 → 06, balanced long rows.** "
		if len(same) > 0 {
			s += fmt.Sprintf("Step 06 changes only the rows that go to the dense windows: on par with step 04, within noise, on %s", bench.JoinAnd(same))
			if len(faster) > 0 {
				s += "; "
			}
		}
		if len(faster) > 0 {
			s += "step 04's speed times " + bench.JoinAnd(faster)
		}
		add("%s.", s)
	}
	// Geometric means against cuSPARSE.
	var means []string
	for _, step := range []string{GPUSteps[5], GPUSteps[3]} {
		var v []float64
		for _, size := range r.sizes {
			if rec, ok := r.get(size, step); ok && rec.Speedup > 0 {
				v = append(v, rec.Speedup)
			}
		}
		if len(v) > 0 {
			means = append(means, fmt.Sprintf("step %s %s over %d matrices", step[:2], times(geomean(v)), len(v)))
		}
	}
	if len(means) > 0 {
		add("**Geometric mean against cuSPARSE:** %s.", bench.JoinAnd(means))
	}
	b.WriteString("\n")
	for _, s := range bullets {
		b.WriteString("- " + s + "\n")
	}
	return b.String()
}

// bestOf returns the fastest of variants at size.
func bestOf(r recordSet, size string, variants []string) (bench.Record, bool) {
	var best bench.Record
	found := false
	for _, v := range variants {
		if rec, ok := r.get(size, v); ok && (!found || rec.MedianMS < best.MedianMS) {
			best, found = rec, true
		}
	}
	return best, found
}

// largestPeak returns the size at which variant's peak memory is largest.
func largestPeak(r recordSet, variant string) (string, bool) {
	var at string
	peak := 0.0
	for _, size := range r.sizes {
		if rec, ok := r.get(size, variant); ok && rec.Params.Float("peak_bytes") > peak {
			at, peak = size, rec.Params.Float("peak_bytes")
		}
	}
	return at, peak > 0
}

// peakMemoryTable tabulates the peak_bytes of each variant at each size.
func peakMemoryTable(r recordSet, variants []string) string {
	var b strings.Builder
	b.WriteString("Peak device memory beyond A, MiB:\n\n| matrix | " + strings.Join(variants, " | ") + " |\n|---|" + strings.Repeat("---:|", len(variants)) + "\n")
	for _, size := range r.sizes {
		b.WriteString("| " + Label(size))
		for _, v := range variants {
			if rec, ok := r.get(size, v); ok && rec.Params.Float("peak_bytes") > 0 {
				fmt.Fprintf(&b, " | %.0f", rec.Params.Float("peak_bytes")/(1<<20))
			} else {
				b.WriteString(" | -")
			}
		}
		b.WriteString(" |\n")
	}
	return b.String()
}

// SpMVMarkdown reads a CUDA spmv run, where each variant's speedup over
// copy_bound is the share of the bandwidth bound it reaches: what each step
// of SpMVLadder does on each matrix, how the best compares with cuSPARSE,
// and where the x-gather probe caps every CSR kernel.
func SpMVMarkdown(recs []bench.Record) string {
	r := indexRun(recs)
	if len(r.sizes) == 0 {
		return "*(no passing records)*\n"
	}
	var bullets, past []string
	add := func(format string, args ...any) { bullets = append(bullets, fmt.Sprintf(format, args...)) }
	// share prints rec's share of the bound, marked ‡ past it (the note
	// after the bullets says why a kernel can pass a copy).
	share := func(rec bench.Record) string {
		s := percent(rec.Speedup)
		if rec.Speedup <= 1 {
			return s
		}
		noise := "beyond noise"
		if base, ok := r.get(rec.Size, rec.Baseline); ok && !bench.Differ(rec, base) {
			noise = "within noise"
		}
		past = append(past, fmt.Sprintf("%s on %s (%s, %s)", rec.Variant, Label(rec.Size), s, noise))
		return s + " ‡"
	}
	shares := func(variant string, withRow bool) []string {
		type item struct {
			text  string
			share float64
		}
		var items []item
		for _, size := range r.sizes {
			if rec, ok := r.get(size, variant); ok {
				text := fmt.Sprintf("%s of the bound on %s", share(rec), Label(size))
				if withRow {
					text += fmt.Sprintf(" at %.1f entries per row", perRow(rec, "nnz"))
				}
				items = append(items, item{text, rec.Speedup})
			}
		}
		slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(b.share, a.share) })
		var out []string
		for _, it := range items {
			out = append(out, it.text)
		}
		return out
	}
	if s := shares("spmv_scalar", true); len(s) > 0 {
		add("**Scalar (01),** a thread per row, reaches %s. A thread reads its row's entries one after another, which suits short rows of even length; a warp waits for its longest row.", bench.JoinAnd(s))
	}
	var idle []string
	for _, size := range r.sizes {
		if rec, ok := r.get(size, "spmv_vector"); ok {
			if mean := perRow(rec, "nnz"); mean < 32 {
				idle = append(idle, fmt.Sprintf("%s of the bound on %s, with %.0f of 32 lanes idle", percent(rec.Speedup), Label(size), 32-math.Ceil(mean)))
			}
		}
	}
	if len(idle) > 0 {
		s := "**Vector (02),** a warp per row, wastes lanes on short rows: " + bench.JoinAnd(idle) + "."
		if a := shares("spmv_vector_adaptive", false); len(a) > 0 {
			s += " With lanes matched to the mean row length it reaches " + bench.JoinAnd(a) + ": each group has one row, and waits on three loads in a row (bounds, then columns and values, then x)."
		}
		add("%s", s)
	}
	if ratios, sizes := gains(r, "spmv_vector_adaptive", "spmv_vector_rows"); len(ratios) > 0 {
		var up, down []string
		for i, size := range sizes {
			rec, _ := r.get(size, "spmv_vector_rows")
			item := fmt.Sprintf("%s on %s to %s of the bound", times(ratios[i]), Label(size), share(rec))
			if ratios[i] >= 1 {
				up = append(up, item)
			} else {
				down = append(down, item)
			}
		}
		s := "**Vector with rows in flight (04)** keeps step 02's layout and issues the loads of several rows before using any. Against step 02 with lanes matched to the mean row length (spmv_vector_adaptive, step 2 of the chart): "
		if len(up) > 0 {
			s += "its speed times " + bench.JoinAnd(up)
		}
		if len(down) > 0 {
			if len(up) > 0 {
				s += ", but "
			}
			s += "only " + bench.JoinAnd(down) + ": a group walks its rows until the longest is done, so one long row holds up the others"
		}
		add("%s.", s)
	}
	if s := shares("spmv_stream", false); len(s) > 0 {
		var ahead, par, behind []string
		for _, size := range r.sizes {
			st, ok := r.get(size, "spmv_stream")
			cu, okCu := bestOf(r, size, []string{"cusparse_csr_alg1", "cusparse_csr_alg2"})
			if !ok || !okCu {
				continue
			}
			switch lead(st, cu) {
			case 1:
				ahead = append(ahead, Label(size))
			case -1:
				behind = append(behind, Label(size))
			default:
				par = append(par, Label(size))
			}
		}
		against := phrases(phrase{"faster on ", ahead}, phrase{"on par, within noise, on ", par}, phrase{"slower on ", behind})
		text := fmt.Sprintf("**Stream (03)** gives every block the same amount of data and many independent loads per thread: %s.", bench.JoinAnd(s))
		if len(against) > 0 {
			text += " Against cuSPARSE's better algorithm on each matrix, it is " + bench.JoinAnd(against) + "."
		}
		add("%s", text)
	}
	if s := shares("spmv_sell", false); len(s) > 0 {
		var padding []string
		for _, size := range r.sizes {
			if rec, ok := r.get(size, "spmv_sell"); ok && rec.Params.Float("nnz") > 0 {
				padding = append(padding, fmt.Sprintf("%s on %s", times(rec.Params.Float("padded_entries")/rec.Params.Float("nnz")), Label(size)))
			}
		}
		text := fmt.Sprintf("**SELL (05)** is step 01's thread per row, with the matrix laid out so that a warp's loads coalesce: %s.", bench.JoinAnd(s))
		if ratios, sizes := gains(r, "spmv_scalar", "spmv_sell"); len(ratios) > 0 {
			var items []string
			for i, size := range sizes {
				items = append(items, fmt.Sprintf("%s on %s", times(ratios[i]), Label(size)))
			}
			text += " Against step 01's speed: " + bench.JoinAnd(items) + "."
		}
		if len(padding) > 0 {
			text += " Each chunk is as long as its longest row, so the layout holds more entries than the matrix: " + bench.JoinAnd(padding) + " as many."
		}
		add("%s", text)
	} else if _, ok := r.get(r.sizes[0], "spmv_scalar"); ok {
		add("**SELL (05)** is not in these records: the run predates step 05, or left it out.")
	}
	var capped, passed []string
	for _, size := range r.sizes {
		probe, ok := r.get(size, "x_gather_probe")
		best, okBest := bestOf(r, size, append(slices.Clone(SpMVLadder), "cusparse_csr_alg1", "cusparse_csr_alg2"))
		if !ok || !okBest {
			continue
		}
		if probe.Speedup < 1 {
			capped = append(capped, fmt.Sprintf("on %s the probe reaches %s of the bound and the fastest kernel (%s) %s, %s of the probe's speed",
				Label(size), percent(probe.Speedup), best.Variant, percent(best.Speedup), percent(probe.MedianMS/best.MedianMS)))
		} else {
			passed = append(passed, fmt.Sprintf("%s (%s)", Label(size), percent(probe.Speedup)))
		}
	}
	if len(capped) > 0 {
		add("**The x gather caps the random matrices.** The probe only reads the column indices and the x they name, which every CSR kernel must do: %s. No CSR kernel can pass the probe there.", strings.Join(capped, "; "))
	}
	if len(passed) > 0 {
		add("**On %s the probe passes the bound:** neighbouring rows read the same x, so the gather costs less than the bytes the bound counts.", bench.JoinAnd(passed))
	}
	if len(past) > 0 {
		add("‡ **Past the bound:** %s. The bound is a device copy of the bytes an SpMV counts, each read from DRAM once; a kernel whose reads of x hit L2 fetches fewer bytes from DRAM than it counts, so it can run faster than the copy.", bench.JoinAnd(past))
	}
	var b strings.Builder
	for _, s := range bullets {
		b.WriteString("- " + s + "\n")
	}
	return b.String()
}

// BaselineMarkdown says, for each matrix, how each of variants compares
// with the run's baseline: its time against the baseline's and the ratio.
func BaselineMarkdown(recs []bench.Record, variants ...string) string {
	r := indexRun(recs)
	var b strings.Builder
	for _, size := range r.sizes {
		var parts []string
		base := ""
		for _, v := range variants {
			rec, ok := r.get(size, v)
			if !ok || rec.Speedup == 0 {
				continue
			}
			baseRec, _ := r.get(size, rec.Baseline)
			base = fmt.Sprintf("%s %s", rec.Baseline, msText(baseRec.MedianMS))
			parts = append(parts, fmt.Sprintf("%s %s (%s)", v, msText(rec.MedianMS), times(rec.Speedup)))
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "- **%s:** %s, against %s.\n", Label(size), bench.JoinAnd(parts), base)
		}
	}
	return b.String()
}

// CompareDevices compares shown, a run the notebook has shown (measured
// now, or recorded where there is no GPU), with the first of others that
// ran on another device (DeviceChangeMarkdown): a live run is compared with
// a recorded run on another GPU, not two records with each other.
func CompareDevices(shown []bench.Record, others ...[]bench.Record) string {
	if len(shown) == 0 {
		return "*(nothing to compare)*\n"
	}
	for _, other := range others {
		if len(other) > 0 && other[0].DeviceName != shown[0].DeviceName {
			return DeviceChangeMarkdown(other, shown)
		}
	}
	return fmt.Sprintf("*(every run here is on the %s: no other GPU to compare)*\n", shown[0].DeviceName)
}

// DeviceChangeMarkdown compares two runs of the same variants and sizes on
// two devices: for each variant, how much longer (or shorter) it takes on
// the second device, over the sizes both ran. It names each run by its
// device, commit and day, as the captions of their tables do.
func DeviceChangeMarkdown(first, second []bench.Record) string {
	a, b := indexRun(first), indexRun(second)
	if len(a.sizes) == 0 || len(b.sizes) == 0 {
		return "*(nothing to compare)*\n"
	}
	devB := second[0].DeviceName
	var variants []string
	ratios := map[string][]float64{}
	for _, size := range a.sizes {
		for _, rec := range first {
			if rec.Size != size || !rec.OK {
				continue
			}
			other, ok := b.get(size, rec.Variant)
			if !ok || rec.MedianMS == 0 {
				continue
			}
			if ratios[rec.Variant] == nil {
				variants = append(variants, rec.Variant)
			}
			ratios[rec.Variant] = append(ratios[rec.Variant], other.MedianMS/rec.MedianMS)
		}
	}
	var out strings.Builder
	run := func(r bench.Record) string {
		day, _, _ := strings.Cut(r.Date, "T")
		return fmt.Sprintf("the %s (commit `%s`, %s)", r.DeviceName, r.Commit, day)
	}
	same := ": the source may differ as well as the GPU"
	if first[0].Commit == second[0].Commit {
		same = ", the same source"
	}
	fmt.Fprintf(&out, "Time on %s against %s%s, geometric mean over the matrices both ran:\n\n", run(second[0]), run(first[0]), same)
	baseline := first[0].Baseline
	most, least := true, true
	for _, v := range variants {
		x := geomean(ratios[v])
		change := "longer"
		if x < 1 {
			change = "shorter"
		}
		fmt.Fprintf(&out, "- %s: %s (%s %s)\n", v, times(x), percent(math.Abs(x-1)), change)
		if v != baseline && len(ratios[baseline]) > 0 {
			most = most && geomean(ratios[baseline]) > x
			least = least && geomean(ratios[baseline]) < x
		}
	}
	switch {
	case len(ratios[baseline]) == 0:
	case most:
		fmt.Fprintf(&out, "\nThe baseline, %s, changed the most, so every other variant's speedup over it is higher on the %s.\n", baseline, devB)
	case least:
		fmt.Fprintf(&out, "\nThe baseline, %s, changed the least, so every other variant's speedup over it is lower on the %s.\n", baseline, devB)
	}
	return out.String()
}

// phrase is a lead ("faster on ") and the items it names.
type phrase struct {
	lead  string
	items []string
}

// phrases is each phrase with items as its lead and the items joined,
// "faster on a and b", in order; phrases without items are left out.
func phrases(ps ...phrase) []string {
	var out []string
	for _, p := range ps {
		if len(p.items) > 0 {
			out = append(out, p.lead+bench.JoinAnd(p.items))
		}
	}
	return out
}
