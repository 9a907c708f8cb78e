package exercise

import (
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/engine/exercise/wire"
	"gpulab/engine/nb/jupyter"
)

// puzzleNotebooks reads the committed puzzle notebooks: by file name, the
// source between the backticks of the cell marked for the exercise.
func puzzleNotebooks(t *testing.T) map[string]string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "..", "notebooks", "exercises", "p[0-9][0-9]-*.ipynb"))
	out := map[string]string{}
	for _, path := range paths {
		book, err := jupyter.ReadNotebook(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, cell := range book.Code() {
			for _, pz := range puzzles {
				if strings.Contains(cell.Source, "// EXERCISE "+pz.name+":") {
					src, err := Extract(cell.Source, pz.name)
					if err != nil {
						t.Fatalf("%s: %v", path, err)
					}
					out[filepath.Base(path)] = src
				}
			}
		}
	}
	return out
}

// TestPuzzleNotebooks: every puzzle has an OpenCL notebook and a CUDA
// twin, named in the syllabus's order, each with its flavour's TODO line;
// the skeleton as committed fails its check, on any machine, with a
// message naming the marked cell.
func TestPuzzleNotebooks(t *testing.T) {
	notebooks := puzzleNotebooks(t)
	if len(notebooks) != 2*len(puzzles) {
		t.Errorf("%d puzzle notebooks for %d puzzles: %v", len(notebooks), len(puzzles), notebooks)
	}
	for i, pz := range puzzles {
		prefix := "p" + string(rune('0'+(i+1)/10)) + string(rune('0'+(i+1)%10)) + "-"
		for _, lang := range []string{LangOpenCL, LangCUDA} {
			var file, src string
			for f, s := range notebooks {
				if strings.HasPrefix(f, prefix) && Language(s) == lang && strings.HasSuffix(f, "-cuda.ipynb") == (lang == LangCUDA) {
					file, src = f, s
				}
			}
			if file == "" {
				t.Errorf("%s: no %s notebook %s*", pz.name, lang, prefix)
				continue
			}
			if !strings.Contains(src, pz.todo[lang]) {
				t.Errorf("%s: the skeleton lacks the %s TODO line %q:\n%s", file, lang, pz.todo[lang], src)
			}
			r := Run(pz.name, src)
			want := "the exercise still has its TODO line (" + pz.todo[lang] + "): write your solution in the cell marked // EXERCISE " + pz.name + " and delete that line"
			if r.Correct || r.Unavailable || r.Error != want || r.Err() == nil {
				t.Errorf("%s as committed: %+v\nwant the error %q", file, r, want)
			}
		}
	}
}

// TestPuzzleTable checks each row against itself: its reference solution
// declares the kernel in both languages and uses the construct the puzzle
// requires; every checked shape round-trips through the course's shape
// notation, has a hint and a launch that covers its output; the shapes
// include one element and sizes that are multiples of no block.
func TestPuzzleTable(t *testing.T) {
	names := map[string]bool{}
	for _, pz := range puzzles {
		if names[pz.name] {
			t.Errorf("%s: registered twice", pz.name)
		}
		names[pz.name] = true
		e, err := Lookup(pz.name)
		if err != nil || e.Unit != UnitGBps || len(e.Flavors) != 2 {
			t.Fatalf("%s: %+v %v", pz.name, e, err)
		}
		for _, f := range e.Flavors {
			src, err := f.Solution()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(src, "`") {
				t.Errorf("%s/%s: the reference solution has a backtick, which would end the notebook cell's string", pz.name, f.Lang)
			}
			if Language(src) != f.Lang || !strings.Contains(src, " "+pz.entry.name+"(") || !strings.Contains(src, "STORE(") {
				t.Errorf("%s/%s: the reference solution does not declare %s or store through STORE", pz.name, f.Lang, pz.entry.name)
			}
			if n, ok := pz.needs[f.Lang]; ok && !n.met(src) {
				t.Errorf("%s/%s: the reference solution lacks what the puzzle requires: %s", pz.name, f.Lang, n.why)
			}
			if unfinished(src, f.TODO) || f.TODO == "" {
				t.Errorf("%s/%s: TODO line %q", pz.name, f.Lang, f.TODO)
			}
		}
		one, awkward := false, false
		for _, s := range pz.shapes {
			back, err := pz.parseShape(pz.shapeString(s))
			if err != nil || back != s {
				t.Errorf("%s: shape %v reads back as %v (%v)", pz.name, s, back, err)
			}
			if pz.hint(s) == "" {
				t.Errorf("%s: no hint for %s", pz.name, pz.shapeString(s))
			}
			d := pz.make(rand.New(rand.NewPCG(1, 2)), s)
			if g := pz.launch(s); g.threads() == 0 || len(d.want) != pz.layout(s).n {
				t.Errorf("%s %s: %d threads, %d outputs for a layout of %d", pz.name, pz.shapeString(s), g.threads(), len(d.want), pz.layout(s).n)
			}
			one = one || s[0] == 1 && (len(pz.dims) == 1 || s[1] <= 1)
			awkward = awkward || s[len(pz.dims)-1]%32 != 0
		}
		if !one || !awkward {
			t.Errorf("%s: the shapes %v lack one element or a size that is a multiple of no block", pz.name, pz.shapes)
		}
	}
	if _, err := puzzles[0].parseShape("n=0"); err == nil || !strings.Contains(err.Error(), "n=0: puzzles/map takes n from 1") {
		t.Errorf("n=0 for the map: %v", err)
	}
	if _, err := puzzles[2].parseShape("rows=3 width=4"); err == nil || !strings.Contains(err.Error(), `unknown field "width"`) {
		t.Errorf("a field of another puzzle: %v", err)
	}
}

