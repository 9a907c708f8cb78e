package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gpulab/engine"
	"gpulab/engine/atomicfile"
	"gpulab/engine/bench"
	"gpulab/engine/exercise"
	"gpulab/engine/nb/jupyter"
	"gpulab/engine/sandbox"
)

// lab grade decides every grade in this process, which never runs student
// code: each submission is compiled and run by a worker process in a
// sandbox (engine/sandbox), which receives inputs this process draws at
// random and sends back only what the code computed, over a socket of its
// own (package wire); this process compares the outputs with its own
// reference and times the round trips. See docs/teaching.md for the
// threat model.

// gradeRow is one submission's line in the grade table.
type gradeRow struct {
	Student string
	exercise.Result
	Isolation string // what the submission ran under ("" if nothing of it ran)
}

// gradeFlags are lab grade's settings.
type gradeFlags struct {
	name    string
	timeout time.Duration
	csvPath string
	mdPath  string
	sandbox string
	memory  int64
}

func gradeCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var g gradeFlags
	fs.StringVar(&g.name, "exercise", "", "the exercise, e.g. gemm/tiled (have: "+strings.Join(exercise.Names(), ", ")+")")
	fs.DurationVar(&g.timeout, "timeout", 2*time.Minute, "time limit per submission (compile, check and timing), > 0")
	fs.StringVar(&g.csvPath, "csv", "grades.csv", "write the table as CSV here")
	fs.StringVar(&g.mdPath, "md", "grades.md", "write the table as Markdown here")
	fs.StringVar(&g.sandbox, "sandbox", "auto", "auto: bubblewrap if it can run here, else the limits that remain (the table says which); bwrap: refuse to grade without it; none: limits only")
	memory := fs.String("memory", "4G", "memory limit per submission (host memory: address space, or data on a GPU)")
	course := fs.String("course", "", "an instructor's course file (docs/course.md): hidden shapes, a seed and reference solutions of the instructor's own; no submission sees it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab grade --exercise NAME [--timeout 2m] [--csv F] [--md F] [--sandbox auto|bwrap|none] [--memory 4G] [--course FILE] SUBMISSION... (files or folders of .ipynb or source files)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	e, err := exercise.Lookup(g.name)
	if err != nil {
		return usageError{err}
	}
	var courseFiles []string // hidden from every sandbox, like the submissions
	if *course != "" {
		c, err := exercise.ReadCourse(*course)
		if err != nil {
			return usageError{err}
		}
		e, courseFiles = c.Apply(e), c.Paths()
		fmt.Fprintf(stderr, "lab grade: the course %s sets the hidden shapes, the seed and the reference solutions\n", *course)
	}
	if g.timeout <= 0 || g.timeout > 24*time.Hour {
		return usageError{fmt.Errorf("--timeout %v: want a duration above 0 and at most 24h", g.timeout)}
	}
	mem, err := bench.ParseBytes(*memory)
	if g.memory = int64(mem); err != nil || g.memory < 64<<20 {
		return usageError{fmt.Errorf("--memory %q: want a size of at least 64M, such as 4G", *memory)}
	}
	if g.sandbox != "auto" && g.sandbox != "bwrap" && g.sandbox != "none" {
		return usageError{fmt.Errorf("--sandbox %q: want auto, bwrap or none", g.sandbox)}
	}
	files, err := submissions(fs.Args())
	if err != nil {
		return usageError{err}
	}
	work, err := os.MkdirTemp("", "gpulab-grade-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	sb, err := sandbox.New(sandbox.Options{Disable: g.sandbox == "none", WorkDir: work})
	if err != nil {
		return err
	}
	if g.sandbox == "bwrap" && sb.Bwrap() == "" {
		return fmt.Errorf("--sandbox bwrap: bubblewrap cannot run here: %s", sb.Reason())
	}
	gr := &grader{gradeFlags: g, exercise: e, sb: sb, work: work, log: stderr, refs: map[string]float64{},
		hide: append(append(append([]string(nil), fs.Args()...), g.csvPath, g.mdPath), courseFiles...)}
	fmt.Fprintf(stderr, "lab grade: %d submissions of %s; a CPU worker's isolation: %s\n", len(files), e.Name,
		sb.Describe(sandbox.Spec{Limits: gr.limits(false), DropUser: true}))
	var rows []gradeRow
	for i, f := range files {
		fmt.Fprintf(stderr, "grading %s ...\n", f.path)
		r, isolation := gr.gradeFile(f, i)
		fmt.Fprintf(stderr, "  %s\n", logLine(r))
		rows = append(rows, gradeRow{Student: f.student, Result: r, Isolation: isolation})
	}
	md := gradeMarkdown(rows, e.SpeedUnit())
	fmt.Fprint(stdout, md)
	if err := atomicfile.WriteBytes(g.mdPath, []byte(md)); err != nil {
		return err
	}
	return atomicfile.WriteBytes(g.csvPath, gradeCSV(rows, e.SpeedUnit()))
}

// grader grades one exercise's submissions.
type grader struct {
	gradeFlags
	exercise exercise.Exercise
	sb       *sandbox.Sandbox
	work     string             // private; removed at the end
	log      io.Writer          // progress, for the instructor
	refs     map[string]float64 // the reference solution's speed, by language
	hide     []string           // paths no sandbox may see: the submissions and the grade files
	build    *goBuild           // for a Go exercise, made on first use
}

// gradeFile grades one submission: it reads its source (outside any
// sandbox: reading is not running), then checks it. It returns the result
// and the isolation the submission ran under.
func (g *grader) gradeFile(f submission, i int) (exercise.Result, string) {
	r := exercise.Result{Exercise: g.exercise.Name}
	src, err := submissionSource(f.path, g.exercise.Name)
	if err != nil {
		r.Error = err.Error()
		return r, ""
	}
	if g.exercise.IsGo() {
		return g.gradeGo(src, i)
	}
	return g.gradeKernel(src)
}

// logLine is a result in a line of the log.
func logLine(r exercise.Result) string {
	if r.Correct {
		return fmt.Sprintf("correct: %s %s at %s on %s", speedText(r.GFLOPS), r.SpeedUnit(), r.Size, r.Device)
	}
	return "not correct: " + firstLine(r.Error+" "+r.Detail)
}

// pctOfReference sets r.PctOfRef from the reference solution's speed in
// lang, timing the reference (once per language) the same way.
func (g *grader) pctOfReference(r *exercise.Result, lang string, time func() (exercise.Result, string)) {
	ref, ok := g.refs[lang]
	if !ok {
		rr, _ := time()
		ref = rr.GFLOPS
		if !rr.Correct {
			ref = 0
			fmt.Fprintf(g.log, "  the reference solution (%s) did not pass here: %s %s\n", lang, rr.Error, rr.Detail)
		} else {
			fmt.Fprintf(g.log, "  the reference solution (%s), timed the same way: %s\n", lang, logLine(rr))
		}
		g.refs[lang] = ref
	}
	if r.Correct && ref > 0 {
		r.PctOfRef = 100 * r.GFLOPS / ref
	}
}

// gradeKernel checks a kernel exercise's source in a worker (lab
// grade-worker) in the sandbox, then places its speed against the
// reference solution's, timed the same way.
func (g *grader) gradeKernel(src string) (exercise.Result, string) {
	e := g.exercise
	f, err := e.Inspect(src)
	if err != nil {
		return exercise.Result{Exercise: e.Name, Error: err.Error()}, ""
	}
	r, isolation := g.kernelWorker(f, src)
	g.pctOfReference(&r, f.Lang, func() (exercise.Result, string) {
		sol, err := f.Solution()
		if err != nil {
			return exercise.Result{Error: err.Error()}, ""
		}
		return g.kernelWorker(f, sol)
	})
	return r, isolation
}

// kernelWorker runs the check of src in a worker on the flavour's best
// device.
func (g *grader) kernelWorker(f exercise.Flavor, src string) (exercise.Result, string) {
	e := g.exercise
	infos, err := f.Devices()
	if err != nil || len(infos) == 0 {
		return exercise.Result{Exercise: e.Name, Unavailable: true, Error: fmt.Sprintf("not checked here: no device runs %s kernels: %v", f.Lang, err)}, ""
	}
	info := infos[0]
	gpu := info.Kind == engine.CUDA || !strings.Contains(info.Platform, "Portable Computing Language")
	spec := sandbox.Spec{Path: g.sb.Executable(), Args: []string{"grade-worker"}, Env: g.workerEnv(), Limits: g.limits(gpu), DropUser: true}
	if gpu {
		spec.Devices = []string{"/dev/nvidia*", "/dev/dri/*"}
	}
	setup := wireSetup(e.Name, f.Lang, info.ID, src)
	return g.converse(spec, setup, false, func(run exercise.Runner) exercise.Result { return e.Judge(f, src, info, run) })
}

// limits are a worker's resource limits. A GPU driver reserves huge
// address ranges, so a GPU worker's memory is bounded as data instead.
func (g *grader) limits(gpu bool) sandbox.Limits {
	l := sandbox.Limits{CPU: g.timeout*time.Duration(runtime.NumCPU()) + 10*time.Second, Procs: 256, FileSize: 64 << 20, OpenFiles: 1024}
	if gpu {
		l.Data = g.memory
	} else {
		l.AddressSpace = g.memory
	}
	return l
}

// workerEnv is a worker's whole environment: a private home and temp, and
// the settings that pick and find devices.
func (g *grader) workerEnv() []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "POCL_CACHE_DIR=/tmp/pocl", "GPULAB_CACHE_DIR=/tmp/cache"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "GPULAB_ROOT" || k == "GPULAB_CACHE_DIR":
		case strings.HasPrefix(k, "GPULAB_"), strings.HasPrefix(k, "POCL_") && k != "POCL_CACHE_DIR",
			k == "CUDA_VISIBLE_DEVICES", k == "LD_LIBRARY_PATH", k == "OCL_ICD_VENDORS", k == "OCL_ICD_FILENAMES":
			env = append(env, kv)
		}
	}
	return env
}

