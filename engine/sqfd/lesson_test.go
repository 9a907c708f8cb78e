// The lesson's interpretations are tested from outside the package, so
// that they format times with nb.Duration as the notebook does (engine/nb
// imports this package through engine/suites).
package sqfd_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/nb"
	"gpulab/engine/plot"
	"gpulab/engine/sqfd"
)

// recorded reads a file of docs/results.
func recorded(t *testing.T, name string) []bench.Record {
	t.Helper()
	recs, err := bench.ReadJSON(filepath.Join("..", "..", "docs", "results", name))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// rec is a record of the kmedoids suite at n=1000, k=10.
func rec(variant string, ms, gflops, pctPeak float64, params bench.Params) bench.Record {
	p := bench.Params{"n": 1000, "k": 10, "cmin": 10, "cmax": 40}
	for k, v := range params {
		p[k] = v
	}
	return bench.Record{Suite: "kmedoids", Variant: variant, DeviceName: "GPU X", Size: "sigs:n=1000,k=10", Params: p,
		MedianMS: ms, GFLOPS: gflops, PctPeakGFLOPS: pctPeak, OK: true}
}

func contains(t *testing.T, name, md string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("%s: %q lacks %q", name, md, w)
		}
	}
}

func variants(recs []bench.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Variant)
	}
	return out
}

