package exercise

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gpulab/engine/exercise/wire"
	"gpulab/engine/gemm"
)

// Automatic diagnosis: when a CUDA submission crashes, hangs or computes a
// wrong result, the check runs it again under compute-sanitizer (memcheck,
// then racecheck), compiled with -lineinfo and without guard zones, up to
// the problem that failed (a small one, or one problem of the timing
// size), and translates the first report into the student's terms: which
// thread touched which element of which argument, or stopped at a trap or
// an assert, at which of their lines. A rerun that did not run, or whose
// tool ended without its summary, says so and why; only a rerun that ran
// and finished clean says that it found nothing. The rerun only ever adds
// text to the report (Result.Diagnosis); the verdict is the check's,
// decided before it.

// A SanitizerReport is one error that compute-sanitizer printed.
type SanitizerReport struct {
	Tool    string // "memcheck" or "racecheck"
	Summary string // the report's first line: "Invalid __global__ read of size 4 bytes"
	// Access is "read" or "write", Space "global", "shared" or "local", and
	// Size the bytes of one access, for memcheck's invalid accesses.
	Access, Space string
	Size          int
	File          string // where, with -lineinfo: the source's name, and its line
	Line          int
	Kernel        string
	Thread, Block []int // by thread (x,y,z) in block (x,y,z); nil when not said
	Address       uint64
	// AllocBase and AllocSize are the allocation nearest to Address
	// (memcheck's "… the nearest allocation at 0x… of size N bytes").
	AllocBase, AllocSize uint64
	Misaligned           bool
	// Trap is a thread that stopped the kernel: __trap(), or a failed
	// assert (memcheck's "Warp assert", the line then found in the
	// program's output).
	Trap bool
	// Race is racecheck's pair of accesses: the kinds ("Write", "Read")
	// and the lines of each.
	Race *Race
	Text []string // the report's lines, without the "=========" prefix
}

// Race is the two accesses of a racecheck report.
type Race struct {
	First, Second         string // "Write", "Read"
	FirstLine, SecondLine int
	File                  string
	Hazards               int
}

var (
	sanitizerPrefix = regexp.MustCompile(`^=+ ?`)
	invalidAccess   = regexp.MustCompile(`^Invalid __(global|shared|local)__ (read|write|atomic) of size (\d+) bytes?`)
	atLine          = regexp.MustCompile(`^at (.+?) in (\S+?):(\d+)(?::(.*))?$`)
	atNoLine        = regexp.MustCompile(`^at (.+?)(?: in (\S+))?$`)
	byThread        = regexp.MustCompile(`^by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)`)
	addressLine     = regexp.MustCompile(`^(?:Address|Access to) (0x[0-9a-fA-F]+) is (out of bounds|misaligned)`)
	nearestAlloc    = regexp.MustCompile(`nearest allocation at (0x[0-9a-fA-F]+) of size (\d+) bytes`)
	raceAccess      = regexp.MustCompile(`(Write|Read) access at .+? in (\S+?):(\d+)`)
	hazards         = regexp.MustCompile(`\[(\d+) hazards?\]`)
)

