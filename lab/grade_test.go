package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gpulab/engine/exercise"
	"gpulab/engine/nb/jupyter"
	"gpulab/engine/sandbox"
)

// TestMain lets lab grade's child processes, which re-run this test binary,
// act as lab: the sandbox's trampoline, and the worker (GPULAB_LAB_MAIN).
func TestMain(m *testing.M) {
	if sandbox.IsTrampoline() {
		err := sandbox.ExecMain(os.Args[2:])
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	if os.Getenv(labMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// labMainEnv, set in a worker's environment (lab grade passes GPULAB_*
// variables through), makes a test binary of this package behave as lab
// itself (see TestMain), so that lab grade is testable.
const labMainEnv = "GPULAB_LAB_MAIN"

// solution is the reference solution of an exercise in lang.
func solution(t *testing.T, name, lang string) string {
	t.Helper()
	e, err := exercise.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.Flavor(lang)
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.Solution()
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// attack is one submission of an adversarial grading run and what its row
// must say.
type attack struct {
	file, src string
	correct   bool   // an honest submission passes; a hostile one does not
	want      string // in the row's error (a hostile one must give a reason)
	notWant   string // never in the row (what a successful attack would show)
	sandboxed bool   // the defence needs bubblewrap (a read, a write, the network)
}

// gradeRun is a folder of submissions graded once, and what the grader
// must not have touched.
type gradeRun struct {
	t                *testing.T
	dir, out, tmp    string // submissions, grade files, the grader's TMPDIR
	root             string // the checkout
	marker           string // in the environment of every process an attack starts
	gitBefore        string
	gradesMD, grades string
	listener         net.Listener
	connections      atomic.Int32
	relative         bool              // grade from the grade files' folder, every path relative
	limits           []shownLimit      // the lines under the last table that derive its time limits
	csvLimits        map[string]string // the last CSV's limit column, by student
}

// newGradeRun prepares the folders, a TCP listener that no submission may
// reach, and pre-existing grade files that no submission may read or change.
func newGradeRun(t *testing.T) *gradeRun {
	root, _ := filepath.Abs("..")
	g := &gradeRun{t: t, dir: t.TempDir(), out: t.TempDir(), root: root,
		marker: fmt.Sprintf("gpulab-attack-%d", time.Now().UnixNano())}
	// The grader's temporary folder must be reachable by the sandbox's
	// user, which t.TempDir() is not.
	tmp, err := os.MkdirTemp("", "gpulab-grade-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	g.tmp = tmp
	t.Setenv("TMPDIR", g.tmp)
	t.Setenv("GPULAB_ROOT", root)
	t.Setenv(labMainEnv, "1")
	g.gradesMD, g.grades = filepath.Join(g.out, "grades.md"), filepath.Join(g.out, "grades.csv")
	for _, f := range []string{g.gradesMD, g.grades} {
		os.WriteFile(f, []byte("the previous run's grades\n"), 0o644)
	}
	os.WriteFile(filepath.Join(g.out, "answers.txt"), []byte("the instructor's hidden answers\n"), 0o600)
	g.gitBefore = gitStatus(t, root)
	if g.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.listener.Close() })
	go func() {
		for {
			c, err := g.listener.Accept()
			if err != nil {
				return
			}
			g.connections.Add(1)
			c.Close()
		}
	}()
	return g
}

// port is the listener's port, for the network attack.
func (g *gradeRun) port() int { return g.listener.Addr().(*net.TCPAddr).Port }

// grade writes the attacks and grades them with timeout as the ceiling of
// the time limit; it returns the table's rows by student and how long the
// grading took. Where g.relative is set, it grades from the grade files'
// folder with every path relative, as an instructor would type them.
func (g *gradeRun) grade(name string, timeout time.Duration, attacks []attack, extra ...string) (map[string]string, time.Duration) {
	t := g.t
	g.write(attacks)
	csvPath, mdPath, dir := g.grades, g.gradesMD, g.dir
	if g.relative {
		t.Chdir(g.out)
		var err error
		if dir, err = filepath.Rel(g.out, g.dir); err != nil {
			t.Fatal(err)
		}
		csvPath, mdPath = filepath.Base(csvPath), filepath.Base(mdPath)
	}
	args := append([]string{"grade", "--exercise", name, "--timeout", timeout.String(), "--csv", csvPath, "--md", mdPath}, extra...)
	return g.run(append(args, dir)...)
}

// write writes the attacks into the submissions' folder.
func (g *gradeRun) write(attacks []attack) {
	for _, a := range attacks {
		if err := os.WriteFile(filepath.Join(g.dir, a.file), []byte(a.src), 0o644); err != nil {
			g.t.Fatal(err)
		}
	}
}

// run runs lab with args, which must succeed; it returns the table's rows
// by student and how long the grading took, and keeps the time limits the
// table shows (each checked against its derivation) and the CSV's limit
// column.
func (g *gradeRun) run(args ...string) (map[string]string, time.Duration) {
	t := g.t
	start := time.Now()
	code, stdout, errs := lab(args...)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	t.Logf("graded in %v:\n%s\n%s", took, errs, stdout)
	rows := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if cells := splitRow(l); len(cells) == 7 && cells[0] != "student" && cells[0] != "---" {
			rows[cells[0]] = l
		}
	}
	ceiling := 2 * time.Minute // lab grade's default
	if i := slices.Index(args, "--timeout"); i >= 0 && i+1 < len(args) {
		ceiling, _ = time.ParseDuration(args[i+1])
	}
	g.limits = shownLimits(t, stdout, ceiling)
	g.csvLimits = csvColumn(t, g.grades, "limit")
	return rows, took
}

// shownLimit is a time limit as a line under the grade table derives it.
type shownLimit struct {
	lang             string
	limit, reference time.Duration
}

// limitLine is the line under the grade table that derives a language's
// time limit.
var limitLine = regexp.MustCompile(`(?m)^Time limit \((\w+)\): (\S+) = min\(--timeout (\S+), (\d+) × (\S+) \+ (\S+)\), where (\S+) is the time the reference solution's check took here\.$`)

// shownLimits reads the time limits under a grade table, each checked:
// min(ceiling, multiple × the reference's time + allowance), with the
// multiple and the allowance of lab grade.
func shownLimits(t *testing.T, md string, ceiling time.Duration) []shownLimit {
	t.Helper()
	var out []shownLimit
	for _, m := range limitLine.FindAllStringSubmatch(md, -1) {
		var d [5]time.Duration
		for i, s := range []string{m[2], m[3], m[5], m[6], m[7]} {
			var err error
			if d[i], err = time.ParseDuration(s); err != nil {
				t.Fatalf("%q: %v", m[0], err)
			}
		}
		limit, shownCeiling, ref, allowance := d[0], d[1], d[2], d[3]
		switch {
		case m[4] != fmt.Sprint(limitMultiple) || allowance != limitAllowance || d[4] != ref:
			t.Errorf("%q: want the multiple %d and the allowance %v", m[0], limitMultiple, limitAllowance)
		case shownCeiling != ceiling:
			t.Errorf("%q: the ceiling is not --timeout %v", m[0], ceiling)
		case ref <= 0 || limit != min(ceiling, limitMultiple*ref+limitAllowance):
			t.Errorf("%q: the limit is not min(%v, %d × %v + %v)", m[0], ceiling, limitMultiple, ref, limitAllowance)
		}
		out = append(out, shownLimit{lang: m[1], limit: limit, reference: ref})
	}
	return out
}

// csvColumn is a column of a grade CSV by student.
func csvColumn(t *testing.T, path, name string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil || len(records) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	col := slices.Index(records[0], name)
	if col < 0 {
		t.Fatalf("%s has no column %q: %v", path, name, records[0])
	}
	out := map[string]string{}
	for _, r := range records[1:] {
		out[strings.TrimPrefix(r[0], "'")] = r[col]
	}
	return out
}

// timeBound is what grading n submissions may take: the references' time
// and n time limits (the longest), plus extra.
func (g *gradeRun) timeBound(n int, extra time.Duration) time.Duration {
	var refs, limit time.Duration
	for _, l := range g.limits {
		refs += l.reference
		limit = max(limit, l.limit)
	}
	return refs + time.Duration(n)*limit + extra
}

// limitWant, in an attack's want, is the time limit its row shows.
const limitWant = "{limit}"

// splitRow splits a Markdown table row at its unescaped bars.
func splitRow(line string) []string {
	if !strings.HasPrefix(line, "| ") {
		return nil
	}
	var cells []string
	var cell strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cell.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return cells
}

// check asserts each attack's row, then what must hold after the grader
// is gone: the checkout and the grade files untouched (5 s later), no
// process of any submission alive, no connection made. A row's limit is
// one that a line under the table derives, and the CSV's.
func (g *gradeRun) check(rows map[string]string, attacks []attack, sandboxed bool) {
	t := g.t
	if len(rows) != len(attacks) {
		t.Errorf("%d rows for %d submissions", len(rows), len(attacks))
	}
	if len(g.limits) == 0 {
		t.Errorf("no line under the table derives a time limit")
	}
	for _, a := range attacks {
		student := studentOf(a.file, attacks)
		row, ok := rows[student]
		if !ok {
			t.Errorf("%s: no row %q", a.file, student)
			continue
		}
		cells := splitRow(row)
		row = strings.Join(cells, " | ") // unescaped
		limit := cells[5]
		if got := g.csvLimits[student]; got != limit {
			t.Errorf("%s: the CSV's limit %q, the table's %q", a.file, got, limit)
		}
		if limit != "" && !slices.ContainsFunc(g.limits, func(l shownLimit) bool { return l.limit.String() == limit }) {
			t.Errorf("%s: limit %s is none of the limits derived under the table %v: %s", a.file, limit, g.limits, row)
		}
		if a.sandboxed && !sandboxed {
			continue
		}
		if got := cells[2] == "yes"; got != a.correct {
			t.Errorf("%s: correct=%s, want %v: %s", a.file, cells[2], a.correct, row)
		}
		if !a.correct && strings.TrimSpace(cells[6]) == "" {
			t.Errorf("%s: failed without a reason: %s", a.file, row)
		}
		want := a.want
		if strings.Contains(want, limitWant) {
			if limit == "" {
				t.Errorf("%s: no limit applied: %s", a.file, row)
			}
			want = strings.ReplaceAll(want, limitWant, limit)
		}
		if !strings.Contains(row, want) {
			t.Errorf("%s: row lacks %q: %s", a.file, want, row)
		}
		if a.notWant != "" && strings.Contains(row, a.notWant) {
			t.Errorf("%s: row has %q: %s", a.file, a.notWant, row)
		}
	}
	before := map[string][32]byte{}
	for _, f := range []string{g.grades, g.gradesMD} {
		before[f] = hashFile(t, f)
	}
	time.Sleep(5 * time.Second)
	for f, h := range before {
		if hashFile(t, f) != h {
			t.Errorf("%s changed after the grader exited", f)
		}
	}
	if data, _ := os.ReadFile(g.gradesMD); strings.Contains(string(data), "forged") {
		t.Errorf("forged grades")
	}
	if got := gitStatus(t, g.root); got != g.gitBefore {
		t.Errorf("the checkout changed:\nbefore %q\nafter  %q", g.gitBefore, got)
	}
	if left := g.survivors(); len(left) > 0 {
		t.Errorf("processes of submissions still alive: %v", left)
	}
	if n := g.connections.Load(); sandboxed && n > 0 {
		t.Errorf("%d connections reached the test's listener", n)
	}
}

// studentOf is the name the table gives a file: its stem, or the whole
// name where two files share a stem.
func studentOf(file string, attacks []attack) string {
	stem := strings.TrimSuffix(file, filepath.Ext(file))
	for _, a := range attacks {
		if a.file != file && strings.TrimSuffix(a.file, filepath.Ext(a.file)) == stem {
			return file
		}
	}
	return stem
}

// survivors lists the live processes that an attack started (the marker
// in their environment) or that run from the grader's temporary folder.
func (g *gradeRun) survivors() []string {
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		env, _ := os.ReadFile(filepath.Join(p, "environ"))
		exe, _ := os.Readlink(filepath.Join(p, "exe"))
		status, _ := os.ReadFile(filepath.Join(p, "status"))
		if bytes.Contains(status, []byte("State:\tZ")) {
			continue
		}
		if bytes.Contains(env, []byte(g.marker)) || strings.HasPrefix(exe, g.tmp) {
			cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			left = append(left, fmt.Sprintf("%s %q (%s)", filepath.Base(p), strings.ReplaceAll(string(cmd), "\x00", " "), exe))
		}
	}
	return left
}

func hashFile(t *testing.T, path string) [32]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// gitStatus is `git status --porcelain` of the checkout, "" where there is
// no git or no repository.
func gitStatus(t *testing.T, root string) string {
	out, err := exec.Command("git", "-C", root, "status", "--porcelain").Output()
	if err != nil {
		t.Logf("no git status (%v): the checkout is compared by nothing", err)
		return ""
	}
	return string(out)
}

// needSandbox says whether bubblewrap runs here; where it does not, CI
// fails (make deps installs it) and elsewhere the sandboxed defences are
// skipped with the reason.
func needSandbox(t *testing.T) bool {
	dir, err := os.MkdirTemp("", "gpulab-probe-*") // reachable by the sandbox's user, unlike t.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sb, err := sandbox.New(sandbox.Options{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Bwrap() != "" {
		return true
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("bubblewrap does not run here, and CI must test the sandbox: %s", sb.Reason())
	}
	t.Logf("bubblewrap does not run here (%s): the defences that need it are not checked", sb.Reason())
	return false
}