// TestRecordedSections: each section's filter and interpretation on the
// records kept in docs/results, figure by figure.
func TestRecordedSections(t *testing.T) {
	two := recorded(t, "h200x2-kmedoids.json")
	for _, tc := range []struct {
		name string
		keep func(bench.Record) bool
		md   func([]bench.Record, func(d time.Duration) string) (string, error)
		want []string
		in   []string
	}{
		{"assignment", sqfd.AssignmentSteps, sqfd.AssignmentMarkdown, []string{sqfd.AssignNaive, sqfd.AssignShared}, []string{
			"On NVIDIA H200, with N = 100000 signatures of 10–40 centroids and K = 100",
			"step 02 (the seed's kernel) took 5.59 ms per pass against 17.1 ms for step 01: 3.06× faster",
			"which accounts for about 2×",
			"38.0% of the FP32 peak in its kernels alone (GPU events), 36.4% of the FP32 peak counted from the host (24.4 TFLOP/s",
		}},
		{"scores", sqfd.ScoreSteps, sqfd.ScoresMarkdown, []string{sqfd.ScoresNaive, sqfd.ScoresShared}, []string{
			"step 05 took 127 ms per pass against 812 ms for step 04: 6.39× faster",
			"39.9% of the FP32 peak in its kernels alone",
		}},
		{"two GPUs", sqfd.SeveralGPUs, sqfd.MultiGPUMarkdown, []string{"cuda_assign_shared", "cuda_assign_shared_x2",
			"cuda_scores_shared", "cuda_scores_shared_x2", "cuda_fit", "cuda_fit_x2"}, []string{
			"On 2 × NVIDIA H200",
			"the assignment took 3.13 ms against 5.59 ms on one GPU (1.79×), the scores 64.1 ms against 127 ms (1.98×)",
			"A whole run took 53.1 ms per iteration against 104 ms on one GPU: 1.96×, 98% of the ideal 2×",
			"It stopped after 5 iterations",
			"assignment kernels took 2.77 ms and 2.76 ms, the slowest 0.2% above the fastest: an even split",
			"score kernels took 63.7 ms and 63.6 ms, the slowest 0.3% above the fastest: an even split",
			"The assignment gains less",
		}},
	} {
		recs := nb.Filter(two, tc.keep)
		if got := variants(recs); !slices.Equal(got, tc.want) {
			t.Errorf("%s keeps %v, want %v", tc.name, got, tc.want)
		}
		md, err := tc.md(recs, nb.Duration)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		contains(t, tc.name, md, tc.in...)
	}
	cpu := nb.Filter(recorded(t, "h200-kmedoids-cpu-ratio.json"), sqfd.OneDevicePasses)
	if got, want := variants(cpu), []string{"cpu_assignment", "cpu_scores", "cuda_assign_naive", "cuda_assign_shared", "cuda_scores_naive", "cuda_scores_shared"}; !slices.Equal(got, want) {
		t.Errorf("OneDevicePasses keeps %v, want %v", got, want)
	}
	md, err := sqfd.CPURatioMarkdown(cpu, nb.Duration)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "CPU ratio", md, "With N = 3000 signatures of 10–40 centroids and K = 20, the Go reference took 460 ms for an assignment pass and 8.80 s for a score pass",
		"on one NVIDIA H200, step 02 took 140 µs (3280× faster) and step 05 829 µs (10610×).",
		"The record does not note how many threads the Go reference ran on, so these ratios are against the reference as it ran, not against all of its host's cores")
	// A recorded run's command that set GOMAXPROCS tells the threads the records lack.
	md, err = sqfd.CPURatioMarkdown(sqfd.ThreadsFromCommand(cpu, sqfd.RecordedCPURatio), nb.Duration)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "CPU ratio, threads from the command", md, "The Go reference ran on 2 threads (GOMAXPROCS); the record does not note how many CPUs its host had.")
	if _, ok := cpu[0].Params.Number("threads"); ok {
		t.Error("ThreadsFromCommand changed the records it was given")
	}
	if got := sqfd.ThreadsFromCommand(cpu, "lab bench kmedoids --device cuda:0"); &got[0] != &cpu[0] {
		t.Error("a command without GOMAXPROCS changed the records")
	}
	// Where the CPU records note their threads and the host's CPUs, the text says them.
	for _, tc := range []struct {
		params bench.Params
		want   string
	}{
		{bench.Params{"threads": 2, "host_cpus": 32}, "The Go reference ran on 2 threads (GOMAXPROCS) of a host with 32 logical CPUs: these ratios are against 2 of them, not the whole host."},
		{bench.Params{"threads": 16, "host_cpus": 16}, "The Go reference ran on all 16 logical CPUs of its host."},
		{bench.Params{"threads": 4}, "The Go reference ran on 4 threads (GOMAXPROCS); the record does not note how many CPUs its host had."},
	} {
		recs := []bench.Record{rec(sqfd.CPUAssignment, 400, 2, 0, tc.params), rec(sqfd.CPUScores, 8000, 1, 0, tc.params),
			rec(sqfd.AssignShared, 0.1, 6000, 15, nil), rec(sqfd.ScoresShared, 0.8, 13000, 20, nil)}
		md, err := sqfd.CPURatioMarkdown(recs, nb.Duration)
		if err != nil {
			t.Fatal(err)
		}
		contains(t, "CPU threads", md, tc.want)
	}
}

// TestAssignmentBranches: what the interpretation says follows the
// speedup of step 02 over step 01.
func TestAssignmentBranches(t *testing.T) {
	for _, tc := range []struct {
		naive float64
		want  string
	}{
		{30, "3.00× faster. Step 01 computes S(m, m) again for every pair, about twice the useful work, which accounts for about 2×; the rest"},
		{20, "2.00× faster. Step 01 computes S(m, m) again for every pair, about twice the useful work, so removing that recomputation accounts for about all"},
		{12, "1.20× faster. Step 01 computes S(m, m) again for every pair, about twice the useful work, so removing it alone would give about 2×; step 02 gains less here"},
	} {
		recs := []bench.Record{rec(sqfd.AssignNaive, tc.naive, 100, 1, nil), rec(sqfd.AssignShared, 10, 300, 3, nil)}
		md, err := sqfd.AssignmentMarkdown(recs, nb.Duration)
		if err != nil {
			t.Fatal(err)
		}
		// Without kernel_pct_peak, only the host's share is given.
		contains(t, "assignment", md, tc.want, "took 10.0 ms per pass against", "Step 02 ran at 3.0% of the FP32 peak counted from the host (0.3 TFLOP/s")
	}
	recs := []bench.Record{rec(sqfd.ScoresNaive, 10, 100, 1, nil), rec(sqfd.ScoresShared, 20, 300, 3, nil)}
	md, err := sqfd.ScoresMarkdown(recs, nb.Duration)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "scores slower", md, "step 05 took 20.0 ms per pass against 10.0 ms for step 04: 2.00× slower")
}

