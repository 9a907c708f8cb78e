package main

import (
	"bytes"
	"fmt"
	"gpulab/engine/cuda"
	"slices"
	"strings"
	"testing"
)

// ncuRow writes one row of ncu's --csv --page details, with the columns
// of Nsight Compute 2023 and later (rule columns after the metric).
func ncuRow(id, kernel, grid, block, section, name, unit, value string) string {
	return fmt.Sprintf(`"%s","4242","lab","127.0.0.1","%s","1","7","%s","%s","0","9.0","%s","%s","%s","%s","","","","",""`+"\n",
		id, kernel, block, grid, section, name, unit, value)
}

const ncuHeader = `"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"` + "\n"

// naiveKernel is a profile like 01_naive's: memory bound on L1, not on
// DRAM, its warps waiting on uncoalesced global loads.
func naiveKernel(id string) string {
	var b strings.Builder
	row := func(section, name, unit, value string) {
		b.WriteString(ncuRow(id, "sgemm", "(32, 32, 1)", "(32, 32, 1)", section, name, unit, value))
	}
	sol, occ, ws, cmd := "GPU Speed Of Light Throughput", "Occupancy", "Warp State Statistics", "Command line profiler metrics"
	row(sol, "DRAM Frequency", "Ghz", "2.62")
	row(sol, "Memory Throughput", "%", "92.4")
	row(sol, "DRAM Throughput", "%", "30.1")
	row(sol, "Duration", "usecond", "4,428.16")
	row(sol, "Compute (SM) Throughput", "%", "9.8")
	row(occ, "Block Limit SM", "block", "32")
	row(occ, "Block Limit Registers", "block", "2")
	row(occ, "Block Limit Shared Mem", "block", "32")
	row(occ, "Block Limit Warps", "block", "2")
	row(occ, "Theoretical Occupancy", "%", "100")
	row(occ, "Achieved Occupancy", "%", "98.5")
	row(ws, "Warp Cycles Per Issued Instruction", "cycle", "36.61")
	for reason, v := range map[string]string{"long_scoreboard": "25.3", "lg_throttle": "8.1", "wait": "1.5", "not_selected": "0.4",
		"math_pipe_throttle": "0.3", "mio_throttle": "0.2", "short_scoreboard": "0.1", "dispatch_stall": "0.05", "imc_miss": "0.05",
		"no_instruction": "0.3", "branch_resolving": "0.2", "misc": "0.1", "barrier": "0", "drain": "0", "membar": "0", "sleeping": "0", "tex_throttle": "0"} {
		row(cmd, stallMetric(reason), "", v)
	}
	row(cmd, sectorMetric, "%", "12.6")
	row(cmd, loadMetric, "inst", "2,097,152")
	return b.String()
}

// TestParseNCUDetails reads a details page with ncu's own lines before
// the header, a rule's row (no metric), numbers with thousands
// separators, and two kernels.
func TestParseNCUDetails(t *testing.T) {
	text := "==PROF== Connected to process 4242 (/work/lab)\n==WARNING== Some rule was skipped\n" + ncuHeader + naiveKernel("0") +
		`"0","4242","lab","127.0.0.1","sgemm","1","7","(32, 32, 1)","(32, 32, 1)","0","9.0","Occupancy","","","","AchievedOccupancy","OPT","The difference…","local","1.2"` + "\n" +
		ncuRow("1", "pad_cols", "(4, 1000, 1)", "(256, 1, 1)", "GPU Speed Of Light Throughput", "Duration", "usecond", "3.20")
	ks, err := parseNCUDetails(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].Name != "sgemm" || ks[1].Name != "pad_cols" || ks[0].Grid != "(32, 32, 1)" || ks[1].Block != "(256, 1, 1)" {
		t.Fatalf("kernels %+v", ks)
	}
	if d, ok := ks[0].seconds(); !ok || d < 4.428e-3 || d > 4.429e-3 {
		t.Errorf("duration %v %v, want 4.428 ms", d, ok)
	}
	if v, ok := ks[0].number("Memory Throughput"); !ok || v != 92.4 {
		t.Errorf("memory throughput %v %v", v, ok)
	}
	for _, bad := range []struct{ text, want string }{
		{"==ERROR== the application returned an error\n", "no CSV header"},
		{`"ID","Kernel Name","Metric Name"` + "\n", `no "Section Name" column`},
		{ncuHeader + `"0","4242","lab` + "\n", "line 2"},
	} {
		if _, err := parseNCUDetails(bad.text); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.text, err, bad.want)
		}
	}
}

