package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"gpulab/engine/atomicfile"
	"gpulab/engine/exercise"
)

// gradeRow is one submission's line in the grade table.
type gradeRow struct {
	Student string
	exercise.Result
}

func gradeCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("exercise", "", "the exercise, e.g. gemm/tiled (have: "+strings.Join(exercise.Names(), ", ")+")")
	timeout := fs.Duration("timeout", 2*time.Minute, "time limit per submission (compile, check and timing)")
	csvPath := fs.String("csv", "grades.csv", "write the table as CSV here")
	mdPath := fs.String("md", "grades.md", "write the table as Markdown here")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab grade --exercise NAME [--timeout 2m] [--csv F] [--md F] SUBMISSION... (files or folders of .ipynb or source files)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if _, err := exercise.Lookup(*name); err != nil {
		return usageError{err}
	}
	files, err := submissions(fs.Args())
	if err != nil {
		return usageError{err}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var rows []gradeRow
	for _, f := range files {
		row := gradeRow{Student: strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))}
		row.Exercise = *name
		fmt.Fprintf(stderr, "grading %s ...\n", f)
		src, err := submissionSource(f, *name)
		switch e, _ := exercise.Lookup(*name); {
		case err != nil:
			row.Error = err.Error()
		case e.IsGo():
			row.Result = gradeGo(*name, src, *timeout)
		default:
			row.Result = gradeOne(self, *name, src, *timeout)
		}
		rows = append(rows, row)
	}
	e, _ := exercise.Lookup(*name)
	md := gradeMarkdown(rows, e.SpeedUnit())
	fmt.Fprint(stdout, md)
	if err := atomicfile.WriteBytes(*mdPath, []byte(md)); err != nil {
		return err
	}
	return atomicfile.WriteBytes(*csvPath, gradeCSV(rows, e.SpeedUnit()))
}

