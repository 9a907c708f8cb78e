package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/exercise"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/sandbox"

	"golang.org/x/tools/go/ast/astutil"
)

// converse starts spec in the sandbox, speaks package wire to it on a
// socket of its own (its file descriptor 3) and judges it, all within the
// time limit limit. What the worker prints goes into the result's Output
// and nowhere else. A CUDA kernel that failed is then diagnosed
// (diagnose). It returns the result, the isolation the worker ran under
// and the wall time of the conversation (the diagnosis not counted).
func (g *grader) converse(spec sandbox.Spec, setup wire.Setup, committed bool, limit time.Duration, judge func(exercise.Runner) exercise.Result) (exercise.Result, string, time.Duration) {
	start := time.Now()
	r, isolation := g.talkTo(spec, setup, committed, limit, judge)
	took := time.Since(start)
	if exercise.NeedsDiagnosis(setup.Lang, r) {
		r.Diagnosis = g.diagnose(spec, setup, committed, exercise.TimedOut(r), limit, judge)
		fmt.Fprintf(g.log, "  diagnosis: %s\n", r.Diagnosis)
	}
	return r, isolation, took
}

// diagnose reruns a failed CUDA worker under compute-sanitizer
// (exercise.Diagnose): the same worker in the same sandbox, started by the
// sanitizer, judged by the same judge through an exercise.SanitizedRunner
// (up to the problem that failed, compiled with -lineinfo, without guard
// zones), within the submission's time limit and at most
// exercise.DiagnosisTimeout; hung says the check stopped at that limit.
// The sanitizer writes its report to a file in
// a directory of the rerun's own, which the grader reads afterwards; the
// rerun's result is dropped. The report reaches the student as text and
// nothing else: the verdict was decided before, by the judge, from the
// outputs. Student code in the sandbox can write to that directory too,
// and so at most mislead its own diagnosis.
func (g *grader) diagnose(spec sandbox.Spec, setup wire.Setup, committed, hung bool, limit time.Duration, judge func(exercise.Runner) exercise.Result) string {
	sanitizer, err := cuda.Tool("compute-sanitizer")
	if err != nil {
		return exercise.NotDiagnosed(setup.Lang, err)
	}
	return exercise.Diagnose(setup.Source, hung, func(tool string) (exercise.RerunResult, error) {
		dir, err := os.MkdirTemp(g.work, "sanitizer-")
		if err != nil {
			return exercise.RerunResult{}, err
		}
		defer os.RemoveAll(dir)
		if err := os.Chmod(dir, 0o777); err != nil { // the sandbox's user writes the log
			return exercise.RerunResult{}, err
		}
		logFile := filepath.Join(dir, "report.log")
		rerun := spec
		rerun.Path, rerun.Args = sanitizer, exercise.SanitizerArgs(tool, logFile, append([]string{spec.Path}, spec.Args...)...)
		// The sanitizer is the program now: the worker it starts must be
		// bound into the sandbox as the program was (without it the
		// sanitizer starts, finds nothing to run, and reports nothing).
		rerun.ReadOnly = append(slices.Clip(spec.ReadOnly), spec.Path)
		rerun.Writable = append(slices.Clip(spec.Writable), dir)
		var tasks []wire.Task
		limit := min(limit, exercise.DiagnosisTimeout)
		start := time.Now()
		r, _ := g.talkTo(rerun, setup, committed, limit, func(run exercise.Runner) exercise.Result {
			sanitized := exercise.NewSanitizedRunner(run, tool, logFile)
			defer func() { tasks = sanitized.Tasks() }()
			return judge(sanitized)
		})
		rr := exercise.RerunResult{Output: r.Output, Tasks: tasks, TimedOut: time.Since(start) >= limit, Limit: limit}
		if rr.Log = exercise.ReadLog(logFile); rr.Log == "" { // the sanitizer did not start: its output says why
			rr.Log = r.Output
		}
		return rr, nil
	})
}