const gemmCLHead = "__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))\n" +
	"void gemm(const int M, const int N, const int K, const __global float* A, const __global float* B, __global float* C) {\n"

// TestGradeOpenCL grades honest and hostile OpenCL submissions of
// gemm/tiled on the best OpenCL device (PoCL in CI), in the sandbox.
func TestGradeOpenCL(t *testing.T) {
	e, _ := exercise.Lookup("gemm/tiled")
	f, _ := e.Flavor(exercise.LangOpenCL)
	if _, err := f.Devices(); err != nil {
		t.Skip(err)
	}
	const ceiling = 10 * time.Minute // the limit is the reference's time scaled, far below
	sandboxed := needSandbox(t)
	g := newGradeRun(t)
	good := solution(t, "gemm/tiled", exercise.LangOpenCL)
	// The forged report of the old protocol, printed from a kernel.
	forged := `printf("{\"exercise\":\"gemm/tiled\",\"compiled\":true,\"correct\":true,\"gflops\":999,\"pct_of_reference\":500}\n");`
	withPrintf := strings.Replace(good, "{", "{\n    if (get_global_id(0) == 0 && get_global_id(1) == 0) printf(\"debug: M=%d N=%d K=%d {\\\"correct\\\":true}\\n\", M, N, K);", 1)
	notebook := `{"nbformat": 4, "cells": [{"cell_type": "markdown", "source": "// EXERCISE gemm/tiled in prose"}, {"cell_type": "code", "source": ["// EXERCISE gemm/tiled\n", "var src = ` + "`" +
		strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(good, `\`, `\\`), "\n", `\n`), `"`, `\"`) + "`" + `\n"]}]}`
	attacks := []attack{
		{file: "alice.cl", src: good, correct: true},
		{file: "bob.cl", src: good, correct: true},
		{file: "bob.ipynb", src: notebook, correct: true},
		{file: "dbg.cl", src: withPrintf, correct: true, want: ""},
		{file: "todo.cl", src: "// TODO: try 32×32 tiles next week\n" + good, correct: true},
		{file: "remark.cl", src: "// Unlike a CUDA __global__ function, this is an OpenCL __kernel.\n" + good, correct: true},
		{file: "skeleton.cl", src: gemmCLHead + "    " + f.TODO + "\n}\n", want: "still has its TODO line"},
		{file: "wrong.cl", src: gemmCLHead + "  int n = get_global_id(0), m = get_global_id(1);\n  if (m < M && n < N) C[m*N + n] = 1.0f;\n}\n", want: "first wrong element"},
		{file: "carol.cl", src: gemmCLHead + "  this does not compile\n}\n", want: "line 3, column 3: error"},
		{file: "dave.cl", src: gemmCLHead + "  for (;;) { if (get_global_id(0) == 1000000000) break; }\n}\n", want: "did not finish within " + limitWant},
		{file: "forger.cl", src: gemmCLHead + "  if (get_global_id(0) == 0 && get_global_id(1) == 0) " + forged + "\n}\n", want: "first wrong element"},
		// PoCL dies of the write (a segmentation fault), a GPU reports it.
		// The exercise's commonest bug: the store guards the column, not the
		// row; on M=N=K=1 the 16×16 tile's rows 1 to 15 land past C's end.
		{file: "stray.cl", src: strings.Replace(good, "if (m < M && n < N) {", "if (n < N) {", 1), want: "wrote 15 elements past the end of C (rows 1–15 of a 1-row C)"},
		{file: "intoA.cl", src: strings.Replace(good, "C[m*N + n] = acc;", "C[m*N + n] = acc;\n        if (m == 0 && n == 0) ((__global float*)A)[0] = 0.0f;", 1),
			want: "wrote into its input A: 1 element changed (A[0][0])"},
		{file: "crasher.cl", src: gemmCLHead + "  if (get_global_id(0) == 0 && get_global_id(1) == 0) " + forged +
			"\n  if (M > 1) C[(long)1 << 40] = 1.0f;\n  int n = get_global_id(0), m = get_global_id(1);\n  if (m < M && n < N) { float s = 0; for (int k = 0; k < K; k++) s += A[m*K+k] * B[k*N+n]; C[m*N+n] = s; }\n}\n",
			want: ""},
		{file: "copycat.cl", src: "#include \"" + filepath.Join(g.dir, "alice.cl") + "\"\n__kernel void unused(void) {}\n", want: "does not compile", sandboxed: true},
		{file: "mallory | yes | yes | 50.0 | 100% |.cl", src: gemmCLHead + "}\n", want: "first wrong element"},
		{file: "frank.ipynb", src: `{"nbformat": 4, "cells": []}`, want: `frank.ipynb: no code cell marked "// EXERCISE gemm/tiled"`},
	}
	rows, took := g.grade("gemm/tiled", ceiling, attacks)
	g.check(rows, attacks, sandboxed)
	if !strings.Contains(rows["dbg"], "yes | yes") {
		t.Errorf("dbg: %s", rows["dbg"])
	}
	md, _ := os.ReadFile(g.gradesMD)
	if !strings.Contains(string(md), "debug: M=") || !strings.Contains(string(md), "Isolation: ") {
		t.Errorf("the printf output or the isolation line is missing from grades.md:\n%s", md)
	}
	if limit := g.timeBound(len(attacks), 0); took > limit {
		t.Errorf("grading took %v, more than the reference's time and the time limits summed (%v)", took, limit)
	}
	if csv, _ := os.ReadFile(g.grades); !bytes.HasPrefix(csv, []byte("student,compiled,correct,gflops,pct_of_reference,error,output,isolation,diagnosis,limit\n")) {
		t.Errorf("csv: %s", csv)
	}
}

// goHead is the Go exercise's function, as its skeleton starts.
const goHead = "// EXERCISE sparse/gustavson: complete the function.\nfunc Gustavson(a, b *sparse.CSR) (*sparse.CSR, error) {\n"

// TestGradeGo grades honest and hostile Go submissions of
// sparse/gustavson, built and run in the sandbox.
func TestGradeGo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	sandboxed := needSandbox(t)
	g := newGradeRun(t)
	good := solution(t, "sparse/gustavson", exercise.LangGo)
	e, _ := exercise.Lookup("sparse/gustavson")
	other := filepath.Join(g.dir, "ann.go")
	q := func(paths ...string) string { return fmt.Sprintf("%q", paths) }
	targets := q(filepath.Join(g.root, "engine", "exercise", "exercise.go"), other, g.grades, g.gradesMD)
	targets = strings.ReplaceAll(strings.Trim(targets, "[]"), `" "`, `", "`)
	secrets := strings.ReplaceAll(strings.Trim(q(other, g.gradesMD, filepath.Join(g.out, "answers.txt"), "/etc/shadow"), "[]"), `" "`, `", "`)
	spawn := func(env string) string {
		return "\tcmd := exec.Command(\"/proc/self/exe\")\n\tcmd.Env = []string{" + env + "\"GPULAB_TEST_MARKER=" + g.marker + "\"}\n"
	}
	attacks := []attack{
		{file: "ann.go", src: good, correct: true},
		{file: "dbg.go", src: strings.Replace(good, "{\n", "{\n\tfmt.Println(\"debug: rows\", a.Rows, `{\"correct\":true}`)\n", 1), correct: true},
		{file: "todo.go", src: strings.Replace(good, "{\n", "{\n\t// TODO: parallelize over rows\n", 1), correct: true},
		{file: "skeleton.go", src: goHead + "\t" + e.Flavors[0].TODO + "\n\treturn nil, errors.New(\"TODO: not written yet\")\n}\n", want: "still has its TODO line"},
		{file: "ben.go", src: goHead + "\treturn nil, nil\n}\n", want: "no matrix"},
		{file: "cat.go", src: goHead + "\treturn nil, undefinedThing\n}\n", want: "line 3, column 14: undefined: undefinedThing"},
		{file: "dan.go", src: goHead + "\tfor {\n\t}\n}\n", want: "did not finish within " + limitWant},
		{file: "eve.go", src: goHead + "\tvar s []int\n\t_ = s[len(a.RowPtr)]\n\treturn nil, nil\n}\n", want: "panicked"},
		{file: "shortcut.go", src: goHead + "\treturn sparse.GustavsonParallel(a, b)\n}\n", want: "uses sparse.GustavsonParallel, the library's own implementation"},
		{file: "alias.go", src: "import sp \"gpulab/engine/sparse\"\n\n" + strings.ReplaceAll(goHead, "sparse.", "sp.") + "\treturn sp.DenseAccumulator(a, b)\n}\n",
			want: "uses sparse.DenseAccumulator"},
		{file: "twice.go", src: "import (\n\tsp \"gpulab/engine/sparse\"\n\tsq \"gpulab/engine/sparse\"\n)\n\n" + strings.ReplaceAll(goHead, "sparse.", "sq.") + "\treturn sp.GustavsonParallel(a, b)\n}\n",
			want: "uses sparse.GustavsonParallel"},
		{file: "plusalias.go", src: "import (\n\t\"gpulab/engine/sparse\"\n\tsp \"gpulab/engine/sparse\"\n)\n\n" + goHead + "\t_ = sp.Products\n\treturn sparse.DenseAccumulator(a, b)\n}\n",
			want: "uses sparse.DenseAccumulator"},
		{file: "dot.go", src: "import . \"gpulab/engine/sparse\"\n\n" + strings.ReplaceAll(goHead, "sparse.", "") + "\treturn DenseAccumulator(a, b)\n}\n",
			want: "uses sparse.DenseAccumulator"},
		{file: "reflect.go", src: "import \"reflect\"\n\nvar _ = reflect.TypeOf\n\n" + good, want: `imports "reflect"`},
		{file: "forger.go", src: "func init() {\n\tfmt.Println(`{\"exercise\":\"sparse/gustavson\",\"compiled\":true,\"correct\":true,\"gflops\":999,\"pct_of_reference\":500}`)\n\tos.Exit(0)\n}\n\n" +
			goHead + "\treturn nil, nil\n}\n", want: "ended before it reported"},
		{file: "socket.go", src: "func init() {\n\tf := os.NewFile(3, \"grader\")\n\tf.Write([]byte(\"GLW1\" + strings.Repeat(\"\\x00\", 16) + \"\\x02\\x00\\x00\\x00\\x00\"))\n\tf.Write([]byte(`{\"correct\":true}`))\n}\n\n" +
			goHead + "\treturn nil, nil\n}\n", want: "broke the grading protocol"},
		{file: "tamper.go", src: goHead + "\tvar errs []string\n\tfor _, p := range []string{" + targets + "} {\n\t\tif err := os.WriteFile(p, []byte(\"forged\"), 0o644); err != nil {\n\t\t\terrs = append(errs, err.Error())\n\t\t}\n\t}\n\tpanic(fmt.Sprint(\"tamper: \", len(errs), \" refused\"))\n}\n",
			want: "tamper: 4 refused"},
		{file: "reader.go", src: goHead + "\tvar got []string\n\tfor _, p := range []string{" + secrets + "} {\n\t\tif b, err := os.ReadFile(p); err == nil {\n\t\t\tgot = append(got, fmt.Sprintf(\"read ok %s (%d bytes)\", p, len(b)))\n\t\t}\n\t}\n\treturn nil, fmt.Errorf(\"reader: %q\", got)\n}\n",
			want: "reader: []", notWant: "read ok", sandboxed: true},
		{file: "network.go", src: goHead + fmt.Sprintf("\tc, err := net.DialTimeout(\"tcp\", \"127.0.0.1:%d\", time.Second)\n\tif err == nil {\n\t\tc.Close()\n\t\treturn nil, errors.New(\"network: connected\")\n\t}\n\treturn nil, fmt.Errorf(\"network: %%v\", err)\n}\n", g.port()),
			want: "network: dial tcp", notWant: "connected", sandboxed: true},
		{file: "detach.go", src: "func init() {\n\tif os.Getenv(\"DETACHED\") == \"1\" {\n\t\ttime.Sleep(3 * time.Second)\n\t\tfor _, p := range []string{" + targets + "} {\n\t\t\tos.WriteFile(p, []byte(\"forged\"), 0o644)\n\t\t}\n\t\tos.Exit(0)\n\t}\n" +
			spawn("\"DETACHED=1\", ") + "\tcmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}\n\tcmd.Start()\n}\n\n" + goHead + "\treturn nil, errors.New(\"a child was left behind\")\n}\n",
			want: "a child was left behind"},
		{file: "sleeper.go", src: "func init() {\n\tcmd := exec.Command(\"/bin/sleep\", \"1000\")\n\tcmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr\n\tcmd.Env = []string{\"GPULAB_TEST_MARKER=" + g.marker + "\"}\n\tcmd.Start()\n}\n\n" +
			goHead + "\treturn nil, errors.New(\"a sleeper holds stdout\")\n}\n", want: "a sleeper holds stdout"},
		{file: "forkbomb.go", src: "func init() {\n\tfor i := 0; i < 100000; i++ {\n" + strings.ReplaceAll(spawn(""), "\n\t", "\n\t\t") +
			"\t\tif cmd.Start() != nil {\n\t\t\ttime.Sleep(10 * time.Millisecond)\n\t\t}\n\t}\n}\n\n" + goHead + "\treturn nil, nil\n}\n",
			// Which comes first depends on the machine: the time limit, or the
			// process limit stopping the Go runtime's own threads (exit status 2).
			// Either way it fails, and check finds no process of it left.
			want: ""},
		{file: "hog.go", src: goHead + "\tvar keep [][]byte\n\tfor len(keep) < 64 {\n\t\tb := make([]byte, 1<<30)\n\t\tfor j := 0; j < len(b); j += 4096 {\n\t\t\tb[j] = 1\n\t\t}\n\t\tkeep = append(keep, b)\n\t}\n\treturn nil, fmt.Errorf(\"held %d GiB\", len(keep))\n}\n",
			want: "ended before it reported (exit status 2): runtime: out of memory", notWant: "held 64 GiB"},
	}
	rows, took := g.grade("sparse/gustavson", 10*time.Minute, attacks)
	g.check(rows, attacks, sandboxed)
	if limit := g.timeBound(len(attacks), 2*time.Minute); took > limit { // builds have their own limit
		t.Errorf("grading took %v, more than the reference's time and the time limits summed (%v)", took, limit)
	}
	md, _ := os.ReadFile(g.gradesMD)
	if !strings.Contains(string(md), "debug: rows") {
		t.Errorf("grades.md lacks dbg's output:\n%s", md)
	}
}