// submissions expands folders into their files, sorted.
func submissions(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("no submissions given")
	}
	var out []string
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, filepath.Join(a, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// submissionSource reads the exercise's source from a notebook (the cell
// marked // EXERCISE name) or a file (the marked backtick string if there
// is one, else the whole file).
func submissionSource(path, name string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	text := string(data)
	if strings.HasSuffix(path, ".ipynb") {
		var nb struct {
			Cells []struct {
				Type   string          `json:"cell_type"`
				Source json.RawMessage `json:"source"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(data, &nb); err != nil {
			return "", fmt.Errorf("%s is not a notebook: %v", path, err)
		}
		for _, c := range nb.Cells {
			if c.Type != "code" {
				continue // prose may quote the marker
			}
			var lines []string
			if json.Unmarshal(c.Source, &lines) != nil {
				var one string
				json.Unmarshal(c.Source, &one)
				lines = []string{one}
			}
			if cell := strings.Join(lines, ""); strings.Contains(cell, "// EXERCISE "+name) {
				return fromCell(cell, name)
			}
		}
		return "", fmt.Errorf("no code cell marked %q", "// EXERCISE "+name)
	}
	if strings.Contains(text, "// EXERCISE "+name) {
		return fromCell(text, name)
	}
	return text, nil
}

// fromCell is the exercise's code in a marked cell: the backtick string of
// a kernel exercise, the whole cell of a Go one.
func fromCell(cell, name string) (string, error) {
	if e, _ := exercise.Lookup(name); e.IsGo() {
		return cell, nil
	}
	return exercise.Extract(cell, name)
}

// gradeOne checks one source in a child process (lab grade-one), so that a
// kernel that crashes or never ends fails only its own submission.
func gradeOne(self, name, src string, timeout time.Duration) exercise.Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "grade-one", "--exercise", name)
	cmd.Stdin = strings.NewReader(src)
	cmd.Env = append(os.Environ(), labMainEnv+"=1") // lets a test binary stand in for lab
	return runChild(ctx, cmd, name, timeout)
}

// runChild runs a grading child process and reads its Result (JSON on
// stdout); a child past its time limit, or one that died, is a failed
// submission with the reason.
func runChild(ctx context.Context, cmd *exec.Cmd, name string, timeout time.Duration) exercise.Result {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var r exercise.Result
	switch {
	case ctx.Err() != nil:
		r.Error = fmt.Sprintf("did not finish within %v (an endless loop?)", timeout)
	case json.Unmarshal(out.Bytes(), &r) == nil:
	default:
		r.Error = fmt.Sprintf("the check crashed (%v): %s", err, lastLine(errOut.String()))
	}
	r.Exercise = name
	return r
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// labMainEnv, set in a child's environment, makes a test binary of this
// package behave as lab itself (see TestMain), so lab grade is testable.
const labMainEnv = "GPULAB_LAB_MAIN"

// gradeOneCmd is the child side of gradeOne: the source on stdin, the
// Result as JSON on stdout.
func gradeOneCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grade-one", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("exercise", "", "the exercise")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	src, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(exercise.Run(*name, string(src)))
}

// gradeMarkdown is the grade table; unit is the exercise's speed unit.
func gradeMarkdown(rows []gradeRow, unit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| student | compiled | correct | %s | %% of reference | error |\n|---|---|---|---:|---:|---|\n", unit)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %.0f%% | %s |\n", r.Student, yesNo(r.Compiled), yesNo(r.Correct), r.GFLOPS, r.PctOfRef,
			strings.ReplaceAll(strings.ReplaceAll(firstLine(r.Error+" "+r.Detail), "|", "\\|"), "\n", " "))
	}
	return b.String()
}

// gradeCSV is the grade table as CSV; the speed column is gflops, or gbps
// for an exercise measured in GB/s.
func gradeCSV(rows []gradeRow, unit string) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	speed := "gflops"
	if unit == exercise.UnitGBps {
		speed = "gbps"
	}
	w.Write([]string{"student", "compiled", "correct", speed, "pct_of_reference", "error"})
	for _, r := range rows {
		w.Write([]string{r.Student, yesNo(r.Compiled), yesNo(r.Correct), fmt.Sprintf("%.2f", r.GFLOPS), fmt.Sprintf("%.1f", r.PctOfRef), strings.TrimSpace(r.Error + " " + r.Detail)})
	}
	w.Flush()
	return b.Bytes()
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

// goVersion is the Go version of the generated module and workspace: the
// one this lab was built with, which go.mod requires too.
var goVersion = strings.TrimPrefix(runtime.Version(), "go")

// goRunners are the check functions of the Go exercises, as the generated
// main package calls them.
var goRunners = map[string]string{"sparse/gustavson": "exercise.RunGustavson(Gustavson)"}

// gradeGo builds the marked cell of a Go exercise into a throwaway program
// next to this checkout (a Go workspace) and runs it under the time limit:
// a submission that does not compile, panics or never ends fails alone.
func gradeGo(name, cell string, timeout time.Duration) exercise.Result {
	r := exercise.Result{Exercise: name}
	root := os.Getenv("GPULAB_ROOT")
	if root == "" {
		root, _ = os.Getwd()
	}
	if data, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(data), "module gpulab") {
		r.Error = "grading a Go exercise needs the gpulab checkout: run lab from the repository root or set GPULAB_ROOT"
		return r
	}
	dir, err := os.MkdirTemp("", "gpulab-grade-*")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	files := map[string]string{
		"go.mod":     "module submission\n\ngo " + goVersion + "\n",
		"go.work":    fmt.Sprintf("go %s\n\nuse (\n\t.\n\t%q\n)\n", goVersion, root),
		"student.go": "package main\n\nimport \"gpulab/engine/sparse\"\n\nvar _ = sparse.Gustavson\n\n" + cell,
		"main.go": "package main\n\nimport (\n\t\"encoding/json\"\n\t\"os\"\n\n\t\"gpulab/engine/exercise\"\n)\n\n" +
			"func main() { json.NewEncoder(os.Stdout).Encode(" + goRunners[name] + ") }\n",
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	// GoNB cells leave imports to goimports; so does the grader.
	for _, gi := range []string{filepath.Join(root, ".tools", "bin", "goimports"), "goimports"} {
		if exec.Command(gi, "-w", filepath.Join(dir, "student.go")).Run() == nil {
			break
		}
	}
	// Build, then run the program itself: killing `go run` at the time
	// limit would leave its child running. The limit is for the run; a
	// first build of the engine on a small machine takes its own time.
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer bcancel()
	build := exec.CommandContext(bctx, "go", "build", "-o", "submission", ".")
	build.Dir = dir
	var errOut bytes.Buffer
	build.Stderr = &errOut
	if err := build.Run(); err != nil {
		msg := errOut.String()
		if m := goErrPos.FindStringSubmatchIndex(msg); m != nil {
			r.Error = "does not compile: " + firstLine(cellLine(dir, name, msg, m))
		} else {
			r.Error = fmt.Sprintf("does not build (%v): %s", err, lastLine(msg))
		}
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return runChild(ctx, exec.CommandContext(ctx, filepath.Join(dir, "submission")), name, timeout)
}

// goErrPos finds a compiler position in student.go.
var goErrPos = regexp.MustCompile(`\./student\.go:(\d+):(\d+): `)

// cellLine rewrites the first compiler error's position (match m in msg)
// as a line of the student's cell: the line number in student.go, after
// goimports rewrote its header, minus the line where the cell starts.
func cellLine(dir, name, msg string, m []int) string {
	n, _ := strconv.Atoi(msg[m[2]:m[3]])
	data, _ := os.ReadFile(filepath.Join(dir, "student.go"))
	start := 1
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "// EXERCISE "+name) {
			start = i + 1
			break
		}
	}
	return fmt.Sprintf("line %d, column %s: %s", n-start+1, msg[m[4]:m[5]], msg[m[1]:])
}
