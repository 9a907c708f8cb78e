package kernelcard

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// An InstructionCount is how many instructions of one class a kernel's
// code holds. Counts are static: a loop body counts once, as the compiler
// left it (unrolled or not), which is how docs/gemm.md counts loads per
// FMA by hand. Memory classes also count by the bytes one thread moves per
// instruction (4 for a float, 16 for a float4), which says whether the
// accesses are vectorized.
type InstructionCount struct {
	Class   string      `json:"class"`              // "ld.global", "fma", or SASS's "LDG", "FFMA"
	N       int         `json:"n"`                  // instructions of the class
	ByBytes map[int]int `json:"by_bytes,omitempty"` // bytes per thread and instruction -> instructions
}

// String is "ld.global 6 (4×16 B, 2×4 B)": widest accesses first.
func (c InstructionCount) String() string {
	s := fmt.Sprintf("%s %d", c.Class, c.N)
	if len(c.ByBytes) == 0 {
		return s
	}
	var widths []int
	for w := range c.ByBytes {
		widths = append(widths, w)
	}
	slices.Sort(widths)
	slices.Reverse(widths)
	var parts []string
	for _, w := range widths {
		parts = append(parts, fmt.Sprintf("%d×%d B", c.ByBytes[w], w))
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

// A class of instructions: the opcodes it holds, and whether a card shows
// it when the code has none (the loads, stores and FMAs that the lessons
// count always; tensor cores, async copies and barriers when present).
type class struct {
	name   string
	always bool
	match  func(op string) bool
	bytes  func(op, operands string) int // bytes per thread, nil for arithmetic
}

// PTX classes, in the card's order. An opcode is the instruction's first
// token with its modifiers, e.g. "ld.global.nc.v4.f32".
var ptxClasses = []class{
	{"ld.global", true, prefixes("ld.global", "ldu.global"), ptxAccessBytes},
	{"st.global", true, prefixes("st.global"), ptxAccessBytes},
	{"ld.shared", true, prefixes("ld.shared"), ptxAccessBytes},
	{"st.shared", true, prefixes("st.shared"), ptxAccessBytes},
	{"ld.local", true, prefixes("ld.local"), ptxAccessBytes},
	{"st.local", true, prefixes("st.local"), ptxAccessBytes},
	{"fma", true, prefixes("fma."), nil},
	{"cp.async", false, prefixes("cp.async.ca.", "cp.async.cg."), cpAsyncBytes}, // global to shared, per thread
	{"cp.async.bulk", false, func(op string) bool {
		return strings.HasPrefix(op, "cp.async.bulk.") && !strings.Contains(op, "commit_group") && !strings.Contains(op, "wait_group")
	}, nil},
	{"ldmatrix", false, prefixes("ldmatrix."), nil},
	{"mma", false, prefixes("mma.", "wmma.mma."), nil},
	{"wgmma", false, prefixes("wgmma.mma_async."), nil},
	{"atom/red", false, prefixes("atom.", "red."), nil},
	{"bar", false, prefixes("bar.", "barrier."), nil},
}

// SASS classes: the machine instructions that the PTX classes become.
var sassClasses = []class{
	{"LDG", true, opcode("LDG"), sassAccessBytes},
	{"STG", true, opcode("STG"), sassAccessBytes},
	{"LDS", true, opcode("LDS"), sassAccessBytes},
	{"STS", true, opcode("STS"), sassAccessBytes},
	{"LDL", true, opcode("LDL"), sassAccessBytes},
	{"STL", true, opcode("STL"), sassAccessBytes},
	{"FFMA", true, opcode("FFMA"), nil},
	{"LDGSTS", false, opcode("LDGSTS"), sassAccessBytes},
	{"UTMALDG", false, opcode("UTMALDG"), nil},
	{"LDSM", false, opcode("LDSM"), nil},
	{"HMMA", false, opcode("HMMA"), nil},
	{"HGMMA", false, opcode("HGMMA"), nil},
	{"ATOM/RED", false, func(op string) bool {
		return opcode("ATOM")(op) || opcode("ATOMG")(op) || opcode("ATOMS")(op) || opcode("RED")(op) || opcode("REDG")(op)
	}, nil},
	{"BAR", false, opcode("BAR"), nil},
}

func prefixes(ps ...string) func(string) bool {
	return func(op string) bool {
		for _, p := range ps {
			if strings.HasPrefix(op, p) {
				return true
			}
		}
		return false
	}
}

// opcode matches a SASS opcode with any modifiers: "LDG" matches "LDG" and
// "LDG.E.128", not "LDGSTS".
func opcode(name string) func(string) bool {
	return func(op string) bool { return op == name || strings.HasPrefix(op, name+".") }
}

// ptxTypeBytes are the sizes of PTX's fundamental types.
var ptxTypeBytes = map[string]int{
	"b8": 1, "u8": 1, "s8": 1,
	"b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
	"b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
	"b64": 8, "u64": 8, "s64": 8, "f64": 8,
	"b128": 16,
}

// ptxAccessBytes is what one thread moves with ld/st opcode op: the vector
// length (.v2, .v4, .v8) times the element type's size.
func ptxAccessBytes(op, _ string) int {
	vec, size := 1, 0
	for _, m := range strings.Split(op, ".")[1:] {
		if n, ok := strings.CutPrefix(m, "v"); ok {
			if v, err := strconv.Atoi(n); err == nil {
				vec = v
				continue
			}
		}
		if b, ok := ptxTypeBytes[m]; ok {
			size = b
		}
	}
	return vec * size
}

// cpAsyncBytes is the copy size of cp.async: its third operand
// ("[%r1], [%rd2], 16").
func cpAsyncBytes(_, operands string) int {
	fields := strings.Split(operands, ",")
	if len(fields) < 3 {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(fields[2]))
	return n
}

// sassAccessBytes reads a SASS memory opcode's width: .64 and .128 are 8
// and 16 bytes, .U8/.S8 and .U16/.S16 one and two, anything else 4.
func sassAccessBytes(op, _ string) int {
	size := 4
	for _, m := range strings.Split(op, ".")[1:] {
		switch m {
		case "64":
			size = 8
		case "128":
			size = 16
		case "U8", "S8":
			size = 1
		case "U16", "S16":
			size = 2
		}
	}
	return size
}

// tally counts instructions (opcode, operands) by classes. A class the
// card always shows is listed with 0; the others only when present.
func tally(classes []class, instrs [][2]string) []InstructionCount {
	counts := make([]InstructionCount, len(classes))
	for i, c := range classes {
		counts[i].Class = c.name
	}
	for _, in := range instrs {
		for i, c := range classes {
			if !c.match(in[0]) {
				continue
			}
			counts[i].N++
			if c.bytes != nil {
				if counts[i].ByBytes == nil {
					counts[i].ByBytes = map[int]int{}
				}
				counts[i].ByBytes[c.bytes(in[0], in[1])]++
			}
			break
		}
	}
	var out []InstructionCount
	for i, c := range counts {
		if c.N > 0 || classes[i].always {
			out = append(out, c)
		}
	}
	return out
}

// ptxEntry matches the start of a kernel in PTX: ".visible .entry sgemm(".
var ptxEntry = regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)\s*\(`)

// PTXEntries lists the kernels a PTX text defines, in order.
func PTXEntries(ptx string) []string {
	var names []string
	for _, m := range ptxEntry.FindAllStringSubmatch(ptx, -1) {
		names = append(names, m[1])
	}
	return names
}

// PTXFunction is the text of kernel entry in a PTX module, from its
// .entry line to the brace that closes its body.
func PTXFunction(ptx, entry string) (string, error) {
	for _, m := range ptxEntry.FindAllStringSubmatchIndex(ptx, -1) {
		if ptx[m[2]:m[3]] != entry {
			continue
		}
		start := m[0]
		if nl := strings.LastIndexByte(ptx[:start], '\n'); nl >= 0 {
			start = nl + 1 // from the line's start: ".visible .entry"
		}
		open := strings.IndexByte(ptx[m[1]:], '{')
		if open < 0 {
			return "", fmt.Errorf("kernelcard: PTX kernel %s has no body", entry)
		}
		depth := 0
		for i := m[1] + open; i < len(ptx); i++ {
			switch ptx[i] {
			case '{':
				depth++
			case '}':
				if depth--; depth == 0 {
					return ptx[start : i+1], nil
				}
			}
		}
		return "", fmt.Errorf("kernelcard: PTX kernel %s: its body never closes", entry)
	}
	return "", fmt.Errorf("kernelcard: no PTX kernel %q (the module has: %s)", entry, strings.Join(PTXEntries(ptx), ", "))
}

// A PTX statement may start with braces (a scope), labels ("$L__BB0_2:")
// and a predicate guard ("@%p1", "@!%p2") before its opcode.
var (
	ptxLabel     = regexp.MustCompile(`^[A-Za-z_$%][\w$]*:`)
	ptxPredicate = regexp.MustCompile(`^@!?%?\w+\s+`)
)

// ptxInstructions lists the instructions of a PTX function as opcode and
// operands, skipping what is not an instruction: directives (.reg,
// .shared, .loc, .pragma), labels and braces.
func ptxInstructions(fn string) [][2]string {
	if open := strings.IndexByte(fn, '{'); open >= 0 && strings.Contains(fn[:open], ".entry") {
		fn = fn[open+1:] // the body, past the parameter list
	}
	var out [][2]string
	for _, stmt := range strings.Split(stripPTXComments(fn), ";") {
		s := strings.TrimLeft(stmt, "{} \t\r\n")
		for loc := ptxLabel.FindStringIndex(s); loc != nil; loc = ptxLabel.FindStringIndex(s) {
			s = strings.TrimLeft(s[loc[1]:], "{} \t\r\n")
		}
		s = strings.TrimSpace(ptxPredicate.ReplaceAllString(s, ""))
		if s == "" || s[0] == '.' || s[0] == '}' {
			continue
		}
		op, operands := s, ""
		if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
			op, operands = s[:i], strings.TrimSpace(s[i+1:])
		}
		out = append(out, [2]string{op, operands})
	}
	return out
}

// stripPTXComments removes // and /* */ comments.
func stripPTXComments(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		line, block := strings.Index(s, "//"), strings.Index(s, "/*")
		switch {
		case line < 0 && block < 0:
			b.WriteString(s)
			return b.String()
		case block < 0 || line >= 0 && line < block:
			b.WriteString(s[:line])
			s = s[line:]
			if nl := strings.IndexByte(s, '\n'); nl >= 0 {
				s = s[nl:]
			} else {
				s = ""
			}
		default:
			b.WriteString(s[:block])
			if end := strings.Index(s[block:], "*/"); end >= 0 {
				s = s[block+end+2:]
			} else {
				s = ""
			}
		}
	}
	return b.String()
}

// CountPTX counts the instructions of kernel entry in a PTX module.
func CountPTX(ptx, entry string) ([]InstructionCount, error) {
	fn, err := PTXFunction(ptx, entry)
	if err != nil {
		return nil, err
	}
	return tally(ptxClasses, ptxInstructions(fn)), nil
}

// sassLine matches an instruction of cuobjdump -sass or nvdisasm:
// "/*0090*/  @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;".
var sassLine = regexp.MustCompile(`^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);`)

// SASSFunctions splits a disassembly into its functions' texts by name:
// cuobjdump heads each with "Function : name", nvdisasm with a
// ".text.name" section.
func SASSFunctions(sass string) map[string]string {
	out := map[string]string{}
	name := ""
	var b strings.Builder
	flush := func() {
		if name != "" {
			out[name] += b.String()
		}
		b.Reset()
	}
	for _, l := range strings.Split(sass, "\n") {
		t := strings.TrimSpace(l)
		if n, ok := strings.CutPrefix(t, "Function : "); ok {
			flush()
			name = strings.TrimSpace(n)
			continue
		}
		if f := strings.Fields(t); len(f) > 0 && f[0] == ".section" { // nvdisasm: a function is a .text.name section
			flush()
			name = ""
			if _, rest, ok := strings.Cut(t, ".text."); ok {
				name, _, _ = strings.Cut(rest, ",")
				name = strings.TrimSpace(name)
			}
			continue
		}
		b.WriteString(l + "\n")
	}
	flush()
	return out
}

// CountSASS counts the machine instructions of one function's disassembly.
func CountSASS(fn string) []InstructionCount {
	var instrs [][2]string
	for _, l := range strings.Split(fn, "\n") {
		if m := sassLine.FindStringSubmatch(l); m != nil {
			instrs = append(instrs, [2]string{m[1], m[2]})
		}
	}
	return tally(sassClasses, instrs)
}

// A Loop is a stretch of a listing that a backward branch repeats: lines
// First to Last (from 0) of the function's text.
type Loop struct{ First, Last, FMAs int }

var (
	ptxLabelLine = regexp.MustCompile(`^\s*([$A-Za-z_][\w$]*):`)
	ptxBranch    = regexp.MustCompile(`\bbra(?:\.uni)?\s+([$A-Za-z_][\w$]*)\s*;`)
	sassAddress  = regexp.MustCompile(`^\s*/\*([0-9a-f]{4,})\*/`)
	sassLabel    = regexp.MustCompile(`^\s*(\.L_x_\d+):`)
	sassBranch   = regexp.MustCompile(`\bBRA\b[^;]*?(0x[0-9a-f]+|\.L_x_\d+)`)
	sassFMA      = regexp.MustCompile(`\bFFMA\b`)
)

// HotLoop finds the loop with the most FMAs in a PTX or SASS function (the
// inner loop of a GEMM), the shortest among ties: where a card's listing
// starts when the whole function is too long to show.
func HotLoop(fn string) (Loop, bool) {
	lines := strings.Split(fn, "\n")
	labels := map[string]int{}
	for i, l := range lines {
		if m := ptxLabelLine.FindStringSubmatch(l); m != nil {
			labels[m[1]] = i
		}
		if m := sassLabel.FindStringSubmatch(l); m != nil {
			labels[m[1]] = i
		}
		if m := sassAddress.FindStringSubmatch(l); m != nil {
			if a, err := strconv.ParseUint(m[1], 16, 64); err == nil {
				labels[fmt.Sprintf("0x%x", a)] = i
			}
		}
	}
	isFMA := func(l string) bool { return strings.Contains(l, "fma.") || sassFMA.MatchString(l) }
	var best Loop
	found := false
	for j, l := range lines {
		m := ptxBranch.FindStringSubmatch(l)
		if m == nil {
			m = sassBranch.FindStringSubmatch(l)
		}
		if m == nil {
			continue
		}
		target := m[1]
		if strings.HasPrefix(target, "0x") {
			if a, err := strconv.ParseUint(target[2:], 16, 64); err == nil {
				target = fmt.Sprintf("0x%x", a)
			}
		}
		i, ok := labels[target]
		if !ok || i >= j {
			continue // a forward branch
		}
		loop := Loop{First: i, Last: j}
		for _, body := range lines[i : j+1] {
			if isFMA(body) {
				loop.FMAs++
			}
		}
		if !found || loop.FMAs > best.FMAs || loop.FMAs == best.FMAs && loop.Last-loop.First < best.Last-best.First {
			best, found = loop, true
		}
	}
	return best, found
}