// TestGradeFallback grades without bubblewrap (--sandbox none): the time
// limit, the rlimits and the sweep of escaped processes still hold, and
// the table says that no sandbox was in force. It grades as an instructor
// types the command, from the grade files' folder with relative paths.
func TestGradeFallback(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	g := newGradeRun(t)
	g.relative = true
	attacks := []attack{
		{file: "ann.go", src: solution(t, "sparse/gustavson", exercise.LangGo), correct: true},
		{file: "dan.go", src: goHead + "\tfor {\n\t}\n}\n", want: "did not finish within " + limitWant},
		{file: "detach.go", src: "func init() {\n\tcmd := exec.Command(\"/bin/sleep\", \"1000\")\n\tcmd.Env = []string{\"GPULAB_TEST_MARKER=" + g.marker + "\"}\n" +
			"\tcmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}\n\tcmd.Start()\n}\n\n" + goHead + "\treturn nil, errors.New(\"a child was left behind\")\n}\n",
			want: "a child was left behind"},
	}
	rows, _ := g.grade("sparse/gustavson", 10*time.Minute, attacks, "--sandbox", "none")
	g.check(rows, attacks, false)
	md, _ := os.ReadFile(g.gradesMD)
	if !strings.Contains(string(md), "Isolation: NO SANDBOX") {
		t.Errorf("the table does not say that no sandbox was in force:\n%s", md)
	}
}