// TestNamesNotPrefixes: no exercise's marker is the start of another's,
// since lab grade, lab exercise-fill and Extract find a cell by its
// marker.
func TestNamesNotPrefixes(t *testing.T) {
	for _, a := range Names() {
		for _, b := range Names() {
			if a != b && strings.HasPrefix(b, a) {
				t.Errorf("the marker of %s is the start of %s's", a, b)
			}
		}
	}
}

// TestStoreMacro: the store a check defines, and the traced one, which
// writes the storing thread's global id in each language's words.
func TestStoreMacro(t *testing.T) {
	for _, tc := range []struct {
		lang          string
		trace, intOut bool
		want          string
	}{
		{LangOpenCL, false, false, "-DSTORE(p,i,v)=((p)[(i)]=(v))"},
		{LangCUDA, false, true, "-DSTORE(p,i,v)=((p)[(i)]=(v))"},
		{LangOpenCL, true, false, "-DSTORE(p,i,v)=((void)(v),(p)[(i)]=as_float((int)(get_global_id(0)+get_global_id(1)*get_global_size(0))))"},
		{LangOpenCL, true, true, "-DSTORE(p,i,v)=((void)(v),(p)[(i)]=(int)(get_global_id(0)+get_global_id(1)*get_global_size(0)))"},
		{LangCUDA, true, false, "-DSTORE(p,i,v)=((void)(v),(p)[(i)]=__int_as_float((int)((blockIdx.x*blockDim.x+threadIdx.x)+(blockIdx.y*blockDim.y+threadIdx.y)*(gridDim.x*blockDim.x))))"},
	} {
		if got := storeMacro(tc.lang, tc.trace, tc.intOut); got != tc.want {
			t.Errorf("storeMacro(%s, %v, %v) = %s, want %s", tc.lang, tc.trace, tc.intOut, got, tc.want)
		}
		if strings.ContainsAny(tc.want, " \t") {
			t.Errorf("%s has a space: OpenCL's options are split at spaces", tc.want)
		}
	}
}

// puzzleSolution is the reference solution of a puzzle in lang, with each
// of edits (old, new pairs) applied once.
func puzzleSolution(t *testing.T, name, lang string, edits ...string) string {
	t.Helper()
	e, _ := Lookup(name)
	f, err := e.Flavor(lang)
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.Solution()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(edits); i += 2 {
		src = replaced(t, src, edits[i], edits[i+1])
	}
	return src
}