// TestCPUPassesMarkdown: the score pass against the assignment, with the
// work ratio computed from the records' flops.
func TestCPUPassesMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		k                    int
		scoreMS, scoreGFLOPS float64
		want                 []string
	}{
		{"big clusters, same rate", 10, 80, 10.5, []string{"the score pass took 80.0 ms, 8.0× the assignment's 10.0 ms. It did 8.4× the assignment's work",
			"Clusters of about N/K = 100 members give Σ|C|² ≈ N²/K, more than N·K because they hold more than K members", "about the same rate (10.0 and 10.5 GFLOP/s"}},
		{"small clusters, other rate", 100, 5, 4, []string{"the score pass took 5.00 ms, 0.5× the assignment's 10.0 ms. It did 0.2× the assignment's work",
			"Clusters of about N/K = 10 members, no more than K, give Σ|C|² ≈ N²/K, at most N·K", "different rates (10.0 and 4.0 GFLOP/s"}},
	} {
		p := bench.Params{"k": tc.k}
		recs := []bench.Record{rec(sqfd.CPUAssignment, 10, 10, 0, p), rec(sqfd.CPUScores, tc.scoreMS, tc.scoreGFLOPS, 0, p)}
		md, err := sqfd.CPUPassesMarkdown(recs, nb.Duration)
		if err != nil {
			t.Fatal(err)
		}
		contains(t, tc.name, md, tc.want...)
	}
}

