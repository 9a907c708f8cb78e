package exercise

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"math"
	"slices"
	"strings"

	"gpulab/engine/exercise/wire"
)

// Pictures show what went wrong in a failed check at a glance. The output
// picture is the failing problem's output as a small grid, each cell
// coloured by whether its elements are right, wrong, not finite or never
// written, so that "the last tile is missing", "rows past 64 are wrong" or
// "one row in 32" stand out. A puzzle adds its thread map: which thread
// (work-item) wrote which element, from one more run of the student's
// kernel built so that each store writes the storing thread's id instead
// of the value. Pictures are drawn from outputs the judge distrusts
// anyway; no verdict ever comes from them.
type Pictures struct {
	Output  *Picture `json:"output,omitempty"`
	Threads *Picture `json:"threads,omitempty"`
	// Stray shows where a kernel wrote outside its outputs: past an
	// array's end, before its start, or into an input (guard.go).
	Stray *Picture `json:"stray,omitempty"`
}

// Picture is one small PNG and what it shows, in words.
type Picture struct {
	Title   string `json:"title"`
	Caption string `json:"caption"`
	PNG     []byte `json:"png,omitempty"`
}

// Markdown shows the pictures, each its title, the image inline (a data
// URI, so that the report is one Markdown output) and its caption; "" for
// none.
func (p *Pictures) Markdown() string {
	if p == nil {
		return ""
	}
	var parts []string
	for _, pic := range []*Picture{p.Stray, p.Output, p.Threads} {
		if pic == nil {
			continue
		}
		s := "**" + pic.Title + "**"
		if len(pic.PNG) > 0 {
			alt, _, _ := strings.Cut(pic.Title, " (")
			s += fmt.Sprintf("\n\n![%s](data:image/png;base64,%s)", alt, base64.StdEncoding.EncodeToString(pic.PNG))
		}
		if pic.Caption != "" {
			s += "\n\n" + pic.Caption
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return "\n\n" + strings.Join(parts, "\n\n")
}

// unsetBits is what every output element holds before the launch
// (wire.Out): an element that still holds it was never written.
const unsetBits = math.MaxUint32

// verdict is what the judge makes of one output element.
type verdict uint8

const (
	vRight     verdict = iota
	vWrong             // a finite value outside the tolerance
	vNotFinite         // NaN or ±Inf, written by the kernel
	vUnwritten         // still unsetBits
	vNone              // no element: the rest of a vector's last line
)

// judgeFloat is the verdict on a float element (as wrongValue judges it).
func judgeFloat(bits uint32, want, tol float64) verdict {
	g := math.Float32frombits(bits)
	switch {
	case bits == unsetBits:
		return vUnwritten
	case math.IsNaN(float64(g)) || math.IsInf(float64(g), 0):
		return vNotFinite
	case wrongValue(g, want, tol) != "":
		return vWrong
	}
	return vRight
}

// elementMap is an output judged element by element, laid out as the
// student thinks of it: a rows × cols matrix, or a vector of n elements
// drawn cols to a line.
type elementMap struct {
	name       string // the output, as the messages name it ("C", "out"); "" for a map of the check's rows
	unit       string // what an element is, in the plural: "elements", or for rows "points", "tokens"...
	rows, cols int
	vector     bool
	n          int
	v          []verdict // n
}

// newMatrixMap is a rows × cols output, all right until judged.
func newMatrixMap(name string, rows, cols int) *elementMap {
	return &elementMap{name: name, unit: "elements", rows: rows, cols: cols, n: rows * cols, v: make([]verdict, rows*cols)}
}

// what is what the map's elements are: "elements of C", "points".
func (m *elementMap) what() string {
	if m.name == "" {
		return m.unit
	}
	return m.unit + " of " + m.name
}

// newVectorMap is an output of n elements, drawn a warp's worth (32) to a
// line, or a block's (256) when that would take more than maxCells lines.
func newVectorMap(name string, n int) *elementMap {
	cols := 32
	if n > 32*maxCells {
		cols = 256
	}
	return &elementMap{name: name, unit: "elements", rows: groupsOf(n, cols), cols: cols, vector: true, n: n, v: make([]verdict, n)}
}

// maxCells is the most cells a picture has along a side: larger outputs
// are drawn with several elements to a cell.
const maxCells = 96

// at names element i, as the check's messages do.
func (m *elementMap) at(i int) string {
	if m.vector {
		return fmt.Sprintf("%s[%d]", m.name, i)
	}
	return fmt.Sprintf("%s[%d][%d]", m.name, i/m.cols, i%m.cols)
}

// firstBad is the index of the first element that is not right, or −1.
func (m *elementMap) firstBad() int {
	for i, v := range m.v {
		if v != vRight {
			return i
		}
	}
	return -1
}

// counts returns how many elements have each verdict.
func (m *elementMap) counts() [vNone]int {
	var c [vNone]int
	for _, v := range m.v {
		c[v]++
	}
	return c
}

// where says which elements are not right: index ranges for a vector;
// for a matrix the rows and the columns that hold them, and whether they
// fill that block.
func (m *elementMap) where() string {
	var bad []int
	rowBad, colBad := map[int]bool{}, map[int]bool{}
	for i, v := range m.v {
		if v != vRight {
			bad = append(bad, i)
			rowBad[i/m.cols], colBad[i%m.cols] = true, true
		}
	}
	if len(bad) == 0 {
		return ""
	}
	if m.vector {
		return m.unit + " " + ranges(bad)
	}
	s := fmt.Sprintf("rows %s, columns %s", ranges(sortedKeys(rowBad)), ranges(sortedKeys(colBad)))
	if len(bad) == len(rowBad)*len(colBad) && len(bad) > 1 {
		s += " (every element of those rows and columns)"
	}
	return s
}

// caption is the picture's words: how many elements are not right, of
// which kind, and where.
func (m *elementMap) caption() string {
	c := m.counts()
	bad := m.n - c[vRight]
	s := fmt.Sprintf("%d of %d %s are not right", bad, m.n, m.what())
	var kinds []string
	for _, k := range []struct {
		v    verdict
		what string
	}{{vWrong, "wrong"}, {vNotFinite, "NaN or ±Inf"}, {vUnwritten, "never written"}} {
		if c[k.v] > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", c[k.v], k.what))
		}
	}
	if len(kinds) > 0 {
		s += " (" + strings.Join(kinds, ", ") + ")"
	}
	if w := m.where(); w != "" {
		s += ": " + w
	}
	s += "."
	if m.vector {
		s += fmt.Sprintf(" The picture draws %d %s to a line.", m.cols, m.unit)
	}
	if r, c := m.cellSize(); r*c > 1 {
		s += fmt.Sprintf(" Each cell is %d×%d elements, coloured by the share of them that is not right.", r, c)
	}
	return s
}

// cellSize is the number of element rows and columns per cell.
func (m *elementMap) cellSize() (int, int) {
	return groupsOf(m.rows, maxCells), groupsOf(m.cols, maxCells)
}

// Colours of the pictures.
var (
	colourRight     = color.NRGBA{199, 230, 201, 255}
	colourWrong     = color.NRGBA{229, 57, 53, 255}
	colourNotFinite = color.NRGBA{142, 36, 170, 255}
	colourUnwritten = color.NRGBA{66, 66, 66, 255}
	colourNone      = color.NRGBA{255, 255, 255, 255}
	colourUntraced  = color.NRGBA{0, 0, 0, 255}
	// blockColours tell a block from its neighbours in a thread map.
	blockColours = []color.NRGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}}
)