// TestExerciseFill: every committed exercise notebook holds its flavour's
// TODO line and fails its check as committed, and its filled copy carries
// the reference solution in the language of its cell.
func TestExerciseFill(t *testing.T) {
	notebooks, _ := filepath.Glob(filepath.Join("..", "notebooks", "exercises", "*.ipynb"))
	if len(notebooks) < 7 {
		t.Fatalf("exercise notebooks: %v", notebooks)
	}
	for _, nb := range notebooks {
		t.Run(filepath.Base(nb), func(t *testing.T) {
			data, _ := os.ReadFile(nb)
			var name string
			for _, n := range exercise.Names() {
				if strings.Contains(string(data), "// EXERCISE "+n) {
					name = n
				}
			}
			e, err := exercise.Lookup(name)
			if err != nil {
				t.Fatalf("no exercise marker: %v", err)
			}
			src, err := submissionSource(nb, name)
			if err != nil {
				t.Fatal(err)
			}
			lang := exercise.Language(src)
			if e.IsGo() {
				lang = exercise.LangGo
				if err := e.InspectGo(src); err == nil || !strings.Contains(err.Error(), "still has its TODO line") {
					t.Errorf("the committed cell passes inspection: %v", err)
				}
			} else if r := exercise.Run(name, src); r.Correct || !strings.Contains(r.Error, "still has its TODO line") {
				t.Errorf("the TODO cell passed: %+v", r)
			}
			f, err := e.Flavor(lang)
			if err != nil || f.TODO == "" || !strings.Contains(src, f.TODO) {
				t.Errorf("the committed cell lacks the %s flavour's TODO line %q (%v):\n%s", lang, f.TODO, err, src)
			}
			out := filepath.Join(t.TempDir(), "filled.ipynb")
			if code, _, errs := lab("exercise-fill", nb, "--out", out); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			filled, err := submissionSource(out, name)
			if sol := solution(t, name, lang); err != nil || filled != sol {
				t.Errorf("filled cell is not the %s reference solution (%v):\n%s", lang, err, filled)
			}
		})
	}
	out := filepath.Join(t.TempDir(), "filled.ipynb")
	if code, _, errs := lab("exercise-fill", filepath.Join("..", "notebooks", "00-devices-and-bandwidth.ipynb"), "--out", out); code == 0 || !strings.Contains(errs, "no cell marked // EXERCISE") {
		t.Errorf("a notebook without an exercise: exit %d, %s", code, errs)
	}
}