// talkTo is converse without the diagnosis, within timeout.
func (g *grader) talkTo(spec sandbox.Spec, setup wire.Setup, committed bool, timeout time.Duration, judge func(exercise.Runner) exercise.Result) (exercise.Result, string) {
	isolation := g.sb.Describe(spec)
	fail := func(format string, args ...any) (exercise.Result, string) {
		return exercise.Result{Exercise: g.exercise.Name, Error: fmt.Sprintf(format, args...)}, isolation
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("socketpair: %v", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "worker"), os.NewFile(uintptr(fds[1]), "grader")
	defer ours.Close()
	out := &cappedBuffer{limit: 8 << 10}
	spec.ExtraFiles, spec.Stdout, spec.Stderr, spec.Hide = []*os.File{theirs}, out, out, g.hide
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := g.sb.Start(ctx, spec)
	theirs.Close()
	if err != nil {
		return fail("could not start the check process: %v", err)
	}
	w := &worker{exited: make(chan struct{}), timeout: timeout, ctx: ctx, out: out}
	go func() { w.status = p.Wait(); close(w.exited) }()
	r := w.talk(ours, setup, committed, judge)
	cancel() // whatever is left of the worker dies now
	<-w.exited
	r.Output = out.String()
	return r, isolation
}

// worker is one running worker, seen from the grader.
type worker struct {
	ctx     context.Context
	timeout time.Duration
	out     *cappedBuffer
	exited  chan struct{} // closed when the process has ended
	status  error         // its exit status, once exited is closed
}

// talk holds the conversation: Hello, the judge's tasks, Bye. After Bye a
// worker has two seconds to exit with status 0.
func (w *worker) talk(sock *os.File, setup wire.Setup, committed bool, judge func(exercise.Runner) exercise.Result) exercise.Result {
	nc, err := net.FileConn(sock)
	if err != nil {
		return exercise.Result{Error: err.Error()}
	}
	defer nc.Close()
	deadline, _ := w.ctx.Deadline()
	nc.SetDeadline(deadline)
	conn, err := wire.Dial(nc, setup)
	var client *wire.Client
	if err == nil {
		client, err = wire.NewClient(conn, committed)
	}
	if err != nil {
		return exercise.Result{Error: w.explain(err).Error()}
	}
	r := judge(runnerFunc(func(ts []wire.Task) ([][][]uint32, time.Duration, error) {
		outs, took, err := client.Run(ts)
		if err != nil {
			err = w.explain(err)
		}
		return outs, took, err
	}))
	if w.ctx.Err() != nil {
		return w.timedOut(r)
	}
	if err := client.Close(); err != nil {
		r.Correct, r.Error = false, w.explain(err).Error()
		return r
	}
	select {
	case <-w.exited:
		if w.status != nil && r.Correct {
			r.Correct, r.Error = false, fmt.Sprintf("the check process ended with %v after its last task", w.status)
		}
	case <-time.After(2 * time.Second):
		if r.Correct {
			r.Correct, r.Error = false, "the check process did not exit after its last task"
		}
	}
	return r
}

// timedOut is r, failed for the time limit.
func (w *worker) timedOut(r exercise.Result) exercise.Result {
	r.Correct, r.Error, r.Detail = false, fmt.Sprintf("did not finish within %v (an endless loop?)", w.timeout), ""
	return r
}

// explain turns a broken conversation into the reason a student can act
// on: the time limit, a process that ended (with its status and last
// words), or a protocol violation. A fault (a compile or a run error) is
// the worker's report and stays as it is.
func (w *worker) explain(err error) error {
	var fe *wire.FaultError
	var pe *wire.ProtocolError
	switch {
	case errors.As(err, &fe):
		return err
	case w.ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("did not finish within %v (an endless loop?)", w.timeout)
	case errors.As(err, &pe):
		return fmt.Errorf("the check process broke the grading protocol (%v): nothing it sent counts", pe.Msg)
	case !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("the grader could not run the check: %w", err) // not the submission's doing
	}
	status := "still running"
	select {
	case <-w.exited:
		status = "exit status 0"
		if w.status != nil {
			status = w.status.Error()
		}
	case <-time.After(2 * time.Second):
	}
	last := lastWords(w.out.String())
	if last != "" {
		last = ": " + last
	}
	return fmt.Errorf("the check process ended before it reported (%s)%s", status, last)
}

// lastWords is the line of a process's output that says why it died: a
// Go runtime's fatal error or panic, else the last line.
func lastWords(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "fatal error: ") || strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "runtime: out of memory") {
			return l
		}
	}
	return lastLine(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// runnerFunc adapts a function to exercise.Runner.
type runnerFunc func(ts []wire.Task) ([][][]uint32, time.Duration, error)

func (f runnerFunc) Run(ts []wire.Task) ([][][]uint32, time.Duration, error) { return f(ts) }

// wireSetup is the Hello of a kernel worker.
func wireSetup(name, lang, device, src string) wire.Setup {
	return wire.Setup{Exercise: name, Lang: lang, Device: device, Source: src}
}

// cappedBuffer keeps the first limit bytes written to it and says how
// many more there were; safe for concurrent writers (stdout and stderr).
type cappedBuffer struct {
	mu      sync.Mutex
	limit   int
	buf     bytes.Buffer
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := min(len(p), c.limit-c.buf.Len())
	c.buf.Write(p[:keep])
	c.dropped += len(p) - keep
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped > 0 {
		return fmt.Sprintf("%s\n[… %d more bytes not kept]", c.buf.String(), c.dropped)
	}
	return c.buf.String()
}

// ---- Go exercises ----

// goVersion is the Go version of the generated module and workspace: the
// one this lab was built with, which go.mod requires too.
var goVersion = strings.TrimPrefix(runtime.Version(), "go")

// goBuild is what building a Go exercise's cell needs: the checkout, the
// toolchain, the module cache and a build cache of the grader's own.
type goBuild struct {
	root, goroot, modcache, gocache, goimports string
}

// goBuilder finds the checkout (GPULAB_ROOT, else the working directory),
// as an absolute path, the go command's directories and goimports (in the
// checkout's .tools/bin, else on PATH; without it, an error that says how
// to install it).
func goBuilder() (*goBuild, error) {
	root, err := filepath.Abs(os.Getenv("GPULAB_ROOT")) // "" is the working directory
	if err != nil {
		return nil, err
	}
	if data, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(data), "module gpulab") {
		return nil, errors.New("grading a Go exercise needs the gpulab checkout: run lab from the repository root or set GPULAB_ROOT")
	}
	env := func(name string) (string, error) {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			return "", fmt.Errorf("grading a Go exercise needs the go command: go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	b := &goBuild{root: root}
	if b.goroot, err = env("GOROOT"); err != nil {
		return nil, err
	}
	if b.modcache, err = env("GOMODCACHE"); err != nil {
		return nil, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	// A build cache of the grader's own: only the compiler writes to it.
	b.gocache = filepath.Join(cache, "gpulab", "grade-gocache")
	if err := os.MkdirAll(b.gocache, 0o700); err != nil {
		return nil, err
	}
	for _, gi := range []string{filepath.Join(root, ".tools", "bin", "goimports"), "goimports"} {
		if p, err := exec.LookPath(gi); err == nil {
			b.goimports, _ = filepath.Abs(p)
			break
		}
	}
	if b.goimports == "" { // else the reference solution fails the build: "undefined: fmt"
		return nil, fmt.Errorf("grading a Go exercise needs goimports, which completes a cell's imports as GoNB does: it is neither in %s nor on PATH (make deps installs it there)", filepath.Join(root, ".tools", "bin"))
	}
	return b, nil
}

// goWorker builds a Go exercise's cell (read and inspected before: no
// shortcuts, no TODO) in the sandbox and runs the check, within limit,
// with the program as its worker in the sandbox. It returns the result,
// the isolation and the wall time of the worker conversation (not of the
// build, which has a limit of its own).
func (g *grader) goWorker(cell, tag string, limit time.Duration) (exercise.Result, string, time.Duration) {
	e := g.exercise
	r := exercise.Result{Exercise: e.Name}
	if g.build == nil {
		var err error
		if g.build, err = goBuilder(); err != nil {
			r.Error = err.Error()
			return r, "", 0
		}
	}
	bin, err := g.buildGo(cell, tag)
	if err != nil {
		r.Error = err.Error()
		return r, "", 0
	}
	f := e.Flavors[0]
	info := engine.Info{ID: "cpu", Name: "Go", Kind: engine.CPU}
	spec := sandbox.Spec{Path: bin, Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp"}, Limits: g.limits(false, limit), DropUser: true}
	return g.converse(spec, wire.Setup{Exercise: e.Name, Lang: exercise.LangGo, Device: info.ID}, true, limit,
		func(run exercise.Runner) exercise.Result { return e.Judge(f, cell, info, run) })
}

// buildGo builds the marked cell into a program next to this checkout (a
// Go workspace), in the sandbox, with its imports completed by goimports
// as GoNB does. The build runs no student code; it is sandboxed anyway,
// with the checkout, the toolchain and the module cache read-only. It
// returns the program, readable and runnable by the sandbox's user.
func (g *grader) buildGo(cell, tag string) (string, error) {
	b := g.build
	dir := filepath.Join(g.work, "go-"+tag)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	files := map[string]string{
		"go.mod":     "module submission\n\ngo " + goVersion + "\n",
		"go.work":    fmt.Sprintf("go %s\n\nuse (\n\t.\n\t%q\n)\n", goVersion, b.root),
		"student.go": withImport(cell, "gpulab/engine/sparse"),
		"main.go":    "package main\n\nimport \"gpulab/engine/exercise/gohost\"\n\nfunc main() { " + g.exercise.GoMain + " }\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	var errOut cappedBuffer
	errOut.limit = 64 << 10
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// sandboxed runs script in dir, in the sandbox: exit is the script's
	// failure, err the grader's (it could not start).
	sandboxed := func(script string, readOnly ...string) (exit, err error) {
		p, err := g.sb.Start(ctx, sandbox.Spec{
			Path: "/bin/sh", Args: []string{"-c", script}, Dir: dir, TmpSize: 1 << 30,
			Env: []string{"PATH=" + filepath.Join(b.goroot, "bin") + ":/usr/bin:/bin", "HOME=/tmp", "GOROOT=" + b.goroot,
				"GOMODCACHE=" + b.modcache, "GOCACHE=" + b.gocache, "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local",
				"CGO_ENABLED=0", "GOWORK=" + filepath.Join(dir, "go.work"), "GOFLAGS=", "GOTMPDIR=/tmp"},
			ReadOnly: append([]string{b.root, b.goroot, b.modcache}, readOnly...), Writable: []string{dir, b.gocache},
			Hide: g.hide, Stdout: &errOut, Stderr: &errOut,
			Limits: sandbox.Limits{AddressSpace: 16 << 30, CPU: 20 * time.Minute, Procs: 512, FileSize: 1 << 30, OpenFiles: 4096},
		})
		if err != nil {
			return nil, fmt.Errorf("could not start the build: %v", err)
		}
		return p.Wait(), nil
	}
	// goimports may add imports (of any package of the workspace, this
	// checkout's included), so the file is inspected as goimports left it,
	// read and not run, before it is built. What goimports cannot read,
	// the compiler reports.
	if _, err := sandboxed("'"+b.goimports+"' -w student.go", b.goimports); err != nil {
		return "", err
	}
	src, err := os.ReadFile(filepath.Join(dir, "student.go"))
	if err != nil {
		return "", err
	}
	if err := g.exercise.InspectGoFile(src); err != nil {
		return "", err
	}
	exit, err := sandboxed("go build -trimpath -o submission .")
	if err != nil {
		return "", err
	}
	if exit != nil {
		msg := errOut.String()
		if m := goErrPos.FindStringSubmatchIndex(msg); m != nil {
			return "", fmt.Errorf("does not compile: %s", firstLine(cellLine(dir, g.exercise.Name, cell, msg, m)))
		}
		return "", fmt.Errorf("does not build (%v): %s", exit, lastLine(msg))
	}
	bin := filepath.Join(dir, "submission")
	return bin, os.Chmod(bin, 0o555)
}

// withImport is the cell as a file of package main that imports path
// (after the cell's own imports, which a GoNB cell may have): goimports
// then completes the others. A cell that does not parse is left as it is,
// for the compiler to say where.
func withImport(cell, path string) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "student.go", "package main\n\n"+cell, parser.ParseComments)
	if err != nil {
		return "package main\n\n" + cell
	}
	astutil.AddImport(fset, f, path)
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		return "package main\n\n" + cell
	}
	return b.String()
}

// goErrPos finds a compiler position in student.go.
var goErrPos = regexp.MustCompile(`\./student\.go:(\d+):(\d+): `)

// cellLine rewrites the first compiler error's position (match m in msg)
// as a line of the student's cell. student.go is the cell after
// withImport and goimports rewrote its header; the marker line, found in
// both, maps one onto the other.
func cellLine(dir, name, cell, msg string, m []int) string {
	n, _ := strconv.Atoi(msg[m[2]:m[3]])
	data, _ := os.ReadFile(filepath.Join(dir, "student.go"))
	marker := "// EXERCISE " + name
	shift := markerLine(string(data), marker) - markerLine(cell, marker)
	return fmt.Sprintf("line %d, column %s: %s", n-shift, msg[m[4]:m[5]], msg[m[1]:])
}

// markerLine is the line (from 1) of text that holds marker, or 1.
func markerLine(text, marker string) int {
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	return 1
}
