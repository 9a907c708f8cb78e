package kmeans

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"gpulab/engine/bench"
	"gpulab/kernels"
)

// What notebook 04 says about its runs, built from the records, so that
// its prose never types a number that a run measured.

// LiveSize is the size notebook 04 runs on a CUDA device: the seed's
// dimensions and K, a tenth of its points.
const LiveSize = "blobs:n=100000,d=1536,k=25,iters=5"

// The variants that each section of the lesson compares.
var (
	AssignmentVariants = []string{"naive", "chunked", "block_per_point"}
	UpdateVariants     = []string{"gemm_atomic", "gemm_sorted", "fused"}
	PipelineVariants   = []string{"gemm_sorted", "gemm_pipelined", "tensor_3xtf32"}
)

// LadderSteps returns the kernel files of steps first to last of the
// ladder (kernels/cuda/kmeans/NN_*.cu, from "01" to "10"), to show next to
// the section that measures them.
func LadderSteps(first, last string) ([]kernels.Step, error) {
	all, err := kernels.CUDAFamily.Steps("kmeans", "")
	if err != nil {
		return nil, err
	}
	var steps []kernels.Step
	for _, s := range all {
		if n := s.Name[:2]; n >= first && n <= last {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("kmeans: no kernel steps from %s to %s", first, last)
	}
	return steps, nil
}

// InitStory compares runs of Fit on blobs (truth gives each point's blob)
// from different initializations, named by names.
func InitStory(x *Matrix, truth func(int) int, names []string, runs []*Result) string {
	var b strings.Builder
	b.WriteString("Each point is drawn around its blob's center with a standard deviation of one in every dimension, so clusters that are the blobs have an inertia of about N·D.\n\n")
	nd := float64(x.N) * float64(x.D)
	for i, r := range runs {
		fmt.Fprintf(&b, "- **%s:** %d iterations, final inertia %.0f, %.3g times N·D.", names[i], r.Iters, r.Inertia, r.Inertia/nd)
		if mixed := Impurity(r.Labels, truth); mixed == 0 {
			b.WriteString(" Every cluster is one blob.\n")
		} else {
			fmt.Fprintf(&b, " %d points share a cluster with another blob's points: it merged blobs, and split others to keep K clusters.\n", mixed)
		}
	}
	best := 0
	for i, r := range runs {
		if r.Inertia < runs[best].Inertia {
			best = i
		}
	}
	for i, r := range runs {
		if i != best && r.Inertia > 1.05*runs[best].Inertia {
			fmt.Fprintf(&b, "\n%s ended %.3g times higher than %s: Lloyd's iterations never raise the inertia, so they only improve on where they start, and a poor start ends in a poor local minimum.\n",
				names[i], r.Inertia/runs[best].Inertia, names[best])
		}
	}
	return b.String()
}

// A RecordedRun is a file of docs/results and the command that made it
// (docs/kmeans.md).
type RecordedRun struct{ File, Command string }

// The recorded runs at the seed's size, 1M × 1536 and K = 25, newest first.
// Each section of the lesson shows one of them, with one caption (Pick):
// the H100 runs, one in-memory ladder of every variant and one streamed
// run, once clean records of them are in docs/results; until then the
// older, partial H200 runs. (The h100-kmeans-cuda.json of an earlier
// session was built with uncommitted changes, so Pick passes it over until
// the ladder's command replaces it.)
var (
	LadderRuns = []RecordedRun{
		{"h100-kmeans-cuda.json", "lab bench kmeans --device cuda:0 --size blobs:n=1000000,d=1536,k=25,iters=5 --reps 3 --warmup 1 --min-time 1ms"},
		{"h200-kmeans-3xtf32.json", "lab bench kmeans --device cuda:0 --size blobs:n=1000000,d=1536,k=25,iters=5 --variants gemm_sorted,tensor_3xtf32 --reps 3 --warmup 1 --min-time 1ms"},
		{"h200-kmeans-cuda.json", "lab bench kmeans --device cuda:0 --size blobs:n=1000000,d=1536,k=25,iters=5 --reps 2 --warmup 1 --min-time 1ms"},
	}
	StreamRuns = []RecordedRun{
		{"h100-kmeans-stream.json", "lab bench kmeans --device cuda:0 --size blobs:n=1000000,d=1536,k=25,iters=5,batch=131072 --variants block_per_point,gemm_sorted,tensor_3xtf32 --reps 2 --warmup 1 --min-time 1ms"},
		{"h200-kmeans-3xtf32-stream.json", "lab bench kmeans --device cuda:0 --size blobs:n=1000000,d=1536,k=25,iters=3,batch=131072 --variants tensor_3xtf32 --reps 2 --warmup 1 --min-time 1ms"},
		{"h200-kmeans-stream.json", "lab bench kmeans --device cuda:0 --size blobs:n=1000000,d=1536,k=25,iters=5,batch=131072 --variants block_per_point,gemm_atomic,gemm_sorted,fused --reps 2 --warmup 1 --min-time 1ms"},
	}
)

// Pick returns the run of runs that a section comparing variants shows:
// of the runs whose file is in dir and whose records all name a commit
// (never one with uncommitted changes, "-dirty": no commit holds the code
// it ran), the one with passing records of the most of variants (of any
// variant when none is named), and of equals the first, the newest. So a
// new record takes over as soon as its file is in dir.
func Pick(dir string, runs []RecordedRun, variants ...string) (RecordedRun, error) {
	best, most := -1, 0
	for i, run := range runs {
		recs, err := bench.ReadJSON(filepath.Join(dir, run.File))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return RecordedRun{}, err
		}
		if slices.ContainsFunc(recs, func(r bench.Record) bool { return strings.HasSuffix(r.Commit, "-dirty") }) {
			continue
		}
		passed := map[string]bool{}
		for _, r := range slices.DeleteFunc(recs, func(r bench.Record) bool { return !Passed(variants...)(r) }) {
			passed[r.Variant] = true
		}
		if len(passed) > most {
			best, most = i, len(passed)
		}
	}
	if best < 0 {
		return RecordedRun{}, fmt.Errorf("kmeans: no run in %s of a clean commit has a passing record of %s", dir, strings.Join(variants, ", "))
	}
	return runs[best], nil
}

