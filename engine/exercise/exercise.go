// Package exercise checks a student's solution to a lab exercise: it
// compiles it, verifies it against the reference on random inputs and edge
// shapes, times it next to the reference ladder, and says what went wrong
// in the student's own terms (line numbers of their source, the first
// mismatching element with the expected and the computed value).
//
// Exercise notebooks (notebooks/exercises/) call Check from a cell, with
// the kernel source that an earlier cell, marked `// EXERCISE <name>`,
// holds between backticks; `lab grade` runs the same check on a folder of
// submissions.
//
// A check has two sides. The judging side draws every input at random
// (seeded from crypto/rand), computes its own reference and compares; the
// running side (a Runner) only compiles, launches and returns outputs. In a
// notebook both sides are the student's own process. Under lab grade the
// running side is a worker process in a sandbox (Serve), spoken to over
// package wire, and the judging side is the grader, which never runs
// student code: a submission can compute, but it cannot report a verdict.
//
// A kernel exercise may be written in CUDA or in OpenCL C: its
// declarations say which (Language), and the check runs it on the best
// device for that language: the GPU for CUDA; for OpenCL, a GPU's OpenCL
// driver if there is one, else PoCL on the CPU. A Go exercise (a function
// in the marked cell) runs on the CPU.
package exercise

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/gemm"
	"gpulab/engine/kernelcard"
	"gpulab/engine/nb"
	"gpulab/engine/plot"
)

// Result is the outcome of one check.
type Result struct {
	Exercise string  `json:"exercise"`
	Device   string  `json:"device"`
	Compiled bool    `json:"compiled"`
	Correct  bool    `json:"correct"`
	GFLOPS   float64 `json:"gflops"`           // the student's speed at the timing size, in Unit
	Unit     string  `json:"unit,omitempty"`   // of GFLOPS and the ladder: "" is GFLOP/s (UnitGFLOPS)
	PctOfRef float64 `json:"pct_of_reference"` // of the reference solution's speed
	// Reference names what PctOfRef compares with, e.g. "step 02_local_tiling".
	Reference string  `json:"reference,omitempty"`
	Error     string  `json:"error,omitempty"`     // why it did not compile or is not correct
	Ladder    []Rung  `json:"ladder,omitempty"`    // the reference steps, timed the same way
	Size      string  `json:"size,omitempty"`      // the timing size
	Detail    string  `json:"detail,omitempty"`    // e.g. the first mismatch
	Hint      string  `json:"hint,omitempty"`      // what the failing shape has that others lack
	Elapsed   float64 `json:"elapsed_s,omitempty"` // how long the check took
	Solution  bool    `json:"reference_solution"`  // the source was the reference solution itself
	// Unavailable says that no device here runs the source's language (a
	// CUDA kernel on a machine without an NVIDIA GPU): the check did not
	// run, which is not the student's fault.
	Unavailable bool `json:"unavailable,omitempty"`
	// Output is what the code printed (a kernel's printf, a Go function's
	// fmt.Println), as lab grade captured it: shown, never read.
	Output string `json:"output,omitempty"`

	// Pictures show a wrong result: the output element by element and,
	// for a puzzle, which thread wrote each element (picture.go).
	Pictures *Pictures `json:"pictures,omitempty"`

	// PctOfPeak is the speed as a share of the device's peak in Unit (its
	// FP32 FLOP/s, or its DRAM bytes/s), Peak that peak: the speed of
	// light. Above 100% the timing is a measurement error, and the report
	// says so.
	PctOfPeak float64 `json:"pct_of_peak,omitempty"`
	Peak      float64 `json:"peak,omitempty"`
	// Card is the kernel's card (registers, shared memory, occupancy,
	// instruction counts) at the last launch of a notebook's check; lab
	// grade compiles no student code in its own process, and has none.
	Card *kernelcard.Card `json:"card,omitempty"`
	// Diagnosis is what compute-sanitizer found when the failed kernel ran
	// again on the small problems, in the student's lines, or why it did
	// not run (diagnose.go): shown, never part of the verdict.
	Diagnosis string `json:"diagnosis,omitempty"`
}

// Rung is one step of the reference ladder.
type Rung struct {
	Name   string  `json:"name"`
	GFLOPS float64 `json:"gflops"` // in the Result's Unit
}

