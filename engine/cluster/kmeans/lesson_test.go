package kmeans

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpulab/datasets"
	"gpulab/engine/bench"
)

func TestMaterialize(t *testing.T) {
	b := datasets.Blobs{N: 10, D: 3, K: 2, Seed: 4}
	x, err := Materialize(b)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, 3)
	b.Rows(7, 1, row)
	if x.N != 10 || x.D != 3 || !slices.Equal(x.X[21:24], row) {
		t.Errorf("row 7 %v, want %v", x.X[21:24], row)
	}
	if _, err := Materialize(datasets.Blobs{N: 2, D: 3, K: 5}); err == nil || !strings.Contains(err.Error(), "K = 5") {
		t.Errorf("K > N: error %v", err)
	}
}

func TestImpurity(t *testing.T) {
	truth := func(i int) int { return []int{0, 0, 0, 1, 1, 2, 2}[i] }
	for _, tc := range []struct {
		labels []int32
		want   int
	}{
		{[]int32{5, 5, 5, 1, 1, 0, 0}, 0}, // cluster numbers need not match the blobs'
		{[]int32{0, 0, 0, 0, 0, 1, 1}, 2}, // blob 1 merged into blob 0's cluster: its 2 points
		{[]int32{0, 1, 0, 1, 1, 2, 2}, 1}, // one point of blob 0 with blob 1's two
		{[]int32{0, 0, 0, 0, 0, 0, 0}, 4}, // one cluster: all but the 3 of blob 0
	} {
		if got := Impurity(tc.labels, truth); got != tc.want {
			t.Errorf("Impurity(%v) = %d, want %d", tc.labels, got, tc.want)
		}
	}
}

func TestInitString(t *testing.T) {
	if KMeansPlusPlus.String() != "k-means++" || Random.String() != "random" || Init(7).String() != "Init(7)" {
		t.Errorf("names %q %q %q", KMeansPlusPlus, Random, Init(7))
	}
}