// picture draws the map: each cell the colour of its elements' verdicts,
// blended from right towards the commonest bad verdict by the share of
// bad elements in it.
func (m *elementMap) picture() *Picture {
	cr, cc := m.cellSize()
	return &Picture{
		Title:   fmt.Sprintf("The %s, one by one (green: right, red: wrong, purple: NaN or ±Inf, dark grey: never written)", m.what()),
		Caption: m.caption(),
		PNG: m.draw(func(r0, c0 int) color.NRGBA {
			var count [vNone + 1]int
			for r := r0; r < min(r0+cr, m.rows); r++ {
				for c := c0; c < min(c0+cc, m.cols); c++ {
					count[m.verdictAt(r, c)]++
				}
			}
			total := count[vRight] + count[vWrong] + count[vNotFinite] + count[vUnwritten]
			if total == 0 {
				return colourNone
			}
			worst, bad := vWrong, 0
			for _, v := range []verdict{vWrong, vNotFinite, vUnwritten} {
				bad += count[v]
				if count[v] > count[worst] {
					worst = v
				}
			}
			if bad == 0 {
				return colourRight
			}
			to := map[verdict]color.NRGBA{vWrong: colourWrong, vNotFinite: colourNotFinite, vUnwritten: colourUnwritten}[worst]
			return blend(colourRight, to, 0.4+0.6*float64(bad)/float64(total))
		}),
	}
}

