package sqfd

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
	"gpulab/kernels"
)

// What notebook 05 says about the kmedoids suite's records, live or kept in
// docs/results: which records each section shows, a chart of each, and the
// interpretation of the numbers, generated from them. Every Markdown
// function takes the records of one size and a formatter of times (the
// notebook passes nb.Duration), and fails, naming what is missing, when
// the records lack a variant it reads.

// The variants of the kmedoids suite. A variant run on G > 1 GPUs is
// OnGPUs(variant, G).
const (
	CPUAssignment = "cpu_assignment"     // the Go reference's assignment pass
	CPUScores     = "cpu_scores"         // the Go reference's score pass
	AssignNaive   = "cuda_assign_naive"  // step 01
	AssignShared  = "cuda_assign_shared" // step 02, the seed's kernel
	ScoresNaive   = "cuda_scores_naive"  // step 04 (with step 03's cluster lists)
	ScoresShared  = "cuda_scores_shared" // step 05 (with step 03's cluster lists)
	FitGPU        = "cuda_fit"           // whole runs: steps 02, 03 and 05 until the medoids are stable
)

// The commands that recorded the runs kept in docs/results
// (docs/kmedoids.md): the suite at 100 000 signatures on one GPU and on
// two, and the GPU against the Go reference on two CPU cores.
const (
	RecordedTwoGPUs  = "lab bench kmedoids --device all-gpus --n 100000 --k 100 --reps 1 --warmup 0 --json h200x2-kmedoids.json"
	RecordedCPURatio = "GOMAXPROCS=2 lab bench kmedoids --device cuda:0 --n 3000 --k 20 --reps 1 --warmup 0 --json h200-kmedoids-cpu-ratio.json"
)

// OnGPUs names variant run on gpus GPUs: "cuda_fit_x2"; on one GPU, the
// variant itself.
func OnGPUs(variant string, gpus int) string {
	if gpus <= 1 {
		return variant
	}
	return fmt.Sprintf("%s_x%d", variant, gpus)
}

// SizeOnGPUs adds gpus=G to a kmedoids size when G > 1, so that the suite
// adds the runs on G GPUs.
func SizeOnGPUs(size string, gpus int) string {
	if gpus <= 1 {
		return size
	}
	return fmt.Sprintf("%s,gpus=%d", size, gpus)
}

// gpusOf is the number of GPUs a record ran on (1 without the parameter).
func gpusOf(r bench.Record) int {
	if g, ok := r.Params.Number("gpus"); ok && g > 1 {
		return int(g)
	}
	return 1
}

// oneGPU is the variant of r without its _xG suffix.
func oneGPU(r bench.Record) string {
	return strings.TrimSuffix(r.Variant, fmt.Sprintf("_x%d", gpusOf(r)))
}

// hostCPU names the device of the Go reference's records: they hold no
// name of their own.
const hostCPU = "the host's CPU"

// AsRun returns the kmedoids records recs as they ran, which bench.Run
// cannot tell: it gives every case the device the suite was given and its
// peaks. The Go reference's passes (cpu_*) ran on the host's CPU: their
// device is "cpu", and they have no share of peak (the record's was of the
// GPU's). A case on G > 1 GPUs (params gpus) ran on cuda:0 to cuda:G-1:
// its device lists them, its name is "G × NAME", and its share of peak is
// of G GPUs' peak. A whole run (cuda_fit) on one GPU compares with itself,
// as the suite does (older records compared it with step 01, a single
// pass). Records already so are left as they are, so the suite amends its
// own records with it (bench.Suite.Amend) and a lesson can read any record
// through it.
func AsRun(recs []bench.Record) []bench.Record {
	out := slices.Clone(recs)
	for i := range out {
		r := &out[i]
		switch g := gpusOf(*r); {
		case strings.HasPrefix(r.Variant, "cpu_") && r.Device != "cpu":
			r.Device, r.DeviceName, r.PctPeakGFLOPS, r.PctPeakGBps = "cpu", hostCPU, 0, 0
		case g > 1 && !strings.Contains(r.Device, ","):
			ids := make([]string, g)
			for j := range ids {
				ids[j] = fmt.Sprintf("cuda:%d", j)
			}
			r.Device, r.DeviceName = strings.Join(ids, ","), fmt.Sprintf("%d × %s", g, r.DeviceName)
			r.PctPeakGFLOPS, r.PctPeakGBps = r.PctPeakGFLOPS/float64(g), r.PctPeakGBps/float64(g)
		case r.Variant == FitGPU && r.Baseline != FitGPU && r.Error == "" && r.MedianMS > 0:
			r.Baseline, r.Speedup, r.PctOfBaseline = FitGPU, 1, 100
		}
	}
	return out
}

