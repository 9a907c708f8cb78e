package exercise

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gpulab/engine/exercise/wire"
)

// Guard zones. The most common bug of a tiled kernel is a store that
// forgets one bound: the last tiles hang over C's edge and write past its
// end. On a GPU such a write lands in whatever lies there, on PoCL it
// tramples the worker's heap, and either way the result can still look
// right. So the judge asks for every array of a checked run to lie between
// two guard zones (wire.Task.Guard), filled with wire.GuardBits; the
// runner (stage.go) hands the kernel a pointer to the array itself, and
// after the run reports what changed outside the outputs: in each zone,
// and inside each input. The judge turns that report into a failure that
// names the array, the side and the elements ("wrote 495 elements past
// the end of C (rows 17–31 of a 17-row C)"), and a picture of them.
//
// The report comes from the runner, like the outputs: a kernel could
// forge it only to hide its own stray writes, which gains it nothing. A
// rerun under compute-sanitizer asks for no zones, so that a stray access
// is out of bounds there.

// A zone is one array argument of a task in the runner: where it lies in
// its allocation and what the allocation held before the launch.
type zone struct {
	pre, n, post int      // words: the zone before, the array, the zone after
	input        []uint32 // an input's words as uploaded; nil for an output
	size         int      // an output's size (n is at least 1)
}

// newZone lays out argument a of a task with guard words of zones (the
// one before rounded up to align words, so that the array's address keeps
// the allocation's alignment); ok is false for a scalar.
func newZone(a any, guard, align int) (z zone, ok bool) {
	switch v := a.(type) {
	case []float32:
		z.input = make([]uint32, len(v))
		for i, f := range v {
			z.input[i] = math.Float32bits(f)
		}
	case []int32:
		z.input = make([]uint32, len(v))
		for i, x := range v {
			z.input[i] = uint32(x)
		}
	case wire.Out:
		z.size = int(v)
	default:
		return z, false
	}
	z.n = max(len(z.input), z.size)
	if guard > 0 {
		z.pre, z.post = (guard+align-1)/align*align, guard
	}
	return z, true
}

// words is the size of the allocation, in words: an empty array without
// zones still takes one.
func (z zone) words() int { return max(z.pre+z.n+z.post, 1) }

// initial is what the allocation holds before the launch: the zones'
// pattern around the input, or around an output's unset bits.
func (z zone) initial() []uint32 {
	w := make([]uint32, z.words())
	for i := range w {
		w[i] = wire.GuardBits
	}
	mid := w[z.pre : z.pre+z.n]
	for i := range mid {
		mid[i] = unsetBits
	}
	copy(mid, z.input)
	return w
}

// result is an output's elements in the allocation after the run.
func (z zone) result(all []uint32) []uint32 { return all[z.pre : z.pre+z.size] }

// damage is the zone's wire.DamageWords report from the allocation after
// the run.
func (z zone) damage(all []uint32) []uint32 {
	var d []uint32
	// changed reports the positions at which have differs from want, each
	// position named by at.
	changed := func(have []uint32, want func(i int) uint32, at func(i int) int) {
		count, first, last := 0, 0, 0
		for i, w := range have {
			if w != want(i) {
				if count == 0 {
					first = at(i)
				}
				count, last = count+1, at(i)
			}
		}
		if count > 0 && first > last {
			first, last = last, first
		}
		d = append(d, uint32(count), uint32(first), uint32(last))
	}
	guard := func(int) uint32 { return wire.GuardBits }
	changed(all[:z.pre], guard, func(i int) int { return z.pre - i })
	if z.input != nil {
		changed(all[z.pre:z.pre+len(z.input)], func(i int) uint32 { return z.input[i] }, func(i int) int { return i })
	} else {
		d = append(d, 0, 0, 0)
	}
	changed(all[z.pre+z.n:], guard, func(i int) int { return i })
	return d
}

// ---- the judge's side ----

