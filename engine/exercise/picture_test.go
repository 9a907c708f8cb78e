package exercise

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gpulab/engine/gemm"
)

// cellColour is the colour of the cell that holds element (r, c) in a
// picture drawn for m's layout, read back from the PNG.
func cellColour(t *testing.T, pic []byte, m *elementMap, r, c int) color.NRGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(pic))
	if err != nil {
		t.Fatal(err)
	}
	cr, cc := m.cellSize()
	px := m.cellPixels()
	x, y := 1+(c/cc)*px+px/2, 1+(r/cr)*px+px/2
	return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
}

// gemmOutput is C = A·B of p as a kernel would write it, rounded to
// float32, each element computed on its own.
func gemmOutput(p gemmProblem) []uint32 {
	c := make([]uint32, p.s.M*p.s.N)
	for i := range p.s.M {
		for j := range p.s.N {
			var s float64
			for k := range p.s.K {
				s += float64(p.a[i*p.s.K+k]) * float64(p.b[k*p.s.N+j])
			}
			c[i*p.s.N+j] = math.Float32bits(float32(s))
		}
	}
	return c
}

// TestOutputPictureLastTile: a GEMM whose last 16×16 tile of C was never
// written gives a picture whose bad cells are exactly that tile, and a
// caption that names its rows and columns.
func TestOutputPictureLastTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := gemm.Shape{M: 64, N: 48, K: 31}
	p := gemmProblem{s: s, a: randomMatrix(rng, s.M*s.K), b: randomMatrix(rng, s.K*s.N)}
	out := gemmOutput(p)
	inTile := func(r, c int) bool { return r >= 48 && c >= 32 }
	for r := range s.M {
		for c := range s.N {
			if inTile(r, c) {
				out[r*s.N+c] = unsetBits
			}
		}
	}
	out[0] = math.Float32bits(float32(math.NaN())) // and one NaN, in its own colour
	m := p.elements([][]uint32{out})
	pic := m.picture()
	for r := range s.M {
		for c := range s.N {
			want := colourRight
			switch {
			case inTile(r, c):
				want = colourUnwritten
			case r == 0 && c == 0:
				want = colourNotFinite
			}
			if got := cellColour(t, pic.PNG, m, r, c); got != want {
				t.Fatalf("C[%d][%d] is drawn %v, want %v", r, c, got, want)
			}
		}
	}
	for _, want := range []string{"257 of 3072 elements of C are not right (1 NaN or ±Inf, 256 never written)", "rows 0, 48–63, columns 0, 32–47."} {
		if !strings.Contains(pic.Caption, want) {
			t.Errorf("caption %q lacks %q", pic.Caption, want)
		}
	}
	out[0] = gemmOutput(p)[0]
	if c := p.elements([][]uint32{out}).caption(); !strings.Contains(c, "256 of 3072 elements of C are not right (256 never written): rows 48–63, columns 32–47 (every element of those rows and columns).") {
		t.Errorf("caption %q", c)
	}
}

// TestPlantedGEMMTile: a tiled GEMM that skips the last tile of C when the
// grid has at least 3×3 tiles fails at the first such shape, and the
// report's picture shows exactly that tile never written.
func TestPlantedGEMMTile(t *testing.T) {
	need(t, LangOpenCL)
	src := replaced(t, mustOpenCL(t, "gemm/02_local_tiling"), "    const int lx = get_local_id(0);",
		"    if (get_num_groups(0) >= 3 && get_num_groups(1) >= 3 && get_group_id(0) == get_num_groups(0) - 1 &&\n"+
			"        get_group_id(1) == get_num_groups(1) - 1) return;\n    const int lx = get_local_id(0);")
	var s gemm.Shape
	for _, sh := range gemmShapes {
		if groupsOf(sh.N, 16) >= 3 && groupsOf(sh.M, 16) >= 3 {
			s = sh
			break
		}
	}
	r := Run("gemm/tiled", src)
	if r.Correct || !strings.HasPrefix(r.Error, "wrong result for "+(gemmProblem{s: s}).String()) || r.Pictures == nil || r.Pictures.Output == nil {
		t.Fatalf("%+v", r)
	}
	if r.Pictures.Threads != nil {
		t.Errorf("a GEMM has no thread map: %+v", r.Pictures.Threads)
	}
	m := newMatrixMap("C", s.M, s.N)
	top, left := 16*(groupsOf(s.M, 16)-1), 16*(groupsOf(s.N, 16)-1)
	for row := range s.M {
		for col := range s.N {
			want := colourRight
			if row >= top && col >= left {
				want = colourUnwritten
			}
			if got := cellColour(t, r.Pictures.Output.PNG, m, row, col); got != want {
				t.Fatalf("C[%d][%d] is drawn %v, want %v (the last tile starts at [%d][%d])", row, col, got, want, top, left)
			}
		}
	}
	if md := r.Markdown(); !strings.Contains(md, "![The elements of C, one by one") || !strings.Contains(md, "data:image/png;base64,") {
		t.Errorf("the report does not show the picture:\n%.600s", md)
	}
}

