package exercise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/interrupt"
)

// SanitizerTools are the compute-sanitizer tools a diagnosis runs, in
// order: out-of-bounds and misaligned accesses first, then shared-memory
// races.
var SanitizerTools = []string{"memcheck", "racecheck"}

// DiagnosisTimeout bounds one rerun under compute-sanitizer: the small
// problems take seconds even 100× slower, so a rerun that takes longer
// hangs.
const DiagnosisTimeout = 2 * time.Minute

// maxSanitizerLog is how much of the sanitizer's log a diagnosis reads.
const maxSanitizerLog = 64 << 10

// NeedsDiagnosis says whether a result calls for a rerun under
// compute-sanitizer: a CUDA kernel that compiled and then crashed,
// computed a wrong result or hung (which can stop the check before it
// knows the kernel compiled).
func NeedsDiagnosis(lang string, r Result) bool {
	return lang == LangCUDA && !r.Correct && !r.Unavailable && (r.Compiled || TimedOut(r))
}

// TimedOut says whether a check stopped at its time limit (a kernel that
// hung), as its error says.
func TimedOut(r Result) bool { return strings.Contains(r.Error, "did not finish within") }

// NotDiagnosed is the report's line for a failed kernel that no
// sanitizer can rerun here: an OpenCL kernel, or a CUDA one where why
// says what is missing.
func NotDiagnosed(lang string, why error) string {
	if lang != LangCUDA {
		name := map[string]string{LangOpenCL: "OpenCL", LangGo: "Go"}[lang]
		return "not diagnosed: compute-sanitizer checks CUDA kernels, and this one is " + name + " (the exercise's CUDA version is diagnosed on an NVIDIA GPU)"
	}
	return "not diagnosed: " + why.Error() + " (compute-sanitizer comes with the CUDA toolkit)"
}

// SanitizerArgs are compute-sanitizer's arguments for running program
// (its path and arguments) under tool, with the report in logFile.
func SanitizerArgs(tool, logFile string, program ...string) []string {
	return append([]string{"--tool", tool, "--log-file", logFile, "--print-limit", "10"}, program...)
}

// A Rerun runs a check once more under compute-sanitizer's tool. Its
// error is for a rerun that could not start; a kernel that crashes is what
// it is there for.
type Rerun func(tool string) (RerunResult, error)

// RerunResult is what a rerun gave.
type RerunResult struct {
	Log    string      // the sanitizer's log, or where it wrote none, the program's output
	Output string      // what the program printed (a failed assert's message)
	Tasks  []wire.Task // the tasks that ran, the last one the one that failed
	// TimedOut says the rerun was stopped at its limit, Limit: a kernel
	// still running.
	TimedOut bool
	Limit    time.Duration
}

// finished says whether the tool ran the program to its end and wrote its
// summary ("ERROR SUMMARY", racecheck's "RACECHECK SUMMARY").
func (r RerunResult) finished() bool {
	return strings.Contains(r.Log, "ERROR SUMMARY") || strings.Contains(r.Log, "RACECHECK SUMMARY")
}

// Diagnose reruns a failed kernel under memcheck, then under racecheck if
// memcheck found nothing on the device, and explains the first device-side
// error found (an access, a trap or an assert, a race) in the student's
// terms (SanitizerReport.Explain). hung says the check itself stopped at
// its time limit: a kernel still running at the rerun's limit is then
// said as such, and racecheck is not tried after it; otherwise a rerun cut
// at its limit is a sanitizer too slow, and said so. A host-side
// report alone ("Program hit … on CUDA API call to …") is said only when
// neither tool found anything on the device. A tool that did not run the
// kernel, or ended without its summary, is said with why; only reruns that
// ran the kernel and finished clean give "found nothing". It is the text of
// Result.Diagnosis: shown to the student, never part of the verdict.
func Diagnose(src string, hung bool, rerun Rerun) string {
	var trouble []string
	hostSide := ""
	for _, tool := range SanitizerTools {
		rr, err := rerun(tool)
		if err != nil {
			return NotDiagnosed(LangCUDA, err)
		}
		reports := ParseSanitizer(tool, rr.Log)
		for _, r := range reports {
			if r.Access != "" || r.Race != nil || r.Trap {
				return fmt.Sprintf("compute-sanitizer (%s), rerunning the check: %s", tool, r.Explain(src, rr.Tasks, rr.Output))
			}
		}
		if rr.TimedOut && !hung {
			trouble = append(trouble, fmt.Sprintf("%s did not finish rerunning the check within %v (the sanitizer slows a kernel down a hundredfold and more)", tool, rr.Limit))
			continue
		}
		if rr.TimedOut {
			return fmt.Sprintf("compute-sanitizer (%s), rerunning the check: the kernel did not finish: it was still running %v after the rerun began, on its %s launch%s. "+
				"Where it runs compute-sanitizer cannot say (not measured): look for a loop whose exit some threads never reach, or a __syncthreads() that not every thread of the block reaches",
				tool, rr.Limit, ordinal(len(rr.Tasks)), launchShape(rr.Tasks))
		}
		if len(reports) > 0 && hostSide == "" {
			hostSide = fmt.Sprintf("compute-sanitizer (%s), rerunning the check: %s", tool, reports[0].Explain(src, rr.Tasks, rr.Output))
		}
		switch {
		case !rr.finished():
			trouble = append(trouble, fmt.Sprintf("%s ended without its summary (%s)", tool, lastLogLine(rr.Log)))
		case len(rr.Tasks) == 0:
			trouble = append(trouble, fmt.Sprintf("%s never reached the kernel: the check process did not run under it (%s)", tool, lastLogLine(rr.Output)))
		}
	}
	switch {
	case hostSide != "":
		return hostSide
	case len(trouble) > 0:
		return "not diagnosed: " + strings.Join(trouble, "; ")
	}
	return "compute-sanitizer found no out-of-bounds or misaligned access (memcheck) and no shared-memory race (racecheck), rerunning the check up to the problem that failed: look at the arithmetic and at which elements each thread computes"
}

