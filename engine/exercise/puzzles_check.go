package exercise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gpulab/engine/exercise/wire"
	"gpulab/kernels"
)

// A puzzle is one small kernel exercise of the on-ramp that comes before
// the tiled GEMM (docs/course.md), in CUDA and in OpenCL C: one row of the
// table in puzzles.go says its kernel, how it is launched for a shape, the
// inputs it is checked on and the output a correct kernel writes.
//
// A puzzle's kernel writes its output through STORE(out, i, value), a
// macro the check defines with -D: a plain store in every checked run,
// and, in the one run that draws the thread map of a wrong result, a
// store of the storing thread's global id instead of the value. Outputs
// get guard words past their end, so that a store past n shows too.
type puzzle struct {
	name, file, doc string // the exercise; its reference solution under puzzleDir
	entry           entry
	todo            map[string]string // the skeletons' TODO lines, by language
	dims            []string          // the shape's names: {"n"}, {"rows", "cols"}
	shapes          []pshape          // the check's: multiples of no block, 1, empty where that means something
	timing          [2]pshape         // the timing size on a GPU, and small (smallTiming)
	least           pshape            // the least size of each dimension (1 where nothing can launch on 0)
	defines         []string          // -D options besides STORE
	launch          func(s pshape) geometry
	layout          func(s pshape) *elementMap // the output's shape and name
	intOut          bool                       // the output holds int32s, compared exactly; else float32s
	make            func(rng *rand.Rand, s pshape) puzzleData
	needs           map[string]requirement // by language: a construct the puzzle is about
	hint            func(s pshape) string
	contrasts       []contrast // other kernels timed next to the solution in a notebook
}

// puzzleDir holds the puzzles' kernels in both families.
const puzzleDir = "exercises/puzzles/"

// pshape is a puzzle's size, in the order of its dims.
type pshape [2]int

// requirement is a construct a puzzle is about: a token of the source starting
// with one of prefixes (__shared__, __shfl, atomic), or the check fails
// with why before anything runs.
type requirement struct {
	prefixes []string
	why      string
}

// met says whether src has a token with one of the prefixes, outside
// comments and strings.
func (n requirement) met(src string) bool {
	for _, t := range cTokens(src) {
		for _, p := range n.prefixes {
			if strings.HasPrefix(t, p) {
				return true
			}
		}
	}
	return false
}

// contrast is another kernel timed next to the student's in a notebook:
// a file of puzzleDir, with options added to the puzzle's.
type contrast struct {
	name, file string
	options    []string
}

// puzzleData is one problem's inputs and the output a correct kernel
// writes.
type puzzleData struct {
	args []any     // the kernel's arguments before the output, in order
	want []float64 // the output
	tol  []float64 // a float output's absolute tolerance per element (sums); nil: wrongValue's relative 1e-6
	work float64   // the bytes a kernel must move
}

// line1D is a 1-D launch of blocks of block threads.
func line1D(blocks, block int) geometry {
	return geometry{grid: [3]int{blocks, 1, 1}, block: [3]int{block, 1, 1}}
}

// tiles2D is a 2-D launch of bx × by blocks covering cols × rows items,
// x along the columns.
func tiles2D(rows, cols, bx, by, perY int) geometry {
	return geometry{grid: [3]int{groupsOf(cols, bx), groupsOf(rows, by*perY), 1}, block: [3]int{bx, by, 1}}
}

// String is the shape in the puzzle's own words: "n=300", "rows=17 cols=33".
func (pz *puzzle) shapeString(s pshape) string {
	var parts []string
	for i, d := range pz.dims {
		parts = append(parts, fmt.Sprintf("%s=%d", d, s[i]))
	}
	return strings.Join(parts, " ")
}