// TestMissingRecords: an interpretation names what it lacks.
func TestMissingRecords(t *testing.T) {
	failed := rec(sqfd.AssignShared, 10, 1, 1, nil)
	failed.OK, failed.Error = false, "labels differ"
	for _, tc := range []struct {
		name string
		md   func([]bench.Record, func(d time.Duration) string) (string, error)
		recs []bench.Record
		want string
	}{
		{"none", sqfd.AssignmentMarkdown, nil, "no kmedoids records"},
		{"missing", sqfd.AssignmentMarkdown, []bench.Record{rec(sqfd.AssignNaive, 10, 1, 1, nil)}, "have no cuda_assign_shared"},
		{"failed", sqfd.AssignmentMarkdown, []bench.Record{rec(sqfd.AssignNaive, 10, 1, 1, nil), failed}, "failed: labels differ"},
		{"one GPU", sqfd.MultiGPUMarkdown, []bench.Record{rec(sqfd.AssignShared, 10, 1, 1, nil)}, "no kmedoids record on several GPUs"},
		{"CPU", sqfd.CPURatioMarkdown, []bench.Record{rec(sqfd.AssignShared, 10, 1, 1, nil)}, "have no cpu_assignment"},
	} {
		if _, err := tc.md(tc.recs, nb.Duration); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestFigures: the charts of the recorded runs render, with the values
// the sections discuss.
func TestFigures(t *testing.T) {
	two := recorded(t, "h200x2-kmedoids.json")
	for _, f := range []*plot.Figure{
		sqfd.PassFigure("assignment", nb.Filter(two, sqfd.AssignmentSteps)),
		sqfd.PassFigure("scores", nb.Filter(two, sqfd.ScoreSteps)),
		sqfd.MultiGPUFigure(nb.Filter(two, sqfd.SeveralGPUs)),
		sqfd.CPURatioFigure(recorded(t, "h200-kmedoids-cpu-ratio.json")),
	} {
		if _, err := f.PNG(0, 0); err != nil {
			t.Errorf("%s: %v", f.Title, err)
		}
	}
	// The CPU ratios are bars, a step each (no line across step 03, which has no CPU pass).
	html, err := sqfd.CPURatioFigure(recorded(t, "h200-kmedoids-cpu-ratio.json")).HTML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"bar"`, `"type":"log"`, "01 naive (assignment)", "05 shared (scores)"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("CPU ratio figure lacks %s", want)
		}
	}
	if got := sqfd.MultiGPUFigure(nb.Filter(two, sqfd.SeveralGPUs)).Title; got != "2 GPUs against one" {
		t.Errorf("title %q", got)
	}
}

func TestLadderSteps(t *testing.T) {
	for _, tc := range []struct {
		first, last int
		want        []string
	}{
		{1, 2, []string{"01_assign_naive", "02_assign_shared"}},
		{3, 3, []string{"03_clusters"}},
		{4, 5, []string{"04_scores_naive", "05_scores_shared"}},
	} {
		steps, err := sqfd.LadderSteps(tc.first, tc.last)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range steps {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("LadderSteps(%d, %d) = %v, want %v", tc.first, tc.last, names, tc.want)
		}
	}
	if _, err := sqfd.LadderSteps(6, 9); err == nil || !strings.Contains(err.Error(), "numbered 06 to 09") {
		t.Errorf("LadderSteps(6, 9): %v", err)
	}
}

func TestSizeOnGPUs(t *testing.T) {
	for _, tc := range []struct {
		gpus            int
		size, variant   string
		wantSize, wantV string
	}{
		{1, "sigs:n=20000,k=40", "cuda_fit", "sigs:n=20000,k=40", "cuda_fit"},
		{2, "sigs:n=20000,k=40", "cuda_fit", "sigs:n=20000,k=40,gpus=2", "cuda_fit_x2"},
	} {
		if got := sqfd.SizeOnGPUs(tc.size, tc.gpus); got != tc.wantSize {
			t.Errorf("SizeOnGPUs(%q, %d) = %q", tc.size, tc.gpus, got)
		}
		if got := sqfd.OnGPUs(tc.variant, tc.gpus); got != tc.wantV {
			t.Errorf("OnGPUs(%q, %d) = %q", tc.variant, tc.gpus, got)
		}
	}
}

// TestAsRun: each record says where it ran: the Go reference on the
// host's CPU, without a share of the GPU's peak; a pass on G GPUs on
// cuda:0 to cuda:G-1, against G GPUs' peak; a whole run compared with
// itself. Records already so stay as they are.
func TestAsRun(t *testing.T) {
	gpu := func(variant string, gpus int, base string, speedup, pct float64) bench.Record {
		r := rec(variant, 10, 100, pct, bench.Params{"gpus": gpus})
		r.Device, r.DeviceName, r.Baseline, r.Speedup, r.PctOfBaseline = "cuda:0", "NVIDIA H200", base, speedup, 100*speedup
		return r
	}
	cpu := gpu(sqfd.CPUAssignment, 0, sqfd.CPUAssignment, 1, 0.003)
	delete(cpu.Params, "gpus")
	cpu.PctPeakGBps = 1
	failedFit := gpu(sqfd.FitGPU, 1, "", 0, 0)
	failedFit.OK, failedFit.Error = false, "the run differs"
	for _, tc := range []struct {
		name string
		in   bench.Record
		want func(r *bench.Record)
	}{
		{"CPU", cpu, func(r *bench.Record) {
			r.Device, r.DeviceName, r.PctPeakGFLOPS, r.PctPeakGBps = "cpu", "the host's CPU", 0, 0
		}},
		{"one GPU", gpu(sqfd.AssignShared, 1, sqfd.AssignNaive, 3.06, 36.4), func(*bench.Record) {}},
		{"two GPUs", gpu(sqfd.OnGPUs(sqfd.AssignShared, 2), 2, sqfd.AssignShared, 1.79, 65), func(r *bench.Record) {
			r.Device, r.DeviceName, r.PctPeakGFLOPS = "cuda:0,cuda:1", "2 × NVIDIA H200", 32.5
		}},
		{"four GPUs", gpu(sqfd.OnGPUs(sqfd.FitGPU, 4), 4, sqfd.FitGPU, 3.5, 0), func(r *bench.Record) {
			r.Device, r.DeviceName = "cuda:0,cuda:1,cuda:2,cuda:3", "4 × NVIDIA H200"
		}},
		{"whole run against step 01", gpu(sqfd.FitGPU, 1, sqfd.AssignNaive, 0.16, 0), func(r *bench.Record) {
			r.Baseline, r.Speedup, r.PctOfBaseline = sqfd.FitGPU, 1, 100
		}},
		{"failed whole run", failedFit, func(*bench.Record) {}},
	} {
		want := tc.in
		want.Params = tc.in.Params
		tc.want(&want)
		got := sqfd.AsRun([]bench.Record{tc.in})
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
			continue
		}
		if again := sqfd.AsRun(got); !reflect.DeepEqual(again, got) {
			t.Errorf("%s: amended twice: %+v", tc.name, again)
		}
	}
}

// TestRecordedAsRun: the records kept in docs/results read as they ran
// (bench.ReadJSON amends them), and their captions and tables say so.
func TestRecordedAsRun(t *testing.T) {
	two := recorded(t, "h200x2-kmedoids.json")
	for _, r := range two {
		multi := strings.HasSuffix(r.Variant, "_x2")
		if multi != (r.Device == "cuda:0,cuda:1") || multi != (r.DeviceName == "2 × NVIDIA H200") {
			t.Errorf("%s ran on %s (%s)", r.Variant, r.Device, r.DeviceName)
		}
	}
	md := recordedMarkdown(t, nb.Filter(two, sqfd.SeveralGPUs), sqfd.RecordedTwoGPUs)
	contains(t, "two GPUs", md, "*Recorded on NVIDIA H200 (`cuda:0`) and 2 × NVIDIA H200 (`cuda:0,cuda:1`), commit",
		"| cuda_assign_shared_x2 | 3.1311 | - | 43522.6 | 32.5% | 1.79x cuda_assign_shared |",
		"| cuda_fit | 104.0318 | - | - | - | (baseline) |", "| cuda_fit_x2 | 53.1066 | - | - | - | 1.96x cuda_fit |")
	md = recordedMarkdown(t, nb.Filter(recorded(t, "h200-kmedoids-cpu-ratio.json"), sqfd.OneDevicePasses), sqfd.RecordedCPURatio)
	contains(t, "CPU ratio", md, "*Recorded on the host's CPU (`cpu`) and NVIDIA H200 (`cuda:0`), commit",
		"| kmedoids | cpu | sigs:n=3000,k=20 | cpu_assignment | 460.4306 | - | 2.0 | - | (baseline) |",
		"| cuda_scores_shared | 0.8295 | - | 13245.9 | 19.8% | 10609.96x cpu_scores |")
}

// TestDocsTables: docs/kmedoids.md shows each recorded run as notebook 05
// does, a table with its caption, read from its record.
func TestDocsTables(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "kmedoids.md"))
	if err != nil {
		t.Fatal(err)
	}
	for file, command := range map[string]string{"h200x2-kmedoids.json": sqfd.RecordedTwoGPUs, "h200-kmedoids-cpu-ratio.json": sqfd.RecordedCPURatio} {
		if want := recordedMarkdown(t, recorded(t, file), command); !strings.Contains(string(doc), want) {
			t.Errorf("docs/kmedoids.md lacks the table of %s:\n%s", file, want)
		}
	}
}

// recordedMarkdown is nb.RecordedMarkdown, failing the test on a record
// that cannot be captioned.
func recordedMarkdown(t *testing.T, recs []bench.Record, command string) string {
	t.Helper()
	md, err := nb.RecordedMarkdown(recs, command)
	if err != nil {
		t.Fatal(err)
	}
	return md
}