// gradeWorkerCmd is the worker side of lab grade (exercise.Serve), on
// file descriptor 3, inside the sandbox.
func gradeWorkerCmd(args []string) error {
	if len(args) > 0 {
		return usageError{errors.New("grade-worker takes no arguments: lab grade starts it")}
	}
	return exercise.Serve(os.NewFile(3, "grader"))
}

// submission is a file to grade and the student it belongs to.
type submission struct{ path, student string }

// Size limits of what lab grade reads.
const (
	maxSourceBytes   = 1 << 20
	maxNotebookBytes = 16 << 20
)

// submissions expands folders into their regular files, sorted, and names
// each file's student: the file name without its extension, or with it
// where two files would share a name (bob.cl and bob.ipynb).
func submissions(args []string) ([]submission, error) {
	if len(args) == 0 {
		return nil, errors.New("no submissions given")
	}
	var paths []string
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			paths = append(paths, a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				paths = append(paths, filepath.Join(a, e.Name()))
			}
		}
	}
	sort.Strings(paths)
	stems := map[string]int{}
	stem := func(p string) string { return strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)) }
	for _, p := range paths {
		stems[stem(p)]++
	}
	out := make([]submission, len(paths))
	for i, p := range paths {
		out[i] = submission{path: p, student: stem(p)}
		if stems[stem(p)] > 1 {
			out[i].student = filepath.Base(p)
		}
	}
	return out, nil
}