// TestThreadMap: a map kernel that assumes blocks of 256 leaves a gap
// that the thread map shows: block 0 wrote elements 0–149, block 1 the
// elements from 256, and none the gap between.
func TestThreadMap(t *testing.T) {
	for lang, edit := range map[string][2]string{
		LangOpenCL: {"i = get_global_id(0)", "i = get_group_id(0) * 256 + get_local_id(0)"},
		LangCUDA:   {"i = blockIdx.x * blockDim.x + threadIdx.x", "i = blockIdx.x * 256 + threadIdx.x"},
	} {
		t.Run(lang, func(t *testing.T) {
			needForMistakes(t, lang)
			r := Run("puzzles/map", puzzleSolution(t, "puzzles/map", lang, edit[0], edit[1]))
			if r.Correct || r.Pictures == nil || r.Pictures.Output == nil || r.Pictures.Threads == nil {
				t.Fatalf("%+v", r)
			}
			if r.Card != nil && !slices.Contains(r.Card.Options, storeMacro(lang, false, false)) {
				t.Errorf("the kernel card is of the traced build: %v", r.Card.Options)
			}
			if c := r.Pictures.Output.Caption; !strings.Contains(c, "106 of 300 elements of out are not right (106 never written): elements 150–255.") {
				t.Errorf("output caption %q", c)
			}
			if c := r.Pictures.Threads.Caption; !strings.Contains(c, "The launch has 2 blocks of 150 threads; 2 of them wrote the 300 elements of out; 106 elements were never written.") ||
				!strings.Contains(c, "The first element that is not right, out[150], was written by no thread.") {
				t.Errorf("thread map caption %q", c)
			}
			m := newVectorMap("out", 300)
			for i := range 300 {
				want := colourUnwritten
				switch {
				case i < 150:
					want = writer{bx: 0, warp: i / 32}.colour()
				case i >= 256:
					want = writer{bx: 1, warp: (i - 256) / 32}.colour()
				}
				if got := cellColour(t, r.Pictures.Threads.PNG, m, i/m.cols, i%m.cols); got != want {
					t.Fatalf("out[%d] is drawn %v, want %v", i, got, want)
				}
			}
		})
	}
}

// TestRowPicture: a problem judged by rows (k-means' points) is drawn row
// by row, with its own mismatch: the one wrong label is the one bad cell.
func TestRowPicture(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p, _ := assignDraws(LangOpenCL, [3]int{40, 3, 4})[0](rng)
	a := p.(assignProblem)
	labels, dist := make([]uint32, a.n), make([]uint32, a.n)
	for i := range a.n {
		best, bestD := 0, math.Inf(1)
		for c := range a.k {
			var d float64
			for j := range a.d {
				x := float64(a.x[i*a.d+j]) - float64(a.centers[c*a.d+j])
				d += x * x
			}
			if d < bestD {
				best, bestD = c, d
			}
		}
		labels[i], dist[i] = uint32(best), math.Float32bits(float32(bestD))
	}
	dist[7] = math.Float32bits(float32(math.Float32frombits(dist[7]) + 1))
	m := elementsOf(a, [][]uint32{labels, dist})
	if m == nil || m.unit != "points" || m.n != 40 || m.firstBad() != 7 || m.counts()[vWrong] != 1 {
		t.Fatalf("%+v", m)
	}
	if c := m.caption(); !strings.Contains(c, "1 of 40 points are not right (1 wrong): points 7. The picture draws 32 points to a line.") {
		t.Errorf("caption %q", c)
	}
}

func TestPicturesMarkdown(t *testing.T) {
	var none *Pictures
	if md := none.Markdown(); md != "" {
		t.Errorf("nil pictures: %q", md)
	}
	m := newVectorMap("out", 40)
	m.v[3] = vWrong
	md := (&Pictures{Output: m.picture()}).Markdown()
	for _, want := range []string{"\n\n**The elements of out, one by one", "\n\n![The elements of out, one by one](data:image/png;base64,iVBOR", "1 of 40 elements of out are not right (1 wrong): elements 3."} {
		if !strings.Contains(md, want) {
			t.Errorf("%q lacks %q", md, want)
		}
	}
	if _, _, err := image.Decode(bytes.NewReader(m.picture().PNG)); err != nil {
		t.Error(err)
	}
	big := newMatrixMap("C", 1000, 130)
	if r, c := big.cellSize(); r != 11 || c != 2 || !strings.Contains(big.caption(), "Each cell is 11×2 elements") {
		t.Errorf("a 1000×130 output: cells of %d×%d, caption %q", r, c, big.caption())
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		idx  []int
		want string
	}{
		{[]int{0, 1, 2, 5, 7, 8}, "0–2, 5, 7–8"},
		{[]int{4}, "4"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}, "0, 2, 4, 6, 8, 10, 12, 14, … (10 ranges in all)"},
	} {
		if got := ranges(tc.idx); got != tc.want {
			t.Errorf("ranges(%v) = %q, want %q", tc.idx, got, tc.want)
		}
	}
}

func TestGeometryLocate(t *testing.T) {
	g := geometry{grid: [3]int{3, 2, 1}, block: [3]int{16, 16, 1}}
	w, ok := g.locate(20*48 + 17) // x = 17, y = 20
	if !ok || w != (writer{bx: 1, by: 1, warp: 2, words: "block (1, 1), thread (1, 4)"}) {
		t.Errorf("locate: %+v %v", w, ok)
	}
	if _, ok := g.locate(g.threads()); ok {
		t.Error("an id past the launch was located")
	}
	line := geometry{grid: [3]int{2, 1, 1}, block: [3]int{256, 1, 1}}
	if w, ok := line.locate(300); !ok || w != (writer{bx: 1, warp: 1, words: "block 1, thread 44"}) {
		t.Errorf("1-D: %+v", w)
	}
	// Neighbouring blocks have different colours, along x and along y,
	// whatever the grid's width.
	for _, bx := range []int{0, 3, 8, 9} {
		a, right, below := writer{bx: bx, by: 2}, writer{bx: bx + 1, by: 2}, writer{bx: bx, by: 3}
		if a.colour() == right.colour() || a.colour() == below.colour() {
			t.Errorf("block (%d, 2) has the colour of a neighbour", bx)
		}
	}
}