// ParseSanitizer reads compute-sanitizer's text output (its --log-file,
// or its stdout) into reports, in order: memcheck's invalid accesses and
// other errors, racecheck's races. Lines without the "=========" prefix
// (the program's own output) are skipped; host-side lines ("Program hit
// …", "Saved host backtrace", "Host Frame") end a report.
func ParseSanitizer(tool, log string) []SanitizerReport {
	var out []SanitizerReport
	var cur *SanitizerReport
	end := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, raw := range strings.Split(log, "\n") {
		if !strings.HasPrefix(raw, "=========") {
			continue
		}
		line := strings.TrimSpace(sanitizerPrefix.ReplaceAllString(raw, ""))
		indented := strings.HasPrefix(strings.TrimPrefix(raw, "========="), "  ")
		switch {
		case line == "" || strings.HasPrefix(line, "COMPUTE-SANITIZER") || strings.HasPrefix(line, "ERROR SUMMARY") ||
			strings.HasPrefix(line, "RACECHECK SUMMARY") || strings.HasPrefix(line, "Saved host backtrace") ||
			strings.HasPrefix(line, "Host Frame") || strings.HasPrefix(line, "Target application returned"):
			end()
		case !indented && startsReport(line):
			end()
			cur = &SanitizerReport{Tool: tool, Summary: line, Text: []string{line}, Trap: startsTrap(line)}
			if m := invalidAccess.FindStringSubmatch(line); m != nil {
				cur.Space, cur.Access = m[1], m[2]
				cur.Size, _ = strconv.Atoi(m[3])
			}
			cur.raceLine(line)
		case cur != nil:
			cur.Text = append(cur.Text, line)
			cur.detail(line)
		}
	}
	end()
	return out
}

// startsReport says whether a line opens a report: memcheck's "Invalid
// __global__ read …", "Program hit …" and traps, racecheck's "Error: Race
// reported …" (ERROR: in older tools) and "Warning: …".
func startsReport(line string) bool {
	lower := strings.ToLower(line)
	for _, p := range []string{"invalid ", "error: ", "warning: ", "misaligned", "out-of-range", "program hit "} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return startsTrap(line)
}

// startsTrap says whether a line opens memcheck's report of a thread that
// stopped the kernel: "Trace/breakpoint trap" (__trap()), "Warp assert"
// (a failed assert).
func startsTrap(line string) bool {
	lower := strings.ToLower(line)
	return strings.HasPrefix(lower, "trace/breakpoint trap") || strings.HasPrefix(lower, "warp assert") || strings.HasPrefix(lower, "device-side assert")
}

// failedAssert finds a device assert's own message in a program's output:
// "exercise.cu:12: void sgemm(…): block: [0,0,0], thread: [5,0,0]
// Assertion `row < M` failed."
var failedAssert = regexp.MustCompile(`(\S+):(\d+): [^\n]*?block: \[(\d+),(\d+),(\d+)\], thread: \[(\d+),(\d+),(\d+)\] Assertion (.+?) failed`)

// detail reads one indented line of a report.
func (r *SanitizerReport) detail(line string) {
	if m := atLine.FindStringSubmatch(line); m != nil && r.File == "" {
		r.File = m[2]
		r.Line, _ = strconv.Atoi(m[3])
		r.Kernel = kernelName(m[1], m[4])
		return
	}
	if m := atNoLine.FindStringSubmatch(line); m != nil && r.Kernel == "" && r.File == "" {
		r.Kernel = kernelName(m[1], "")
		return
	}
	if m := byThread.FindStringSubmatch(line); m != nil {
		r.Thread, r.Block = atois(m[1:4]), atois(m[4:7])
		return
	}
	if m := addressLine.FindStringSubmatch(line); m != nil {
		r.Address, _ = strconv.ParseUint(m[1], 0, 64)
		r.Misaligned = m[2] == "misaligned"
		return
	}
	if m := nearestAlloc.FindStringSubmatch(line); m != nil {
		r.AllocBase, _ = strconv.ParseUint(m[1], 0, 64)
		r.AllocSize, _ = strconv.ParseUint(m[2], 10, 64)
		return
	}
	r.raceLine(line)
}

// raceLine reads racecheck's "Race reported between Write access at … in
// f.cu:9 … and Read access at … in f.cu:14 … [4 hazards]", which may
// span two lines.
func (r *SanitizerReport) raceLine(line string) {
	ms := raceAccess.FindAllStringSubmatch(line, -1)
	if len(ms) == 0 {
		return
	}
	if r.Race == nil {
		r.Race = &Race{}
	}
	for _, m := range ms {
		n, _ := strconv.Atoi(m[3])
		if r.Race.First == "" {
			r.Race.First, r.Race.FirstLine, r.Race.File = m[1], n, m[2]
		} else if r.Race.Second == "" {
			r.Race.Second, r.Race.SecondLine = m[1], n
		}
	}
	if m := hazards.FindStringSubmatch(line); m != nil {
		r.Race.Hazards, _ = strconv.Atoi(m[1])
	}
}