// among reports whether variant is one of variants, or variants is empty:
// the selections below take every variant when none is named.
func among(variants []string, variant string) bool {
	return len(variants) == 0 || slices.Contains(variants, variant)
}

// Passed keeps the records of the given variants that passed their check.
func Passed(variants ...string) func(bench.Record) bool {
	return func(r bench.Record) bool { return r.OK && among(variants, r.Variant) }
}

// Of keeps the records of the given variants.
func Of(recs []bench.Record, variants ...string) []bench.Record {
	var out []bench.Record
	for _, r := range recs {
		if among(variants, r.Variant) {
			out = append(out, r)
		}
	}
	return out
}

// NotShownMarkdown says which of the given variants (all when none is
// named) a run's records leave out of its table: those that failed their
// check, with the error each one carries, and those the run did not time;
// "" when none.
func NotShownMarkdown(recs []bench.Record, variants ...string) string {
	var b strings.Builder
	for _, r := range recs {
		if !r.OK && among(variants, r.Variant) {
			if b.Len() == 0 {
				b.WriteString("Not shown, because they failed their check:\n")
			}
			fmt.Fprintf(&b, "- `%s` at `%s`: %s\n", r.Variant, r.Size, r.Error)
		}
	}
	var absent []string
	for _, v := range variants {
		if !slices.ContainsFunc(recs, func(r bench.Record) bool { return r.Variant == v }) {
			absent = append(absent, "`"+v+"`")
		}
	}
	if len(absent) > 0 {
		fmt.Fprintf(&b, "\nThis run did not time %s.\n", bench.JoinAnd(absent))
	}
	return b.String()
}

// What each variant is, in the words of the lesson.
var variantText = map[string]string{
	"cpu_reference":   "the CPU reference",
	"h2d_copy":        "the copies alone",
	"naive":           "a thread per point (01)",
	"chunked":         "the centers staged in shared memory (02)",
	"block_per_point": "a block per point (03)",
	"gemm_atomic":     "the atomic update (05)",
	"gemm_sorted":     "the sorted update (06)",
	"fused":           "the sums fused into the assignment (07)",
	"gemm_pipelined":  "the cp.async pipeline on FP32 lanes (08 + 09)",
	"tensor_3xtf32":   "tensor cores at FP32 accuracy (10 + 09)",
}

// group is the records of one device and size.
type group struct {
	spec Spec
	recs []bench.Record
}

// groups splits the records of the given variants by device and size, in
// the order they appear.
func groups(recs []bench.Record, variants []string) []group {
	var out []group
	index := map[string]int{}
	for _, r := range Of(recs, variants...) {
		key := r.Device + " " + r.DeviceName + " " + r.Size
		i, ok := index[key]
		if !ok {
			sp, err := ParseSpec(r.Size)
			if err != nil {
				continue
			}
			i = len(out)
			index[key] = i
			out = append(out, group{spec: sp})
		}
		out[i].recs = append(out[i].recs, r)
	}
	return out
}