// guarded is t with guard zones as long as its longest array, so that a
// tile hanging over any array's edge lands in them: at least 4 Ki words,
// at most 64 Ki (a timing problem's arrays are multiples of every tile),
// a multiple of 1 Ki. A Go exercise's task (MaxOut) gets none: Go checks
// its own bounds.
func guarded(t wire.Task) wire.Task {
	if t.MaxOut > 0 {
		return t
	}
	longest := 0
	for _, a := range t.Args {
		if z, ok := newZone(a, 0, 1); ok {
			longest = max(longest, z.n)
		}
	}
	t.Guard = min(max((longest+1023)/1024*1024, 4<<10), 64<<10)
	return t
}

// A laidOut problem says how its arrays are laid out: the length of
// argument arg's rows, 0 for a vector.
type laidOut interface{ rowLength(arg int) int }

// stray is what a run changed outside its outputs in one place.
type stray struct {
	name               string // the argument, as the kernel names it
	where              int    // 0: before the array, 1: inside an input, 2: past its end
	count, first, last int    // as the damage report says (wire.DamageWords)
	n, cols            int    // the array's elements, and its row length (0: a vector)
}

// strays splits the damage report off the outputs of a run of t (one
// asked with guard zones; a run that ran without them, under the
// sanitizer, has none) and reads it: where the kernel changed memory
// outside its outputs, the arguments named as in src.
func strays(p problem, t wire.Task, src string, out [][]uint32) ([][]uint32, []stray) {
	outs := 0
	for _, a := range t.Args {
		if _, ok := a.(wire.Out); ok {
			outs++
		}
	}
	if t.Guard == 0 || len(out) != outs+1 {
		return out, nil
	}
	report := out[outs]
	params := kernelParams(src, t.Decl, t.Entry)
	var found []stray
	arr := 0
	for i, a := range t.Args {
		z, ok := newZone(a, 0, 1)
		if !ok {
			continue
		}
		d := report[arr*wire.DamageWords : (arr+1)*wire.DamageWords]
		arr++
		name := fmt.Sprintf("argument %d", i+1)
		if i < len(params) {
			name = params[i].name
		}
		cols := 0
		if l, ok := p.(laidOut); ok {
			cols = l.rowLength(i)
		}
		for where := range 3 {
			if count := int(d[3*where]); count > 0 {
				found = append(found, stray{name: name, where: where, count: count, first: int(d[3*where+1]), last: int(d[3*where+2]),
					n: z.n, cols: cols})
			}
		}
	}
	return out[:outs], found
}

// String says what the kernel did, in the student's terms.
func (s stray) String() string {
	switch s.where {
	case 0:
		return fmt.Sprintf("wrote %d element%s before the start of %s (%s)", s.count, plural(s.count), s.name, s.span(-s.last, -s.first))
	case 1:
		changed := s.element(s.first)
		if s.last != s.first {
			changed += " to " + s.element(s.last)
		}
		return fmt.Sprintf("wrote into its input %s: %d element%s changed (%s); a kernel must leave its inputs as they were", s.name, s.count, plural(s.count), changed)
	}
	return fmt.Sprintf("wrote %d element%s past the end of %s (%s)", s.count, plural(s.count), s.name, s.span(s.n+s.first, s.n+s.last))
}

// span names elements from..to (indices from the array's start, negative
// before it): rows of a matrix, else elements.
func (s stray) span(from, to int) string {
	if s.cols > 0 {
		rows := s.n / s.cols
		r0, r1 := floorDiv(from, s.cols), floorDiv(to, s.cols)
		if r0 == r1 {
			return fmt.Sprintf("row %d of a %d-row %s", r0, rows, s.name)
		}
		return fmt.Sprintf("rows %d–%d of a %d-row %s", r0, r1, rows, s.name)
	}
	if from == to {
		return fmt.Sprintf("%s[%d] of a %d-element %s", s.name, from, s.n, s.name)
	}
	return fmt.Sprintf("%s[%d]–%s[%d] of a %d-element %s", s.name, from, s.name, to, s.n, s.name)
}