func TestInitStory(t *testing.T) {
	x := &Matrix{N: 4, D: 2}
	truth := func(i int) int { return i / 2 }
	good := &Result{Iters: 3, Inertia: 8, Labels: []int32{0, 0, 1, 1}}
	bad := &Result{Iters: 9, Inertia: 40, Labels: []int32{0, 0, 0, 1}}
	got := InitStory(x, truth, []string{"k-means++", "random"}, []*Result{good, bad})
	for _, want := range []string{
		"**k-means++:** 3 iterations, final inertia 8, 1 times N·D", "Every cluster is one blob.",
		"**random:** 9 iterations, final inertia 40, 5 times N·D", "1 points share a cluster",
		"random ended 5 times higher than k-means++",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if same := InitStory(x, truth, []string{"a", "b"}, []*Result{good, good}); strings.Contains(same, "ended") {
		t.Errorf("equal runs compared:\n%s", same)
	}
}

func TestLadderSteps(t *testing.T) {
	for _, tc := range []struct {
		first, last string
		want        []string
	}{
		{"01", "03", []string{"01_naive", "02_chunked", "03_block_per_point"}},
		{"04", "07", []string{"04_gemm_argmin", "05_update_atomic", "06_update_sorted", "07_fused"}},
		{"08", "10", []string{"08_gemm_pipelined", "09_update_shared", "10_tensor_3xtf32"}},
	} {
		steps, err := LadderSteps(tc.first, tc.last)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range steps {
			names = append(names, s.Name)
			if !strings.Contains(s.Code, "__global__") {
				t.Errorf("%s: no kernel in its source", s.Name)
			}
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("LadderSteps(%s, %s) = %v, want %v", tc.first, tc.last, names, tc.want)
		}
	}
	if _, err := LadderSteps("11", "12"); err == nil {
		t.Error("steps 11–12 found")
	}
}

func TestTextFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{
		812:                  "812 ns",
		4312:                 "4.31 µs",
		45_640_000:           "45.6 ms",
		347_865_415:          "348 ms",
		3_478_654_150:        "3.48 s",
		90 * time.Second:     "90 s",
		0:                    "0 s",
		msDuration(0.8256):   "826 µs",
		msDuration(6.724758): "6.72 ms",
	} {
		if got := durationText(d); got != want {
			t.Errorf("durationText(%d) = %q, want %q", d, got, want)
		}
	}
	for x, want := range map[float64]string{2.2188: "2.22×", 51.2966: "51.3×", 0.27467: "0.275×", 348.4: "348×"} {
		if got := ratioText(x); got != want {
			t.Errorf("ratioText(%g) = %q, want %q", x, got, want)
		}
	}
	for x, want := range map[float64]string{0: "0", 1.1429e-6: "1.1·10⁻⁶", 5.33e-9: "5.3·10⁻⁹", 0.05: "0.05"} {
		if got := sciText(x); got != want {
			t.Errorf("sciText(%g) = %q, want %q", x, got, want)
		}
	}
	for n, want := range map[int]string{7: "7", 1536: "1 536", 131072: "131 072", 1000000: "1 000 000"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		a, b time.Duration
		want string
	}{
		{100 * ms, 200 * ms, "2× faster than"},
		{300 * ms, 100 * ms, "3× slower than"},
		{103 * ms, 100 * ms, "about as fast as"},
	} {
		if got := compare(tc.a, tc.b); got != tc.want {
			t.Errorf("compare(%v, %v) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// rec is a record of the kmeans suite on an H200 at size.
func rec(size, variant string, ms float64, ok bool) bench.Record {
	r := bench.Record{Suite: "kmeans", Variant: variant, Device: "cuda:0", DeviceName: "NVIDIA H200", Size: size, MedianMS: ms, OK: ok,
		Baseline: "block_per_point", Params: bench.Params{}}
	if !ok {
		r.Error = "check: " + variant + ": 3 points are not labelled with their nearest center"
	}
	return r
}

const seedSize = "blobs:n=1000000,d=1536,k=25,iters=5"

func withSpeedups(recs []bench.Record) []bench.Record {
	var base float64
	for _, r := range recs {
		if r.Variant == r.Baseline {
			base = r.MedianMS
		}
	}
	for i := range recs {
		recs[i].Speedup = base / recs[i].MedianMS
	}
	return recs
}

func TestPassedAndFailures(t *testing.T) {
	recs := []bench.Record{rec(seedSize, "naive", 157, true), rec(seedSize, "gemm_atomic", 8.5, false), rec(seedSize, "fused", 12, false)}
	var kept []string
	for _, r := range recs {
		if Passed(AssignmentVariants...)(r) {
			kept = append(kept, r.Variant)
		}
	}
	if !slices.Equal(kept, []string{"naive"}) || Passed()(recs[1]) || !Passed()(recs[0]) {
		t.Errorf("Passed kept %v", kept)
	}
	got := NotShownMarkdown(recs, "fused", "gemm_sorted", "tensor_3xtf32")
	if !strings.Contains(got, "- `fused` at `"+seedSize+"`: check: fused: 3 points") || strings.Contains(got, "gemm_atomic") ||
		!strings.Contains(got, "This run did not time `gemm_sorted` and `tensor_3xtf32`.") {
		t.Errorf("not shown of fused, gemm_sorted and tensor_3xtf32:\n%s", got)
	}
	if NotShownMarkdown(recs, "naive") != "" {
		t.Error("a passing record listed as not shown")
	}
	if got := NotShownMarkdown(recs); !strings.Contains(got, "`gemm_atomic`") || !strings.Contains(got, "`fused`") || strings.Contains(got, "did not time") {
		t.Errorf("not shown of all variants:\n%s", got)
	}
	if n := len(Of(recs, "naive", "fused")); n != 2 {
		t.Errorf("Of kept %d records", n)
	}
}

func TestAssignmentStory(t *testing.T) {
	recs := withSpeedups([]bench.Record{rec(seedSize, "block_per_point", 348, true), rec(seedSize, "naive", 157, true), rec(seedSize, "chunked", 162, true)})
	recs[1].MaxRelErr, recs[2].MaxRelErr = 2.5e-8, 2.8e-8
	got := AssignmentStory(recs)
	for _, want := range []string{
		"**NVIDIA H200 (`cuda:0`), 1 000 000 × 1536, K = 25:**",
		"157 ms with a thread per point (01), 162 ms with the centers staged in shared memory (02) and 348 ms with a block per point (03)",
		"02 is about as fast as 01. The centers were not what held 01 back",
		"03 is 2.22× slower than 01. Its loads of X coalesce, but its 1 000 000 blocks each read all 25 centers again",
		"within 2.8·10⁻⁸ of `block_per_point`'s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	// A failed record is not said to pass.
	recs[2].OK = false
	if got := AssignmentStory(recs); !strings.Contains(got, "`chunked` failed the check") || strings.Contains(got, "passed its check") {
		t.Errorf("with a failure:\n%s", got)
	}
	// A faster 02 and 03 drop the explanations of why they are not.
	fast := []bench.Record{rec(seedSize, "naive", 157, true), rec(seedSize, "chunked", 100, true), rec(seedSize, "block_per_point", 90, true)}
	got = AssignmentStory(fast)
	if !strings.Contains(got, "02 is 1.57× faster than 01.") || !strings.Contains(got, "03 is 1.74× faster than 01.") || strings.Contains(got, "held 01 back") || strings.Contains(got, "coalesce") {
		t.Errorf("faster steps:\n%s", got)
	}
}

func TestUpdateStory(t *testing.T) {
	recs := withSpeedups([]bench.Record{rec(seedSize, "block_per_point", 348, true), rec(seedSize, "gemm_atomic", 8.49, true),
		rec(seedSize, "gemm_sorted", 6.72, true), rec(seedSize, "fused", 12.0, true)})
	recs[2].Params["phases_ms"] = map[string]any{"assignment (04_gemm_argmin)": 4.39, "update": 2.09, "counts and inertia": 0.01}
	got := UpdateStory(recs)
	for _, want := range []string{
		"one iteration takes 8.49 ms with the atomic update (05), 6.72 ms with the sorted update (06) and 12 ms with the sums fused into the assignment (07)",
		"The fastest, `gemm_sorted`, is 51.8× faster than `block_per_point`.",
		"(06), is 1.26× faster than adding every element with an atomic (05: 1 536 000 000 atomics on 38 400 addresses)",
		"(07) is 1.79× slower than the faster two-pass update. The per-block partial sums",
		"the assignment takes 4.39 ms of the iteration and the update 2.09 ms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	one := UpdateStory(recs[:3:3][2:])
	if !strings.Contains(one, " `gemm_sorted` is 51.8× faster") || strings.Contains(one, "fastest") {
		t.Errorf("one update:\n%s", one)
	}
}

func TestPipelineStory(t *testing.T) {
	recs := withSpeedups([]bench.Record{rec(seedSize, "block_per_point", 348.4, true), rec(seedSize, "gemm_sorted", 7.93, true),
		rec(seedSize, "gemm_pipelined", 5.73, true), rec(seedSize, "tensor_3xtf32", 4.83, true)})
	recs[1].Params["phases_ms"] = map[string]float64{"assignment (04_gemm_argmin)": 4.71, "update": 2.54, "reduce, download sums": 0.17}
	recs[2].Params["phases_ms"] = map[string]float64{"assignment (08_gemm_pipelined)": 3.37, "update": 2.17}
	recs[3].Params["phases_ms"] = map[string]float64{"assignment (10_tensor_3xtf32)": 2.4576, "update": 2.19, "counts and inertia": 0.01}
	got := PipelineStory(recs)
	for _, want := range []string{
		"10 + 09 is 1.64× faster than 04 + 06, and 72.1× faster than `block_per_point`.",
		"| mean iteration (median of runs) | last iteration: assignment | update | other phases | sum of the phases |",
		"| `gemm_sorted` | 7.93 ms | 4.71 ms | 2.54 ms | 170 µs | 7.42 ms | 1304 |",
		"| `tensor_3xtf32` | 4.83 ms | 2.46 ms | 2.19 ms | 10 µs | 4.66 ms | 2500 |", // 6.144 GB in 2.4576 ms
		"The assignment takes 4.71 ms with 04, 3.37 ms with 08 and 2.46 ms with 10.",
		"The update takes 2.54 ms with 06 and 2.17 ms with 09;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	// Without 08, update 09 is the tensor-core run's.
	got = PipelineStory([]bench.Record{recs[1], recs[3]})
	if !strings.Contains(got, "The update takes 2.54 ms with 06 and 2.19 ms with 09;") {
		t.Errorf("without 08:\n%s", got)
	}
	// Without 09, nothing is said of it.
	got = PipelineStory(recs[1:2])
	if !strings.Contains(got, "The update takes 2.54 ms with 06.\n") || strings.Contains(got, "09") {
		t.Errorf("04 + 06 alone:\n%s", got)
	}
}

func TestStreamStory(t *testing.T) {
	size := seedSize + ",batch=131072"
	copies := rec(size, "h2d_copy", 111.9, true)
	copies.GBps = 54.9
	recs := []bench.Record{copies, rec(size, "block_per_point", 407.5, true), rec(size, "gemm_sorted", 111.8, true), rec(size, "fused", 118.4, false)}
	got := StreamStory(recs)
	for _, want := range []string{
		"streamed in batches of 131 072 rows:** one pass of X from pinned host memory to the device, without kernels, takes 112 ms (54.9 GB/s).",
		"`block_per_point` takes 408 ms, 3.64× slower than the copies alone: its kernels, not the copies, set the pace.",
		"`gemm_sorted` takes 112 ms, about as fast as the copies alone: its kernels hide behind the copies",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fused") {
		t.Errorf("a failed record described:\n%s", got)
	}
}

// results is where the recorded runs are.
var results = filepath.Join("..", "..", "..", "docs", "results")

// TestRecordedRuns: the command of every recorded run that is in
// docs/results names the size and the variants of its records. The H100
// runs the lesson lists first are checked once their files are there.
func TestRecordedRuns(t *testing.T) {
	for _, run := range append(slices.Clone(LadderRuns), StreamRuns...) {
		recs, err := bench.ReadJSON(filepath.Join(results, run.File))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Params.Float("batch") > 0 && r.Variant != "cpu_reference" && r.PctPeakGBps+r.PctPeakGFLOPS != 0 {
				t.Errorf("%s: streamed %s has a share of the device's peak (%g%%, %g%%): the host link bounds it", run.File, r.Variant, r.PctPeakGBps, r.PctPeakGFLOPS)
			}
			if !strings.Contains(run.Command, "--size "+r.Size+" ") {
				t.Errorf("%s: record of size %s, command %q", run.File, r.Size, run.Command)
			}
			if _, list, ok := strings.Cut(run.Command, "--variants "); ok && r.Variant != r.Baseline && r.Variant != "block_per_point" {
				if list, _, _ = strings.Cut(list, " "); !slices.Contains(strings.Split(list, ","), r.Variant) {
					t.Errorf("%s: variant %s not in the command's %s", run.File, r.Variant, list)
				}
			}
		}
	}
}

// TestStreamedNoRoof: a streamed size's device cases carry no share of a
// peak (the host link bounds them); resident ones and the CPU reference do.
func TestStreamedNoRoof(t *testing.T) {
	resident, streamed := Spec{N: 10, D: 4, K: 2, Iters: 1}, Spec{N: 10, D: 4, K: 2, Iters: 1, Batch: 5}
	for _, tc := range []struct {
		sp      Spec
		variant string
		want    bool
	}{{streamed, "h2d_copy", true}, {streamed, "gemm_sorted", true}, {streamed, "cpu_reference", false}, {resident, "gemm_sorted", false}} {
		if got := baseCase(tc.sp, tc.variant).NoRoof; got != tc.want {
			t.Errorf("%s at batch %d: NoRoof %v, want %v", tc.variant, tc.sp.Batch, got, tc.want)
		}
	}
}

// TestDocsListRuns: docs/kmeans.md lists every recorded run the lesson
// can show, with its command.
func TestDocsListRuns(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "kmeans.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range append(slices.Clone(LadderRuns), StreamRuns...) {
		if row := "(results/" + run.File + ") | `" + run.Command + "` |"; !strings.Contains(string(doc), row) {
			t.Errorf("docs/kmeans.md has no row ending %q", row)
		}
	}
}

// TestPick: a section shows the run with the most of its variants passing,
// the newest of equals; a missing file waits, and a record of a tree with
// uncommitted changes is never shown.
func TestPick(t *testing.T) {
	dir := t.TempDir()
	write := func(file, commit string, recs ...bench.Record) {
		for i := range recs {
			recs[i].Commit = commit
		}
		if err := bench.WriteJSON(filepath.Join(dir, file), recs); err != nil {
			t.Fatal(err)
		}
	}
	ladder := func() []bench.Record {
		var recs []bench.Record
		for _, v := range Variants {
			recs = append(recs, rec(seedSize, v, 1, true))
		}
		return recs
	}
	write("dirty.json", "abc-dirty", ladder()...)
	write("partial.json", "def", rec(seedSize, "block_per_point", 348, true), rec(seedSize, "gemm_sorted", 6.8, true), rec(seedSize, "tensor_3xtf32", 4.3, true))
	write("old.json", "789", rec(seedSize, "block_per_point", 348, true), rec(seedSize, "naive", 157, true), rec(seedSize, "chunked", 162, true),
		rec(seedSize, "gemm_sorted", 6.7, false))
	runs := []RecordedRun{{"new.json", "new"}, {"dirty.json", "dirty"}, {"partial.json", "partial"}, {"old.json", "old"}}
	for _, tc := range []struct {
		variants []string
		want     string
	}{
		{AssignmentVariants, "old.json"},              // three passing against one
		{UpdateVariants, "partial.json"},              // old.json's gemm_sorted failed
		{PipelineVariants, "partial.json"},            // two against none
		{[]string{"block_per_point"}, "partial.json"}, // equals: the newer
		{nil, "partial.json"},                         // any variant: three each, the newer
	} {
		if got, err := Pick(dir, runs, tc.variants...); err != nil || got.File != tc.want {
			t.Errorf("Pick(%v) = %v, %v, want %s", tc.variants, got, err, tc.want)
		}
	}
	write("new.json", "fed", ladder()...)
	for _, variants := range [][]string{AssignmentVariants, UpdateVariants, PipelineVariants, nil} {
		if got, err := Pick(dir, runs, variants...); err != nil || got.File != "new.json" {
			t.Errorf("with the new ladder, Pick(%v) = %v, %v", variants, got, err)
		}
	}
	if _, err := Pick(dir, runs[1:2]); err == nil || !strings.Contains(err.Error(), "no run") {
		t.Errorf("only a dirty run: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Pick(dir, []RecordedRun{{"bad.json", ""}}); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a malformed record: %v", err)
	}
}

// TestPickRecorded: in docs/results, every section of the lesson finds a
// clean run with its variants, never a -dirty one.
func TestPickRecorded(t *testing.T) {
	for _, tc := range []struct {
		runs     []RecordedRun
		variants []string
	}{
		{LadderRuns, AssignmentVariants}, {LadderRuns, UpdateVariants}, {LadderRuns, PipelineVariants},
		{LadderRuns, []string{"block_per_point"}}, {StreamRuns, nil},
	} {
		run, err := Pick(results, tc.runs, tc.variants...)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := bench.ReadJSON(filepath.Join(results, run.File))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if strings.HasSuffix(r.Commit, "-dirty") {
				t.Errorf("%v: picked %s, of commit %s", tc.variants, run.File, r.Commit)
			}
		}
	}
}

// TestRecordedStories reads recorded runs as the lesson does and checks
// what it says about them.
func TestRecordedStories(t *testing.T) {
	read := func(file string) []bench.Record {
		recs, err := bench.ReadJSON(filepath.Join(results, file))
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	ladder := read("h200-kmeans-cuda.json")
	passed := slices.DeleteFunc(slices.Clone(ladder), func(r bench.Record) bool { return !Passed(AssignmentVariants...)(r) })
	for story, wants := range map[string][]string{
		AssignmentStory(passed):                     {"157 ms with a thread per point (01)", "348 ms with a block per point (03)", "03 is 2.22× slower than 01"},
		NotShownMarkdown(ladder, UpdateVariants...): {"`gemm_atomic`", "`gemm_sorted`", "`fused`", "293 points are not labelled"},
		PipelineStory(read("h200-kmeans-3xtf32.json")): {"NVIDIA H200", "4.25 ms with tensor cores",
			"The assignment takes 4.39 ms with 04 and 2.44 ms with 10."},
		StreamStory(read("h200-kmeans-stream.json")): {"takes 112 ms (54.9 GB/s)", "`block_per_point` takes 408 ms, 3.64× slower"},
		SeedComparison(ladder, "lab bench kmeans"): {"against a recorded run of 5 iterations on NVIDIA H200 (`cuda:0`), commit `7dacf6b13ef2`, 2026-11-22, with `lab bench kmeans`: its median time per iteration times the log's iteration count",
			"| recorded per iteration × n (NVIDIA H200) |", "| 10 | 1.928 s | 3.48 s | 1.8× slower |", "| 36 | 6.927 s | 12.5 s | 1.81× slower |", "The recorded iteration takes 348 ms",
			"the log's RTX 4090 takes 193 ms and the recorded NVIDIA H200 348 ms (1.8× slower)", "reads it at 17.7 GB/s, 0.37% of the device's memory peak, and the log's at 31.9 GB/s.",
			"the memory's bandwidth does not set", "Why the log's iteration is 1.8× faster, the data do not say"},
		SeedComparison(read("h100-kmeans-cuda.json"), "lab bench kmeans"): {"recorded per iteration × n (NVIDIA H100 80GB HBM3)", "0.53% of the device's memory peak",
			"The assignment kernel takes 345 ms of the recorded 348 ms."},
	} {
		for _, want := range wants {
			if !strings.Contains(story, want) {
				t.Errorf("missing %q in:\n%s", want, story)
			}
		}
	}
	if got := NotShownMarkdown(ladder, AssignmentVariants...); got != "" {
		t.Errorf("steps 01–03 failed in the recorded run:\n%s", got)
	}
}

func TestSeed(t *testing.T) {
	md := SeedMarkdown()
	for _, want := range []string{SeedSource, "| 32 | 10 | 3.221 s | 9.416 s |", "| 256 | 10 | 2.279 s | 1.928 s |", "| 256 | 36 | 8.125 s | 6.927 s |"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	if got := SeedComparison([]bench.Record{rec("blobs:n=1000,d=1536,k=25", "block_per_point", 1, true)}, "lab bench kmeans"); !strings.Contains(got, "no passing block_per_point record") {
		t.Errorf("another size compared: %s", got)
	}
	// Without a share of the memory peak, no claim about what bounds it.
	got0 := SeedComparison([]bench.Record{rec(seedSize, "block_per_point", 100, true)}, "lab bench kmeans")
	for _, want := range []string{"the recorded NVIDIA H200 100 ms (1.93× faster)", "reads it at 61.4 GB/s, and the log's", "Why the log's iteration is 1.93× slower"} {
		if !strings.Contains(got0, want) {
			t.Errorf("missing %q in:\n%s", want, got0)
		}
	}
	if strings.Contains(got0, "bandwidth does not set") {
		t.Errorf("a bound claimed without a share of the peak:\n%s", got0)
	}
	ms := time.Millisecond
	got := SeedTableMarkdown("NVIDIA H100", Spec{N: 100000, D: 1536, K: 25},
		[]IterTiming{{32, 10, 700 * ms}, {32, 36, 2520 * ms}, {256, 10, 350 * ms}, {256, 36, 1262 * ms}})
	for _, want := range []string{
		"| 32 | 36 | 2.52 s | 70 ms |", "| 256 | 10 | 350 ms | 35 ms |",
		"At TPB 32, 10 iterations are 2× slower than at TPB 256; in the seed's log (after its change), 4.88× slower.",
		"These times are for 100 000 points, the seed's for 1 000 000.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestBanks(t *testing.T) {
	var got []int
	var words [][32]int
	for _, r := range CenterReads(1536) {
		w, passes := Banks(r)
		got, words = append(got, passes), append(words, w)
	}
	// One word for all (a broadcast), 32 words in one bank, 32 banks.
	if !slices.Equal(got, []int{1, 32, 1}) {
		t.Errorf("passes %v, want [1 32 1]", got)
	}
	// What the figures draw differs: the broadcast is one word in bank 7,
	// the conflict 32 words there, the spread one word in every bank.
	var broadcast, conflict, spread [32]int
	broadcast[7], conflict[7] = 1, 32
	for b := range spread {
		spread[b] = 1
	}
	if want := [][32]int{broadcast, conflict, spread}; !slices.Equal(words, want) {
		t.Errorf("words per bank %v, want %v", words, want)
	}
	// With a row of 1537 floats, lane t's center lands in bank (t + 7) mod 32: no conflict.
	if _, passes := Banks(CenterReads(1537)[1]); passes != 1 {
		t.Errorf("odd stride: %d passes", passes)
	}
	// Two lanes per bank on distinct words: 2 passes.
	if _, passes := Banks(WarpRead{"stride 2", func(t int) int { return 2 * t }}); passes != 2 {
		t.Errorf("stride 2: %d passes", passes)
	}
}

func TestClusterSeries(t *testing.T) {
	p := []float32{0, 0, 1, 1, 2, 2, 3, 3}
	s := ClusterSeries(p, []int32{2, 0, 2, 0}, 4)
	if len(s) != 2 || s[0].Name != "cluster 0" || !slices.Equal(s[0].X, []float64{1, 3}) || s[1].Name != "cluster 2" || !slices.Equal(s[1].Y, []float64{0, 2}) {
		t.Errorf("series %+v", s)
	}
}

func TestOrientForLegend(t *testing.T) {
	// Points crowd the top right: flipping both signs empties it.
	p := []float32{10, 10, 9, 9.5, 9.8, 10, 0, 0, 1, 2, 5, 0}
	OrientForLegend(p)
	if n := inCorner(p, [2]float32{1, 1}); n != 0 {
		t.Errorf("%d points left in the corner: %v", n, p)
	}
	if p[0] != -10 || p[1] != 10 { // the first orientation that empties it: x flipped
		t.Errorf("first point at (%g, %g), want (-10, 10)", p[0], p[1])
	}
	// An empty corner is kept as it is.
	q := []float32{0, 0, 10, 0, 0, 10}
	OrientForLegend(q)
	if !slices.Equal(q, []float32{0, 0, 10, 0, 0, 10}) {
		t.Errorf("flipped to %v", q)
	}
}

func TestTimeline(t *testing.T) {
	us := time.Microsecond
	spans := []Span{
		{Stream: 1, Kind: "copy", Batch: 1, Start: 400 * us, End: 800 * us},
		{Stream: 0, Kind: "copy", Batch: 0, Start: 0, End: 400 * us},
		{Stream: 0, Kind: "compute", Batch: 0, Start: 400 * us, End: 700 * us},
		{Stream: 1, Kind: "compute", Batch: 1, Start: 800 * us, End: 1000 * us},
	}
	series := TimelineSeries(spans)
	var names []string
	for _, s := range series {
		names = append(names, s.Name)
		if !slices.IsSorted(s.X) {
			t.Errorf("%s: x not sorted: %v", s.Name, s.X)
		}
	}
	if want := []string{"stream 0 · copy", "stream 0 · compute", "stream 1 · copy", "stream 1 · compute"}; !slices.Equal(names, want) {
		t.Errorf("lanes %v, want %v", names, want)
	}
	if !slices.Equal(series[3].X, []float64{0.8, 0.8, 1, 1}) || math.Abs(series[3].Y[1]-3.3) > 1e-12 {
		t.Errorf("stream 1 compute: %v %v", series[3].X, series[3].Y)
	}
	// The figure names the lanes on its y axis, at their levels.
	if _, err := TimelineFigure("t", spans).PNG(600, 300); err != nil {
		t.Fatal(err)
	}
	html, err := TimelineFigure("t", spans[:1]).HTML() // stream 1's copy alone: levels 0 and 1 unnamed
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "[decodeURIComponent(''),decodeURIComponent(''),decodeURIComponent('stream%201%20%C2%B7%20copy')]") {
		t.Error("the timeline's y axis does not name stream 1's copy at level 2")
	}
	md := TimelineMarkdown(spans)
	// Copies 0–800 µs, kernels 400–700 and 800–1000 µs: both from 400 to 700.
	for _, want := range []string{"took 1 ms", "Copies were running for 800 µs of it (80%), kernels for 500 µs (50%), and both at once for 300 µs.", "Most of the computing hides behind the copies"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in: %s", want, md)
		}
	}
	apart := TimelineMarkdown([]Span{{Kind: "copy", End: 400 * us}, {Kind: "compute", Start: 400 * us, End: 800 * us}})
	if !strings.Contains(apart, "both at once for 0 s") || !strings.Contains(apart, "Little of it overlaps") {
		t.Errorf("no overlap: %s", apart)
	}
}

func TestSpeedupFigures(t *testing.T) {
	recs := withSpeedups([]bench.Record{rec(seedSize, "block_per_point", 348, true), rec(seedSize, "naive", 157, true)})
	size := "blobs:n=100000,d=1536,k=25,iters=5,batch=25000"
	streamed := []bench.Record{rec(size, "h2d_copy", 10, true), rec(size, "gemm_sorted", 11, true)}
	streamed[0].Baseline, streamed[1].Baseline = "h2d_copy", "h2d_copy"
	streamed = withSpeedups(streamed)
	alone := rec("blobs:n=5000,d=8,k=2", "block_per_point", 1, true) // the baseline and nothing to compare
	alone.Speedup = 1
	figs := SpeedupFigures(append(append(recs, streamed...), alone), "recorded")
	var titles []string
	for _, f := range figs {
		titles = append(titles, f.Title)
	}
	if want := []string{"NVIDIA H200, 1M × 1536 (recorded)", "NVIDIA H200, 100k × 1536, streamed (recorded)"}; !slices.Equal(titles, want) {
		t.Errorf("titles %q, want %q", titles, want)
	}
	if _, err := figs[0].PNG(0, 0); err != nil {
		t.Error(err)
	}
}