// verdictAt is the verdict of the element drawn at row r, column c.
func (m *elementMap) verdictAt(r, c int) verdict {
	i := r*m.cols + c
	if i >= m.n {
		return vNone
	}
	return m.v[i]
}

// draw renders a cell grid of the map's layout as a PNG, colour(r0, c0)
// giving the colour of the cell whose first element is at r0, c0.
func (m *elementMap) draw(colour func(r0, c0 int) color.NRGBA) []byte {
	cr, cc := m.cellSize()
	gr, gc := groupsOf(m.rows, cr), groupsOf(m.cols, cc)
	if m.rows == 0 || m.cols == 0 {
		return nil
	}
	px := m.cellPixels()
	img := image.NewNRGBA(image.Rect(0, 0, gc*px+2, gr*px+2))
	for y := range img.Bounds().Dy() { // a one-pixel frame
		for x := range img.Bounds().Dx() {
			img.SetNRGBA(x, y, color.NRGBA{120, 120, 120, 255})
		}
	}
	for r := range gr {
		for c := range gc {
			col := colour(r*cr, c*cc)
			for y := range px {
				for x := range px {
					img.SetNRGBA(1+c*px+x, 1+r*px+y, col)
				}
			}
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil // an in-memory image always encodes
	}
	return b.Bytes()
}

// cellPixels is the side of a cell in pixels: the picture is at most
// about 384 pixels wide, a cell 3 to 16 pixels; a one-pixel frame
// surrounds the cells.
func (m *elementMap) cellPixels() int {
	cr, cc := m.cellSize()
	return min(16, max(3, 384/max(groupsOf(m.rows, cr), groupsOf(m.cols, cc))))
}

// blend is a + (b − a)·t, channel by channel.
func blend(a, b color.NRGBA, t float64) color.NRGBA {
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + (float64(y)-float64(x))*t)) }
	return color.NRGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
}

