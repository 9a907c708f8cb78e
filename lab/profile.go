package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/exercise"
	"gpulab/engine/interrupt"
)

// lab profile runs one kernel under Nsight Compute (ncu) and says in
// plain words what bounds it: the speed-of-light throughputs, the
// occupancy and what limits it, and what the warps stall on. The profiled
// process is this lab binary run again with the same flags and --target,
// which prepares the suite's case (or the exercise's check) as lab bench
// (or the notebook's check) does, runs the kernel once to warm it, and
// once more between cuProfilerStart and cuProfilerStop: ncu, started with
// --profile-from-start off, profiles that launch and nothing else. The
// raw report is kept (DIR/NAME.ncu-rep) for ncu-ui or ncu --import.

// ncuSections are the report's sections: LaunchStats gives the grid's
// waves ("Waves Per SM").
var ncuSections = []string{"SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats"}

// stallReasons are the warp states that WarpStateStats breaks stalls
// into, with what each means for the code. A metric per reason,
// smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, is
// asked for by name so that the details page lists it.
var stallReasons = []struct{ reason, means string }{
	{"long_scoreboard", "wait on global or local memory (L1TEX: global, local and texture loads)"},
	{"barrier", "wait at a barrier (__syncthreads) for the other warps of their block"},
	{"mio_throttle", "wait for the shared-memory instruction queue, which is full"},
	{"short_scoreboard", "wait on shared memory (or on special math: sqrt, exp)"},
	{"lg_throttle", "wait for the global/local memory instruction queue, which is full: fewer, wider (float4) accesses help"},
	{"math_pipe_throttle", "wait for a busy math pipe: the arithmetic itself is the limit"},
	{"wait", "wait a fixed latency for the result of the instruction before (a dependent chain)"},
	{"not_selected", "were ready but another warp issued: more than enough warps to hide latency"},
	{"dispatch_stall", "wait for the dispatcher"},
	{"drain", "wait for their stores to drain at exit"},
	{"membar", "wait at a memory fence"},
	{"imc_miss", "wait for the constant cache"},
	{"no_instruction", "wait for instructions (an instruction-cache miss)"},
	{"branch_resolving", "wait for a branch target"},
	{"sleeping", "sleep (__nanosleep)"},
	{"tex_throttle", "wait for the texture unit"},
	{"misc", "wait on something else"},
}

func stallMetric(reason string) string {
	return "smsp__average_warps_issue_stalled_" + reason + "_per_issue_active.ratio"
}

// sectorMetric is the share of each 32-byte sector of global loads that
// the warp's threads used: 100% when neighbouring threads read
// neighbouring words (coalesced), 12.5% when each thread's 4 bytes come in
// a sector of their own.
const sectorMetric = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"

// loadMetric counts the global load instructions executed: sectorMetric
// says something only where it is above 0 (a kernel that loads through
// TMA or only from shared memory has none, and ncu reports 0%).
const loadMetric = "smsp__sass_inst_executed_op_global_ld.sum"

// smActiveAvg and smActiveMax are the cycles the SMs had work, on average
// and on the busiest SM: their ratio measures how evenly the grid kept the
// SMs busy.
const (
	smActiveAvg = "sm__cycles_active.avg"
	smActiveMax = "sm__cycles_active.max"
)

func ncuMetrics() []string {
	out := []string{sectorMetric, loadMetric, smActiveAvg, smActiveMax}
	for _, s := range stallReasons {
		out = append(out, stallMetric(s.reason))
	}
	return out
}

type profileFlags struct {
	suite, device, size, variant string
	exercise, file               string
	out                          string
	target                       bool
}

func profileCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("profile", stderr)
	p := profileFlags{device: "cuda:0"}
	fs.Var(&deviceValue{choiceValue{&p.device, []string{devCUDA}}}, "device", "a CUDA device (Nsight Compute profiles NVIDIA GPUs)")
	fs.StringVar(&p.size, "size", "", "the size, as lab bench takes it (e.g. 4096 or 1000x1023x999 for gemm)")
	fs.StringVar(&p.variant, "variant", "", "the variant (lab bench's --variants names them; an unknown one lists them)")
	fs.Var(&choiceValue{&p.exercise, exercise.Names()}, "exercise", "profile a submission of this exercise instead (its kernel at the check's timing size): lab profile --exercise NAME FILE")
	fs.StringVar(&p.out, "out", "profiles", "keep the raw report (NAME.ncu-rep) in this directory")
	fs.BoolVar(&p.target, "target", false, "(what ncu runs) run the kernel between cuProfilerStart and cuProfilerStop")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab profile SUITE --device cuda:N --size S --variant V [--out DIR]\n       lab profile --exercise NAME FILE [--out DIR]")
		fs.PrintDefaults()
	}
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return usageError{err}
		}
		if args = fs.Args(); len(args) > 0 {
			positional, args = append(positional, args[0]), args[1:]
		}
	}
	switch {
	case p.exercise != "" && len(positional) == 1:
		p.file = positional[0]
	case p.exercise == "" && len(positional) == 1 && p.size != "" && p.variant != "":
		p.suite = positional[0]
	default:
		fs.Usage()
		return usageError{errors.New("want a suite with --size and --variant, or --exercise NAME and one submission file")}
	}
	if p.target {
		return profileTarget(p)
	}
	ncu, err := cuda.Tool("ncu")
	if err != nil {
		return fmt.Errorf("lab profile needs Nsight Compute: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.out, 0o755); err != nil {
		return err
	}
	report := filepath.Join(p.out, p.reportName())
	cmd := exec.Command(ncu, ncuArgs(report, self, p.targetArgs())...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&log, stderr), io.MultiWriter(&log, stderr)
	if err := interrupt.Run(cmd); err != nil {
		return fmt.Errorf("ncu: %v", err)
	}
	var csvOut, csvErr bytes.Buffer
	imp := exec.Command(ncu, "--import", report+".ncu-rep", "--csv", "--page", "details")
	imp.Stdout, imp.Stderr = &csvOut, &csvErr
	if err := interrupt.Run(imp); err != nil {
		return fmt.Errorf("ncu --import %s.ncu-rep: %v: %s", report, err, strings.TrimSpace(csvErr.String()))
	}
	kernels, err := parseNCUDetails(csvOut.String())
	if err != nil {
		return fmt.Errorf("%s.ncu-rep: %w", report, err)
	}
	if len(kernels) == 0 {
		return fmt.Errorf("ncu profiled no kernel (its output:\n%s)", strings.TrimSpace(log.String()))
	}
	fmt.Fprint(stdout, profileSummary(kernels))
	fmt.Fprintf(stdout, "\nThe raw report: %s.ncu-rep (ncu-ui opens it; ncu --import %s.ncu-rep --page details prints it).\n", report, report)
	return nil
}

// ncuArgs are ncu's arguments for profiling program (with args) into
// report: the sections, the stall metrics by name, only the profiler's
// range.
func ncuArgs(report, program string, args []string) []string {
	out := []string{"--profile-from-start", "off", "--target-processes", "all"}
	for _, s := range ncuSections {
		out = append(out, "--section", s)
	}
	out = append(out, "--metrics", strings.Join(ncuMetrics(), ","), "--export", report, "--force-overwrite", program)
	return append(out, args...)
}

// targetArgs run this command again as the profiled process.
func (p profileFlags) targetArgs() []string {
	if p.exercise != "" {
		return []string{"profile", "--exercise", p.exercise, "--target", p.file}
	}
	return []string{"profile", p.suite, "--device", p.device, "--size", p.size, "--variant", p.variant, "--target"}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// reportName names the report after what was profiled.
func (p profileFlags) reportName() string {
	name := strings.Join([]string{p.suite, p.variant, p.size}, "-")
	if p.exercise != "" {
		name = "exercise-" + p.exercise + "-" + strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
	}
	return unsafeName.ReplaceAllString(name, "_")
}

// profileTarget is the profiled process: the kernel once to warm it, then
// once inside the profiler's range.
func profileTarget(p profileFlags) error {
	profiled := func(ctx *cuda.Context, run func() error) error {
		if err := ctx.ProfilerStart(); err != nil {
			return err
		}
		err := run()
		return errors.Join(err, ctx.ProfilerStop())
	}
	if p.exercise != "" {
		src, err := submissionSource(p.file, p.exercise)
		if err != nil {
			return err
		}
		return exercise.ProfileRun(p.exercise, src, func(dev *engine.Device, launch func() error) error { return profiled(dev.CUDA, launch) })
	}
	suite, err := bench.Lookup(p.suite)
	if err != nil {
		return usageError{err}
	}
	dev, err := engine.Open(p.device)
	if err != nil {
		return usageError{fmt.Errorf("--device %s: %w", p.device, err)}
	}
	defer dev.Close()
	if dev.CUDA == nil {
		return usageError{fmt.Errorf("--device %s: Nsight Compute profiles CUDA devices (cuda:N)", p.device)}
	}
	cases, closeCases, err := suite.Cases(dev, p.size)
	if err != nil {
		return err
	}
	if closeCases != nil {
		defer closeCases()
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.Variant)
		if c.Variant != p.variant {
			continue
		}
		if c.Reset != nil {
			if err := c.Reset(); err != nil {
				return err
			}
		}
		if _, err := c.Run(); err != nil { // compiles, lazy loading, caches
			return err
		}
		return profiled(dev.CUDA, func() error { _, err := c.Run(); return err })
	}
	return usageError{fmt.Errorf("%s at size %s on %s has no variant %q (have: %s)", p.suite, p.size, p.device, p.variant, strings.Join(names, ", "))}
}