// kernelName finds the kernel in an "at" clause: "0x1a0" with
// "sgemm(int, int)" after the line (older tools), or "sgemm(int, int)+0x1a0"
// (newer ones).
func kernelName(at, after string) string {
	for _, s := range []string{after, at} {
		s = strings.TrimSpace(s)
		if s == "" || strings.HasPrefix(s, "0x") {
			continue
		}
		if i := strings.IndexAny(s, "(+"); i > 0 {
			s = s[:i]
		}
		return s
	}
	return ""
}

func atois(s []string) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[i], _ = strconv.Atoi(v)
	}
	return out
}

// A param is a kernel parameter as the student named it.
type param struct{ typ, name string }

// kernelParams reads the parameters of kernel entry, a CUDA __global__
// function or an OpenCL __kernel, from src (the names the student gave
// them), or from decl (the declaration the exercise asks for) when src
// does not declare it plainly.
func kernelParams(src, decl, entry string) []param {
	kernelDecl, err := regexp.Compile(`(?:__global__|__kernel|\bkernel)\b[^;{}]*?\b` + regexp.QuoteMeta(entry) + `\s*\(([^)]*)\)`)
	if err != nil {
		return nil
	}
	for _, text := range []string{src, decl} {
		for _, m := range kernelDecl.FindAllStringSubmatch(text, -1) {
			var ps []param
			for _, p := range strings.Split(m[1], ",") {
				f := strings.FieldsFunc(p, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '*' || r == '&' })
				if len(f) == 0 {
					continue
				}
				ps = append(ps, param{typ: strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p), f[len(f)-1])), name: f[len(f)-1]})
			}
			return ps
		}
	}
	return nil
}

// argBytes is the size of the device buffer a task's argument became in
// the worker (stage.go): 4 bytes an element, at least one element.
func argBytes(a any) (int, bool) {
	switch v := a.(type) {
	case []float32:
		return 4 * max(len(v), 1), true
	case []int32:
		return 4 * max(len(v), 1), true
	case wire.Out:
		return 4 * max(int(v), 1), true
	}
	return 0, false
}

// Explain turns a report into the student's terms: who (thread and
// block), what (the argument and the element, for a global access; a
// NULL pointer; a trap or a failed assert), where (their line, quoted
// from src) and, for a race, the two lines and the shared array they
// share. tasks are the launches of the rerun, the last one the one that
// failed: their arguments tell which buffer the address belongs to.
// output is what the rerun's program printed, where a failed assert's
// message is.
func (r SanitizerReport) Explain(src string, tasks []wire.Task, output string) string {
	if r.Trap {
		return r.explainTrap(src, output)
	}
	where := r.where(src)
	if r.Race != nil && r.Race.Second != "" {
		return explainRace(*r.Race, src)
	}
	if r.Access == "" {
		return strings.TrimSpace(fmt.Sprintf("compute-sanitizer (%s): %s%s", r.Tool, r.Summary, where))
	}
	who := "a thread"
	if r.Thread != nil {
		who = fmt.Sprintf("thread (%d,%d,%d) of block (%d,%d,%d)", r.Thread[0], r.Thread[1], r.Thread[2], r.Block[0], r.Block[1], r.Block[2])
	}
	verb := map[string]string{"read": "read", "write": "wrote", "atomic": "updated atomically"}[r.Access]
	if r.Misaligned {
		return fmt.Sprintf("%s %s %d bytes of %s memory at address %#x, which is not a multiple of %d: a vector access (float4) needs an index that is a multiple of its width%s",
			who, verb, r.Size, r.Space, r.Address, r.Size, where)
	}
	if r.Space != "global" {
		return fmt.Sprintf("%s %s %s memory out of its bounds (address %#x, %d bytes)%s", who, verb, r.Space, r.Address, r.Size, where)
	}
	what := fmt.Sprintf("address %#x, in no allocation of the check's", r.Address)
	if r.Address < 1<<16 {
		what = fmt.Sprintf("address %#x, through a NULL pointer: one never set, or the NULL that malloc in a kernel returns when the device heap cannot hold what it asks", r.Address)
	}
	if names, n, ok := r.argument(src, tasks); ok {
		index := (int64(r.Address) - int64(r.AllocBase)) / 4
		elems := make([]string, len(names))
		for i, name := range names {
			elems[i] = fmt.Sprintf("`%s[%d]`", name, index)
		}
		arrays := strings.Join(names, " or ")
		switch {
		case index < 0:
			what = fmt.Sprintf("%s, before the start of %s", strings.Join(elems, " or "), arrays)
		default:
			what = fmt.Sprintf("%s, past the end of %s (%d element%s: indices 0 to %d)", strings.Join(elems, " or "), arrays, n, plural(n), n-1)
		}
	}
	return fmt.Sprintf("%s %s %s%s", who, verb, what, where)
}