func (g group) get(variant string) (bench.Record, bool) {
	for _, r := range g.recs {
		if r.Variant == variant {
			return r, true
		}
	}
	return bench.Record{}, false
}

// record is the record of variant, or a zero record.
func (g group) record(variant string) bench.Record {
	r, _ := g.get(variant)
	return r
}

// time is a record's time per iteration.
func (g group) time(variant string) (time.Duration, bool) {
	r, ok := g.get(variant)
	return msDuration(r.MedianMS), ok
}

// heading names the device and the size, in bold.
func (g group) heading() string {
	return fmt.Sprintf("**%s (`%s`), %s:**", g.recs[0].DeviceName, g.recs[0].Device, g.size())
}

// size says the size: "1 000 000 × 1536, K = 25[, streamed in batches of B rows]".
func (g group) size() string {
	s := fmt.Sprintf("%s × %d, K = %d", count(g.spec.N), g.spec.D, g.spec.K)
	if g.spec.Batch > 0 {
		s += fmt.Sprintf(", streamed in batches of %s rows", count(g.spec.Batch))
	}
	return s
}

// list says the time per iteration of each variant present, in order.
func (g group) list(variants []string) string {
	var parts []string
	for _, v := range variants {
		if t, ok := g.time(v); ok {
			parts = append(parts, fmt.Sprintf("%s with %s", durationText(t), variantText[v]))
		}
	}
	return bench.JoinAnd(parts)
}

// checks says whether the group's records passed their check, and how far
// their inertias are from their baseline's.
func (g group) checks() string {
	var failed []string
	worst, base := 0.0, ""
	for _, r := range g.recs {
		switch {
		case !r.OK:
			failed = append(failed, "`"+r.Variant+"`")
		case r.Variant != r.Baseline:
			worst, base = max(worst, r.MaxRelErr), r.Baseline
		}
	}
	if len(failed) > 0 {
		return fmt.Sprintf("%s failed the check: the errors are under the table.", bench.JoinAnd(failed))
	}
	if base == "" {
		return ""
	}
	return fmt.Sprintf("Every variant shown passed its check: its labels are the nearest of its own centers, and its inertia is within %s of `%s`'s, relatively.", sciText(worst), base)
}

// phases are the GPU times of the last iteration's phases of a resident
// run, when the record has them: the assignment kernel, the update, and
// the rest (centers up, counts, the download of the sums).
type phases struct{ assignment, update, other time.Duration }

func phasesOf(r bench.Record) (phases, bool) {
	var p phases
	found := false
	add := func(name string, v float64) {
		d := msDuration(v)
		switch {
		case strings.HasPrefix(name, "assignment"):
			p.assignment += d
		case name == "update":
			p.update += d
		default:
			p.other += d
		}
		found = true
	}
	switch m := r.Params["phases_ms"].(type) {
	case map[string]float64: // measured in this process
		for name, v := range m {
			add(name, v)
		}
	case map[string]any: // read back from JSON
		for name, v := range m {
			if f, ok := v.(float64); ok {
				add(name, f)
			}
		}
	}
	return p, found && p.assignment > 0
}

// relative says how a time a compares with a time b: "2.1× faster",
// "3.4× slower", or "about as fast" within 5%.
func relative(a, b time.Duration) string {
	switch {
	case float64(a) < float64(b)/1.05:
		return ratioText(float64(b)/float64(a)) + " faster"
	case float64(a) > float64(b)*1.05:
		return ratioText(float64(a)/float64(b)) + " slower"
	}
	return "about as fast"
}

// compare is relative followed by "than" or "as".
func compare(a, b time.Duration) string {
	if r := relative(a, b); r != "about as fast" {
		return r + " than"
	}
	return "about as fast as"
}

