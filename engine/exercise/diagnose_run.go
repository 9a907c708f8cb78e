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
	"strings"
	"sync"
	"syscall"
	"time"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/exercise/wire"
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
	return lang == LangCUDA && !r.Correct && !r.Unavailable && (r.Compiled || strings.Contains(r.Error, "did not finish within"))
}

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

// A Rerun runs a check once more under compute-sanitizer's tool and
// returns the sanitizer's log and the tasks that ran (the last one the
// one that failed). Its error is for a rerun that could not start; a
// kernel that crashes is what it is there for.
type Rerun func(tool string) (log string, tasks []wire.Task, err error)

// Diagnose reruns a failed kernel under memcheck, then under racecheck if
// memcheck found nothing on the device, and explains the first device-side
// error found (an access or a race) in the student's terms
// (SanitizerReport.Explain). A host-side report alone ("Program hit … on
// CUDA API call to …") is said only when neither tool found anything on the
// device. It is the text of Result.Diagnosis: shown to the student, never
// part of the verdict.
func Diagnose(src string, rerun Rerun) string {
	var trouble []string
	hostSide := ""
	for _, tool := range SanitizerTools {
		log, tasks, err := rerun(tool)
		if err != nil {
			return NotDiagnosed(LangCUDA, err)
		}
		reports := ParseSanitizer(tool, log)
		for _, r := range reports {
			if r.Access != "" || r.Race != nil {
				return fmt.Sprintf("compute-sanitizer (%s), rerunning the small problems: %s", tool, r.Explain(src, tasks))
			}
		}
		if len(reports) > 0 && hostSide == "" {
			hostSide = fmt.Sprintf("compute-sanitizer (%s), rerunning the small problems: %s", tool, reports[0].Explain(src, tasks))
		}
		if !strings.Contains(log, "COMPUTE-SANITIZER") {
			trouble = append(trouble, fmt.Sprintf("%s did not report (%s)", tool, lastLogLine(log)))
		}
	}
	switch {
	case hostSide != "":
		return hostSide
	case len(trouble) > 0:
		return "not diagnosed: " + strings.Join(trouble, "; ")
	}
	return "compute-sanitizer found no out-of-bounds or misaligned access (memcheck) and no shared-memory race (racecheck) on the small problems: look at the arithmetic and at which elements each thread computes"
}

func lastLogLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "an empty log"
}

// errRerunDone ends a rerun where the check times its kernel.
var errRerunDone = errors.New("diagnosis: the small problems are done")

// A SanitizedRunner is the student's runner during a rerun under
// compute-sanitizer: it compiles every task with -lineinfo, so that the
// sanitizer names the student's lines; it runs the check's small problems,
// which come one task at a time, and refuses the first batch, the timing
// problems, which would take 10 to 100 times longer under the sanitizer.
// It keeps the tasks that ran.
type SanitizedRunner struct {
	run   Runner
	mu    sync.Mutex
	tasks []wire.Task
}

// NewSanitizedRunner wraps run for a rerun.
func NewSanitizedRunner(run Runner) *SanitizedRunner { return &SanitizedRunner{run: run} }

// Run runs a single task with -lineinfo added; a batch ends the rerun.
func (d *SanitizedRunner) Run(ts []wire.Task) ([][][]uint32, time.Duration, error) {
	if len(ts) != 1 {
		return nil, 0, errRerunDone
	}
	t := ts[0]
	t.Options = append(slices.Clip(t.Options), "-lineinfo")
	d.mu.Lock()
	d.tasks = append(d.tasks, t)
	d.mu.Unlock()
	return d.run.Run([]wire.Task{t})
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
	return func(tool string) (string, []wire.Task, error) {
		sanitizer, err := cuda.Tool("compute-sanitizer")
		if err != nil {
			return "", nil, err
		}
		exe, err := os.Executable()
		if err != nil {
			return "", nil, err
		}
		dir, err := os.MkdirTemp("", "gpulab-sanitizer-*")
		if err != nil {
			return "", nil, err
		}
		defer os.RemoveAll(dir)
		logFile := filepath.Join(dir, "sanitizer.log")
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", nil, err
		}
		ours, theirs := os.NewFile(uintptr(fds[0]), "worker"), os.NewFile(uintptr(fds[1]), "check")
		defer ours.Close()
		ctx, cancel := context.WithTimeout(context.Background(), DiagnosisTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, sanitizer, SanitizerArgs(tool, logFile, append([]string{exe}, os.Args[1:]...)...)...)
		out := &tailWriter{} // the program's own output: not the report, but why there is none
		cmd.Env, cmd.ExtraFiles, cmd.Stdout, cmd.Stderr = append(os.Environ(), diagnosisWorkerEnv+"=1"), []*os.File{theirs}, out, out
		err = cmd.Start()
		theirs.Close()
		if err != nil {
			return "", nil, fmt.Errorf("starting %s: %w", sanitizer, err)
		}
		runner := e.judgeOver(ctx, ours, wire.Setup{Exercise: e.Name, Lang: f.Lang, Device: info.ID, Source: src}, f, src, info)
		cancel() // what is left of the worker ends now
		cmd.Wait()
		log := ReadLog(logFile)
		if log == "" {
			log = out.String()
		}
		return log, runner.Tasks(), nil
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
func (e Exercise) judgeOver(ctx context.Context, sock *os.File, setup wire.Setup, f Flavor, src string, info engine.Info) *SanitizedRunner {
	runner := NewSanitizedRunner(runnerFunc(func([]wire.Task) ([][][]uint32, time.Duration, error) {
		return nil, 0, errors.New("diagnosis: the worker did not start")
	}))
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