// element names element i of the array: A[r][c] in a matrix, A[i] in a
// vector.
func (s stray) element(i int) string {
	if s.cols > 0 {
		return fmt.Sprintf("%s[%d][%d]", s.name, i/s.cols, i%s.cols)
	}
	return fmt.Sprintf("%s[%d]", s.name, i)
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// picture draws the array and the zone the kernel wrote in, laid out as
// the student thinks of the array: its rows (or lines of 32 elements),
// with the rows before or after it that the stray writes reached.
func (s stray) picture() *Picture {
	cols := s.cols
	if cols == 0 {
		cols = 32
	}
	from, to := 0, s.n-1 // the elements drawn, as indices from the array's start
	lo, hi := s.first, s.last
	switch s.where {
	case 0:
		lo, hi = -s.last, -s.first
		from = floorDiv(lo, cols) * cols
	case 2:
		lo, hi = s.n+s.first, s.n+s.last
		to = (floorDiv(hi, cols)+1)*cols - 1
	}
	m := &elementMap{name: s.name, unit: "elements", rows: floorDiv(to, cols) - floorDiv(from, cols) + 1, cols: cols}
	m.n = m.rows * cols
	whereWords := map[int]string{0: "before its start", 1: "inside it", 2: "past its end"}[s.where]
	cr, cc := m.cellSize()
	return &Picture{
		Title:   fmt.Sprintf("Where the kernel wrote outside its outputs: %s %s (grey: %s, red: written, white: the guard zone around it, untouched)", s.name, whereWords, s.name),
		Caption: strayCaption(s, lo, hi),
		PNG: m.draw(func(r0, c0 int) color.NRGBA {
			hit, inside := false, false
			for r := r0; r < min(r0+cr, m.rows); r++ {
				for c := c0; c < min(c0+cc, cols); c++ {
					i := from + r*cols + c
					hit = hit || i >= lo && i <= hi
					inside = inside || i >= 0 && i < s.n
				}
			}
			switch {
			case hit:
				return colourWrong
			case inside:
				return color.NRGBA{189, 189, 189, 255}
			}
			return colourNone
		}),
	}
}

// strayCaption says the picture in words.
func strayCaption(s stray, lo, hi int) string {
	c := strings.ToUpper(s.String()[:1]) + s.String()[1:] + "."
	if span := hi - lo + 1; span > s.count {
		c += fmt.Sprintf(" %d of the %d elements between the first and the last written are drawn red; the others were not touched.", s.count, span)
	}
	return c
}

// A strayError is a run that changed memory outside its outputs.
type strayError struct {
	problem string
	strays  []stray
}

func (e *strayError) Error() string {
	return "wrote outside its outputs for " + e.problem + ": " + e.detail()
}

func (e *strayError) detail() string {
	var parts []string
	for _, s := range e.strays {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}

// report fails r for the stray writes, with the problem's hint and a
// picture of the first.
func (e *strayError) report(r *Result, p problem, timing bool) {
	r.Correct, r.Error, r.Detail = false, "wrote outside its outputs for "+e.problem, e.detail()
	if timing {
		r.Error = "correct on the small problems, but at the timing size " + e.problem + " it wrote outside its outputs"
	}
	if h, ok := p.(hinter); ok {
		r.Hint = h.hint()
	}
	r.Pictures = &Pictures{Stray: e.strays[0].picture()}
}

// checkStrays reads the damage reports of a run of tasks ts on problems
// ps: the outputs without them, or a *strayError for the first problem
// whose run wrote outside its outputs.
func checkStrays(ps []problem, ts []wire.Task, src string, outs [][][]uint32) ([][][]uint32, error) {
	clean := make([][][]uint32, len(outs))
	for i := range outs {
		var found []stray
		clean[i], found = strays(ps[i], ts[i], src, outs[i])
		if len(found) > 0 {
			return nil, &strayError{problem: ps[i].String(), strays: found}
		}
	}
	return clean, nil
}

// runGuarded runs p's task on run with guard zones: its outputs, or a
// *strayError.
func (s *session) runGuarded(run Runner, p problem) ([][]uint32, error) {
	t := guarded(p.task())
	out, err := runOne(run, t)
	if err != nil {
		return nil, err
	}
	outs, err := checkStrays([]problem{p}, []wire.Task{t}, s.src, [][][]uint32{out})
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// asStray is err's *strayError, if it is one.
func asStray(err error) (*strayError, bool) {
	var se *strayError
	return se, errors.As(err, &se)
}