// Units of speed. A compute-bound kernel is measured in useful flops per
// second; a memory-bound one (a norm, a selection) in the bytes it must
// read and write per second, since that is what limits it.
const (
	UnitGFLOPS = "GFLOP/s"
	UnitGBps   = "GB/s"
)

// SpeedUnit is the unit of the result's speeds.
func (r Result) SpeedUnit() string {
	if r.Unit == "" {
		return UnitGFLOPS
	}
	return r.Unit
}

// Languages of exercise code.
const (
	LangCUDA   = "cuda"   // a CUDA C++ kernel, compiled by NVRTC
	LangOpenCL = "opencl" // an OpenCL C kernel
	LangGo     = "go"     // Go code: the marked cell is a function the check cell calls
)

// Flavor is an exercise in one language: its reference solution, the
// skeleton's TODO line, the devices that run it, best first, and its check.
type Flavor struct {
	Lang string
	// Solution returns the reference solution: the kernel source, or for Go
	// the code of the marked cell.
	Solution func() (string, error)
	// TODO is the first TODO line of the skeleton in the exercise's
	// notebook: a source that still has it is unfinished. A TODO of the
	// student's own is not.
	TODO    string
	devices func() ([]engine.Info, error)
	check   func(s *session) Result
	// shape draws a problem of a shape in the exercise's own words
	// ("M=300 N=200 K=77"), for a course's hidden shapes (course.go);
	// nil for an exercise that takes none.
	shape func(spec string) (draw, error)
}

// Devices lists the devices that run the flavour's code, best first.
func (f Flavor) Devices() ([]engine.Info, error) { return f.devices() }

// An Exercise is a task and the languages it may be solved in.
type Exercise struct {
	Name, Doc string
	Unit      string // of its speeds: "" is GFLOP/s; memory-bound kernels use UnitGBps
	Flavors   []Flavor
	// A Go exercise's marked cell is built into a program whose main body
	// is GoMain (a call into package gohost). Its code may not use the
	// names of package gpulab/engine/sparse in Forbidden: they are the
	// library's own answer to the exercise.
	GoMain    string
	Forbidden []string
	// refuse, set by Course.Apply, refuses a submission before it runs
	// (the public reference solution, submitted as it is).
	refuse func(f Flavor, src string) error
}

// SpeedUnit is the unit of the exercise's speeds.
func (e Exercise) SpeedUnit() string { return Result{Unit: e.Unit}.SpeedUnit() }

// IsGo says that the exercise is Go code (its marked cell is the code),
// not a kernel between backticks.
func (e Exercise) IsGo() bool { return len(e.Flavors) == 1 && e.Flavors[0].Lang == LangGo }

// Flavor returns the exercise in language lang.
func (e Exercise) Flavor(lang string) (Flavor, error) {
	if lang == "" {
		return Flavor{}, errors.New("this declares neither a CUDA kernel (__global__) nor an OpenCL one (__kernel)")
	}
	var langs []string
	for _, f := range e.Flavors {
		if f.Lang == lang {
			return f, nil
		}
		langs = append(langs, f.Lang)
	}
	return Flavor{}, fmt.Errorf("%s has no %s version (it has: %s)", e.Name, lang, strings.Join(langs, ", "))
}

var registry = map[string]Exercise{}

func register(e Exercise) { registry[e.Name] = e }

