// Package exercise checks a student's solution to a lab exercise: it
// compiles it, verifies it against the reference on random inputs and edge
// shapes, times it next to the reference ladder, and says what went wrong
// in the student's own terms (line numbers of their source, the first
// mismatching element with the expected and the computed value).
//
// Exercise notebooks (notebooks/exercises/) call Check from a cell, with
// the kernel source that an earlier cell, marked `// EXERCISE <name>`,
// holds between backticks; `lab grade` runs the same check on a folder of
// submissions, each in its own process with a time limit.
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
	"gpulab/engine/gemm"
	"gpulab/engine/nb"
	"gpulab/engine/plot"
	"gpulab/kernels"
)

// Result is the outcome of one check.
type Result struct {
	Exercise string  `json:"exercise"`
	Device   string  `json:"device"`
	Compiled bool    `json:"compiled"`
	Correct  bool    `json:"correct"`
	GFLOPS   float64 `json:"gflops"`              // the student's, at the timing size
	PctOfRef float64 `json:"pct_of_reference"`    // of the reference step's GFLOP/s
	Error    string  `json:"error,omitempty"`     // why it did not compile or is not correct
	Ladder   []Rung  `json:"ladder,omitempty"`    // the reference steps, timed the same way
	Size     string  `json:"size,omitempty"`      // the timing size
	Detail   string  `json:"detail,omitempty"`    // e.g. the first mismatch
	Elapsed  float64 `json:"elapsed_s,omitempty"` // how long the check took
	Solution bool    `json:"reference_solution"`  // the source was the reference solution itself
}

// Rung is one step of the reference ladder.
type Rung struct {
	Name   string  `json:"name"`
	GFLOPS float64 `json:"gflops"`
}

// An Exercise knows its reference and how to check a source against it.
type Exercise struct {
	Name, Doc string
	// Lang is the language of the student's code: "opencl" (a kernel
	// source between backticks) or "go" (the marked cell is Go code, a
	// function that the check calls).
	Lang string
	// Solution returns the reference solution: the kernel source, or for Go
	// exercises the code of the marked cell.
	Solution func() (string, error)
	check    func(dev *engine.Device, src string) Result
	devices  func() ([]engine.Info, error)
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

// todo is what an unfinished exercise cell contains.
const todo = "TODO"

// Run checks src for the named exercise on the best device the exercise can
// use, and never panics: every failure is in the Result.
func Run(name, src string) (r Result) {
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
	if e.check == nil {
		r.Error = fmt.Sprintf("%s is a Go exercise: its check cell calls the function itself", name)
		return r
	}
	if strings.Contains(src, todo) {
		r.Error = fmt.Sprintf("the exercise still contains %s: write your solution in the cell marked // EXERCISE %s", todo, name)
		return r
	}
	infos, err := e.devices()
	if err != nil || len(infos) == 0 {
		r.Error = fmt.Sprintf("no device can run %s: %v", name, err)
		return r
	}
	dev, err := engine.Open(infos[0].ID)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer dev.Close()
	if sol, err := e.Solution(); err == nil && strings.TrimSpace(sol) == strings.TrimSpace(src) {
		r.Solution = true
	}
	res := e.check(dev, src)
	res.Exercise, res.Solution, res.Device = name, r.Solution, dev.ID+" ("+dev.Name+")"
	return res
}

// Check runs the check and shows it in a notebook (or prints it): pass or
// fail, the reason, the speed next to the ladder, and a bar chart placing
// the solution among the ladder's steps. It returns the Result.
func Check(name, src string) Result { return show(Run(name, src)) }

// show displays a result: the report, and for a pass a bar chart of
// GFLOP/s placing the solution among the ladder's steps.
func show(r Result) Result {
	nb.Markdown(r.Markdown())
	if r.Correct && len(r.Ladder) > 0 {
		var labels []string
		var values []float64
		for _, rung := range r.Ladder {
			labels, values = append(labels, rung.Name), append(values, rung.GFLOPS)
		}
		labels, values = append(labels, "yours"), append(values, r.GFLOPS)
		if _, err := plot.Bars(fmt.Sprintf("%s on %s, %s: GFLOP/s", r.Exercise, r.Device, r.Size), "GFLOP/s", labels, values).Show(); err != nil {
			fmt.Println(err)
		}
	}
	return r
}

// Markdown is the result as a short report.
func (r Result) Markdown() string {
	var b strings.Builder
	switch {
	case r.Correct:
		fmt.Fprintf(&b, "**%s: PASS** on %s.", r.Exercise, r.Device)
		if r.GFLOPS > 0 {
			fmt.Fprintf(&b, " %.1f GFLOP/s at %s, %.0f%% of the reference step.", r.GFLOPS, r.Size, r.PctOfRef)
		}
	case !r.Compiled && r.Error != "":
		fmt.Fprintf(&b, "**%s: FAIL** (does not compile or cannot run)\n\n```\n%s\n```", r.Exercise, r.Error)
	default:
		fmt.Fprintf(&b, "**%s: FAIL**: %s", r.Exercise, r.Error)
	}
	if r.Detail != "" {
		fmt.Fprintf(&b, "\n\n%s", r.Detail)
	}
	return b.String()
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

func isPoCL(d engine.Info) bool { return strings.Contains(d.Platform, "Portable Computing Language") }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// firstMismatch compares got with want like bench.Compare, with a
// tolerance, and describes the first element outside it as (row, column).
func firstMismatch(got, want []float32, cols int, tol float64) string {
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if !(math.Abs(g-w) <= tol*max(math.Abs(w), 1)) {
			return fmt.Sprintf("first wrong element: C[%d][%d] (index %d) is %g, expected %g", i/cols, i%cols, i, got[i], want[i])
		}
	}
	return ""
}

func randomMatrix(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = rng.Float32()*2 - 1
	}
	return out
}