// An ncuKernel is one profiled launch of ncu's details page.
type ncuKernel struct {
	ID          string
	Name        string
	Block, Grid string
	metrics     map[string]ncuMetric // by metric name
}

type ncuMetric struct{ section, unit, value string }

// number reads a metric's value ("1,234.5" included); false when absent
// or not a number.
func (k ncuKernel) number(name string) (float64, bool) {
	m, ok := k.metrics[name]
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m.value, ",", ""), 64)
	return v, err == nil
}

// seconds is the kernel's duration in seconds (its unit may be nsecond,
// usecond, msecond, second, or ns, us, ms, s).
func (k ncuKernel) seconds() (float64, bool) {
	v, ok := k.number("Duration")
	if !ok {
		return 0, false
	}
	scale := map[string]float64{"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3, "second": 1, "s": 1}
	f, ok := scale[k.metrics["Duration"].unit]
	return v * f, ok
}

// parseNCUDetails reads ncu's --csv --page details: a header naming the
// columns ("ID", "Kernel Name", …, "Section Name", "Metric Name", "Metric
// Unit", "Metric Value", and in newer versions the rule columns after),
// then a row per metric of each kernel. Lines before the header (ncu's
// ==PROF== and ==WARNING== lines) are skipped.
func parseNCUDetails(text string) ([]ncuKernel, error) {
	start := strings.Index(text, `"ID",`)
	if start < 0 {
		return nil, errors.New(`no CSV header ("ID",…) in ncu's output`)
	}
	r := csv.NewReader(strings.NewReader(text[start:]))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("ncu's CSV: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("ncu's CSV has no %q column (has %q)", need, header)
		}
	}
	get := func(row []string, name string) string {
		if i, ok := col[name]; ok && i < len(row) {
			return row[i]
		}
		return ""
	}
	var kernels []ncuKernel
	byID := map[string]int{}
	for line := 2; ; line++ {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ncu's CSV, line %d: %w", line, err)
		}
		id, name := get(row, "ID"), get(row, "Metric Name")
		if id == "" || name == "" {
			continue // a rule's row, or a blank one
		}
		i, ok := byID[id]
		if !ok {
			i, byID[id] = len(kernels), len(kernels)
			kernels = append(kernels, ncuKernel{ID: id, Name: get(row, "Kernel Name"), Block: get(row, "Block Size"), Grid: get(row, "Grid Size"), metrics: map[string]ncuMetric{}})
		}
		kernels[i].metrics[name] = ncuMetric{section: get(row, "Section Name"), unit: get(row, "Metric Unit"), value: get(row, "Metric Value")}
	}
	return kernels, nil
}

// profileSummary is the kernels' findings, the longest-running kernel
// first: it is the one a step's time is made of.
func profileSummary(kernels []ncuKernel) string {
	slices.SortStableFunc(kernels, func(a, b ncuKernel) int {
		da, _ := a.seconds()
		db, _ := b.seconds()
		switch {
		case da > db:
			return -1
		case da < db:
			return 1
		}
		return 0
	})
	var b strings.Builder
	for i, k := range kernels {
		if i > 0 {
			b.WriteString("\n")
		}
		for j, line := range summarize(k) {
			prefix := "  - "
			if j == 0 {
				prefix = ""
			}
			b.WriteString(prefix + line + "\n")
		}
	}
	return b.String()
}