// Lookup returns the named exercise; an unknown name lists the known ones.
func Lookup(name string) (Exercise, error) {
	e, ok := registry[name]
	if !ok {
		return e, fmt.Errorf("exercise: no exercise %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return e, nil
}

// Names lists the exercises.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Inspect reads a kernel exercise's source without running it: it must be
// text (CheckText), its declarations must say a language the exercise has,
// and it must not hold the skeleton's TODO line. It returns that
// language's flavour.
func (e Exercise) Inspect(src string) (Flavor, error) {
	if e.IsGo() {
		return Flavor{}, fmt.Errorf("%s is a Go exercise: its check cell calls the function itself", e.Name)
	}
	if err := CheckText(src); err != nil {
		return Flavor{}, err
	}
	f, err := e.Flavor(Language(src))
	if err != nil {
		return f, err
	}
	if unfinished(src, f.TODO) {
		return f, errors.New(errUnfinished(e.Name, f.TODO))
	}
	if e.refuse != nil {
		return f, e.refuse(f, src)
	}
	return f, nil
}

// Run checks src for the named exercise in this process, on the best
// device for its language, next to the reference solution and the
// ladder's steps. It never panics: every failure is in the Result.
func Run(name, src string) (r Result) {
	serveIfDiagnosisWorker()
	start := time.Now()
	r.Exercise = name
	defer func() {
		if p := recover(); p != nil {
			r.Error = fmt.Sprintf("the check crashed: %v", p)
		}
		r.Elapsed = time.Since(start).Seconds()
	}()
	e, err := Lookup(name)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Unit = e.Unit
	f, err := e.Inspect(src)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	infos, err := f.devices()
	if err != nil || len(infos) == 0 {
		r.Error, r.Unavailable = fmt.Sprintf("no device here runs %s kernels: %v", f.Lang, err), true
		return r
	}
	dev, err := engine.Open(infos[0].ID)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer dev.Close()
	sol, err := f.Solution()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	student := &recorder{Runner: newKernelRunner(dev, "", src)}
	s := &session{info: infos[0], student: student,
		solution: newKernelRunner(dev, "reference.cu", sol), local: true, dev: dev, rng: newRand(), src: src}
	r = e.finish(f.check(s), s.info, src, sol)
	r.Card = student.card(dev, src)
	switch {
	case NeedsDiagnosis(f.Lang, r):
		r.Diagnosis = Diagnose(src, TimedOut(r), e.rerunHere(f, src, s.info))
	case f.Lang != LangCUDA && r.Compiled && !r.Correct:
		r.Diagnosis = NotDiagnosed(f.Lang, nil)
	}
	return r
}

// Judge checks src as lab grade does: student is a worker that runs src
// on info, a device from f.Devices(). Judge itself runs no code of the
// submission's, and does not time the reference solution (lab grade does,
// once for every submission).
func (e Exercise) Judge(f Flavor, src string, info engine.Info, student Runner) Result {
	sol, _ := f.Solution()
	s := &session{info: info, student: student, rng: newRand(), fresh: true, src: src}
	return e.finish(f.check(s), info, src, sol)
}

// finish fills in what every result says: the exercise, the device, the
// unit, and whether the source was the reference solution itself.
func (e Exercise) finish(r Result, info engine.Info, src, sol string) Result {
	r.Exercise, r.Device, r.Unit = e.Name, info.ID+" ("+info.Name+")", e.Unit
	r.Solution = sol != "" && strings.TrimSpace(sol) == strings.TrimSpace(src)
	r.Peak = info.PeakGFLOPS
	if r.SpeedUnit() == UnitGBps {
		r.Peak = info.PeakGBps
	}
	if r.Correct && r.GFLOPS > 0 && r.Peak > 0 {
		r.PctOfPeak = 100 * r.GFLOPS / r.Peak
	}
	return r
}

// Check runs the check and shows it in a notebook (or prints it): pass or
// fail, the reason, the speed next to the ladder, and a bar chart placing
// the solution among the ladder's steps. It returns the Result; a check
// cell ends with nb.Must(result.Err()).
func Check(name, src string) Result { return show(Run(name, src)) }

// show displays a result: the report, and for a pass a bar chart of
// speeds placing the solution among the ladder's steps.
func show(r Result) Result {
	nb.Markdown(r.Markdown())
	if r.Correct && len(r.Ladder) > 0 {
		var labels []string
		var values []float64
		for _, rung := range r.Ladder {
			labels, values = append(labels, rung.Name), append(values, rung.GFLOPS)
		}
		labels, values = append(labels, "yours"), append(values, r.GFLOPS)
		unit := r.SpeedUnit()
		if _, err := plot.Bars(fmt.Sprintf("%s on %s, %s: %s", r.Exercise, r.Device, r.Size, unit), unit, labels, values).Show(); err != nil {
			fmt.Println(err)
		}
	}
	return r
}

// Markdown is the result as one report: pass or fail, the reason in the
// student's terms (a compile error at their line, with the compiler's
// whole message folded under it; the first wrong element), a hint about
// the shape that failed, and for a pass the speed next to the reference.
func (r Result) Markdown() string {
	var b strings.Builder
	switch {
	case r.Correct:
		fmt.Fprintf(&b, "**%s: PASS** on %s.", r.Exercise, r.Device)
		if r.GFLOPS > 0 {
			fmt.Fprintf(&b, " %.3g %s at %s", r.GFLOPS, r.SpeedUnit(), r.Size)
			if r.PctOfRef > 0 {
				fmt.Fprintf(&b, ", %.0f%% of the reference solution's speed", r.PctOfRef)
				if r.Reference != "" {
					fmt.Fprintf(&b, " (`%s`)", r.Reference)
				}
			}
			b.WriteString(".")
			b.WriteString(r.speedOfLight())
		}
	case r.Unavailable:
		fmt.Fprintf(&b, "**%s: not checked here**: %s.", r.Exercise, r.Error)
	case !r.Compiled && strings.HasPrefix(r.Error, "does not compile: "):
		first, log, _ := strings.Cut(r.Error, "\n")
		fmt.Fprintf(&b, "**%s: FAIL**, it %s", r.Exercise, first)
		if strings.TrimSpace(log) != "" {
			fmt.Fprintf(&b, "\n\n<details><summary>▸ the compiler's whole message</summary>\n\n```text\n%s\n```\n</details>", strings.TrimSpace(log))
		}
	case !r.Compiled && r.Error != "":
		fmt.Fprintf(&b, "**%s: FAIL** (it cannot run)\n\n```text\n%s\n```", r.Exercise, r.Error)
	default:
		fmt.Fprintf(&b, "**%s: FAIL**: %s", r.Exercise, r.Error)
	}
	if r.Detail != "" {
		fmt.Fprintf(&b, "\n\n%s", r.Detail)
	}
	if r.Hint != "" {
		fmt.Fprintf(&b, "\n\n*Hint:* %s", r.Hint)
	}
	b.WriteString(r.Pictures.Markdown())
	if r.Diagnosis != "" {
		fmt.Fprintf(&b, "\n\n**Diagnosis:** %s", r.Diagnosis)
	}
	if r.Card != nil {
		b.WriteString("\n\n" + r.Card.Markdown())
	}
	return b.String()
}

// speedOfLight is the speed as a share of the device's peak: above 100%
// of the FP32 peak a measurement error, above 100% of DRAM bandwidth
// caches or a wrong time (bench's ✗ and ‡).
func (r Result) speedOfLight() string {
	if r.PctOfPeak <= 0 {
		return ""
	}
	peak := "FP32 peak"
	if r.SpeedUnit() == UnitGBps {
		peak = "DRAM bandwidth"
	}
	peak += fmt.Sprintf(" (%.0f %s)", r.Peak, r.SpeedUnit())
	switch {
	case r.PctOfPeak > 100 && r.SpeedUnit() == UnitGBps:
		return fmt.Sprintf(" **‡ %.0f%% of the device's %s: %s, or the timing is wrong; no kernel moves fresh data that fast.**", r.PctOfPeak, peak, bench.EffectiveNote)
	case r.PctOfPeak > 100:
		return fmt.Sprintf(" **✗ %.0f%% of the device's %s: %s.**", r.PctOfPeak, peak, bench.ImpossibleNote)
	}
	return fmt.Sprintf(" Speed of light: %.1f%% of the device's %s.", r.PctOfPeak, peak)
}

// Err is nil when the check passed, or when it could not run here for want
// of a device (the report says so); otherwise a one-line error that points
// at the report, so that a check cell fails without saying it twice:
// nb.Must(lab.Check(name, src).Err()).
func (r Result) Err() error {
	if r.Correct || r.Unavailable {
		return nil
	}
	return fmt.Errorf("%s: not passed yet (the report above says why)", r.Exercise)
}

// Extract returns the exercise source of a cell marked `// EXERCISE name`:
// the text between the first pair of backticks after the marker. It is how
// `lab grade` reads a notebook cell or a source file.
func Extract(text, name string) (string, error) {
	marker := "// EXERCISE " + name
	i := strings.Index(text, marker)
	if i < 0 {
		return "", fmt.Errorf("no cell marked %q", marker)
	}
	rest := text[i+len(marker):]
	open := strings.IndexByte(rest, '`')
	if open < 0 {
		return "", fmt.Errorf("the cell marked %q has no source between backticks", marker)
	}
	end := strings.IndexByte(rest[open+1:], '`')
	if end < 0 {
		return "", fmt.Errorf("the cell marked %q opens a backtick string that never closes", marker)
	}
	return rest[open+1 : open+1+end], nil
}

// openCLDevices lists the OpenCL devices, GPUs first (PoCL, the CPU, last).
func openCLDevices() ([]engine.Info, error) {
	all, _ := engine.Devices()
	var out []engine.Info
	for _, d := range all {
		if d.Kind == engine.OpenCL {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b engine.Info) int {
		return boolInt(isPoCL(a)) - boolInt(isPoCL(b))
	})
	if len(out) == 0 {
		return nil, errors.New("no OpenCL device (make deps installs PoCL, which runs OpenCL on the CPU)")
	}
	return out, nil
}

// cudaDevices lists the CUDA devices.
func cudaDevices() ([]engine.Info, error) {
	all, missing := engine.Devices()
	var out []engine.Info
	for _, d := range all {
		if d.Kind == engine.CUDA {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		for _, m := range missing {
			if m.Kind == engine.CUDA {
				return nil, fmt.Errorf("no CUDA device (%s); the OpenCL version of the exercise runs everywhere", m.Reason)
			}
		}
		return nil, errors.New("no CUDA device; the OpenCL version of the exercise runs everywhere")
	}
	return out, nil
}

func isPoCL(d engine.Info) bool { return strings.Contains(d.Platform, "Portable Computing Language") }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// firstMismatch compares got with want element by element (wrongValue)
// and describes the first element outside the tolerance, named by at(i).
func firstMismatch(got, want []float32, tol float64, at func(i int) string) string {
	for i, w := range want {
		if d := wrongValue(got[i], float64(w), tol); d != "" {
			return fmt.Sprintf("first wrong element: %s %s", at(i), d)
		}
	}
	return ""
}

// wrongValue says how got misses want ("is 0.5, expected 1.5") when it is
// outside a relative tolerance (absolute below 1), "" otherwise, like
// bench.Compare. NaN and Inf never pass.
func wrongValue(got float32, want, tol float64) string {
	if g := float64(got); math.Abs(g-want) <= tol*max(math.Abs(want), 1) {
		return ""
	}
	return fmt.Sprintf("is %g, expected %g", got, float32(want))
}

func randomMatrix(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = rng.Float32()*2 - 1
	}
	return out
}

// studentLines rewrites the positions in a build log, such as PoCL's
// "error: /root/.cache/pocl/kcache/tempfile_x.cl:5:19:", NVIDIA OpenCL's
// "<kernel>:5:19: error:" or NVRTC's "exercise.cu:5: error:", to
// "line 5, column 19: error:" or "line 5: error:" (PoCL puts the severity
// first; every compiler then reads alike): the student's own lines, since
// their source is compiled as it is, with nothing prepended (line 1 is the
// line of the opening backtick).
var (
	poclPos  = regexp.MustCompile(`(error|warning): (\S+\.cl):(\d+):(\d+):`)
	buildPos = regexp.MustCompile(`(\S+\.cl|<kernel>):(\d+):(\d+):`)
	nvrtcPos = regexp.MustCompile(regexp.QuoteMeta(gemm.ExerciseSourceName) + `:(\d+):`)
)

func studentLines(log string) string {
	log = poclPos.ReplaceAllString(log, "line $3, column $4: $1:")
	return nvrtcPos.ReplaceAllString(buildPos.ReplaceAllString(log, "line $2, column $3:"), "line $1:")
}

// buildError puts the compiler's first error, in the student's line
// numbers, before the full message.
func buildError(msg string) string {
	msg = studentLines(msg)
	for _, l := range strings.Split(msg, "\n") {
		if strings.Contains(l, "error") && strings.Contains(l, "line ") {
			return "does not compile: " + strings.TrimSpace(l) + "\n" + msg
		}
	}
	return msg
}

// best runs f three times and returns its shortest time.
func best(f func() (time.Duration, error)) (time.Duration, error) {
	t := time.Duration(math.MaxInt64)
	for range 3 {
		d, err := f()
		if err != nil {
			return 0, err
		}
		t = min(t, d)
	}
	return t, nil
}