// AssignmentSteps keeps the assignment pass on one GPU: steps 01 and 02.
func AssignmentSteps(r bench.Record) bool {
	return gpusOf(r) == 1 && (r.Variant == AssignNaive || r.Variant == AssignShared)
}

// ScoreSteps keeps the score pass on one GPU: steps 04 and 05.
func ScoreSteps(r bench.Record) bool {
	return gpusOf(r) == 1 && (r.Variant == ScoresNaive || r.Variant == ScoresShared)
}

// OneDevicePasses keeps the passes on one device, the CPU or one GPU,
// without the whole runs: what CPURatioMarkdown compares.
func OneDevicePasses(r bench.Record) bool { return gpusOf(r) == 1 && r.Variant != FitGPU }

// SeveralGPUs keeps the shared passes and the whole runs, on one GPU and on
// several: what MultiGPUMarkdown compares.
func SeveralGPUs(r bench.Record) bool {
	return slices.Contains([]string{AssignShared, ScoresShared, FitGPU}, oneGPU(r))
}

// passNames label the passes in MultiGPUFigure.
var passNames = map[string]string{AssignShared: "assignment (02)", ScoresShared: "scores (05)", FitGPU: "whole run"}

// stepNames label the GPU steps in PassFigure.
var stepNames = map[string]string{AssignNaive: "01 naive", AssignShared: "02 shared", ScoresNaive: "04 naive", ScoresShared: "05 shared"}

// label names a record in a chart: its step, and its GPUs when several.
func label(r bench.Record) string {
	name := stepNames[oneGPU(r)]
	if name == "" {
		name = r.Variant
	}
	if g := gpusOf(r); g > 1 {
		name += fmt.Sprintf(", %d GPUs", g)
	}
	return name
}