// explainTrap says where a thread stopped the kernel: memcheck's line for
// __trap(), or for a failed assert the assert's own message in the
// program's output (memcheck names only __assertfail).
func (r SanitizerReport) explainTrap(src, output string) string {
	who := ""
	if r.Thread != nil {
		who = fmt.Sprintf(" (thread (%d,%d,%d) of block (%d,%d,%d))", r.Thread[0], r.Thread[1], r.Thread[2], r.Block[0], r.Block[1], r.Block[2])
	}
	if m := failedAssert.FindStringSubmatch(output); m != nil {
		line, _ := strconv.Atoi(m[2])
		at := fmt.Sprintf(" at %s:%d", m[1], line)
		if studentFile(m[1]) {
			at = fmt.Sprintf(" at your line %d%s", line, quoteLine(src, line))
		}
		return fmt.Sprintf("the kernel stopped at a trap or assert%s: assertion %s failed in thread (%s,%s,%s) of block (%s,%s,%s)", at, m[9], m[6], m[7], m[8], m[3], m[4], m[5])
	}
	return fmt.Sprintf("the kernel stopped at a trap or assert%s%s", r.trapWhere(src), who)
}

// trapWhere is where, for a trap: the line info of a trap can name the
// statement after it, so where the named line holds no __trap() or assert
// and one of the three lines before it does, that line is named, and the
// tool's line said too.
func (r SanitizerReport) trapWhere(src string) string {
	lines := strings.Split(src, "\n")
	isTrap := func(n int) bool {
		return n >= 1 && n <= len(lines) && (strings.Contains(lines[n-1], "__trap") || strings.Contains(lines[n-1], "assert"))
	}
	if !studentFile(r.File) || isTrap(r.Line) {
		return r.where(src)
	}
	for n := r.Line - 1; n >= r.Line-3; n-- {
		if isTrap(n) {
			return fmt.Sprintf(" at your line %d%s (compute-sanitizer's line information names line %d)", n, quoteLine(src, n), r.Line)
		}
	}
	return r.where(src)
}

// where is " at your line N: `code`", " at header.cuh:N" for a line of
// another file (a header the source includes), or "" without line info.
func (r SanitizerReport) where(src string) string {
	switch {
	case r.Line <= 0:
		return ""
	case !studentFile(r.File):
		return fmt.Sprintf(" at %s:%d", r.File, r.Line)
	}
	return fmt.Sprintf(" at your line %d%s", r.Line, quoteLine(src, r.Line))
}

// studentFile says whether a file named in a report is the student's
// source (compiled as gemm.ExerciseSourceName), whose lines are theirs.
func studentFile(file string) bool { return path.Base(file) == gemm.ExerciseSourceName }