// parseShape reads a shape in the puzzle's words ("n=300", "rows=17
// cols=33"), for a course's hidden shapes.
func (pz *puzzle) parseShape(spec string) (pshape, error) {
	v, err := shapeFields(spec, pz.dims...)
	if err != nil {
		return pshape{}, err
	}
	var s pshape
	total := 1
	for i, d := range pz.dims {
		if v[d] < pz.least[i] || v[d] > 1<<26 {
			return s, fmt.Errorf("%s=%d: %s takes %s from %d to %d", d, v[d], pz.name, d, pz.least[i], 1<<26)
		}
		s[i] = v[d]
		total *= max(v[d], 1)
	}
	if total > 1<<26 {
		return s, fmt.Errorf("%s: more than %d elements", pz.shapeString(s), 1<<26)
	}
	return s, nil
}

// puzzleProblem is a puzzle at one shape, for a kernel in lang.
type puzzleProblem struct {
	pz    *puzzle
	lang  string
	shape pshape
	puzzleData
	guard int // words past the output's end, which a correct kernel leaves alone
}

// draw makes problems of shape s; checked ones get guard words past the
// output (as many as the launch has threads), timed ones do not.
func (pz *puzzle) draw(lang string, s pshape, checked bool) draw {
	return func(rng *rand.Rand) (problem, error) {
		p := puzzleProblem{pz: pz, lang: lang, shape: s, puzzleData: pz.make(rng, s)}
		if checked {
			p.guard = min(pz.launch(s).threads(), 1<<16)
		}
		return p, nil
	}
}

func (p puzzleProblem) String() string { return p.pz.shapeString(p.shape) }
func (p puzzleProblem) rows() int      { return len(p.want) }
func (p puzzleProblem) work() float64  { return p.puzzleData.work }
func (p puzzleProblem) hint() string   { return p.pz.hint(p.shape) }

func (p puzzleProblem) task() wire.Task { return p.taskWith(storeMacro(p.lang, false, p.pz.intOut)) }
func (p puzzleProblem) traceTask() wire.Task {
	return p.taskWith(storeMacro(p.lang, true, p.pz.intOut))
}

// taskWith is the launch with STORE defined by store.
func (p puzzleProblem) taskWith(store string) wire.Task {
	g := p.pz.launch(p.shape)
	return wire.Task{Entry: p.pz.entry.name, Decl: p.pz.entry.decl[p.lang], Options: append([]string{store}, p.pz.defines...),
		Grid: g.grid, Block: g.block, Args: append(slices.Clip(p.args), wire.Out(len(p.want)+p.guard))}
}

// storeMacro is the -D option that defines STORE(p, i, v): a plain store,
// or in a traced run the storing thread's global linear id (x + y·global
// width) in place of the value, whose expression is still evaluated.
func storeMacro(lang string, trace, intOut bool) string {
	if !trace {
		return "-DSTORE(p,i,v)=((p)[(i)]=(v))"
	}
	id, asFloat := "(int)(get_global_id(0)+get_global_id(1)*get_global_size(0))", "as_float"
	if lang == LangCUDA {
		id, asFloat = "(int)((blockIdx.x*blockDim.x+threadIdx.x)+(blockIdx.y*blockDim.y+threadIdx.y)*(gridDim.x*blockDim.x))", "__int_as_float"
	}
	if !intOut {
		id = asFloat + "(" + id + ")"
	}
	return "-DSTORE(p,i,v)=((void)(v),(p)[(i)]=" + id + ")"
}

// relTol is element i's tolerance as wrongValue takes it: relative to
// max(|want|, 1).
func (p puzzleProblem) relTol(i int) float64 {
	if p.tol == nil {
		return 1e-6
	}
	return p.tol[i] / max(math.Abs(p.want[i]), 1)
}

// verdict judges element i of the output.
func (p puzzleProblem) verdict(i int, bits uint32) verdict {
	if !p.pz.intOut {
		return judgeFloat(bits, p.want[i], p.relTol(i))
	}
	switch {
	case int32(bits) == int32(p.want[i]):
		return vRight
	case bits == unsetBits:
		return vUnwritten
	}
	return vWrong
}