// LadderSteps are the kernel files of kernels/cuda/kmedoids numbered first
// to last: 1–2 the assignment, 3 the cluster lists, 4–5 the scores.
func LadderSteps(first, last int) ([]kernels.Step, error) {
	all, err := kernels.CUDAFamily.Steps("kmedoids", "")
	if err != nil {
		return nil, err
	}
	var steps []kernels.Step
	for _, s := range all {
		if n, err := strconv.Atoi(s.Name[:2]); err == nil && n >= first && n <= last {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("sqfd: no k-medoids kernel steps numbered %02d to %02d", first, last)
	}
	return steps, nil
}

// A measured is the records of one size, by variant.
type measured struct {
	first bench.Record
	by    map[string]bench.Record
}

// measure indexes the records of recs' first size and checks that the
// wanted variants are there and passed their checks.
func measure(recs []bench.Record, want ...string) (measured, error) {
	if len(recs) == 0 {
		return measured{}, fmt.Errorf("sqfd: no kmedoids records (want %s)", strings.Join(want, ", "))
	}
	m := measured{first: recs[0], by: map[string]bench.Record{}}
	for _, r := range recs {
		if r.Size == m.first.Size {
			m.by[r.Variant] = r
		}
	}
	for _, v := range want {
		r, ok := m.by[v]
		switch {
		case !ok:
			return m, fmt.Errorf("sqfd: the kmedoids records of size %s have no %s", m.first.Size, v)
		case !r.OK || r.MedianMS <= 0:
			return m, fmt.Errorf("sqfd: the kmedoids record %s of size %s failed: %s", v, m.first.Size, r.Error)
		}
	}
	return m, nil
}

// took is a variant's median time, formatted.
func (m measured) took(v string, format func(time.Duration) string) string {
	return format(time.Duration(m.by[v].MedianMS * 1e6))
}

// ratio is how many times longer a took than b.
func (m measured) ratio(a, b string) float64 { return m.by[a].MedianMS / m.by[b].MedianMS }

// work is a variant's useful flops per run.
func (m measured) work(v string) float64 { return m.by[v].GFLOPS * m.by[v].MedianMS * 1e6 }

// size says what the records ran on.
func (m measured) size() string {
	n, _ := m.first.Params.Number("n")
	k, _ := m.first.Params.Number("k")
	lo, _ := m.first.Params.Number("cmin")
	hi, _ := m.first.Params.Number("cmax")
	return fmt.Sprintf("N = %d signatures of %d–%d centroids and K = %d", int(n), int(lo), int(hi), int(k))
}

// peakShare says what share of the FP32 peak a GPU variant's useful flops
// were: its kernels alone (events) where recorded, and the whole call.
func (m measured) peakShare(v string) string {
	r := m.by[v]
	host := fmt.Sprintf("%.1f%% of the FP32 peak counted from the host (%.1f TFLOP/s of useful SQFD flops)", r.PctPeakGFLOPS, r.GFLOPS/1e3)
	if k, ok := r.Params.Number("kernel_pct_peak"); ok {
		return fmt.Sprintf("%.1f%% of the FP32 peak in its kernels alone (GPU events), %s", k, host)
	}
	return host
}

// CPUPassesMarkdown interprets the CPU reference's two passes: how much
// longer the scores took than the assignment, against how much more work
// they did.
func CPUPassesMarkdown(recs []bench.Record, format func(time.Duration) string) (string, error) {
	m, err := measure(recs, CPUAssignment, CPUScores)
	if err != nil {
		return "", err
	}
	n, _ := m.first.Params.Number("n")
	k, _ := m.first.Params.Number("k")
	a, s := m.by[CPUAssignment], m.by[CPUScores]
	md := fmt.Sprintf("On %s, with %s, the score pass took %s, %.1f× the assignment's %s. It did %.1f× the assignment's work: "+
		"Σ|C|² distances against N·K. ", m.first.DeviceName, m.size(), m.took(CPUScores, format), m.ratio(CPUScores, CPUAssignment),
		m.took(CPUAssignment, format), m.work(CPUScores)/m.work(CPUAssignment))
	if n/k > k {
		md += fmt.Sprintf("Clusters of about N/K = %.0f members give Σ|C|² ≈ N²/K, more than N·K because they hold more than K members. ", n/k)
	} else {
		md += fmt.Sprintf("Clusters of about N/K = %.0f members, no more than K, give Σ|C|² ≈ N²/K, at most N·K. ", n/k)
	}
	if rate := s.GFLOPS / a.GFLOPS; rate > 0.8 && rate < 1.25 {
		md += fmt.Sprintf("Both passes ran at about the same rate (%.1f and %.1f GFLOP/s of useful flops), so their times follow their work. ", a.GFLOPS, s.GFLOPS)
	} else {
		md += fmt.Sprintf("The passes ran at different rates (%.1f and %.1f GFLOP/s of useful flops), so their times do not follow their work alone. ", a.GFLOPS, s.GFLOPS)
	}
	return md + "The score pass is the one the seed had to balance across ranks, with prefix sums of |C|².", nil
}

// AssignmentMarkdown interprets steps 01 and 02 of the assignment.
func AssignmentMarkdown(recs []bench.Record, format func(time.Duration) string) (string, error) {
	m, err := measure(recs, AssignNaive, AssignShared)
	if err != nil {
		return "", err
	}
	x := m.ratio(AssignNaive, AssignShared)
	md := fmt.Sprintf("On %s, with %s, step 02 (the seed's kernel) took %s per pass against %s for step 01: %.2f× faster. "+
		"Step 01 computes S(m, m) again for every pair, about twice the useful work, ",
		m.first.DeviceName, m.size(), m.took(AssignShared, format), m.took(AssignNaive, format), x)
	switch {
	case x >= 2.2:
		md += "which accounts for about 2×; the rest is what step 02's header names: no lane idles on a short signature, and the medoids come from shared memory."
	case x >= 1.8:
		md += "so removing that recomputation accounts for about all of the gain."
	default:
		md += "so removing it alone would give about 2×; step 02 gains less here, and a profiler (Nsight Compute) would say what limits it at this size."
	}
	return md + fmt.Sprintf(" Step 02 ran at %s.", m.peakShare(AssignShared)), nil
}

// ScoresMarkdown interprets steps 04 and 05 of the score pass.
func ScoresMarkdown(recs []bench.Record, format func(time.Duration) string) (string, error) {
	m, err := measure(recs, ScoresNaive, ScoresShared)
	if err != nil {
		return "", err
	}
	x := m.ratio(ScoresNaive, ScoresShared)
	md := fmt.Sprintf("On %s, with %s, step 05 took %s per pass against %s for step 04: ",
		m.first.DeviceName, m.size(), m.took(ScoresShared, format), m.took(ScoresNaive, format))
	if x >= 1 {
		md += fmt.Sprintf("%.2f× faster. Step 04 computes S(j, j) again for every pair, as step 01 did, and a thread walks its whole "+
			"cluster alone, so a big cluster waits for its longest thread; step 05 shares each target among a tile of candidates "+
			"and splits big clusters across blocks.", x)
	} else {
		md += fmt.Sprintf("%.2f× slower: at this size the tiles and the big-cluster lists of step 05 cost more than they save.", 1/x)
	}
	return md + fmt.Sprintf(" Both include step 03, the cluster lists. Step 05 ran at %s.", m.peakShare(ScoresShared)), nil
}

// MultiGPUMarkdown interprets the shared passes and the whole runs on G
// GPUs against one: the speedups, and how evenly the prefix sums split the
// work (each GPU's kernel time, shard_ms).
func MultiGPUMarkdown(recs []bench.Record, format func(time.Duration) string) (string, error) {
	g := 1
	for _, r := range recs {
		g = max(g, gpusOf(r))
	}
	if g == 1 {
		return "", fmt.Errorf("sqfd: no kmedoids record on several GPUs")
	}
	a, s, f := OnGPUs(AssignShared, g), OnGPUs(ScoresShared, g), OnGPUs(FitGPU, g)
	m, err := measure(recs, AssignShared, a, ScoresShared, s, FitGPU, f)
	if err != nil {
		return "", err
	}
	iters, _ := m.by[f].Params.Number("iterations")
	fit := m.ratio(FitGPU, f)
	md := fmt.Sprintf("On %d × %s, with %s: the assignment took %s against %s on one GPU (%.2f×), the scores %s against %s (%.2f×). "+
		"A whole run took %s per iteration against %s on one GPU: %.2f×, %.0f%% of the ideal %d×. It stopped after %.0f iterations "+
		"with the single-GPU run's medoids and labels, bit for bit (the record's check). ",
		g, m.by[AssignShared].DeviceName, m.size(), m.took(a, format), m.took(AssignShared, format), m.ratio(AssignShared, a),
		m.took(s, format), m.took(ScoresShared, format), m.ratio(ScoresShared, s),
		m.took(f, format), m.took(FitGPU, format), fit, 100*fit/float64(g), g, iters)
	for _, v := range []struct{ pass, variant string }{{"assignment", a}, {"score", s}} {
		shards, err := shardTimes(m.by[v.variant], format)
		if err != nil {
			return "", err
		}
		md += fmt.Sprintf("The GPUs' %s kernels took %s. ", v.pass, shards)
	}
	if m.ratio(AssignShared, a) < m.ratio(ScoresShared, s) {
		md += "The assignment gains less: it is the shorter pass, so its fixed costs (the launches, and the labels and distances " +
			"exchanged through host memory) weigh more."
	}
	return strings.TrimSpace(md), nil
}

// shardTimes says how long each GPU's kernels took (shard_ms) and how far
// the slowest is above the fastest.
func shardTimes(r bench.Record, format func(time.Duration) string) (string, error) {
	list, _ := r.Params["shard_ms"].(string)
	var times []string
	lo, hi := math.Inf(1), 0.0
	for _, f := range strings.Split(list, ",") {
		ms, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return "", fmt.Errorf("sqfd: %s: shard_ms %q: %w", r.Variant, list, err)
		}
		times = append(times, format(time.Duration(ms*1e6)))
		lo, hi = min(lo, ms), max(hi, ms)
	}
	spread := 100 * (hi/lo - 1)
	verdict := "an even split"
	if spread > 5 {
		verdict = "an uneven split"
	}
	return fmt.Sprintf("%s, the slowest %.1f%% above the fastest: %s", strings.Join(times, " and "), spread, verdict), nil
}

