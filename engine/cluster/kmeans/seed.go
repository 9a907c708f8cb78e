package kmeans

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/cuda"
)

// seedDevice is the GPU of the seed's log.
const seedDevice = "RTX 4090"

// SeedSource names the seed document of notebook 04.
const SeedSource = "a student's k-means on GPU progress log (Korean, undated), " + seedDevice

// A SeedRun is a row of the seed's table: its block-per-point k-means at
// 1M × 1536, K = 25, on an RTX 4090, with TPB threads per block, for Iters
// iterations. Before and After are the times of all the iterations before
// and after its change from a thread per point (with chunks of centers in
// shared memory) to a block per point.
type SeedRun struct {
	TPB, Iters    int
	Before, After time.Duration
}

// SeedLog is the seed's table as its log gives it ("3.221->9.416" seconds).
var SeedLog = []SeedRun{
	{32, 10, 3221 * time.Millisecond, 9416 * time.Millisecond},
	{256, 10, 2279 * time.Millisecond, 1928 * time.Millisecond},
	{32, 36, 11592 * time.Millisecond, 33982 * time.Millisecond},
	{256, 36, 8125 * time.Millisecond, 6927 * time.Millisecond},
}

// SeedSpec is the seed's data: 1M points of 1536 dimensions, K = 25.
var SeedSpec = Spec{N: 1000000, D: 1536, K: 25}

// seedAfter is the seed's time of iters iterations at tpb, after its change.
func seedAfter(tpb, iters int) (time.Duration, bool) {
	i := slices.IndexFunc(SeedLog, func(s SeedRun) bool { return s.TPB == tpb && s.Iters == iters })
	if i < 0 {
		return 0, false
	}
	return SeedLog[i].After, true
}

// SeedMarkdown is the seed's table, captioned with its source.
func SeedMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "*The seed's figures, from %s: %s × %d, K = %d; the time of all the iterations, before and after its change from a thread per point to a block per point:*\n\n",
		SeedSource, count(SeedSpec.N), SeedSpec.D, SeedSpec.K)
	b.WriteString("| TPB | iterations | before | after |\n|---:|---:|---:|---:|\n")
	for _, s := range SeedLog {
		fmt.Fprintf(&b, "| %d | %d | %.3f s | %.3f s |\n", s.TPB, s.Iters, s.Before.Seconds(), s.After.Seconds())
	}
	return b.String()
}

// SeedComparison compares the times that the seed's log records at TPB
// 256 (after its change to a block per point, on its RTX 4090) with a
// recorded block_per_point run at the seed's size, which the kmeans suite
// runs at TPB 256, made by command: its median time per iteration times 10
// and 36 (the run itself timed its own iteration count), labelled so. Both
// are the times of the iterations alone; the caption says which figures are
// the log's and which the record's. It ends with what the numbers say: the
// rate at which each time reads X, the record's share of its memory peak
// and of its iteration spent in the assignment, and what they leave open.
func SeedComparison(recs []bench.Record, command string) string {
	i := slices.IndexFunc(recs, func(r bench.Record) bool {
		sp, err := ParseSpec(r.Size)
		return err == nil && r.OK && r.Variant == "block_per_point" && sp.Batch == 0 && sp.N == SeedSpec.N && sp.D == SeedSpec.D && sp.K == SeedSpec.K
	})
	if i < 0 {
		return "*(no passing block_per_point record at the seed's size to compare with)*"
	}
	r := recs[i]
	sp, _ := ParseSpec(r.Size)
	date, _, _ := strings.Cut(r.Date, "T")
	per := msDuration(r.MedianMS)
	var b strings.Builder
	fmt.Fprintf(&b, "*`block_per_point` at the seed's size and TPB 256: the times the seed's log records on its %s, against a recorded run of %d iterations on %s (`%s`), commit `%s`, %s, with `%s`: its median time per iteration times the log's iteration count, not a run of that many iterations:*\n\n",
		seedDevice, sp.Iters, r.DeviceName, r.Device, r.Commit, date, command)
	fmt.Fprintf(&b, "| iterations (n) | the seed's log (%s) | recorded per iteration × n (%s) | recorded against the log |\n|---:|---:|---:|---|\n", seedDevice, r.DeviceName)
	var logPer time.Duration
	for _, s := range SeedLog {
		if s.TPB != 256 {
			continue
		}
		ours := per * time.Duration(s.Iters)
		fmt.Fprintf(&b, "| %d | %.3f s | %s | %s |\n", s.Iters, s.After.Seconds(), durationText(ours), relative(ours, s.After))
		if logPer == 0 {
			logPer = s.After / time.Duration(s.Iters)
		}
	}
	fmt.Fprintf(&b, "\nThe recorded iteration takes %s, from the upload of the centers to the download of the sums: the assignment, the sorted update (06) and a round trip to the host. "+
		"It leaves out the upload of X and the k-means++ initialization. The log does not say what its times include.\n\n", durationText(per))
	b.WriteString(seedReading(r, per, logPer))
	return b.String()
}