// studentLines rewrites the positions in a build log, such as PoCL's
// "/root/.cache/pocl/kcache/tempfile_x.cl:5:19:" or NVIDIA's
// "<kernel>:5:19:", to "line 5, column 19:": the student's own line, since
// their source is compiled as it is, with nothing prepended.
var buildPos = regexp.MustCompile(`(\S+\.cl|<kernel>):(\d+):(\d+):`)

func studentLines(log string) string {
	return buildPos.ReplaceAllString(log, "line $2, column $3:")
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

// gemm/tiled: the shared-memory tiled GEMM, in OpenCL C, checked on the
// best OpenCL device with the launch geometry of the ladder's step 02.
func init() {
	register(Exercise{
		Name:     "gemm/tiled",
		Lang:     "opencl",
		Doc:      "C = A·B with TS×TS tiles of A and B in __local memory (the OpenCL ladder's step 02)",
		Solution: func() (string, error) { return gemmSource("02_local_tiling") },
		devices:  openCLDevices,
		check:    checkGEMMTiled,
	})
}

func checkGEMMTiled(dev *engine.Device, src string) Result {
	r := Result{}
	const ts = 16
	cfg, err := gemm.NewOpenCLConfig("02_local_tiling", map[string]int{"TS": ts})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	cfg.Source = src
	rng := rand.New(rand.NewPCG(1, 2))
	// Edge shapes first: not multiples of the tile, thin, and one element.
	shapes := []gemm.Shape{{M: 1, N: 1, K: 1}, {M: 17, N: 33, K: 5}, {M: 64, N: 48, K: 31}, {M: 100, N: 7, K: 130}}
	for _, s := range shapes {
		a, b := randomMatrix(rng, s.M*s.K), randomMatrix(rng, s.K*s.N)
		got, _, err := gemm.OpenCLGEMM(dev.OpenCL, cfg, s, a, b)
		if err != nil {
			r.Error = buildError(err.Error())
			return r
		}
		r.Compiled = true
		want, _ := gemm.Reference(s, a, b)
		tol := float64(s.K) * math.Ldexp(1, -22)
		if d := firstMismatch(got, want, s.N, tol); d != "" {
			r.Error = fmt.Sprintf("wrong result for M=%d N=%d K=%d", s.M, s.N, s.K)
			r.Detail = d
			return r
		}
	}
	r.Correct = true
	// Timing: the student's kernel and the ladder's first steps, the same
	// shape, best of three runs each.
	s := gemm.Shape{M: 256, N: 256, K: 256}
	if !isPoCL(dev.Info) {
		s = gemm.Shape{M: 2048, N: 2048, K: 2048}
	}
	r.Size = s.String()
	a, b := randomMatrix(rng, s.M*s.K), randomMatrix(rng, s.K*s.N)
	best := func(c gemm.OpenCLConfig) (float64, error) {
		var t time.Duration
		for i := range 3 {
			_, d, err := gemm.OpenCLGEMM(dev.OpenCL, c, s, a, b)
			if err != nil {
				return 0, err
			}
			if i == 0 || d < t {
				t = d
			}
		}
		return s.Flops() / t.Seconds() / 1e9, nil
	}
	if r.GFLOPS, err = best(cfg); err != nil {
		r.Error = err.Error()
		return r
	}
	for _, step := range []string{"01_naive", "02_local_tiling", "03_more_work_per_thread"} {
		cfgs, err := gemm.OpenCLConfigs(step)
		if err != nil {
			continue
		}
		for _, c := range cfgs {
			if g, err := best(c); err == nil {
				r.Ladder = append(r.Ladder, Rung{Name: "step " + step, GFLOPS: g})
				if step == "02_local_tiling" {
					r.PctOfRef = 100 * r.GFLOPS / g
				}
				break
			}
		}
	}
	return r
}

// gemmSource is the OpenCL source of a step of the GEMM ladder.
func gemmSource(step string) (string, error) { return kernels.OpenCL("gemm/" + step) }
