package main

import (
	"encoding/csv"
	"errors"
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
	"unicode"

	"gpulab/engine"
	"gpulab/engine/atomicfile"
	"gpulab/engine/exercise"
	"gpulab/engine/interrupt"
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
	Isolation string        // what the submission ran under ("" if nothing of it ran)
	Limit     time.Duration // the time limit that applied (0 if nothing of it ran)
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
	fs := newFlagSet("grade", stderr)
	g := gradeFlags{timeout: 2 * time.Minute, sandbox: "auto", memory: 4 << 30}
	fs.Var(&choiceValue{&g.name, exercise.Names()}, "exercise", "the exercise, e.g. gemm/tiled (have: "+strings.Join(exercise.Names(), ", ")+")")
	numberVar(fs, &g.timeout, "timeout", durations, fmt.Sprintf("the ceiling of a submission's time limit (check and timing), which is %d× the reference solution's time here + %v; > 0", limitMultiple, limitAllowance))
	fs.StringVar(&g.csvPath, "csv", "grades.csv", "write the table as CSV here")
	fs.StringVar(&g.mdPath, "md", "grades.md", "write the table as Markdown here")
	fs.Var(&choiceValue{&g.sandbox, []string{"auto", "bwrap", "none"}}, "sandbox", "auto: bubblewrap if it can run here, else the limits that remain (the table says which); bwrap: refuse to grade without it; none: limits only")
	numberVar(fs, (*byteSize)(&g.memory), "memory", sizes(64<<20), "memory limit per submission (host memory: address space, or data on a GPU)")
	course := fs.String("course", "", "an instructor's course file (docs/course.md): hidden shapes, a seed and reference solutions of the instructor's own; no submission sees it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab grade --exercise NAME [--timeout 2m] [--csv F] [--md F] [--sandbox auto|bwrap|none] [--memory 4G] [--course FILE] SUBMISSION... (files or folders of .ipynb or source files)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	// Every path given is made absolute before anything else: the sandbox
	// binds and hides absolute paths only, and the worker's working
	// directory is not the user's.
	args, err := absPaths(fs.Args())
	if err != nil {
		return err
	}
	for _, p := range []*string{&g.csvPath, &g.mdPath, course} {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
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
	files, err := submissions(args)
	if err != nil {
		return usageError{err}
	}
	work, removeWork, err := interrupt.TempDir("gpulab-grade-*") // removed on SIGINT and SIGTERM too
	if err != nil {
		return err
	}
	defer removeWork()
	sb, err := sandbox.New(sandbox.Options{Disable: g.sandbox == "none", WorkDir: work})
	if err != nil {
		return err
	}
	if g.sandbox == "bwrap" && sb.Bwrap() == "" {
		return fmt.Errorf("--sandbox bwrap: bubblewrap cannot run here: %s", sb.Reason())
	}
	gr := &grader{gradeFlags: g, exercise: e, sb: sb, work: work, log: stderr, refs: map[string]reference{},
		hide: append(append(append([]string(nil), args...), g.csvPath, g.mdPath), courseFiles...)}
	fmt.Fprintf(stderr, "lab grade: %d submissions of %s; a CPU worker's isolation at the ceiling --timeout %v: %s\n", len(files), e.Name, g.timeout,
		sb.Describe(sandbox.Spec{Limits: gr.limits(false, g.timeout), DropUser: true}))
	// Read and inspect every submission (reading is not running), then time
	// the reference solution in each language they use, before any of them
	// runs: their time limits follow from it.
	entries := make([]entry, len(files))
	for i, f := range files {
		entries[i] = gr.read(f)
	}
	limits, err := gr.timeReferences(entries)
	if err != nil {
		return err
	}
	var rows []gradeRow
	for i, en := range entries {
		fmt.Fprintf(stderr, "grading %s ...\n", quoteName(en.path))
		r, isolation, limit := gr.gradeEntry(en, i)
		fmt.Fprintf(stderr, "  %s\n", logLine(r))
		rows = append(rows, gradeRow{Student: en.student, Result: r, Isolation: isolation, Limit: limit})
	}
	md := gradeMarkdown(rows, e.SpeedUnit(), limits)
	fmt.Fprint(stdout, md)
	if err := atomicfile.WriteBytes(g.mdPath, []byte(md)); err != nil {
		return err
	}
	return atomicfile.WriteBytes(g.csvPath, gradeCSV(rows, e.SpeedUnit()))
}

// absPaths is paths made absolute.
func absPaths(paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		var err error
		if out[i], err = filepath.Abs(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// grader grades one exercise's submissions.
type grader struct {
	gradeFlags
	exercise exercise.Exercise
	sb       *sandbox.Sandbox
	work     string               // private; removed at the end
	log      io.Writer            // progress, for the instructor
	refs     map[string]reference // the reference solution's run, by language
	hide     []string             // paths no sandbox may see: the submissions and the grade files
	build    *goBuild             // for a Go exercise, made on first use
}

// A submission's time limit scales with the grading machine: the
// reference solution is timed first, in each language the submissions
// use, and a submission may take limitMultiple times as long plus
// limitAllowance (an honest student's code may be several times slower
// than the reference; the allowance absorbs a start-up's noise), at most
// --timeout. An endless loop still ends at the limit.
const (
	limitMultiple  = 4
	limitAllowance = 20 * time.Second
)

// timeLimit is a language's time limit and how it was derived.
type timeLimit struct {
	lang      string
	reference time.Duration // the reference solution's run here (its worker conversation), rounded up to 0.1 s
	ceiling   time.Duration // --timeout
}

// newTimeLimit is the limit in lang for a reference run that took took.
func newTimeLimit(lang string, took, ceiling time.Duration) timeLimit {
	const step = 100 * time.Millisecond
	return timeLimit{lang: lang, reference: (took + step - 1) / step * step, ceiling: ceiling}
}

// limit is min(ceiling, limitMultiple × reference + limitAllowance).
func (l timeLimit) limit() time.Duration {
	return min(l.ceiling, limitMultiple*l.reference+limitAllowance)
}

// String is the line under the grade table that says how the limit was
// derived.
func (l timeLimit) String() string {
	return fmt.Sprintf("Time limit (%s): %v = min(--timeout %v, %d × %v + %v), where %v is the time the reference solution's check took here.",
		l.lang, l.limit(), l.ceiling, limitMultiple, l.reference, limitAllowance, l.reference)
}

// reference is the reference solution's run in one language: its result
// (its speed is the 100% of the table) and the time limit it sets.
type reference struct {
	result exercise.Result
	limit  timeLimit
}

// entry is a submission read and inspected, before anything of it runs.
type entry struct {
	submission
	src    string
	lang   string          // the language it is checked in; "" where it failed before running
	flavor exercise.Flavor // a kernel exercise's flavour in lang
	failed exercise.Result // why, where lang is ""
}

// read reads a submission's source and inspects it, outside any sandbox:
// reading is not running.
func (g *grader) read(f submission) entry {
	e := g.exercise
	en := entry{submission: f}
	fail := func(err error) entry {
		en.failed = exercise.Result{Exercise: e.Name, Error: err.Error()}
		return en
	}
	src, err := submissionSource(f.path, e.Name)
	if err != nil {
		return fail(err)
	}
	en.src = src
	if e.IsGo() {
		if err := e.InspectGo(src); err != nil {
			return fail(err)
		}
		en.lang = exercise.LangGo
		return en
	}
	fl, err := e.Inspect(src)
	if err != nil {
		return fail(err)
	}
	en.flavor, en.lang = fl, fl.Lang
	return en
}

// timeReferences runs the reference solution once in each language that
// an inspected submission uses, before any submission runs, within
// --timeout, and sets each language's time limit from its time. It
// returns the limits in the order they were set. A reference that does
// not pass is the grading machine's problem, never a student's: an error,
// and no submission is graded. A language that no device here runs sets
// no limit (its submissions are reported as not checked).
func (g *grader) timeReferences(entries []entry) ([]timeLimit, error) {
	var limits []timeLimit
	for _, en := range entries {
		if _, done := g.refs[en.lang]; en.lang == "" || done {
			continue
		}
		fmt.Fprintf(g.log, "timing the reference solution (%s), within --timeout %v ...\n", en.lang, g.timeout)
		r, took := g.runReference(en)
		ref := reference{result: r}
		switch {
		case r.Unavailable:
			fmt.Fprintf(g.log, "  %s: its submissions are not checked\n", firstLine(r.Error))
		case !r.Correct:
			why := firstLine(r.Error + " " + r.Detail)
			if strings.HasPrefix(r.Error, "did not finish within") {
				why = fmt.Sprintf("it did not finish within --timeout %v: raise --timeout, or grade on a machine that runs it faster", g.timeout)
			}
			return nil, fmt.Errorf("the reference solution of %s (%s) did not pass on this machine: %s: no submission was graded", g.exercise.Name, en.lang, why)
		default:
			ref.limit = newTimeLimit(en.lang, took, g.timeout)
			limits = append(limits, ref.limit)
			fmt.Fprintf(g.log, "  %s in %v\n  %s\n", logLine(r), took.Round(time.Millisecond), ref.limit)
		}
		g.refs[en.lang] = ref
	}
	return limits, nil
}

// runReference runs the reference solution in en's language within
// --timeout. Its time is the wall time of its worker conversation (for Go,
// not its build, which has a limit of its own).
func (g *grader) runReference(en entry) (exercise.Result, time.Duration) {
	e := g.exercise
	f := en.flavor
	if e.IsGo() {
		f = e.Flavors[0]
	}
	sol, err := f.Solution()
	if err != nil {
		return exercise.Result{Exercise: e.Name, Error: err.Error()}, 0
	}
	var r exercise.Result
	var took time.Duration
	if e.IsGo() {
		r, _, took = g.goWorker(sol, "reference", g.timeout)
	} else {
		r, _, took = g.kernelWorker(f, sol, g.timeout)
	}
	return r, took
}

// gradeEntry checks one read submission within its language's time limit
// and places its speed against the reference solution's. It returns the
// result, the isolation it ran under and the limit that applied (0 where
// nothing of it ran).
func (g *grader) gradeEntry(en entry, i int) (exercise.Result, string, time.Duration) {
	if en.lang == "" {
		return en.failed, "", 0
	}
	ref := g.refs[en.lang]
	if ref.result.Unavailable {
		return exercise.Result{Exercise: g.exercise.Name, Unavailable: true, Error: ref.result.Error}, "", 0
	}
	limit := ref.limit.limit()
	var r exercise.Result
	var isolation string
	if g.exercise.IsGo() {
		r, isolation, _ = g.goWorker(en.src, strconv.Itoa(i), limit)
	} else {
		r, isolation, _ = g.kernelWorker(en.flavor, en.src, limit)
	}
	if r.Correct && ref.result.GFLOPS > 0 {
		r.PctOfRef = 100 * r.GFLOPS / ref.result.GFLOPS
	}
	return r, isolation, limit
}

// logLine is a result in a line of the log.
func logLine(r exercise.Result) string {
	if r.Correct {
		return fmt.Sprintf("correct: %s %s at %s on %s", speedText(r.GFLOPS), r.SpeedUnit(), r.Size, r.Device)
	}
	return "not correct: " + firstLine(r.Error+" "+r.Detail)
}

// kernelWorker runs the check of src in a worker on the flavour's best
// device, within limit. It returns the result, the isolation and the wall
// time of the worker conversation.
func (g *grader) kernelWorker(f exercise.Flavor, src string, limit time.Duration) (exercise.Result, string, time.Duration) {
	e := g.exercise
	infos, err := f.Devices()
	if err != nil || len(infos) == 0 {
		return exercise.Result{Exercise: e.Name, Unavailable: true, Error: fmt.Sprintf("not checked here: no device runs %s kernels: %v", f.Lang, err)}, "", 0
	}
	info := infos[0]
	gpu := info.Kind == engine.CUDA || !strings.Contains(info.Platform, "Portable Computing Language")
	spec := sandbox.Spec{Path: g.sb.Executable(), Args: []string{"grade-worker"}, Env: g.workerEnv(), Limits: g.limits(gpu, limit), DropUser: true}
	if gpu {
		spec.Devices = []string{"/dev/nvidia*", "/dev/dri/*"}
	}
	setup := wireSetup(e.Name, f.Lang, info.ID, src)
	return g.converse(spec, setup, false, limit, func(run exercise.Runner) exercise.Result { return e.Judge(f, src, info, run) })
}

// limits are a worker's resource limits under the time limit limit: its
// CPU time follows it. A GPU driver reserves huge address ranges, so a GPU
// worker's memory is bounded as data instead.
func (g *grader) limits(gpu bool, limit time.Duration) sandbox.Limits {
	l := sandbox.Limits{CPU: limit*time.Duration(runtime.NumCPU()) + 10*time.Second, Procs: 256, FileSize: 64 << 20, OpenFiles: 1024}
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
	if len(paths) == 0 {
		return nil, fmt.Errorf("no submission found: %s holds no file to grade (hidden files and folders are skipped)", strings.Join(args, ", "))
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
			return nil, fmt.Errorf("%s is a symbolic link: not graded", quoteName(path))
		}
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: not graded", quoteName(path))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a submission may have", quoteName(path), info.Size(), limit)
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
// place (jupyter.ParseNotebook), and a file with a NUL byte one that names
// the file and the offset (exercise.CheckText).
func exerciseSource(path string, data []byte, name string) (string, error) {
	if err := exercise.CheckText(string(data)); err != nil {
		return "", fmt.Errorf("%s: %w", quoteName(path), err)
	}
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
				return "", fmt.Errorf("%s: cell #%d: %w", quoteName(path), cell.Number, err)
			}
			return src, nil
		}
	}
	return "", fmt.Errorf("%s: no code cell marked %q", quoteName(path), marker)
}

// fromCell is the exercise's code in a marked cell: the backtick string of
// a kernel exercise, the whole cell of a Go one.
func fromCell(cell, name string) (string, error) {
	if e, _ := exercise.Lookup(name); e.IsGo() {
		return cell, nil
	}
	return exercise.Extract(cell, name)
}

// gradeMarkdown is the grade table, every cell escaped, how each
// language's time limit was derived, the isolation the submissions ran
// under, then what each printed; unit is the exercise's speed unit.
func gradeMarkdown(rows []gradeRow, unit string, limits []timeLimit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| student | compiled | correct | %s | %% of reference | limit | error |\n|---|---|---|---:|---:|---:|---|\n", unit)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f%% | %s | %s |\n", mdCell(quoteName(r.Student)), yesNo(r.Compiled), yesNo(r.Correct), speedText(r.GFLOPS), r.PctOfRef,
			limitText(r.Limit), mdCell(firstLine(r.Error+" "+r.Detail)))
	}
	for _, l := range limits {
		fmt.Fprintf(&b, "\n%s\n", l)
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
			fmt.Fprintf(&b, "\n**%s printed:**\n\n%s\n", mdCell(quoteName(r.Student)), fenced(out))
		}
		if d := strings.TrimSpace(r.Diagnosis); d != "" {
			fmt.Fprintf(&b, "\n**%s, diagnosed under compute-sanitizer:**\n\n%s\n", mdCell(quoteName(r.Student)), fenced(d))
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
// for an exercise measured in GB/s, and limit is the time limit that
// applied (as in "did not finish within 32.4s"). A cell that a spreadsheet would read
// as a formula gets a leading quote.
func gradeCSV(rows []gradeRow, unit string) []byte {
	var b strings.Builder
	w := csv.NewWriter(&b)
	speed := "gflops"
	if unit == exercise.UnitGBps {
		speed = "gbps"
	}
	w.Write([]string{"student", "compiled", "correct", speed, "pct_of_reference", "error", "output", "isolation", "diagnosis", "limit"})
	for _, r := range rows {
		w.Write([]string{csvCell(quoteName(r.Student)), yesNo(r.Compiled), yesNo(r.Correct), fmt.Sprintf("%.4g", r.GFLOPS), fmt.Sprintf("%.1f", r.PctOfRef),
			csvCell(strings.TrimSpace(r.Error + " " + r.Detail)), csvCell(r.Output), r.Isolation, csvCell(r.Diagnosis), limitText(r.Limit)})
	}
	w.Flush()
	return []byte(b.String())
}

// limitText is a time limit in a table cell: "" where none applied.
func limitText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// quoteName is a submission's name or path as the log and the tables
// print it: as it is, or quoted (strconv.Quote) where a character is not
// printable or it starts with a quote, so that a newline in a file name
// cannot split a line or fake one.
func quoteName(s string) string {
	if strings.HasPrefix(s, `"`) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
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