// quoteLine is ": `text of line n`", or "" when src has no such line.
func quoteLine(src string, n int) string {
	lines := strings.Split(src, "\n")
	if n < 1 || n > len(lines) || strings.TrimSpace(lines[n-1]) == "" {
		return ""
	}
	return ": `" + strings.ReplaceAll(strings.TrimSpace(lines[n-1]), "`", "'") + "`"
}

// argument finds the argument whose buffer is the allocation nearest the
// address: by its size among the arguments of the last task, then of the
// others; where several arguments have that size, those the line indexes
// (more than one when the line indexes several of them).
func (r SanitizerReport) argument(src string, tasks []wire.Task) (names []string, elems int, ok bool) {
	if r.AllocSize == 0 || len(tasks) == 0 {
		return nil, 0, false
	}
	params := kernelParams(src, tasks[len(tasks)-1].Decl, tasks[len(tasks)-1].Entry)
	lines := strings.Split(src, "\n")
	line := ""
	if r.Line >= 1 && r.Line <= len(lines) {
		line = lines[r.Line-1]
	}
	for i := len(tasks) - 1; i >= 0; i-- {
		var names []string
		for j, a := range tasks[i].Args {
			if n, isBuf := argBytes(a); isBuf && uint64(n) == r.AllocSize && j < len(params) {
				names = append(names, params[j].name)
			}
		}
		if len(names) > 1 && line != "" {
			names = slices.DeleteFunc(names, func(n string) bool {
				return !regexp.MustCompile(`\b` + regexp.QuoteMeta(n) + `\s*\[`).MatchString(line)
			})
		}
		if len(names) > 0 {
			return names, int(r.AllocSize / 4), true
		}
	}
	return nil, 0, false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// sharedArray finds the __shared__ (or __local) arrays a source declares.
var sharedArray = regexp.MustCompile(`(?:__shared__|__local)\s+[\w\s]*?\b(\w+)\s*\[`)

// explainRace names the two lines of a race and the shared array they
// both touch.
func explainRace(race Race, src string) string {
	lines := strings.Split(src, "\n")
	text := func(n int) string {
		if n >= 1 && n <= len(lines) {
			return lines[n-1]
		}
		return ""
	}
	on := "shared memory"
	for _, m := range sharedArray.FindAllStringSubmatch(src, -1) {
		use := regexp.MustCompile(`\b` + regexp.QuoteMeta(m[1]) + `(?:\s*\[[^\]]*\])+`)
		if a, b := use.FindString(text(race.FirstLine)), use.FindString(text(race.SecondLine)); a != "" && b != "" {
			on = "`" + strings.TrimSpace(a) + "`"
			if strings.TrimSpace(b) != strings.TrimSpace(a) {
				on += " and `" + strings.TrimSpace(b) + "`"
			}
			break
		}
	}
	if !studentFile(race.File) {
		return fmt.Sprintf("a race in shared memory between %s:%d (a %s) and line %d (a %s): a missing __syncthreads()?",
			race.File, race.FirstLine, strings.ToLower(race.First), race.SecondLine, strings.ToLower(race.Second))
	}
	first, second := strings.ToLower(race.First), strings.ToLower(race.Second)
	s := fmt.Sprintf("a race on %s between your line %d (a %s%s) and line %d (a %s%s): threads of a block reach one before others are done with the other; a missing __syncthreads()?",
		on, race.FirstLine, first, quoteLine(src, race.FirstLine), race.SecondLine, second, quoteLine(src, race.SecondLine))
	if race.FirstLine == race.SecondLine {
		s = fmt.Sprintf("a race on %s at your line %d%s: threads of a block %s and %s the same shared element with no barrier between them",
			on, race.FirstLine, quoteLine(src, race.FirstLine), verbOf(first), verbOf(second))
	}
	return s
}

func verbOf(access string) string {
	if access == "write" {
		return "write"
	}
	return "read"
}