// summarize says what bounds one kernel, in plain words.
func summarize(k ncuKernel) []string {
	head := k.Name
	if d, ok := k.seconds(); ok {
		head += " ran " + durationText(d)
	}
	if k.Grid != "" || k.Block != "" {
		head += fmt.Sprintf(" (grid %s, block %s)", k.Grid, k.Block)
	}
	out := []string{head + ":"}
	sm, okSM := k.number("Compute (SM) Throughput")
	mem, okMem := k.number("Memory Throughput")
	dram, okDRAM := k.number("DRAM Throughput")
	switch {
	case okSM && sm >= 60 && sm >= mem:
		out = append(out, fmt.Sprintf("SM throughput %.0f%% of peak: compute bound (memory %.0f%%)", sm, mem))
	case okMem && mem >= 60:
		s := fmt.Sprintf("memory throughput %.0f%% of peak: memory bound (SM %.0f%%)", mem, sm)
		if okDRAM && dram < mem/2 {
			s += fmt.Sprintf("; DRAM is at %.0f%%, so the busiest memory is a cache (L1 or L2)", dram)
		}
		out = append(out, s)
	case okSM && okMem:
		out = append(out, fmt.Sprintf("SM throughput %.0f%% and memory throughput %.0f%% of peak: neither reaches 60%% of its roof, so the time goes to the warps' waits (what they stall on is below, where measured)", sm, mem))
	}
	if theo, ok := k.number("Theoretical Occupancy"); ok {
		s := fmt.Sprintf("theoretical occupancy %.0f%%", theo)
		if lim, n := occupancyLimiter(k); lim != "" {
			s += fmt.Sprintf(", limited by %s (%d block%s per SM)", lim, n, plural(n))
		}
		if got, ok := k.number("Achieved Occupancy"); ok {
			s += fmt.Sprintf("; achieved %.0f%%", got)
			if theo > 0 && got < 0.8*theo {
				s += fmt.Sprintf(", %.0f%% of the theoretical: %s", 100*got/theo, occupancyGap(k))
			}
		}
		out = append(out, s)
	}
	pct, uncoalesced := k.number(sectorMetric)
	if loads, ok := k.number(loadMetric); !ok || loads == 0 || pct >= 50 {
		uncoalesced = false // no global loads, or their sectors well used: nothing to say
	}
	if reason, share, ok := topStall(k); ok {
		s := fmt.Sprintf("%.0f%% of stall cycles: warps %s", 100*share, reason.means)
		if uncoalesced && reason.reason == "long_scoreboard" {
			s += fmt.Sprintf("; loads are not coalesced: a warp uses %.0f%% of each 32-byte sector it loads (100%% when neighbouring threads read neighbouring words)", pct)
			uncoalesced = false
		}
		out = append(out, s)
	}
	if uncoalesced {
		out = append(out, fmt.Sprintf("global loads use %.0f%% of each 32-byte sector they fetch: they are not coalesced", pct))
	}
	return out
}

// occupancyGap says what the profile measured of why the achieved
// occupancy is below the theoretical: the grid's waves (a last wave that
// is partly empty leaves SMs idle at the end) and how evenly the SMs had
// work (the average SM's active cycles against the busiest one's). Where
// neither was measured, it says so.
func occupancyGap(k ncuKernel) string {
	var facts []string
	if w, ok := k.number("Waves Per SM"); ok && w > 0 {
		f := fmt.Sprintf("the grid is %.2f waves", w)
		if last := w - math.Floor(w); last > 0 {
			f += fmt.Sprintf(", its last one %.0f%% full", 100*last)
		}
		facts = append(facts, f)
	}
	avg, okAvg := k.number(smActiveAvg)
	top, okMax := k.number(smActiveMax)
	if okAvg && okMax && top > 0 {
		facts = append(facts, fmt.Sprintf("the average SM was active %.0f%% of the busiest SM's cycles", 100*avg/top))
	}
	if len(facts) == 0 {
		return "why is not measured here (Waves Per SM and sm__cycles_active.avg and .max would tell)"
	}
	return strings.Join(facts, "; ")
}

// occupancyLimiter names the resources with the fewest blocks per SM
// among the Occupancy section's block limits, and that number.
func occupancyLimiter(k ncuKernel) (string, int) {
	limits := []struct{ metric, name string }{
		{"Block Limit Registers", "registers"}, {"Block Limit Shared Mem", "shared memory"},
		{"Block Limit Warps", "warps per SM"}, {"Block Limit SM", "blocks per SM"}, {"Block Limit Barriers", "barriers"},
	}
	var names []string
	n := -1
	for _, l := range limits {
		v, ok := k.number(l.metric)
		switch {
		case !ok:
		case n < 0 || int(v) < n:
			names, n = []string{l.name}, int(v)
		case int(v) == n:
			names = append(names, l.name)
		}
	}
	return strings.Join(names, " and "), n
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// topStall is the reason most of the stall cycles go to ("selected", a
// warp issuing, is not a stall), and its share.
func topStall(k ncuKernel) (reason struct{ reason, means string }, share float64, ok bool) {
	total, top := 0.0, -1.0
	for _, s := range stallReasons {
		v, found := k.number(stallMetric(s.reason))
		if !found {
			continue
		}
		total += v
		if v > top {
			top, reason = v, s
		}
	}
	if total <= 0 {
		return reason, 0, false
	}
	return reason, top / total, true
}

func durationText(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3g s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3g ms", s*1e3)
	default:
		return fmt.Sprintf("%.3g µs", s*1e6)
	}
}