// seedReading interprets the seed comparison from the record r (per, its
// time per iteration) and the log's time per iteration: the rate at which
// each reads X once, r's share of its memory peak and the assignment's
// share of its iteration (if r has them), and what the data cannot tell.
func seedReading(r bench.Record, per, logPer time.Duration) string {
	xGB := 4 * float64(SeedSpec.N) * float64(SeedSpec.D) / 1e9
	var b strings.Builder
	fmt.Fprintf(&b, "Per iteration, the log's %s takes %s and the recorded %s %s (%s). Counting one pass over X, the recorded iteration reads it at %.1f GB/s",
		seedDevice, durationText(logPer), r.DeviceName, durationText(per), relative(per, logPer), xGB/per.Seconds())
	if r.PctPeakGBps > 0 {
		fmt.Fprintf(&b, ", %.2g%% of the device's memory peak", r.PctPeakGBps)
	}
	fmt.Fprintf(&b, ", and the log's at %.1f GB/s.", xGB/logPer.Seconds())
	if p, ok := phasesOf(r); ok {
		fmt.Fprintf(&b, " The assignment kernel takes %s of the recorded %s.", durationText(p.assignment), durationText(per))
	}
	if r.PctPeakGBps > 0 && r.PctPeakGBps < 10 {
		b.WriteString(" So the memory's bandwidth does not set `block_per_point`'s pace: by its header, each block re-reads all the centers from L2 and reduces its threads' partial distances for its one point, and that per-point work is what the iteration spends its time on.")
	}
	fmt.Fprintf(&b, " Why the log's iteration is %s, the data do not say: the log gives neither its kernel's source nor what its times include.\n", relative(logPer, per))
	return b.String()
}

// IterTiming is the time of Iters iterations of block_per_point at TPB
// threads per block.
type IterTiming struct {
	TPB, Iters int
	Time       time.Duration
}

// TimeSeedTable runs the seed's table on ctx: block_per_point at each TPB
// and iteration count of SeedLog, from the same k-means++ centers. Each
// time is the iterations' own (GPUStats.PerIter: from the upload of the
// centers to the download of the sums, each iteration), without the
// upload of X, the initialization or the final assignment.
func TimeSeedTable(ctx *cuda.Context, x Data, k int) ([]IterTiming, error) {
	init, err := initialCenters(x, Config{K: k, Seed: 2})
	if err != nil {
		return nil, err
	}
	var out []IterTiming
	var tpbs []int
	for _, s := range SeedLog {
		if !slices.Contains(tpbs, s.TPB) {
			tpbs = append(tpbs, s.TPB)
		}
	}
	for _, tpb := range tpbs { // one copy of X on the device at a time
		runs, err := timeIterations(ctx, x, k, tpb, init)
		if err != nil {
			return nil, fmt.Errorf("kmeans: the seed's table at TPB %d: %w", tpb, err)
		}
		out = append(out, runs...)
	}
	return out, nil
}

// timeIterations times block_per_point at tpb for each iteration count
// of SeedLog at that TPB.
func timeIterations(ctx *cuda.Context, x Data, k, tpb int, init []float32) ([]IterTiming, error) {
	g, err := NewGPU(ctx, x, k, GPUOptions{Variant: "block_per_point", TPB: tpb})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	var out []IterTiming
	for _, s := range SeedLog {
		if s.TPB != tpb {
			continue
		}
		if _, err := g.Fit(Config{K: k, MaxIters: s.Iters, Centers: init}); err != nil {
			return nil, fmt.Errorf("%d iterations: %w", s.Iters, err)
		}
		var t time.Duration
		for _, d := range g.Stats().PerIter[:s.Iters] {
			t += d
		}
		out = append(out, IterTiming{tpb, s.Iters, t})
	}
	return out, nil
}

// SeedTableMarkdown shows the seed's table as measured on a device at size
// sp, and compares TPB 32 with TPB 256 as the seed's log does.
func SeedTableMarkdown(device string, sp Spec, runs []IterTiming) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*Measured now on %s: `block_per_point` at %s × %d, K = %d, from the same k-means++ centers; the time of the iterations alone:*\n\n", device, count(sp.N), sp.D, sp.K)
	b.WriteString("| TPB | iterations | time of the iterations | per iteration |\n|---:|---:|---:|---:|\n")
	at := map[[2]int]time.Duration{}
	for _, r := range runs {
		fmt.Fprintf(&b, "| %d | %d | %s | %s |\n", r.TPB, r.Iters, durationText(r.Time), durationText(r.Time/time.Duration(r.Iters)))
		at[[2]int{r.TPB, r.Iters}] = r.Time
	}
	t32, ok32 := at[[2]int{32, 10}]
	t256, ok256 := at[[2]int{256, 10}]
	s32, _ := seedAfter(32, 10)
	s256, _ := seedAfter(256, 10)
	if ok32 && ok256 && t256 > 0 {
		fmt.Fprintf(&b, "\nAt TPB 32, 10 iterations are %s at TPB 256; in the seed's log (after its change), %s.",
			compare(t32, t256), relative(s32, s256))
	}
	if sp.N != SeedSpec.N {
		fmt.Fprintf(&b, " These times are for %s points, the seed's for %s.", count(sp.N), count(SeedSpec.N))
	}
	return b.String() + "\n"
}