// ordinal is 1st, 2nd, 3rd, 4th...
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// launchShape is " (grid X×Y×Z of blocks of X×Y×Z threads)" for the last
// task, or "".
func launchShape(ts []wire.Task) string {
	if len(ts) == 0 {
		return ""
	}
	g, b := wire.Dims(ts[len(ts)-1].Grid), wire.Dims(ts[len(ts)-1].Block)
	return fmt.Sprintf(" (a grid of %d×%d×%d blocks of %d×%d×%d threads)", g[0], g[1], g[2], b[0], b[1], b[2])
}

func lastLogLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "nothing written"
}

// errRerunDone ends a rerun where the check times its kernel, or once
// the sanitizer has reported what it is there for.
var errRerunDone = errors.New("diagnosis: the rerun is done")

// A SanitizedRunner is the student's runner during a rerun under
// compute-sanitizer: it compiles every task with -lineinfo, so that the
// sanitizer names the student's lines, and without guard zones, so that a
// stray access is out of bounds for the sanitizer. It runs the check's
// small problems, which come one task at a time; under memcheck it then
// runs the first task of the first batch, one problem of the timing size
// (an access that lands in another allocation on a small problem may fault
// only there), and ends the rerun: a batch would take 10 to 100 times
// longer under the sanitizer, and racecheck's a thousand times. It ends the
// rerun as soon as the sanitizer's log holds a report from the device. It
// keeps the tasks that ran.
type SanitizedRunner struct {
	run     Runner
	timing  bool   // run one timing problem (memcheck)
	logFile string // the sanitizer's log, read between tasks
	mu      sync.Mutex
	tasks   []wire.Task
}

// NewSanitizedRunner wraps run for a rerun under tool, whose log is
// logFile.
func NewSanitizedRunner(run Runner, tool, logFile string) *SanitizedRunner {
	return &SanitizedRunner{run: run, timing: tool == "memcheck", logFile: logFile}
}

// Run runs a single task with -lineinfo added and no guard zones; of a
// batch it runs the first task alone under memcheck, then ends the rerun.
func (d *SanitizedRunner) Run(ts []wire.Task) ([][][]uint32, time.Duration, error) {
	if len(ts) == 0 || len(ts) > 1 && !d.timing || d.reported() {
		return nil, 0, errRerunDone
	}
	t := ts[0]
	t.Options, t.Guard = append(slices.Clip(t.Options), "-lineinfo"), 0
	d.mu.Lock()
	d.tasks = append(d.tasks, t)
	d.mu.Unlock()
	outs, took, err := d.run.Run([]wire.Task{t})
	if err == nil && len(ts) > 1 {
		err = errRerunDone
	}
	return outs, took, err
}

// reported says whether the sanitizer's log already holds a report from
// the device.
func (d *SanitizedRunner) reported() bool {
	if d.logFile == "" {
		return false
	}
	for _, r := range ParseSanitizer("", ReadLog(d.logFile)) {
		if r.Access != "" || r.Race != nil || r.Trap {
			return true
		}
	}
	return false
}

// Tasks are the tasks the rerun ran, in order.
func (d *SanitizedRunner) Tasks() []wire.Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.tasks)
}

// ReadLog reads at most maxSanitizerLog bytes of a sanitizer's log file.
func ReadLog(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxSanitizerLog))
	return string(b)
}

