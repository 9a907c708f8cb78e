package warps

import (
	"strings"
	"testing"

	"gpulab/engine/bench"
)

// timed is a record of a variant whose runs took median ms, the fastest 1%
// less, moving 1 GB; pocl marks it as measured on a CPU-type device (its
// bandwidth compared with a peak of 173 GB/s), else on an NVIDIA H200
// (4800 GB/s).
func timed(suite, variant string, median float64, pocl bool, params bench.Params) bench.Record {
	r := bench.Record{Suite: suite, Variant: variant, Device: "cuda:0", DeviceName: "NVIDIA H200", MedianMS: median, MinMS: 0.99 * median,
		GBps: 1000 / median, Params: params, OK: true}
	peak := 4800.0
	if pocl {
		r.Device, r.DeviceName, peak = "opencl:0:0", "pthread-skylake-avx512-AMD EPYC", 173
	}
	r.PctPeakGBps = 100 * r.GBps / peak
	return r
}

// fastest sets a record's fastest run.
func fastest(r bench.Record, minMS float64) bench.Record {
	r.MinMS = minMS
	return r
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{formatTime(0.0000000102357), "10.2 ps"},
		{formatTime(0.000089), "89.0 ns"},
		{formatTime(0.0009996), "1.00 µs"},
		{formatTime(0.6722), "672 µs"},
		{formatTime(89.34), "89.3 ms"},
		{formatTime(2312), "2.31 s"},
		{formatTime(-0.0000772), "-77.2 ns"},
		{times(1.5466), "1.55×"},
		{times(0.6954), "0.695×"},
		{times(20.53), "20.5×"},
		{times(644.2), "644×"},
		{sig3(0), "0"},
		{sig3(49016.4), "49016"},
		{share(0.2734), "27%"},
		{share(0.031), "3.1%"},
		{signedShare(0.032), "+3.2%"},
		{signedShare(-0.35), "-35%"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestSpearman(t *testing.T) {
	for _, tc := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{1, 2, 4, 8}, []float64{0.1, 0.3, 0.5, 2}, 1},
		{[]float64{1, 2, 4, 8}, []float64{4, 3, 2, 1}, -1},
		{[]float64{1, 1, 2, 2}, []float64{1, 2, 3, 4}, 0.8944271909999159},
		{[]float64{1, 1, 1}, []float64{1, 2, 3}, 0},
	} {
		if got := spearman(tc.x, tc.y); got-tc.want > 1e-12 || tc.want-got > 1e-12 {
			t.Errorf("spearman(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}

// TestFindingsOfRecordedRuns reads the H200 records in docs/results: each
// verdict and the figures it quotes are those of docs/opencl-and-warps.md.
func TestFindingsOfRecordedRuns(t *testing.T) {
	for _, tc := range []struct {
		suite string
		want  []string // in the Markdown, in order
	}{
		{"divergence", []string{"**cuda:0** (NVIDIA H200): alternate_lanes", "took 1.55× the time of uniform", "the time of uniform within noise (0.980×)",
			"the time against uniform was 1.16× at p = 0.01 (27% of the groups diverged)", ": slower beyond noise at every p.", "runs both branches holds:*", "**opencl:1:0**"}},
		{"fastmath", []string{"The fast_flags build calls `expf, sinf with --use_fast_math`", "the speed of the precise build within noise",
			"makes math faster does not hold:*", "which suggests that the same precise instructions ran", "native build calls `__expf, __sinf`",
			"2.80× the speed", "are faster holds:*", "**opencl:1:0**", "-cl-fast-relaxed-math`, the precise one `exp, sin`. It ran at 2.92× the speed", "makes math faster holds:*"}},
		{"wgsize", []string{"copy was fastest in work-groups of 256", "groups of 32 took 5.62× the time of groups of 256", "the size to use does not hold:*",
			"other sizes beat 32 for both kernels: the copy ran fastest in groups of 256, and the FMA chain ran fastest in groups of 512.",
			"On NVIDIA GPUs a group of 32 is one warp", "0 of 16 launches were faster beyond noise and 0 slower", "size helps does not hold:*"}},
		{"barrier", []string{"| cuda:0 | 32 | 672 µs | 329 µs | 2.04× | 10.2 ps |", "| cuda:0 | 256 | 366 µs | 281 µs | 1.30× | 20.2 ps |",
			"the time against the same work without them was 2.04× in groups of 32, 1.93× in groups of 64, 1.51× in groups of 128 and 1.30× in groups of 256.",
			"each work-group barrier added 10.2 ps at 32 and 20.2 ps at 256 of the device's time", "is cheap does not hold:*", "the one-warp groups suffered most"}},
		{"occupancy", []string{"(ACC=1), bandwidth was 848 GB/s at 25% occupancy and 2654 GB/s at 100%", "ACC=32 it was 3466 GB/s at 25% occupancy and 3830 GB/s at 100%",
			"latency holds in part:*", "kept 91% of the highest's bandwidth", "**opencl:1:0**", "Reserving 32 KiB of local memory", "1.28× the time of no reservation", "latency holds:*"}},
		{"intensity", []string{"within noise of F=1 (or below it) up to F=16", "; up to F=64 each doubling of the FMAs raised the time by less than √2",
			"51872 GFLOP/s, 78% of the FP32 peak", "ridge point is at 13.9 FLOP/byte", "wait on memory holds:* up to F=64 the added FMAs cost less than their share"}},
		{"banks", []string{"162 µs (1-way)", "4.28 ms (32-way)", "took 20.5× the time of stride 32 padded by one word", "rank correlation", "is 0.97",
			"4 words (4-way), stride 32 took 2.65×", "bank conflicts holds:*"}},
		{"filter", []string{"blur through a texture object took 3.26× the time of blur_plain", "beat buffers does not hold:*",
			"since Maxwell", "blur through `image2d_t` and a sampler took 2.20× the time of blur_buffer"}},
	} {
		md := Findings(recorded(t, tc.suite))
		at := 0
		for _, w := range tc.want {
			i := strings.Index(md[at:], w)
			if i < 0 {
				t.Errorf("%s: %q missing after position %d of:\n%s", tc.suite, w, at, md)
				break
			}
			at += i + len(w)
		}
		if strings.Contains(md, "PoCL") {
			t.Errorf("%s: the H200's findings explain PoCL:\n%s", tc.suite, md)
		}
	}
}

// TestFindingsOnACPUDevice gives each judge the outcomes a CPU device can
// produce, and checks the verdict and the explanation that goes with it.
func TestFindingsOnACPUDevice(t *testing.T) {
	p := func(kv ...any) bench.Params {
		ps := bench.Params{}
		for i := 0; i < len(kv); i += 2 {
			ps[kv[i].(string)] = kv[i+1]
		}
		return ps
	}
	for _, tc := range []struct {
		name string
		recs []bench.Record
		want []string
	}{
		{"divergence costs nothing", []bench.Record{
			timed("divergence", "uniform", 40, true, p("pattern", "uniform", "divergent_fraction", 0.0)),
			timed("divergence", "warp_split", 41, true, p("pattern", "warp_split", "divergent_fraction", 0.0)),
			timed("divergence", "alternate_lanes", 40.5, true, p("pattern", "alternate_lanes", "divergent_fraction", 1.0)),
		}, []string{"took the time of uniform within noise (1.01×)", "runs both branches does not hold:*", "lanes that disagree cost nothing measurable here.",
			"a SIMD vector, not a 32-lane warp"}},
		{"random lanes cost, regular ones do not", []bench.Record{
			timed("divergence", "uniform", 40, true, p("pattern", "uniform", "divergent_fraction", 0.0)),
			timed("divergence", "warp_split", 41, true, p("pattern", "warp_split", "divergent_fraction", 0.0)),
			timed("divergence", "alternate_lanes", 40.5, true, p("pattern", "alternate_lanes", "divergent_fraction", 1.0)),
			timed("divergence", "random_p0.01", 50, true, p("pattern", "random", "p", 0.01, "divergent_fraction", 0.28)),
			timed("divergence", "random_p0.1", 96, true, p("pattern", "random", "p", 0.1, "divergent_fraction", 0.97)),
			timed("divergence", "random_p0.5", 100, true, p("pattern", "random", "p", 0.5, "divergent_fraction", 1.0)),
		}, []string{"the time against uniform was 1.25× at p = 0.01 (28% of the groups diverged), 2.40× at p = 0.1 (97% of the groups diverged) and 2.50× at p = 0.5 (100% of the groups diverged): slower beyond noise at every p.",
			"runs both branches does not hold:*", "random lanes did (p = 0.5 took 2.50× the uniform time): the cost follows how predictable the branch is", "can predict a regular pattern of branches, not a random one"}},
		{"one random p slower, the others not (the H100's PoCL run)", []bench.Record{
			timed("divergence", "uniform", 40, true, p("pattern", "uniform", "divergent_fraction", 0.0)),
			fastest(timed("divergence", "warp_split", 36.1, true, p("pattern", "warp_split", "divergent_fraction", 0.0)), 39),
			fastest(timed("divergence", "alternate_lanes", 36.1, true, p("pattern", "alternate_lanes", "divergent_fraction", 1.0)), 39),
			fastest(timed("divergence", "random_p0.01", 35.9, true, p("pattern", "random", "p", 0.01, "divergent_fraction", 0.28)), 39),
			timed("divergence", "random_p0.1", 45.6, true, p("pattern", "random", "p", 0.1, "divergent_fraction", 0.97)),
			timed("divergence", "random_p0.5", 35.6, true, p("pattern", "random", "p", 0.5, "divergent_fraction", 1.0)),
		}, []string{"took the time of uniform within noise (0.903× by median, 0.985× by fastest run)",
			"0.897× at p = 0.01 (28% of the groups diverged), 1.14× at p = 0.1 (97% of the groups diverged) and 0.890× at p = 0.5",
			": slower beyond noise at p = 0.1, within noise at p = 0.01 and faster beyond noise at p = 0.5.",
			"and not in order of how unpredictable the branch is: p = 0.5, the least predictable, took 0.890× the uniform time. This run does not say what made p = 0.1 slower.",
			"a SIMD vector, not a 32-lane warp."}},
		{"barriers faster", []bench.Record{
			timed("barrier", "nobar_l32", 69, true, p("local", 32, "barrier", false, "barriers", 0)),
			timed("barrier", "bar_l32", 25.8, true, p("local", 32, "barrier", true, "barriers", 64*32768, "compute_units", 16, "clock_mhz", 2600)),
			timed("barrier", "nobar_l256", 74.6, true, p("local", 256, "barrier", false, "barriers", 0)),
			timed("barrier", "bar_l256", 29.1, true, p("local", 256, "barrier", true, "barriers", 64*4096)),
		}, []string{"| opencl:0:0 | 32 | 25.8 ms | 69.0 ms | 0.374× | -20.6 ns (faster with barriers) | - |\n",
			"saved 20.6 ns per work-group barrier at 32 and 174 ns at 256", "is cheap cannot be tested here:*", "faster with barriers than without, at every size: with barriers the compiler built a different kernel", "PoCL compiles the code between two barriers"}},
		{"barrier cost in SM cycles (the H100's CUDA run)", []bench.Record{
			timed("barrier", "nobar_l32", 0.329, false, p("local", 32, "barrier", false, "barriers", 0, "compute_units", 132, "clock_mhz", 1980)),
			timed("barrier", "bar_l32", 0.668, false, p("local", 32, "barrier", true, "barriers", 64*(1<<24)/32, "rounds", 64, "compute_units", 132, "clock_mhz", 1980)),
			timed("barrier", "nobar_l256", 0.279, false, p("local", 256, "barrier", false, "barriers", 0, "compute_units", 132, "clock_mhz", 1980)),
			timed("barrier", "bar_l256", 0.368, false, p("local", 256, "barrier", true, "barriers", 64*(1<<24)/256, "rounds", 64, "compute_units", 132, "clock_mhz", 1980)),
		}, []string{"| extra time per work-group barrier | the same, in cycles of one compute unit (SM) |", "| cuda:0 | 32 | 668 µs | 329 µs | 2.03× | 10.1 ps | 2.64 |",
			"| cuda:0 | 256 | 368 µs | 279 µs | 1.32× | 21.2 ps | 5.55 |", "Every work-item passes the same 64 barriers at every size",
			"the device's 132 SMs, each work-group barrier cost one SM 2.64 cycles at 32 and 5.55 at 256, or 2.64 and 0.693 per warp that waits at it",
			"is cheap does not hold:*", "the one-warp groups suffered most: the same barriers per work-item made the kernel take 2.03× its time without them in groups of 32, and 1.32× in groups of 256."}},
		{"barrier cost within noise", []bench.Record{
			timed("barrier", "nobar_l32", 10, false, p("local", 32, "barrier", false, "barriers", 0)),
			timed("barrier", "bar_l32", 10.1, false, p("local", 32, "barrier", true, "barriers", 1000)),
			timed("barrier", "nobar_l256", 10, false, p("local", 256, "barrier", false, "barriers", 0)),
			timed("barrier", "bar_l256", 13, false, p("local", 256, "barrier", true, "barriers", 125)),
		}, []string{"| cuda:0 | 32 | 10.1 ms | 10.0 ms | 1.01× | within noise |", "| cuda:0 | 256 | 13.0 ms | 10.0 ms | 1.30× | 24.0 µs |",
			"is cheap holds:*", "a group of 32 cost nothing measurable, and one in a group of 256 did"}},
		{"local memory raises bandwidth", []bench.Record{
			timed("occupancy", "acc1_smem0K", 10, true, p("acc", 1, "local_mem", 0)),
			timed("occupancy", "acc1_smem96K", 6.7, true, p("acc", 1, "local_mem", 96*1024)),
			timed("occupancy", "acc2_smem0K", 11, true, p("acc", 2, "local_mem", 0)),
		}, []string{"Reserving 96 KiB of local memory per work-group took ACC=1 from 100 GB/s to 149 GB/s, 0.670× the time of no reservation", "latency does not hold:*", "it rose", "no residency slots"}},
		{"no bank effect", []bench.Record{
			timed("banks", "s1_p0", 13.6, true, p("ways", 1)),
			timed("banks", "s32_p0", 23.6, true, p("ways", 32)),
			timed("banks", "s32_p1", 25.2, true, p("ways", 1)),
			timed("banks", "s32_p4", 27.0, true, p("ways", 4)),
		}, []string{"19.4 ms (1-way), 27.0 ms (4-way), 23.6 ms (32-way)", "0.937× the time of stride 32 padded by one word", "bank conflicts does not hold:*", "has no banks"}},
		{"small groups enough for one kernel", []bench.Record{
			timed("wgsize", "copy_wg8", 30, true, p("kernel", "copy", "local", 8, "hint", false)),
			timed("wgsize", "copy_wg32", 20, true, p("kernel", "copy", "local", 32, "hint", false)),
			timed("wgsize", "copy_wg1024", 7, true, p("kernel", "copy", "local", 1024, "hint", false)),
			timed("wgsize", "fma_wg8", 50, true, p("kernel", "fma", "local", 8, "hint", false)),
			timed("wgsize", "fma_wg32", 51, true, p("kernel", "fma", "local", 32, "hint", false)),
			timed("wgsize", "fma_wg1024", 60, true, p("kernel", "fma", "local", 1024, "hint", false)),
		}, []string{"the copy was fastest in work-groups of 1024 (143 GB/s), and groups of 32 took 2.86× the time of groups of 1024",
			"FMA chain was fastest in work-groups of 8", "groups of 32 took the time of groups of 8 within noise (1.02×)",
			"the size to use holds in part:* groups of 32 were enough for the FMA chain only; the copy ran fastest in groups of 1024.",
			"PoCL runs each work-group as a loop"}},
		{"the size hint only slows", []bench.Record{
			timed("wgsize", "copy_wg32", 20, true, p("kernel", "copy", "local", 32, "hint", false)),
			timed("wgsize", "copy_wg32_hint", 30, true, p("kernel", "copy", "local", 32, "hint", true)),
			timed("wgsize", "fma_wg32", 50, true, p("kernel", "fma", "local", 32, "hint", false)),
			timed("wgsize", "fma_wg32_hint", 50.2, true, p("kernel", "fma", "local", 32, "hint", true)),
		}, []string{"0 of 2 launches were faster beyond noise and 1 slower", "does not hold:* declaring the size made no launch faster, and some slower."}},
		{"every FMA costs time", []bench.Record{
			timed("intensity", "f1", 1, true, p("f", 1)),
			timed("intensity", "f2", 1.5, true, p("f", 2)),
			timed("intensity", "f4", 3, true, p("f", 4)),
		}, []string{"grew from the first added FMA: F=2 took 1.50× the time of F=1", "wait on memory does not hold:*", "already raised the time by √2 or more"}},
		{"FMAs cheap but not free", []bench.Record{
			timed("intensity", "f1", 1, true, p("f", 1)),
			timed("intensity", "f2", 1.07, true, p("f", 2)),
			timed("intensity", "f4", 1.44, true, p("f", 4)),
			timed("intensity", "f8", 2.36, true, p("f", 8)),
		}, []string{"grew from the first added FMA: F=2 took 1.07× the time of F=1; up to F=4 each doubling of the FMAs raised the time by less than √2",
			"F=4 took 1.44× the time of F=1; F=8 took 2.36× the time of F=1.", "wait on memory holds:* up to F=4 the added FMAs cost less than their share"}},
		{"F=2 cheap, F=4 not", []bench.Record{
			timed("intensity", "f1", 1, true, p("f", 1)),
			timed("intensity", "f2", 1.08, true, p("f", 2)),
			timed("intensity", "f4", 2, true, p("f", 4)),
		}, []string{"F=2 took 1.08× the time of F=1; up to F=2 each doubling of the FMAs raised the time by less than √2, half-way (geometrically) between no cost and a cost in proportion; F=4 took 2.00× the time of F=1."}},
	} {
		md := Findings(tc.recs)
		at := 0
		for _, w := range tc.want {
			i := strings.Index(md[at:], w)
			if i < 0 {
				t.Errorf("%s: %q missing after position %d of:\n%s", tc.name, w, at, md)
				break
			}
			at += i + len(w)
		}
	}
}

func TestFindingsWithoutRecordsOrVariants(t *testing.T) {
	if got := Findings(nil); !strings.Contains(got, "No CUDA or OpenCL device") {
		t.Errorf("no records: %q", got)
	}
	only := []bench.Record{timed("divergence", "uniform", 1, false, nil)}
	if got := Findings(only); !strings.Contains(got, "lack the variants") {
		t.Errorf("a lone variant: %q", got)
	}
}

func TestSummary(t *testing.T) {
	live := []bench.Record{
		timed("filter", "blur_image", 15.6, true, bench.Params{"filter": "blur", "path": "image"}),
		timed("filter", "blur_buffer", 2.5, true, bench.Params{"filter": "blur", "path": "buffer"}),
		timed("filter", "sobel_image", 4.8, true, bench.Params{"filter": "sobel", "path": "image"}),
		timed("filter", "sobel_buffer", 0.46, true, bench.Params{"filter": "sobel", "path": "buffer"}),
	}
	var rec []bench.Record
	for _, s := range Suites {
		rec = append(rec, recorded(t, s)...)
	}
	md, err := Summary(live, rec)
	if err != nil {
		t.Fatal(err)
	}
	table, notes, _ := strings.Cut(md, "\n\n")
	if lines := strings.Split(table, "\n"); len(lines) != 2+len(claims) {
		t.Fatalf("%d lines, want a header, a rule and %d claims:\n%s", len(lines), len(claims), md)
	}
	for _, w := range []string{
		"| the guide's claim | `opencl:0:0` (pthread-skylake-avx512-AMD EPYC), this run | `cuda:0` (NVIDIA H200), recorded 2026-11-22 † | `opencl:1:0` (NVIDIA H200), recorded 2026-11-22 †† |",
		"| a warp whose lanes disagree runs both branches | not run | **holds**: alternate_lanes 1.55×, warp_split 0.980× the uniform time; random lanes up to 1.54× |",
		"| images and samplers beat buffers | **does not hold**: image over buffer time: blur 6.24×, sobel 10.4× | **does not hold**: image over buffer time: blur 3.26×, sobel 2.07× |",
		"| `-cl-fast-relaxed-math` makes math faster | not run | **does not hold**: 1.00× the speed",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("summary lacks %q:\n%s", w, md)
		}
	}
	for _, w := range []string{
		"† Recorded on NVIDIA H200 (`cuda:0`), commit `",
		", with `lab bench S --device cuda:0 --min-time 20ms --json h200-S-cuda-0.json`, for each suite S: divergence, fastmath, wgsize, barrier, occupancy, intensity, banks, filter.",
		"†† Recorded on NVIDIA H200 (`opencl:1:0`)",
	} {
		if !strings.Contains(notes, w) {
			t.Errorf("the captions lack %q:\n%s", w, notes)
		}
	}
	if got, _ := Summary(nil, nil); !strings.Contains(got, "No records") {
		t.Errorf("empty summary: %q", got)
	}
	noCommit := recorded(t, "filter")
	for i := range noCommit {
		noCommit[i].Commit = ""
	}
	if _, err := Summary(nil, noCommit); err == nil {
		t.Error("a recorded run without its commit was summarised")
	}
}