// AssignmentStory says what the records of steps 01–03 show, for each
// device and size.
func AssignmentStory(recs []bench.Record) string {
	var b strings.Builder
	for _, g := range groups(recs, AssignmentVariants) {
		fmt.Fprintf(&b, "%s one iteration (the assignment, then the sorted update 06) takes %s.\n", g.heading(), g.list(AssignmentVariants))
		t01, ok01 := g.time("naive")
		if t02, ok := g.time("chunked"); ok && ok01 {
			fmt.Fprintf(&b, "- Staging the centers in shared memory: 02 is %s 01.", compare(t02, t01))
			if float64(t02) > float64(t01)/1.05 {
				b.WriteString(" The centers were not what held 01 back: every lane of a warp reads the same center value, a broadcast, in both. What they share is the loads of X: each thread reads its own row, D floats from its neighbour's, so no load is coalesced.")
			}
			b.WriteString("\n")
		}
		if t03, ok := g.time("block_per_point"); ok && ok01 {
			fmt.Fprintf(&b, "- A block per point: 03 is %s 01.", compare(t03, t01))
			if float64(t03) > float64(t01)*1.05 {
				fmt.Fprintf(&b, " Its loads of X coalesce, but its %s blocks each read all %d centers again (%d× the data of X, from L2), and each ends in %d block reductions.",
					count(g.spec.N), g.spec.K, g.spec.K, g.spec.K)
			}
			if p, ok := phasesOf(g.record("block_per_point")); ok {
				fmt.Fprintf(&b, " Of its iteration, the assignment takes %s and the update %s.", durationText(p.assignment), durationText(p.update))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n" + g.checks() + "\n\n")
	}
	return b.String()
}

// UpdateStory says what the records of the three updates (05, 06, 07 after
// the GEMM assignment 04) show, for each device and size.
func UpdateStory(recs []bench.Record) string {
	var b strings.Builder
	for _, g := range groups(recs, UpdateVariants) {
		fmt.Fprintf(&b, "%s with the GEMM assignment (04), one iteration takes %s.", g.heading(), g.list(UpdateVariants))
		best, bestTime := "", time.Duration(0)
		for _, v := range UpdateVariants {
			if t, ok := g.time(v); ok && (best == "" || t < bestTime) {
				best, bestTime = v, t
			}
		}
		if r := g.record(best); r.Speedup > 0 && r.Baseline != "" {
			if len(Of(g.recs, UpdateVariants...)) > 1 {
				fmt.Fprintf(&b, " The fastest, `%s`,", best)
			} else {
				fmt.Fprintf(&b, " `%s`", best)
			}
			fmt.Fprintf(&b, " is %s faster than `%s`.", ratioText(r.Speedup), r.Baseline)
		}
		b.WriteString("\n")
		ta, okA := g.time("gemm_atomic")
		ts, okS := g.time("gemm_sorted")
		if okA && okS {
			fmt.Fprintf(&b, "- Sorting the points by label, then summing each cluster's rows in registers (06), is %s adding every element with an atomic (05: %s atomics on %s addresses).\n",
				compare(ts, ta), count(g.spec.N*g.spec.D), count(g.spec.K*g.spec.D))
		}
		if tf, ok := g.time("fused"); ok && (okA || okS) {
			twoPass := ts
			if !okS || okA && ta < ts {
				twoPass = ta
			}
			fmt.Fprintf(&b, "- Fusing the sums into the assignment (07) is %s the faster two-pass update.", compare(tf, twoPass))
			if tf > twoPass {
				b.WriteString(" The per-block partial sums it reads and writes cost more than the second pass over X that it saves.")
			}
			b.WriteString("\n")
		}
		if p, ok := phasesOf(g.record("gemm_sorted")); ok {
			fmt.Fprintf(&b, "- With the sorted update, the assignment takes %s of the iteration and the update %s.\n", durationText(p.assignment), durationText(p.update))
		}
		b.WriteString("\n" + g.checks() + "\n\n")
	}
	return b.String()
}

// PipelineStory says what the records of the late steps (04 + 06, 08 + 09,
// 10 + 09) show, for each device and size: a table of where an iteration's
// time goes, and how the assignment and the update changed.
func PipelineStory(recs []bench.Record) string {
	var b strings.Builder
	for _, g := range groups(recs, PipelineVariants) {
		fmt.Fprintf(&b, "%s one iteration takes %s.", g.heading(), g.list(PipelineVariants))
		ts, okS := g.time("gemm_sorted")
		if tt, ok := g.time("tensor_3xtf32"); ok && okS {
			fmt.Fprintf(&b, " 10 + 09 is %s 04 + 06", compare(tt, ts))
			if r := g.record("tensor_3xtf32"); r.Speedup > 0 && r.Baseline != "" {
				fmt.Fprintf(&b, ", and %s faster than `%s`", ratioText(r.Speedup), r.Baseline)
			}
			b.WriteString(".")
		}
		b.WriteString("\n\n")
		xBytes := 4 * float64(g.spec.N) * float64(g.spec.D)
		var rows []string
		for _, v := range PipelineVariants {
			r, ok := g.get(v)
			p, has := phasesOf(r)
			if !ok || !has {
				continue
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s | %.0f |", v, durationText(msDuration(r.MedianMS)),
				durationText(p.assignment), durationText(p.update), durationText(p.other), durationText(p.assignment+p.update+p.other), xBytes/p.assignment.Seconds()/1e9))
		}
		if len(rows) > 0 {
			b.WriteString("Where the time of the last iteration goes (GPU events between its phases). The record keeps the phases of its last iteration only, " +
				"while its time is the mean iteration of a run (the median of the runs), so the two columns of totals need not agree:\n\n")
			b.WriteString("| variant | mean iteration (median of runs) | last iteration: assignment | update | other phases | sum of the phases | X ÷ assignment time (effective GB/s) |\n|---|---:|---:|---:|---:|---:|---:|\n")
			b.WriteString(strings.Join(rows, "\n") + "\n\n")
			b.WriteString(pipelinePhases(g))
		}
		b.WriteString("\n" + g.checks() + "\n\n")
	}
	return b.String()
}

// pipelinePhases compares the assignment and the update across the late
// steps.
func pipelinePhases(g group) string {
	steps := map[string][2]string{ // assignment and update of each variant
		"gemm_sorted": {"04", "06"}, "gemm_pipelined": {"08", "09"}, "tensor_3xtf32": {"10", "09"},
	}
	var assign, update []string
	updated := map[string]bool{}
	for _, v := range PipelineVariants {
		p, ok := phasesOf(g.record(v))
		if !ok {
			continue
		}
		assign = append(assign, fmt.Sprintf("%s with %s", durationText(p.assignment), steps[v][0]))
		if u := steps[v][1]; !updated[u] { // 08 and 10 share update 09: its first measurement
			updated[u] = true
			update = append(update, fmt.Sprintf("%s with %s", durationText(p.update), u))
		}
	}
	s := "- The assignment takes " + bench.JoinAnd(assign) + ".\n- The update takes " + bench.JoinAnd(update)
	if updated["09"] {
		s += "; 09 also measures the inertia exactly, in the same pass"
	}
	return s + ".\n"
}

// StreamStory says what the records of a streamed size show: how each
// variant's iteration compares with the copies alone (h2d_copy).
func StreamStory(recs []bench.Record) string {
	var b strings.Builder
	for _, g := range groups(recs, nil) {
		c, ok := g.get("h2d_copy")
		if !ok {
			continue
		}
		tc := msDuration(c.MedianMS)
		fmt.Fprintf(&b, "%s one pass of X from pinned host memory to the device, without kernels, takes %s (%.1f GB/s).", g.heading(), durationText(tc), c.GBps)
		for _, r := range g.recs {
			if r.Variant == "h2d_copy" || !r.OK {
				continue
			}
			t := msDuration(r.MedianMS)
			fmt.Fprintf(&b, " A streamed iteration of `%s` takes %s, %s the copies alone:", r.Variant, durationText(t), compare(t, tc))
			if float64(t) <= float64(tc)*1.05 {
				b.WriteString(" its kernels hide behind the copies, and the copy is the whole cost.")
			} else {
				b.WriteString(" its kernels, not the copies, set the pace.")
			}
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// msDuration turns milliseconds into a Duration.
func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// durationText prints d with three significant digits in the unit that
// keeps them: "812 ns", "4.31 µs", "45.6 ms", "2.31 s".
func durationText(d time.Duration) string {
	if d >= time.Minute {
		return fmt.Sprintf("%.0f s", d.Seconds())
	}
	if d <= 0 {
		return "0 s"
	}
	if digits := int(math.Floor(math.Log10(float64(d)))) + 1; digits > 3 {
		d = d.Round(time.Duration(math.Pow10(digits - 3)))
	}
	s := d.String() // "45.6ms"
	i := strings.IndexFunc(s, func(r rune) bool { return r != '.' && !unicode.IsDigit(r) })
	return s[:i] + " " + s[i:]
}

// ratioText prints a ratio with three significant digits: "2.22×", "81.9×",
// "348×".
func ratioText(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.3g×", x)
}

// sciText prints a small ratio in scientific notation: "1.2·10⁻⁶".
func sciText(x float64) string {
	if x == 0 {
		return "0"
	}
	e := int(math.Floor(math.Log10(math.Abs(x))))
	if e >= -2 && e <= 2 {
		return fmt.Sprintf("%.2g", x)
	}
	sup := strings.NewReplacer("-", "⁻", "0", "⁰", "1", "¹", "2", "²", "3", "³", "4", "⁴", "5", "⁵", "6", "⁶", "7", "⁷", "8", "⁸", "9", "⁹")
	return fmt.Sprintf("%.2g·10%s", x/math.Pow10(e), sup.Replace(fmt.Sprint(e)))
}

// count prints an integer with its thousands apart: "1 000 000".
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}