// TestPuzzleMistakes: the mistakes each puzzle is about fail with the
// element, the store past the end or the missing construct named, and a
// hint about the failing size, in each language where a device runs it.
func TestPuzzleMistakes(t *testing.T) {
	cl, cu := LangOpenCL, LangCUDA
	for _, tc := range []struct {
		name, lang, exercise string
		edits                []string // of the reference solution: old, new, ...
		want, hint           string
	}{
		{"the map assumes blocks of 256", cl, "puzzles/map", []string{"i = get_global_id(0)", "i = get_group_id(0) * 256 + get_local_id(0)"},
			"wrong result for n=300: first wrong element: out[150] (index 150) was never written", "launched as 2 blocks of 150 threads"},
		{"the map assumes blocks of 256", cu, "puzzles/map", []string{"i = blockIdx.x * blockDim.x + threadIdx.x", "i = blockIdx.x * 256 + threadIdx.x"},
			"wrong result for n=300: first wrong element: out[150] (index 150) was never written", "launched as 2 blocks of 150 threads"},
		{"no guard", cl, "puzzles/guard", []string{"if (i < n) ", ""},
			"wrong result for n=0: out has 0 elements, but your kernel also stored", "n=0: the launch still has one block of 256 threads"},
		{"no guard", cu, "puzzles/guard", []string{"if (i < n) ", ""},
			"wrong result for n=0: out has 0 elements, but your kernel also stored", "n=0: the launch still has one block of 256 threads"},
		{"the 2-D map swaps rows and columns", cl, "puzzles/2d-map", []string{"c = get_global_id(0), r = get_global_id(1)", "c = get_global_id(1), r = get_global_id(0)"},
			"wrong result for rows=1 cols=37: first wrong element: out[0][16] (index 16) was never written", "x along the columns"},
		{"the stencil has no halo", cl, "puzzles/stencil", []string{"if (t == 0) tile[0] = first > 0 ? x[first - 1] : 0.0f;", "if (t == 0) tile[0] = 0.0f;"},
			"wrong result for n=257: first wrong element: out[256] (index 256) is", "the halo"},
		{"the stencil has no halo", cu, "puzzles/stencil", []string{"if (t == 0) tile[0] = first > 0 ? x[first - 1] : 0.f;", "if (t == 0) tile[0] = 0.f;"},
			"wrong result for n=257: first wrong element: out[256] (index 256) is", "the halo"},
		{"the stencil reads global memory only", cl, "puzzles/stencil", []string{"__local float tile[BLOCK + 2];", "float tile[BLOCK + 2];"},
			"this puzzle is about local memory, and your kernel declares no __local array", ""},
		{"the warp sum goes through shared memory", cu, "puzzles/warp-reduce", []string{"v += __shfl_down_sync(0xffffffffu, v, offset)", "v += v"},
			"this puzzle is about warp shuffles", ""},
		{"every warp stores a sum", cu, "puzzles/warp-reduce", []string{"if (threadIdx.x % 32 == 0 && i < n)", "if (threadIdx.x % 32 == 0)"},
			"wrong result for n=0: sums has 0 elements, but your kernel also stored 8 past its end (the first at index 0)", "n=0 makes 0 sums"},
		{"the scan forgets the carry", cl, "puzzles/scan", []string{"STORE(out, i, carry + buf[t])", "STORE(out, i, buf[t])"},
			"wrong result for n=257: first wrong element: out[256] (index 256) is ", "each chunk's scan adds the total of all the chunks before it"},
		{"the scan forgets the carry", cu, "puzzles/scan", []string{"STORE(out, i, carry + buf[t])", "STORE(out, i, buf[t])"},
			"wrong result for n=257: first wrong element: out[256] (index 256) is ", "each chunk's scan adds the total of all the chunks before it"},
		{"the transpose copies", cl, "puzzles/transpose", []string{"tile[tx][ty]", "tile[ty][tx]"},
			"wrong result for rows=1 cols=37: first wrong element: out[1][0] (index 1) is ", "out[c][r] = in[r][c]"},
		{"the padded transpose moves one row in four", cl, "puzzles/bank-conflicts", []string{"j += BLOCK_ROWS) {\n        const int orow", "j += TILE) {\n        const int orow"},
			"wrong result for rows=1 cols=37: first wrong element: out[8][0] (index 8) was never written", "each thread moves 4 rows"},
		{"the padded transpose moves one row in four", cu, "puzzles/bank-conflicts", []string{"j += BLOCK_ROWS) {\n        const int orow", "j += TILE) {\n        const int orow"},
			"wrong result for rows=1 cols=37: first wrong element: out[8][0] (index 8) was never written", "each thread moves 4 rows"},
		{"the histogram skips empty bins", cl, "puzzles/histogram", []string{"STORE(hist, b0 * BINS + b, counts[b])", "if (counts[b] > 0) STORE(hist, b0 * BINS + b, counts[b])"},
			"wrong result for n=0: first wrong element: hist[0][0] (index 0) was never written", "0 for a bin no value fell into"},
		{"the histogram counts without atomics", cl, "puzzles/histogram", []string{"atomic_inc(&counts[values[i]])", "counts[values[i]]++"},
			"this puzzle is about atomics", ""},
		{"the histogram counts without atomics", cu, "puzzles/histogram", []string{"atomicAdd(&counts[values[i]], 1)", "counts[values[i]]++"},
			"this puzzle is about atomics", ""},
	} {
		t.Run(tc.lang+"/"+tc.name, func(t *testing.T) {
			needForMistakes(t, tc.lang)
			r := Run(tc.exercise, puzzleSolution(t, tc.exercise, tc.lang, tc.edits...))
			if got := r.Error + ": " + r.Detail; r.Correct || !strings.Contains(got, tc.want) || !strings.Contains(r.Hint, tc.hint) {
				t.Errorf("got %q, hint %q\nwant %q and the hint %q", got, r.Hint, tc.want, tc.hint)
			}
		})
	}
}

// TestPuzzlesServeJudge grades puzzles' reference solutions as lab grade
// does, a worker (Serve) over a connection and the judging side (Judge):
// empty inputs, int inputs and 2-D launches cross the wire.
func TestPuzzlesServeJudge(t *testing.T) {
	need(t, LangOpenCL)
	for _, name := range []string{"puzzles/guard", "puzzles/scan", "puzzles/histogram"} {
		e, _ := Lookup(name)
		f, _ := e.Flavor(LangOpenCL)
		infos, _ := f.Devices()
		src, _ := f.Solution()
		g, w := net.Pipe()
		served := make(chan error, 1)
		go func() { served <- Serve(w) }()
		conn, err := wire.Dial(g, wire.Setup{Exercise: name, Lang: f.Lang, Device: infos[0].ID, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		client, err := wire.NewClient(conn, false)
		if err != nil {
			t.Fatal(err)
		}
		r := e.Judge(f, src, infos[0], client)
		client.Close()
		if err := <-served; err != nil {
			t.Errorf("%s: the worker: %v", name, err)
		}
		g.Close()
		if !r.Correct || !r.Solution || r.GFLOPS <= 0 {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