// ranges writes sorted indices as ranges: "0–15, 32–47, 64"; after eight
// ranges, how many more there are.
func ranges(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", idx[i], idx[j]))
		} else {
			parts = append(parts, fmt.Sprint(idx[i]))
		}
		i = j + 1
	}
	if len(parts) > 8 {
		return strings.Join(parts[:8], ", ") + fmt.Sprintf(", … (%d ranges in all)", len(parts))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(set map[int]bool) []int {
	return slices.Sorted(maps.Keys(set))
}

// pictures draws a failed problem's pictures from its outputs: the output
// element by element (nil if the problem cannot be judged so), and for a
// traced problem the thread map, from one more run of the student's code.
func (s *session) pictures(p problem, out [][]uint32) *Pictures {
	m := elementsOf(p, out)
	if m == nil || m.n == 0 {
		return nil
	}
	pics := &Pictures{Output: m.picture()}
	if t, ok := p.(traced); ok {
		pics.Threads = s.threadPicture(t, m)
	}
	return pics
}

// ---- the thread map ----

// A traced problem can run once more to draw its thread map: traceTask is
// its task built so that every store through STORE writes the id of the
// storing thread (its global linear id: x + y·global width) in place of
// the value.
type traced interface {
	traceTask() wire.Task
}

// geometry is a launch's shape: blocks (work-groups) per dimension and
// threads (work-items) per block.
type geometry struct{ grid, block [3]int }

// threads is how many threads the launch has.
func (g geometry) threads() int {
	n := 1
	for i := range 3 {
		n *= g.grid[i] * g.block[i]
	}
	return n
}

// twoD says whether the launch has a second dimension.
func (g geometry) twoD() bool { return g.grid[1] > 1 || g.block[1] > 1 }

// writer is a thread of a launch: its block's position, its warp in the
// block (32 threads, x fastest), and the words for it.
type writer struct {
	bx, by, warp int
	words        string
}

// colour is the writer's colour in a thread map: one per block, so that
// neighbouring blocks differ along x and along y, lighter for odd warps.
func (w writer) colour() color.NRGBA {
	c := blockColours[(w.bx+5*w.by)%len(blockColours)]
	if w.warp%2 == 1 {
		c = blend(c, colourNone, 0.45)
	}
	return c
}

// locate finds the thread of a global linear id; ok is false for an id
// outside the launch.
func (g geometry) locate(id int) (w writer, ok bool) {
	if id < 0 || id >= g.threads() {
		return w, false
	}
	width := g.grid[0] * g.block[0]
	x, y := id%width, id/width
	tx, ty := x%g.block[0], y%g.block[1]
	w = writer{bx: x / g.block[0], by: y / g.block[1], warp: (ty*g.block[0] + tx) / 32}
	w.words = fmt.Sprintf("block %d, thread %d", w.bx, tx)
	if g.twoD() {
		w.words = fmt.Sprintf("block (%d, %d), thread (%d, %d)", w.bx, w.by, tx, ty)
	}
	return w, true
}

// threadPicture runs the problem's traced task on the student's code and
// draws who wrote each element, laid out as m; the caption names the
// writer of m's first bad element. A trace that cannot run says why.
func (s *session) threadPicture(t traced, m *elementMap) *Picture {
	task := t.traceTask()
	g := geometry{grid: wire.Dims(task.Grid), block: wire.Dims(task.Block)}
	pic := &Picture{Title: "The thread map: which thread wrote each element (a colour per block, repeating; lighter: odd warps of 32; dark grey: never written; black: not written through STORE)"}
	// The traced build stores ids, not values: it is not the kernel the
	// check ran, so the kernel card's recorder does not see it.
	run := s.student
	if r, ok := run.(*recorder); ok {
		run = r.Runner
	}
	out, err := runOne(run, task)
	if err != nil || len(out) == 0 || len(out[0]) < m.n {
		pic.Caption = fmt.Sprintf("The traced run failed, so there is no thread map: %v", err)
		return pic
	}
	ids := out[0][:m.n]
	pic.Caption = threadCaption(ids, g, m)
	pic.PNG = m.draw(func(r0, c0 int) color.NRGBA {
		i := r0*m.cols + c0
		if i >= m.n {
			return colourNone
		}
		if ids[i] == unsetBits {
			return colourUnwritten
		}
		w, ok := g.locate(int(int32(ids[i])))
		if !ok {
			return colourUntraced
		}
		return w.colour()
	})
	return pic
}

// threadCaption says how many blocks wrote the output, what was never
// written or written around STORE, and who wrote the first bad element.
func threadCaption(ids []uint32, g geometry, m *elementMap) string {
	blocks := map[[2]int]bool{}
	unwritten, untraced := 0, 0
	for _, id := range ids {
		if id == unsetBits {
			unwritten++
			continue
		}
		if w, ok := g.locate(int(int32(id))); ok {
			blocks[[2]int{w.bx, w.by}] = true
		} else {
			untraced++
		}
	}
	s := fmt.Sprintf("The launch has %d blocks of %d threads; %d of them wrote the %d %s", g.grid[0]*g.grid[1]*g.grid[2], g.block[0]*g.block[1]*g.block[2], len(blocks), m.n, m.what())
	if unwritten > 0 {
		s += fmt.Sprintf("; %d elements were never written", unwritten)
	}
	if untraced > 0 {
		s += fmt.Sprintf("; %d were written without STORE(...), so the map cannot say by whom", untraced)
	}
	s += "."
	if i := m.firstBad(); i >= 0 {
		switch w, ok := g.locate(int(int32(ids[i]))); {
		case ids[i] == unsetBits:
			s += fmt.Sprintf(" The first element that is not right, %s, was written by no thread.", m.at(i))
		case ok:
			s += fmt.Sprintf(" The first element that is not right, %s, was written by %s.", m.at(i), w.words)
		}
	}
	if r, c := m.cellSize(); r*c > 1 {
		s += " Each cell shows the writer of its first element."
	}
	return s
}