// CPURatioMarkdown interprets the GPU's shared steps against the CPU
// reference on the same signatures and medoids, and says on how many
// threads of how many CPUs the reference ran, where its record notes them
// (threads, host_cpus), or that its record does not.
func CPURatioMarkdown(recs []bench.Record, format func(time.Duration) string) (string, error) {
	m, err := measure(recs, CPUAssignment, CPUScores, AssignShared, ScoresShared)
	if err != nil {
		return "", err
	}
	s := fmt.Sprintf("With %s, the Go reference took %s for an assignment pass and %s for a score pass; on one %s, step 02 took %s "+
		"(%.0f× faster) and step 05 %s (%.0f×).", m.size(), m.took(CPUAssignment, format), m.took(CPUScores, format), m.by[AssignShared].DeviceName,
		m.took(AssignShared, format), m.ratio(CPUAssignment, AssignShared), m.took(ScoresShared, format), m.ratio(CPUScores, ScoresShared))
	return s + " " + referenceThreads(m.by[CPUAssignment]), nil
}

// gomaxprocs finds GOMAXPROCS=N among a command's environment settings.
var gomaxprocs = regexp.MustCompile(`(?:^|\s)GOMAXPROCS=(\d+)\s`)

// ThreadsFromCommand is recs with the threads of the CPU records that do
// not note them taken from the command that made them, where it set
// GOMAXPROCS: a recorded run's command is part of its caption.
func ThreadsFromCommand(recs []bench.Record, command string) []bench.Record {
	m := gomaxprocs.FindStringSubmatch(command)
	if m == nil {
		return recs
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return recs
	}
	out := slices.Clone(recs)
	for i, r := range out {
		if _, ok := r.Params.Number("threads"); ok || r.Device != "cpu" {
			continue
		}
		params := bench.Params{"threads": n}
		maps.Copy(params, r.Params)
		out[i].Params = params
	}
	return out
}