// readSubmission reads a regular file, never through a symbolic link, and
// at most limit bytes.
func readSubmission(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link: not graded", path)
		}
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: not graded", path)
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a submission may have", path, info.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// submissionSource reads the exercise's source from a submission file (see
// exerciseSource), at most the size a submission of its kind may have.
func submissionSource(path, name string) (string, error) {
	limit := int64(maxSourceBytes)
	if strings.HasSuffix(path, ".ipynb") {
		limit = maxNotebookBytes
	}
	data, err := readSubmission(path, limit)
	if err != nil {
		return "", err
	}
	return exerciseSource(path, data, name)
}

// exerciseSource is the exercise's source in the contents of a submission:
// in a notebook (path ends in .ipynb), the code cell marked
// // EXERCISE name; in a file, the marked backtick string if there is one,
// else the whole file. A malformed notebook is an error that names the
// place (jupyter.ParseNotebook).
func exerciseSource(path string, data []byte, name string) (string, error) {
	marker := "// EXERCISE " + name
	if !strings.HasSuffix(path, ".ipynb") {
		text := string(data)
		if strings.Contains(text, marker) {
			return fromCell(text, name)
		}
		return text, nil
	}
	nb, err := jupyter.ParseNotebook(path, data)
	if err != nil {
		return "", err
	}
	for _, cell := range nb.Code() { // not the Markdown cells: prose may quote the marker
		if strings.Contains(cell.Source, marker) {
			src, err := fromCell(cell.Source, name)
			if err != nil {
				return "", fmt.Errorf("%s: cell #%d: %w", path, cell.Number, err)
			}
			return src, nil
		}
	}
	return "", fmt.Errorf("%s: no code cell marked %q", path, marker)
}

