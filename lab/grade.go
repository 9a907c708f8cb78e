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
	"sort"
	"strings"
	"time"

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
		if err != nil {
			row.Error = err.Error()
		} else {
			row.Result = gradeOne(self, *name, src, *timeout)
		}
		rows = append(rows, row)
	}
	md := gradeMarkdown(rows)
	fmt.Fprint(stdout, md)
	if err := writeFileAtomic(*mdPath, []byte(md)); err != nil {
		return err
	}
	return writeFileAtomic(*csvPath, gradeCSV(rows))
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
		var all strings.Builder
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
			all.WriteString(strings.Join(lines, "") + "\n")
		}
		return exercise.Extract(all.String(), name)
	}
	if strings.Contains(text, "// EXERCISE "+name) {
		return exercise.Extract(text, name)
	}
	return text, nil
}

// gradeOne checks one source in a child process (lab grade-one), so that a
// kernel that crashes or never ends fails only its own submission.
func gradeOne(self, name, src string, timeout time.Duration) exercise.Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "grade-one", "--exercise", name)
	cmd.Stdin = strings.NewReader(src)
	cmd.Env = append(os.Environ(), labMainEnv+"=1") // lets a test binary stand in for lab
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

func gradeMarkdown(rows []gradeRow) string {
	var b strings.Builder
	b.WriteString("| student | compiled | correct | GFLOP/s | % of reference | error |\n|---|---|---|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %.0f%% | %s |\n", r.Student, yesNo(r.Compiled), yesNo(r.Correct), r.GFLOPS, r.PctOfRef,
			strings.ReplaceAll(strings.ReplaceAll(firstLine(r.Error+" "+r.Detail), "|", "\\|"), "\n", " "))
	}
	return b.String()
}

func gradeCSV(rows []gradeRow) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"student", "compiled", "correct", "gflops", "pct_of_reference", "error"})
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

// writeFileAtomic writes through a temporary file and a rename.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