func TestGradeUsage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.cl"), []byte("x"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	os.WriteFile(filepath.Join(empty, ".hidden.cl"), []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"grade", "--exercise", "nope", "x.cl"}, `invalid value "nope" for flag -exercise: want gemm/register-tiled`},
		{[]string{"grade", "--exercise", "gemm/tiled"}, "no submissions given"},
		{[]string{"grade", "--exercise", "gemm/tiled", "no/such/dir"}, "no/such/dir"},
		{[]string{"grade", "--exercise", "gemm/tiled", empty}, "no submission found: " + empty + " holds no file to grade"},
		{[]string{"grade", "--exercise", "gemm/tiled", "--timeout", "-1s", dir}, `invalid value "-1s" for flag -timeout: want a duration above 0`},
		{[]string{"grade", "--exercise", "gemm/tiled", "--timeout", "0s", dir}, `invalid value "0s" for flag -timeout`},
		{[]string{"grade", "--exercise", "gemm/tiled", "--memory", "1K", dir}, `invalid value "1K" for flag -memory: want a size of at least 64M`},
		{[]string{"grade", "--exercise", "gemm/tiled", "--sandbox", "docker", dir}, `invalid value "docker" for flag -sandbox: want auto, bwrap or none`},
		{[]string{"grade-worker", "x"}, "takes no arguments"},
		{[]string{"exercise-fill", "x.ipynb"}, "--out is required"},
		{[]string{"exercise-fill", "no/such.ipynb", "--out", "o.ipynb"}, "no/such.ipynb"},
	} {
		if code, _, errs := lab(tc.args...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("lab %v: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestGradeTables: the speed column is the exercise's unit, every cell is
// escaped, a formula-like CSV cell is defused, output and diagnoses are
// fenced, and the time limit that applied is a column whose derivation is
// a line under the table.
func TestGradeTables(t *testing.T) {
	limit := newTimeLimit(exercise.LangOpenCL, 3040*time.Millisecond, 10*time.Minute)
	rows := []gradeRow{
		{Student: "ann", Result: exercise.Result{Compiled: true, Correct: true, GFLOPS: 812.5, PctOfRef: 97}, Isolation: "bubblewrap (test)", Limit: limit.limit()},
		{Student: "mallory | yes | yes | 50.0 | 100% |", Result: exercise.Result{Error: "x | y\nz", Output: "```\n| fake | row |"}},
		{Student: "=HYPERLINK(\"http://evil\")", Result: exercise.Result{}},
		{Student: "dan", Result: exercise.Result{Compiled: true, Diagnosis: "thread (3,1,0) read `A[85]` past the end\n```"}},
	}
	for v, want := range map[float64]string{8912.4: "8912", 246.04: "246", 47.13: "47.1", 4.713: "4.71", 0.06071: "0.0607", 0: "0"} {
		if got := speedText(v); got != want {
			t.Errorf("speedText(%g) = %q, want %q", v, got, want)
		}
	}
	for _, tc := range []struct{ unit, md, csv string }{
		{exercise.UnitGFLOPS, "| student | compiled | correct | GFLOP/s | % of reference | limit | error |", "student,compiled,correct,gflops,"},
		{exercise.UnitGBps, "| student | compiled | correct | GB/s | % of reference | limit | error |", "student,compiled,correct,gbps,"},
	} {
		md := gradeMarkdown(rows, tc.unit, []timeLimit{limit})
		if !strings.HasPrefix(md, tc.md+"\n") || !strings.Contains(md, "| ann | yes | yes | 812 | 97% | 32.4s |  |\n") {
			t.Errorf("%s: markdown\n%s", tc.unit, md)
		}
		line := "\nTime limit (opencl): 32.4s = min(--timeout 10m0s, 4 × 3.1s + 20s), where 3.1s is the time the reference solution's check took here.\n"
		if !strings.Contains(md, line) {
			t.Errorf("%s: markdown lacks %q:\n%s", tc.unit, line, md)
		}
		if got := shownLimits(t, md, 10*time.Minute); len(got) != 1 || got[0] != (shownLimit{"opencl", 32400 * time.Millisecond, 3100 * time.Millisecond}) {
			t.Errorf("%s: limits read back %v", tc.unit, got)
		}
		var tableRows int
		table, _, _ := strings.Cut(md, "\nIsolation: ")
		for _, l := range strings.Split(table, "\n") {
			if cells := splitRow(l); len(cells) > 0 {
				tableRows++
				if len(cells) != 7 {
					t.Errorf("a row of %d cells: %q", len(cells), l)
				}
			}
		}
		if tableRows != 1+len(rows) {
			t.Errorf("%d table rows:\n%s", tableRows, md)
		}
		if !regexp.MustCompile("(?m)^````\n```\n\\| fake \\| row \\|\n````$").MatchString(md) {
			t.Errorf("output not fenced:\n%s", md)
		}
		if !strings.Contains(md, "**dan, diagnosed under compute-sanitizer:**\n\n````\nthread (3,1,0) read `A[85]` past the end\n```\n````") {
			t.Errorf("diagnosis not shown, fenced:\n%s", md)
		}
		if csv := string(gradeCSV(rows, tc.unit)); !strings.HasPrefix(csv, tc.csv) || !strings.Contains(csv, `"'=HYPERLINK(""http://evil"")"`) ||
			!strings.Contains(csv, ",isolation,diagnosis,limit\n") || !strings.Contains(csv, "past the end") || !strings.Contains(csv, ",bubblewrap (test),,32.4s\n") {
			t.Errorf("%s: csv\n%s", tc.unit, csv)
		}
	}
}

// TestTimeLimit: a submission's limit is the reference solution's time,
// rounded up to a tenth of a second, times limitMultiple plus
// limitAllowance, at most the ceiling (--timeout).
func TestTimeLimit(t *testing.T) {
	for _, tc := range []struct {
		took, ceiling, ref, limit time.Duration
	}{
		{3040 * time.Millisecond, 10 * time.Minute, 3100 * time.Millisecond, limitMultiple*3100*time.Millisecond + limitAllowance},
		{time.Millisecond, time.Minute, 100 * time.Millisecond, limitMultiple*100*time.Millisecond + limitAllowance},
		{2 * time.Second, 2 * time.Minute, 2 * time.Second, limitMultiple*2*time.Second + limitAllowance},
		{40 * time.Second, 2 * time.Minute, 40 * time.Second, 2 * time.Minute},
		{3 * time.Minute, 2 * time.Minute, 3 * time.Minute, 2 * time.Minute},
	} {
		l := newTimeLimit("go", tc.took, tc.ceiling)
		if l.reference != tc.ref || l.limit() != tc.limit {
			t.Errorf("took %v, ceiling %v: reference %v, limit %v; want %v, %v", tc.took, tc.ceiling, l.reference, l.limit(), tc.ref, tc.limit)
		}
		if got := shownLimits(t, l.String(), tc.ceiling); len(got) != 1 || got[0].limit != tc.limit {
			t.Errorf("%q read back as %v", l, got)
		}
	}
}

// TestSubmissions: names that collide keep their extension; symbolic
// links and oversized files are refused by the reader, never followed.
func TestSubmissions(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"bob.cl", "bob.ipynb", "carol.cl", ".hidden.cl"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
	}
	os.Symlink("/etc/passwd", filepath.Join(dir, "link.cl"))
	os.WriteFile(filepath.Join(dir, "big.cl"), bytes.Repeat([]byte("x"), maxSourceBytes+1), 0o644)
	subs, err := submissions([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range subs {
		names = append(names, s.student)
	}
	if got := strings.Join(names, ","); got != "big,bob.cl,bob.ipynb,carol,link" {
		t.Errorf("students %s", got)
	}
	for file, want := range map[string]string{"link.cl": "symbolic link", "big.cl": "more than the"} {
		if _, err := submissionSource(filepath.Join(dir, file), "gemm/tiled"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// TestExerciseSource: the marked cell or string of a submission, and
// malformed notebooks refused with the place of the problem.
func TestExerciseSource(t *testing.T) {
	const marked = "// EXERCISE gemm/tiled\nconst src = `kernel`\n"
	cell := func(source string) string {
		return `{"nbformat": 4, "cells": [{"cell_type": "markdown", "source": "// EXERCISE gemm/tiled in prose"}, {"cell_type": "code", "source": ` + source + `}]}`
	}
	quoted, _ := json.Marshal(marked)
	lines, _ := json.Marshal(strings.SplitAfter(marked, "\n"))
	for _, tc := range []struct{ path, data, want, err string }{
		{"a.cl", "__kernel void f() {}", "__kernel void f() {}", ""},
		{"a.cl", marked, "kernel", ""},
		{"a.ipynb", cell(string(quoted)), "kernel", ""},
		{"a.ipynb", cell(string(lines)), "kernel", ""},
		{"a.ipynb", cell(`"// EXERCISE gemm/tiled\nno backticks"`), "", "a.ipynb: cell #2: the cell marked \"// EXERCISE gemm/tiled\" has no source between backticks"},
		{"a.ipynb", cell(`42`), "", "a.ipynb: cell #2 (counting from 1, markdown cells included): code cell: source is a number (42)"},
		{"a.ipynb", cell(`["a", 1]`), "", "code cell: source line 2 is a number (1), want a string"},
		{"a.ipynb", cell(string(quoted)) + "\n{}", "", "a.ipynb is not a notebook (JSON): line 2, column 1: data after the JSON value"},
		{"a.ipynb", `{"nbformat": 4, "cells": [}`, "", "a.ipynb is not a notebook (JSON): line 1, column 27"},
		{"a.ipynb", `{"nbformat": 4, "cells": [{"cell_type": "markdown", "source": "// EXERCISE gemm/tiled"}]}`, "", `a.ipynb: no code cell marked "// EXERCISE gemm/tiled"`},
	} {
		got, err := exerciseSource(tc.path, []byte(tc.data), "gemm/tiled")
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s %s:\n%q, %v\nwant %q, error %q", tc.path, tc.data, got, err, tc.want, tc.err)
		}
	}
}

// FuzzExerciseSource: whatever a submission holds, the grader gets the
// marked source or an error, never a panic; an error about a notebook
// names it; what it gets is in the submission, in a code cell that carries
// the marker where the submission is a notebook.
func FuzzExerciseSource(f *testing.F) {
	names := exercise.Names()
	notebooks, _ := filepath.Glob(filepath.Join("..", "notebooks", "exercises", "*.ipynb"))
	for _, nb := range notebooks {
		data, err := os.ReadFile(nb)
		if err != nil {
			f.Fatal(err)
		}
		for i, name := range names {
			if strings.Contains(string(data), "// EXERCISE "+name) {
				f.Add(true, data, uint8(i))
			}
		}
	}
	if len(notebooks) == 0 {
		f.Fatal("no exercise notebooks")
	}
	f.Add(false, []byte("// EXERCISE gemm/tiled\nconst src = `__kernel void f() {}`"), uint8(slices.Index(names, "gemm/tiled")))
	f.Add(false, []byte("__global__ void f() {}"), uint8(0))
	f.Add(true, []byte(`{"nbformat": 4, "cells": [{"cell_type": "code", "source": 42}]}`), uint8(0))
	f.Fuzz(func(t *testing.T, notebook bool, data []byte, which uint8) {
		name := names[int(which)%len(names)]
		path := "sub.cl"
		if notebook {
			path = "sub.ipynb"
		}
		src, err := exerciseSource(path, data, name)
		if err != nil {
			if notebook && !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("error does not name the notebook: %v", err)
			}
			return
		}
		if !notebook {
			if !strings.Contains(string(data), src) {
				t.Fatalf("source %q is not in the file", src)
			}
			return
		}
		nb, err := jupyter.ParseNotebook(path, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, cell := range nb.Code() {
			if strings.Contains(cell.Source, "// EXERCISE "+name) && strings.Contains(cell.Source, src) {
				return
			}
		}
		t.Fatalf("source %q is in no marked code cell", src)
	})
}

const gemmCUDAHead = "extern \"C\" __global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {\n"

// TestGradeCUDA grades CUDA submissions in the sandbox on a GPU: every
// exercise's CUDA reference solution passes, and for gemm/tiled a wrong, an
// out-of-bounds, a forging and an endless kernel fail while one with a
// debug printf passes.
func TestGradeCUDA(t *testing.T) {
	e, _ := exercise.Lookup("gemm/tiled")
	f, _ := e.Flavor(exercise.LangCUDA)
	if _, err := f.Devices(); err != nil {
		t.Skip(err)
	}
	sandboxed := needSandbox(t)
	good := solution(t, "gemm/tiled", exercise.LangCUDA)
	forged := `printf("{\"exercise\":\"gemm/tiled\",\"compiled\":true,\"correct\":true,\"gflops\":99999,\"pct_of_reference\":500}\n");`
	rowCol := "  int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 32 + threadIdx.y;\n  if (row >= M || col >= N) return;\n"
	attacks := []attack{
		{file: "alice.cu", src: good, correct: true},
		{file: "dbg.cu", src: strings.Replace(good, "{\n", "{\n    if (blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0) printf(\"debug: M=%d\\n\", M);\n", 1), correct: true},
		{file: "wrong.cu", src: gemmCUDAHead + rowCol + "  C[row * N + col] = 1.0f;\n}\n", want: "first wrong element"},
		{file: "oob.cu", src: gemmCUDAHead + rowCol + "  C[(1ull << 40) + row * N + col] = 1.0f;\n}\n", want: "running it failed"},
		{file: "before.cu", src: gemmCUDAHead + rowCol + "  float acc = 0.0f;\n  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];\n  C[row * N + col - 1] = acc;\n}\n",
			want: "wrote 1 element before the start of C (row -1 of a 1-row C)"},
		{file: "forger.cu", src: gemmCUDAHead + "  if (blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0) " + forged + "\n}\n", want: "first wrong element"},
		{file: "endless.cu", src: gemmCUDAHead + "  for (;;) asm volatile(\"\");\n}\n", want: "did not finish within " + limitWant},
	}
	g := newGradeRun(t)
	rows, _ := g.grade("gemm/tiled", 10*time.Minute, attacks)
	g.check(rows, attacks, sandboxed)
	for _, name := range exercise.Names() {
		e, _ := exercise.Lookup(name)
		f, err := e.Flavor(exercise.LangCUDA)
		if err != nil || name == "gemm/tiled" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			g := newGradeRun(t)
			ref := []attack{{file: "reference.cu", src: solution(t, name, f.Lang), correct: true}}
			rows, _ := g.grade(name, 10*time.Minute, ref)
			if row := rows["reference"]; !strings.Contains(row, "| yes | yes |") {
				t.Errorf("the reference solution: %s", row)
			}
		})
	}
}

// documentedCommand is the lab grade command that doc (a path) shows, as
// lab's arguments: the first indented line that runs `go run ./lab grade`.
func documentedCommand(t *testing.T, doc string) []string {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ +go run \./lab (grade .*)$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("%s shows no `go run ./lab grade` command", doc)
	}
	if strings.ContainsAny(m[1], "\"'`$\\#|&;<>*?") {
		t.Fatalf("%s: %q needs a shell to read it: write it plainly, or teach this test", doc, m[1])
	}
	return strings.Fields(m[1])
}

// TestGradeDocumentedCommand runs the grading commands of docs/teaching.md
// and docs/course.md exactly as written, relative paths and all, from a
// folder that holds submissions/ (and the course file the command names),
// with GPULAB_ROOT set to the checkout: an honest OpenCL submission
// passes, under a time limit derived from the reference's time, and the
// grade files are written into that folder.
func TestGradeDocumentedCommand(t *testing.T) {
	sandboxed := needSandbox(t)
	for _, doc := range []string{"teaching.md", "course.md"} {
		t.Run(doc, func(t *testing.T) {
			args := documentedCommand(t, filepath.Join("..", "docs", doc))
			t.Logf("lab %s", strings.Join(args, " "))
			name := args[slices.Index(args, "--exercise")+1]
			e, err := exercise.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := e.Flavor(exercise.LangOpenCL)
			if err != nil {
				t.Fatalf("%s: this test grades an OpenCL submission: %v", name, err)
			}
			if _, err := f.Devices(); err != nil {
				t.Skip(err)
			}
			g := newGradeRun(t)
			g.dir = filepath.Join(g.out, args[len(args)-1])
			for flag, path := range map[string]*string{"--csv": &g.grades, "--md": &g.gradesMD} {
				if i := slices.Index(args, flag); i >= 0 {
					*path = filepath.Join(g.out, args[i+1])
				}
			}
			if err := os.Mkdir(g.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if i := slices.Index(args, "--course"); i >= 0 {
				course := `{"seed": 20270114, "exercises": {}}`
				if err := os.WriteFile(filepath.Join(g.out, args[i+1]), []byte(course), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// A course refuses the public reference solution as published.
			attacks := []attack{{file: "ann.cl", src: "// ann's kernel\n" + solution(t, name, exercise.LangOpenCL), correct: true}}
			g.write(attacks)
			t.Chdir(g.out)
			rows, _ := g.run(args...)
			g.check(rows, attacks, sandboxed)
			if len(g.limits) != 1 || g.limits[0].lang != exercise.LangOpenCL || !strings.Contains(rows["ann"], "| "+g.limits[0].limit.String()+" |") {
				t.Errorf("limits %v, row %s", g.limits, rows["ann"])
			}
			for _, file := range []string{"grades.csv", "grades.md"} {
				if data, err := os.ReadFile(filepath.Join(g.out, file)); err != nil || !strings.Contains(string(data), "ann") {
					t.Errorf("%s in the working directory: %v\n%s", file, err, data)
				}
			}
		})
	}
}