// TestSummarize: each kernel's findings in words, the longest kernel
// first.
func TestSummarize(t *testing.T) {
	var tiled strings.Builder
	row := func(id, kernel, section, name, unit, value string) {
		tiled.WriteString(ncuRow(id, kernel, "(8, 8, 1)", "(256, 1, 1)", section, name, unit, value))
	}
	row("0", "pad_cols", "GPU Speed Of Light Throughput", "Duration", "usecond", "3.2")
	row("0", "pad_cols", "GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "5.0")
	row("0", "pad_cols", "GPU Speed Of Light Throughput", "Memory Throughput", "%", "20.0")
	row("1", "sgemm", "GPU Speed Of Light Throughput", "Duration", "msecond", "1.21")
	row("1", "sgemm", "GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "85.2")
	row("1", "sgemm", "GPU Speed Of Light Throughput", "Memory Throughput", "%", "40.3")
	row("1", "sgemm", "Occupancy", "Block Limit Registers", "block", "1")
	row("1", "sgemm", "Occupancy", "Block Limit Shared Mem", "block", "3")
	row("1", "sgemm", "Occupancy", "Block Limit Warps", "block", "2")
	row("1", "sgemm", "Occupancy", "Theoretical Occupancy", "%", "50")
	row("1", "sgemm", "Occupancy", "Achieved Occupancy", "%", "47.9")
	for reason, v := range map[string]string{"math_pipe_throttle": "3.1", "wait": "2.0", "barrier": "1.0", "not_selected": "1.5", "long_scoreboard": "0.5"} {
		row("1", "sgemm", "Command line profiler metrics", stallMetric(reason), "", v)
	}
	row("1", "sgemm", "Command line profiler metrics", sectorMetric, "%", "100")
	row("1", "sgemm", "Command line profiler metrics", loadMetric, "inst", "65,536")
	// A kernel like 12_wgmma_tma's: its loads go through TMA (no global
	// load instructions, so ncu's sector share reads 0%), one block per SM,
	// and the grid 3.88 waves on 132 SMs.
	var tma strings.Builder
	tmaRow := func(section, name, unit, value string) {
		tma.WriteString(ncuRow("0", "wgmma_tma", "(16, 32, 1)", "(384, 1, 1)", section, name, unit, value))
	}
	tmaRow("GPU Speed Of Light Throughput", "Duration", "usecond", "232.5")
	tmaRow("GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "71.3")
	tmaRow("GPU Speed Of Light Throughput", "Memory Throughput", "%", "45.0")
	tmaRow("Launch Statistics", "Waves Per SM", "", "3.88")
	tmaRow("Occupancy", "Block Limit Shared Mem", "block", "1")
	tmaRow("Occupancy", "Block Limit Registers", "block", "1")
	tmaRow("Occupancy", "Theoretical Occupancy", "%", "18.75")
	tmaRow("Occupancy", "Achieved Occupancy", "%", "14.2")
	tmaRow("Command line profiler metrics", sectorMetric, "%", "0")
	tmaRow("Command line profiler metrics", loadMetric, "inst", "0")
	tmaRow("Command line profiler metrics", smActiveAvg, "cycle", "410,000")
	tmaRow("Command line profiler metrics", smActiveMax, "cycle", "445,000")
	tmaRow("Command line profiler metrics", stallMetric("barrier"), "", "3.7")
	tmaRow("Command line profiler metrics", stallMetric("long_scoreboard"), "", "2.0")
	tmaRow("Command line profiler metrics", stallMetric("wait"), "", "4.3")
	tmas, err := parseNCUDetails(ncuHeader + tma.String())
	if err != nil {
		t.Fatal(err)
	}
	// The same, with neither the waves nor the SMs' cycles measured.
	var bare strings.Builder
	for _, l := range strings.SplitAfter(tma.String(), "\n") {
		if !strings.Contains(l, "Waves Per SM") && !strings.Contains(l, "sm__cycles_active") {
			bare.WriteString(l)
		}
	}
	bares, err := parseNCUDetails(ncuHeader + bare.String())
	if err != nil {
		t.Fatal(err)
	}

	naive, err := parseNCUDetails(ncuHeader + naiveKernel("0"))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := parseNCUDetails(ncuHeader + tiled.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		got  string
		want []string
	}{
		{profileSummary(naive), []string{
			"sgemm ran 4.43 ms (grid (32, 32, 1), block (32, 32, 1)):",
			"  - memory throughput 92% of peak: memory bound (SM 10%); DRAM is at 30%, so the busiest memory is a cache (L1 or L2)",
			"  - theoretical occupancy 100%, limited by registers and warps per SM (2 blocks per SM); achieved 98%",
			"  - 69% of stall cycles: warps wait on global or local memory (L1TEX: global, local and texture loads); loads are not coalesced: a warp uses 13% of each 32-byte sector it loads (100% when neighbouring threads read neighbouring words)",
		}},
		{profileSummary(ks), []string{
			"sgemm ran 1.21 ms (grid (8, 8, 1), block (256, 1, 1)):",
			"  - SM throughput 85% of peak: compute bound (memory 40%)",
			"  - theoretical occupancy 50%, limited by registers (1 block per SM); achieved 48%",
			"  - 38% of stall cycles: warps wait for a busy math pipe: the arithmetic itself is the limit",
			"",
			"pad_cols ran 3.2 µs (grid (8, 8, 1), block (256, 1, 1)):",
			"  - SM throughput 5% and memory throughput 20% of peak: neither reaches 60% of its roof, so the time goes to the warps' waits (what they stall on is below, where measured)",
		}},
		// No word on coalescing without global loads; the occupancy gap
		// with what was measured of it: 14.2 / 18.75 = 76%; 0.88 of a last
		// wave; 410 000 / 445 000 = 92%.
		{profileSummary(tmas), []string{
			"wgmma_tma ran 232 µs (grid (16, 32, 1), block (384, 1, 1)):",
			"  - SM throughput 71% of peak: compute bound (memory 45%)",
			"  - theoretical occupancy 19%, limited by registers and shared memory (1 block per SM); achieved 14%, 76% of the theoretical: the grid is 3.88 waves, its last one 88% full; the average SM was active 92% of the busiest SM's cycles",
			"  - 43% of stall cycles: warps wait a fixed latency for the result of the instruction before (a dependent chain)",
		}},
		{profileSummary(bares)[strings.Index(profileSummary(bares), "  - theoretical"):], []string{
			"  - theoretical occupancy 19%, limited by registers and shared memory (1 block per SM); achieved 14%, 76% of the theoretical: why is not measured here (Waves Per SM and sm__cycles_active.avg and .max would tell)",
			"  - 43% of stall cycles: warps wait a fixed latency for the result of the instruction before (a dependent chain)",
		}},
	} {
		if got := strings.Split(strings.TrimSuffix(tc.got, "\n"), "\n"); !slices.Equal(got, tc.want) {
			t.Errorf("summary:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// TestProfileCommand: usage errors, a clear error where Nsight Compute is
// missing (where PATH is empty and no toolkit sits at a default place), and
// the profiled process refusing a device that is not CUDA.
func TestProfileCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CUDA_HOME", "")
	t.Setenv("CUDA_PATH", "")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"profile", "gemm", "--size", "64"}, 2, "want a suite with --size and --variant"},
		{[]string{"profile", "--exercise", "gemm/tiled"}, 2, "want a suite with --size and --variant"},
		{[]string{"profile", "gemm", "--size", "64", "--variant", "01_naive"}, 1, "lab profile needs Nsight Compute: ncu is not on PATH"},
		{[]string{"profile", "gemm", "--device", "cpu", "--size", "64", "--variant", "01_naive", "--target"}, 2, `invalid value "cpu" for flag -device: want cuda:N`},
		{[]string{"profile", "nosuch", "--size", "64", "--variant", "v", "--target"}, 2, `unknown suite "nosuch"`},
	} {
		if ncu, err := cuda.Tool("ncu"); err == nil && strings.Contains(tc.want, "needs Nsight Compute") {
			t.Logf("%q: not tried: this machine has ncu at %s, which no PATH hides", tc.args, ncu)
			continue
		}
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, want %d; stderr:\n%s\nwant %q", tc.args, code, tc.code, stderr.String(), tc.want)
		}
	}
}

func TestNCUArgs(t *testing.T) {
	p := profileFlags{suite: "gemm", device: "cuda:0", size: "1000x1023x999", variant: "03_smem_tiling"}
	args := ncuArgs("profiles/"+p.reportName(), "/bin/lab", p.targetArgs())
	got := strings.Join(args, " ")
	for _, want := range []string{
		"--profile-from-start off", "--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats",
		"--export profiles/gemm-03_smem_tiling-1000x1023x999 --force-overwrite /bin/lab profile gemm --device cuda:0 --size 1000x1023x999 --variant 03_smem_tiling --target",
		stallMetric("long_scoreboard") + ",", sectorMetric, loadMetric, smActiveAvg, smActiveMax,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ncu %s\nlacks %q", got, want)
		}
	}
	e := profileFlags{exercise: "gemm/tiled", file: "subs/bob smith.ipynb"}
	if n := e.reportName(); n != "exercise-gemm_tiled-bob_smith" {
		t.Errorf("report name %q", n)
	}
}