// referenceThreads says what the CPU record r ran on: its threads and the
// host's CPUs where r notes them, and what that means for the ratios.
func referenceThreads(r bench.Record) string {
	threads, ok := r.Params.Number("threads")
	if !ok {
		return "The record does not note how many threads the Go reference ran on, so these ratios are against the reference as it ran, " +
			"not against all of its host's cores (a command's GOMAXPROCS caps them)."
	}
	cpus, ok := r.Params.Number("host_cpus")
	switch {
	case ok && cpus > threads:
		return fmt.Sprintf("The Go reference ran on %d threads (GOMAXPROCS) of a host with %d logical CPUs: these ratios are against %d of them, not the whole host.",
			int(threads), int(cpus), int(threads))
	case ok:
		return fmt.Sprintf("The Go reference ran on all %d logical CPUs of its host.", int(cpus))
	}
	return fmt.Sprintf("The Go reference ran on %d threads (GOMAXPROCS); the record does not note how many CPUs its host had.", int(threads))
}

// PassFigure draws the useful SQFD throughput of each GPU record (TFLOP/s,
// counted from the host) against the FP32 peak of one GPU.
func PassFigure(title string, recs []bench.Record) *plot.Figure {
	var labels []string
	var tflops []float64
	var peak float64
	for _, r := range recs {
		if r.GFLOPS <= 0 {
			continue
		}
		labels, tflops = append(labels, label(r)), append(tflops, r.GFLOPS/1e3)
		if r.PctPeakGFLOPS > 0 && gpusOf(r) == 1 {
			peak = r.GFLOPS / r.PctPeakGFLOPS * 100 / 1e3
		}
	}
	return plot.Bars(title, "useful SQFD TFLOP/s", labels, tflops).WithReference(peak, "FP32 peak of one GPU")
}

// MultiGPUFigure draws the speedup of each shared pass and of whole runs on
// G GPUs over one, against the ideal G×.
func MultiGPUFigure(recs []bench.Record) *plot.Figure {
	var labels []string
	var speedups []float64
	g := 1
	for _, r := range recs {
		if gpusOf(r) > 1 && r.Speedup > 0 {
			g = gpusOf(r)
			labels, speedups = append(labels, passNames[oneGPU(r)]), append(speedups, r.Speedup)
		}
	}
	return plot.Bars(fmt.Sprintf("%d GPUs against one", g), "speedup over one GPU", labels, speedups).
		WithReference(float64(g), fmt.Sprintf("ideal: %d×", g))
}

// CPURatioFigure draws how many times faster each GPU step was than the CPU
// reference's pass, a bar per step (01 and 02 against the assignment, 04
// and 05 against the scores; step 03 has no CPU counterpart), on a
// logarithmic axis: the steps span decades.
func CPURatioFigure(recs []bench.Record) *plot.Figure {
	m, _ := measure(recs) // without records, no bars: Show says so
	var labels []string
	var ratios []float64
	for _, p := range []struct{ cpu, gpu, name string }{
		{CPUAssignment, AssignNaive, "assignment"}, {CPUAssignment, AssignShared, "assignment"},
		{CPUScores, ScoresNaive, "scores"}, {CPUScores, ScoresShared, "scores"},
	} {
		if _, ok := m.by[p.cpu]; !ok {
			continue
		}
		if r, ok := m.by[p.gpu]; ok && r.OK && r.MedianMS > 0 {
			labels, ratios = append(labels, stepNames[p.gpu]+" ("+p.name+")"), append(ratios, m.ratio(p.cpu, p.gpu))
		}
	}
	return plot.Bars("GPU steps against the CPU reference", "speedup over the CPU pass", labels, ratios).LogY()
}