// fromCell is the exercise's code in a marked cell: the backtick string of
// a kernel exercise, the whole cell of a Go one.
func fromCell(cell, name string) (string, error) {
	if e, _ := exercise.Lookup(name); e.IsGo() {
		return cell, nil
	}
	return exercise.Extract(cell, name)
}

// gradeMarkdown is the grade table, every cell escaped, the isolation the
// submissions ran under, then what each printed; unit is the exercise's
// speed unit.
func gradeMarkdown(rows []gradeRow, unit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| student | compiled | correct | %s | %% of reference | error |\n|---|---|---|---:|---:|---|\n", unit)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f%% | %s |\n", mdCell(r.Student), yesNo(r.Compiled), yesNo(r.Correct), speedText(r.GFLOPS), r.PctOfRef,
			mdCell(firstLine(r.Error+" "+r.Detail)))
	}
	seen := map[string]bool{"": true}
	for _, r := range rows {
		if !seen[r.Isolation] {
			seen[r.Isolation] = true
			fmt.Fprintf(&b, "\nIsolation: %s\n", mdCell(r.Isolation))
		}
	}
	for _, r := range rows {
		if out := strings.TrimSpace(r.Output); out != "" {
			fmt.Fprintf(&b, "\n**%s printed:**\n\n%s\n", mdCell(r.Student), fenced(out))
		}
		if d := strings.TrimSpace(r.Diagnosis); d != "" {
			fmt.Fprintf(&b, "\n**%s, diagnosed under compute-sanitizer:**\n\n%s\n", mdCell(r.Student), fenced(d))
		}
	}
	return b.String()
}

// fenced is text in a code fence longer than any run of backticks in it.
func fenced(text string) string {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	return fence + "\n" + text + "\n" + fence
}

// speedText is a speed with three significant digits, and no exponent:
// 8910, 246, 4.71, 0.0607.
func speedText(v float64) string {
	digits := 2
	for m := 10.0; m <= v && digits > 0; m *= 10 {
		digits--
	}
	if v < 1 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// mdCell escapes text for a Markdown table cell: one line, with every
// character that could end the cell, open a link, an image, emphasis or
// HTML backslash-escaped.
func mdCell(s string) string {
	var b strings.Builder
	for _, c := range strings.Join(strings.Fields(s), " ") {
		if strings.ContainsRune("\\|`*_[]<>()#!~&", c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := range len(s) {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// gradeCSV is the grade table as CSV; the speed column is gflops, or gbps
// for an exercise measured in GB/s. A cell that a spreadsheet would read
// as a formula gets a leading quote.
func gradeCSV(rows []gradeRow, unit string) []byte {
	var b strings.Builder
	w := csv.NewWriter(&b)
	speed := "gflops"
	if unit == exercise.UnitGBps {
		speed = "gbps"
	}
	w.Write([]string{"student", "compiled", "correct", speed, "pct_of_reference", "error", "output", "isolation", "diagnosis"})
	for _, r := range rows {
		w.Write([]string{csvCell(r.Student), yesNo(r.Compiled), yesNo(r.Correct), fmt.Sprintf("%.4g", r.GFLOPS), fmt.Sprintf("%.1f", r.PctOfRef),
			csvCell(strings.TrimSpace(r.Error + " " + r.Detail)), csvCell(r.Output), r.Isolation, csvCell(r.Diagnosis)})
	}
	w.Flush()
	return []byte(b.String())
}

func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}