// diagnosisWorkerEnv marks a process that a notebook's check started to
// rerun a kernel under compute-sanitizer: the notebook cell's own program,
// run again, whose call of Check serves as that rerun's worker (Serve, on
// file descriptor 3) instead of checking.
const diagnosisWorkerEnv = "GPULAB_EXERCISE_DIAGNOSIS_WORKER"

// serveIfDiagnosisWorker makes this process a rerun's worker, and exits,
// when a check started it as one.
func serveIfDiagnosisWorker() {
	if os.Getenv(diagnosisWorkerEnv) != "1" {
		return
	}
	if err := Serve(os.NewFile(3, "check")); err != nil {
		fmt.Fprintln(os.Stderr, "exercise: diagnosis worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// rerunHere is a notebook's Rerun: this program (the notebook cell) run
// again under compute-sanitizer as a worker (serveIfDiagnosisWorker),
// judged by e.Judge over package wire like lab grade's workers, within
// DiagnosisTimeout. The student's kernel already runs in the notebook's
// own process, so the rerun needs no sandbox; under lab grade, the
// grader's Rerun starts the worker in one.
func (e Exercise) rerunHere(f Flavor, src string, info engine.Info) Rerun {
	return func(tool string) (RerunResult, error) {
		sanitizer, err := cuda.Tool("compute-sanitizer")
		if err != nil {
			return RerunResult{}, err
		}
		exe, err := os.Executable()
		if err != nil {
			return RerunResult{}, err
		}
		dir, remove, err := interrupt.TempDir("gpulab-sanitizer-*")
		if err != nil {
			return RerunResult{}, err
		}
		defer remove()
		logFile := filepath.Join(dir, "sanitizer.log")
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return RerunResult{}, err
		}
		ours, theirs := os.NewFile(uintptr(fds[0]), "worker"), os.NewFile(uintptr(fds[1]), "check")
		defer ours.Close()
		ctx, cancel := context.WithTimeout(context.Background(), DiagnosisTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, sanitizer, SanitizerArgs(tool, logFile, append([]string{exe}, os.Args[1:]...)...)...)
		out := &tailWriter{} // the program's own output: not the report, but why there is none
		cmd.Env, cmd.ExtraFiles, cmd.Stdout, cmd.Stderr = append(os.Environ(), diagnosisWorkerEnv+"=1"), []*os.File{theirs}, out, out
		forget, err := interrupt.Start(cmd)
		theirs.Close()
		if err != nil {
			return RerunResult{}, fmt.Errorf("starting %s: %w", sanitizer, err)
		}
		defer forget()
		runner := e.judgeOver(ctx, ours, wire.Setup{Exercise: e.Name, Lang: f.Lang, Device: info.ID, Source: src}, f, src, info, tool, logFile)
		timedOut := ctx.Err() != nil
		cancel() // what is left of the worker ends now
		cmd.Wait()
		rr := RerunResult{Output: out.String(), Tasks: runner.Tasks(), TimedOut: timedOut, Limit: DiagnosisTimeout}
		if rr.Log = ReadLog(logFile); rr.Log == "" {
			rr.Log = out.String()
		}
		return rr, nil
	}
}

// tailWriter keeps the last 4 KiB written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if n := len(w.buf) - 4<<10; n > 0 {
		w.buf = slices.Clone(w.buf[n:])
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// judgeOver speaks package wire on sock to a rerun's worker and judges it
// with a SanitizedRunner, whose tasks it returns; what the check decides
// is dropped.
func (e Exercise) judgeOver(ctx context.Context, sock *os.File, setup wire.Setup, f Flavor, src string, info engine.Info, tool, logFile string) *SanitizedRunner {
	runner := NewSanitizedRunner(runnerFunc(func([]wire.Task) ([][][]uint32, time.Duration, error) {
		return nil, 0, errors.New("diagnosis: the worker did not start")
	}), tool, logFile)
	nc, err := net.FileConn(sock)
	if err != nil {
		return runner
	}
	defer nc.Close()
	if deadline, ok := ctx.Deadline(); ok {
		nc.SetDeadline(deadline)
	}
	conn, err := wire.Dial(nc, setup)
	if err != nil {
		return runner
	}
	client, err := wire.NewClient(conn, false)
	if err != nil {
		return runner
	}
	runner.run = client
	e.Judge(f, src, info, runner)
	client.Close()
	return runner
}

// runnerFunc adapts a function to Runner.
type runnerFunc func(ts []wire.Task) ([][][]uint32, time.Duration, error)

func (f runnerFunc) Run(ts []wire.Task) ([][][]uint32, time.Duration, error) { return f(ts) }