// describe says how element i misses.
func (p puzzleProblem) describe(i int, bits uint32) string {
	switch {
	case bits == unsetBits:
		return "was never written (it still holds the all-ones bits the check filled the output with)"
	case p.pz.intOut:
		return fmt.Sprintf("is %d, expected %d", int32(bits), int32(p.want[i]))
	}
	return wrongValue(floats([]uint32{bits})[0], p.want[i], p.relTol(i))
}

// mismatch names the first wrong element among rows (all when nil), then,
// checking all, a store past the output's end.
func (p puzzleProblem) mismatch(out [][]uint32, rows []int) (string, error) {
	o := out[0]
	m := p.pz.layout(p.shape)
	if d := each(len(p.want), rows, func(i int) string {
		if p.verdict(i, o[i]) == vRight {
			return ""
		}
		return fmt.Sprintf("first wrong element: %s (index %d) %s", m.at(i), i, p.describe(i, o[i]))
	}); d != "" || rows != nil {
		return d, nil
	}
	written, first := 0, -1
	for i := len(p.want); i < len(o); i++ {
		if o[i] != unsetBits {
			written++
			if first < 0 {
				first = i
			}
		}
	}
	if written > 0 {
		return fmt.Sprintf("%s has %d elements, but your kernel also stored %d past its end (the first at index %d): a thread with no element must not store",
			m.name, len(p.want), written, first), nil
	}
	return "", nil
}

// elements judges the output element by element, for the picture.
func (p puzzleProblem) elements(out [][]uint32) *elementMap {
	m := p.pz.layout(p.shape)
	for i := range p.want {
		m.v[i] = p.verdict(i, out[0][i])
	}
	return m
}

// check is a flavour's check: the construct the puzzle is about, then
// the shapes, then the speed, next to the contrasts in a notebook.
func (pz *puzzle) check(s *session, lang string) Result {
	if n, ok := pz.needs[lang]; ok && !n.met(s.src) {
		return Result{Error: n.why}
	}
	var shapes []draw
	for _, sh := range pz.shapes {
		shapes = append(shapes, pz.draw(lang, sh, true))
	}
	timing := pz.timing[0]
	if s.smallTiming() {
		timing = pz.timing[1]
	}
	return s.judge(shapes, pz.draw(lang, timing, false), "reference solution", s.contrastLadder(pz, lang))
}

// contrastLadder times, in a notebook, the puzzle's contrasts on the
// timing problem (best of three device times).
func (s *session) contrastLadder(pz *puzzle, lang string) func(problem) []Rung {
	return func(pr problem) []Rung {
		var rungs []Rung
		family := map[string]kernels.Family{LangCUDA: kernels.CUDAFamily, LangOpenCL: kernels.OpenCLFamily}[lang]
		for _, c := range pz.contrasts {
			src, err := family.Source(puzzleDir + c.file)
			if err != nil {
				continue
			}
			t := pr.task()
			t.Options = append(t.Options, c.options...)
			run := newKernelRunner(s.dev, c.file+family.Ext, src)
			d, err := best(func() (time.Duration, error) {
				_, d, err := run.Run([]wire.Task{t})
				return d, err
			})
			if err == nil {
				rungs = append(rungs, Rung{Name: c.name, GFLOPS: pr.work() / d.Seconds() / 1e9})
			}
		}
		return rungs
	}
}

// register registers the puzzle as an exercise in both families, with
// its hidden-shape parser.
func (pz *puzzle) register() {
	flavors := bothFamilies(puzzleDir+pz.file, pz.todo, pz.check)
	for i := range flavors {
		lang := flavors[i].Lang
		flavors[i].shape = func(spec string) (draw, error) {
			s, err := pz.parseShape(spec)
			return pz.draw(lang, s, true), err
		}
	}
	register(Exercise{Name: pz.name, Doc: pz.doc, Unit: UnitGBps, Flavors: flavors})
}

// ceilDiv is ⌈n / d⌉ (0 for n = 0).
func ceilDiv(n, d int) int { return (n + d - 1) / d }
