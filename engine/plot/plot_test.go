package plot

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/janpfeifer/gonb/gonbui/protocol"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Sample figures of each kind, shared by the tests.
func sampleBars() *Figure {
	return Bars("SGEMM 4096³ speedup", "speedup over naive",
		[]string{"naive", "coalesced", "smem tiled", "register tiled", "cuBLAS"},
		[]float64{1, 2.7, 6.3, 8.1, 9.6}).WithReference(1, "naive = 1x")
}

func sampleLines() *Figure {
	sizes := []float64{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24}
	return Lines("Copy bandwidth vs size", "bytes", "GB/s",
		Series{Name: "naive copy", X: sizes, Y: []float64{2, 8, 31, 120, 420, 1500, 2900, 3300}},
		Series{Name: "vectorized float4", X: sizes, Y: []float64{3, 11, 45, 170, 650, 2200, 3900, 4150}},
		Series{Name: "cudaMemcpy", X: sizes, Y: []float64{1.5, 6, 25, 100, 380, 1400, 3600, 4250}},
	).LogX().WithReference(4800, "HBM3e peak")
}

func sampleRoofline() *Figure {
	return Roofline("H200 FP32 roofline", 67000, 4800, []RooflinePoint{
		{Name: "naive SGEMM", Intensity: 0.5, GFLOPS: 2100},
		{Name: "tiled SGEMM", Intensity: 16, GFLOPS: 19000},
		{Name: "cuBLAS SGEMM", Intensity: 340, GFLOPS: 51200},
		{Name: "k-means distances", Intensity: 60, GFLOPS: 38000},
		{Name: "SpGEMM", Intensity: 0.12, GFLOPS: 14.6},
	})
}

func samples() map[string]*Figure {
	return map[string]*Figure{
		"bars":     sampleBars(),
		"lines":    sampleLines(),
		"roofline": sampleRoofline(),
	}
}

func TestPNGSizes(t *testing.T) {
	cases := []struct {
		name         string
		fig          *Figure
		w, h         int
		wantW, wantH int
	}{
		{"bars default", sampleBars(), 0, 0, DefaultWidth, DefaultHeight},
		{"bars wide", sampleBars(), 1200, 500, 1200, 500},
		{"lines default", sampleLines(), 0, 0, 800, 480},
		{"lines linear small", Lines("t", "n", "ms", Series{Name: "a", X: []float64{1, 2, 3}, Y: []float64{3, 1, 2}}), 320, 200, 320, 200},
		{"lines logy", Lines("t", "n", "ms", Series{Name: "a", X: []float64{1, 2, 3}, Y: []float64{3, 10, 2000}}).LogY(), 640, 400, 640, 400},
		{"roofline default", sampleRoofline(), 0, 0, 800, 480},
		{"roofline hi-res", sampleRoofline(), 1600, 960, 1600, 960},
		{"roofline no points", Roofline("roofs only", 67000, 4800, nil), 800, 480, 800, 480},
		{"bars negative", Bars("delta", "ms saved", []string{"a", "b", "c"}, []float64{-2, 0, 3.5}), 0, 0, 800, 480},
		{"bars single", Bars("one", "", []string{"only"}, []float64{42}), 0, 0, 800, 480},
		{"bars many", Bars("many", "speedup", manyLabels(24), ramp(24)), 0, 0, 800, 480},
		{"lines single point", Lines("one point", "x", "y", Series{Name: "p", X: []float64{5}, Y: []float64{5}}), 0, 0, 800, 480},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.fig.PNG(tc.w, tc.h)
			if err != nil {
				t.Fatalf("PNG: %v", err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := img.Bounds().Size(); got.X != tc.wantW || got.Y != tc.wantH {
				t.Fatalf("size %v, want %dx%d", got, tc.wantW, tc.wantH)
			}
			// Not blank: some pixels differ from the white background.
			nonWhite := 0
			bd := img.Bounds()
			for y := bd.Min.Y; y < bd.Max.Y; y += 3 {
				for x := bd.Min.X; x < bd.Max.X; x += 3 {
					r, g, b, _ := img.At(x, y).RGBA()
					if r < 0xf000 || g < 0xf000 || b < 0xf000 {
						nonWhite++
					}
				}
			}
			if nonWhite < 100 {
				t.Fatalf("image looks blank (%d non-white samples)", nonWhite)
			}
		})
	}
}

func manyLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "variant number " + string(rune('A'+i%26))
	}
	return out
}

func ramp(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 0.5 + float64(i)*0.37
	}
	return out
}

func TestPNGBadSize(t *testing.T) {
	for _, sz := range [][2]int{{-1, 480}, {10, 10}, {100000, 480}} {
		if _, err := sampleBars().PNG(sz[0], sz[1]); err == nil {
			t.Errorf("PNG(%d, %d): want error", sz[0], sz[1])
		}
	}
}

var externalScript = regexp.MustCompile(`(?i)<script[^>]*\bsrc\s*=`)

func TestHTML(t *testing.T) {
	cases := []struct {
		name string
		fig  *Figure
		want []string
	}{
		{"bars", sampleBars(), []string{"naive", "coalesced", "smem tiled", "register tiled", "cuBLAS", "9.6x", "naive = 1x"}},
		{"lines", sampleLines(), []string{"naive copy", "vectorized float4", "cudaMemcpy", `"type":"log"`, "HBM3e peak"}},
		{"roofline", sampleRoofline(), []string{"naive SGEMM", "tiled SGEMM", "cuBLAS SGEMM", "k-means distances", "SpGEMM", "ridge point", "ridge: 14 FLOP/B"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.fig.HTML()
			if err != nil {
				t.Fatalf("HTML: %v", err)
			}
			page := string(b)
			if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, "</html>") {
				t.Errorf("not a complete page")
			}
			if !strings.Contains(page, echartsJS) || len(echartsJS) < 500_000 {
				t.Errorf("echarts library not inlined")
			}
			if !strings.Contains(page, "echarts.init(") {
				t.Errorf("no echarts.init call")
			}
			if loc := externalScript.FindStringIndex(page); loc != nil {
				t.Errorf("external script reference: %q", page[loc[0]:min(loc[1]+60, len(page))])
			}
			if strings.Contains(page, "go-echarts.github.io") || strings.Contains(page, "cdn.") {
				t.Errorf("page references a remote asset host")
			}
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

// Everything between <script> and </script> must stay inside the script:
// user text such as "</script>" in a label must not end it early.
func TestHTMLEscapesUserText(t *testing.T) {
	evil := `</script><script>alert(1)</script><!--`
	fig := Bars(evil, evil, []string{evil, "b"}, []float64{1, 2})
	b, err := fig.HTML()
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	// The echarts library, the helpers, the chart script and the resize
	// hook: no other end tag, and no "<!--", which would change how the HTML
	// parser reads the rest of a script.
	if n := strings.Count(strings.ToLower(page), "</script"); n != 4 {
		t.Fatalf("%d </script tags, want 4", n)
	}
	if strings.Contains(page, "<!--") {
		t.Fatalf("page contains <!--")
	}
	if !strings.Contains(page, `<\/script><script>alert(1)<\/script><\!--`) {
		t.Fatalf("escaped label not found")
	}
}

func TestHTMLDeterministic(t *testing.T) {
	a, err := sampleRoofline().HTML()
	if err != nil {
		t.Fatal(err)
	}
	b, err := sampleRoofline().HTML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("two renders of the same figure differ")
	}
}

func TestNotebookHTML(t *testing.T) {
	fig := sampleLines()
	one, err := fig.notebookHTML()
	if err != nil {
		t.Fatal(err)
	}
	two, err := fig.notebookHTML()
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`<div class="gpulab-chart" id="(gpulab_[a-z0-9_]+)"`)
	m1, m2 := id.FindStringSubmatch(one), id.FindStringSubmatch(two)
	if m1 == nil || m2 == nil || m1[1] == m2[1] {
		t.Fatalf("want a chart div with a new id on each call, got %v and %v", m1, m2)
	}
	for _, want := range []string{
		"<em>Interactive chart",               // what an untrusted notebook shows in the div
		"window.gpulabEcharts = new Promise",  // echarts loaded once per page
		"'" + EchartsURL + "'",                // from the lab's server, offline
		"window.requirejs(['gpulab-echarts']", // the classic notebook's RequireJS
		"echarts.init(document.getElementById('" + m1[1] + "')",
		"var gpulab = {meta: ", // the tooltip helpers, local to this chart
	} {
		if !strings.Contains(one, want) {
			t.Errorf("fragment lacks %q", want)
		}
	}
	if strings.Contains(one, "echarts.min.js */") || len(one) > 64<<10 {
		t.Errorf("fragment inlines echarts (%d bytes)", len(one))
	}
	if n := strings.Count(one, "</script>"); n != 1 {
		t.Errorf("fragment has %d script end tags, want 1", n)
	}
}

func TestSave(t *testing.T) {
	dir := t.TempDir()
	for name, fig := range samples() {
		for _, ext := range []string{".png", ".html", ".PNG"} {
			p := filepath.Join(dir, name+ext)
			if err := fig.Save(p); err != nil {
				t.Fatalf("Save(%s): %v", p, err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			switch strings.ToLower(ext) {
			case ".png":
				if _, err := png.Decode(bytes.NewReader(b)); err != nil {
					t.Errorf("%s: not a PNG: %v", p, err)
				}
			case ".html":
				if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
					t.Errorf("%s: not HTML", p)
				}
			}
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %v, want 0644", p, st.Mode().Perm())
			}
		}
	}
	// Overwriting works, and no temporary files are left behind.
	if err := sampleBars().Save(filepath.Join(dir, "bars.png")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if len(entries) != 9 {
		t.Errorf("%d files, want 9", len(entries))
	}
}

func TestSaveRejects(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		fig  *Figure
		path string
		want string
	}{
		{"jpg", sampleBars(), filepath.Join(dir, "a.jpg"), "unsupported extension"},
		{"no extension", sampleBars(), filepath.Join(dir, "a"), "unsupported extension"},
		{"svg", sampleBars(), filepath.Join(dir, "a.svg"), "unsupported extension"},
		{"invalid figure png", Bars("broken", "", []string{"a"}, nil), filepath.Join(dir, "b.png"), "1 labels but 0 values"},
		{"invalid figure html", Bars("broken", "", []string{"a"}, nil), filepath.Join(dir, "b.html"), "1 labels but 0 values"},
		{"missing dir", sampleBars(), filepath.Join(dir, "no", "such", "dir", "c.png"), "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.fig.Save(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Save(%s) = %v, want error containing %q", tc.path, err, tc.want)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("rejected saves left files: %v", entries)
	}
}

func TestInvalid(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	ok := []float64{1, 2, 3}
	cases := []struct {
		name string
		fig  *Figure
		want string
	}{
		{"bars mismatched", Bars("Speedups", "x", []string{"a", "b"}, ok), "2 labels but 3 values"},
		{"bars empty", Bars("Speedups", "x", nil, nil), "no bars"},
		{"bars NaN", Bars("Speedups", "x", []string{"a", "b", "c"}, []float64{1, nan, 2}), `bar "b" (index 1) is NaN`},
		{"bars Inf", Bars("Speedups", "x", []string{"a", "b", "c"}, []float64{1, 2, inf}), "+Inf"},
		{"bars log x", Bars("Speedups", "x", []string{"a"}, []float64{1}).LogX(), "logarithmic x axis is not supported"},
		{"bars log zero", Bars("Speedups", "x", []string{"a", "b"}, []float64{1, 0}).LogY(), `bar "b" (index 1) is 0: a logarithmic y axis needs positive values`},
		{"bars log at least", Bars("Speedups", "x", []string{"a"}, []float64{1}).LogY().WithYAtLeast(5), "WithYAtLeast is for a linear y axis"},
		{"bars NaN reference", Bars("Speedups", "x", []string{"a"}, []float64{1}).WithReference(nan, "r"), "reference line value is NaN"},
		{"lines none", Lines("Throughput", "n", "GB/s"), "no series"},
		{"lines mismatched", Lines("Throughput", "n", "GB/s", Series{Name: "s", X: ok, Y: ok[:2]}), `series "s": X has 3 points but Y has 2`},
		{"lines empty series", Lines("Throughput", "n", "GB/s", Series{Name: "s"}), `series "s" has no points`},
		{"lines NaN", Lines("Throughput", "n", "GB/s", Series{Name: "s", X: ok, Y: []float64{1, nan, 2}}), "Y[1] is NaN"},
		{"lines Inf x", Lines("Throughput", "n", "GB/s", Series{Name: "s", X: []float64{1, 2, inf}, Y: ok}), "X[2] is +Inf"},
		{"lines logx zero", Lines("Throughput", "n", "GB/s", Series{Name: "s", X: []float64{0, 1, 2}, Y: ok}).LogX(), "X[0] = 0 is not positive"},
		{"lines logy negative", Lines("Throughput", "n", "GB/s", Series{X: ok, Y: []float64{1, -2, 3}}).LogY(), `series "series 1": Y[1] = -2 is not positive`},
		{"roofline zero peak", Roofline("Roof", 0, 4800, nil), "peak compute"},
		{"roofline negative bw", Roofline("Roof", 67000, -1, nil), "peak bandwidth"},
		{"roofline NaN peak", Roofline("Roof", nan, 4800, nil), "NaN"},
		{"roofline zero intensity", Roofline("Roof", 67000, 4800, []RooflinePoint{{Name: "k", Intensity: 0, GFLOPS: 5}}), `point "k": intensity 0`},
		{"roofline negative gflops", Roofline("Roof", 67000, 4800, []RooflinePoint{{Name: "k", Intensity: 2, GFLOPS: -5}}), `point "k": -5 GFLOP/s`},
		{"roofline Inf gflops", Roofline("Roof", 67000, 4800, []RooflinePoint{{Name: "k", Intensity: 2, GFLOPS: inf}}), "+Inf"},
		{"zero figure", &Figure{Title: "Zero"}, "empty Figure"},
		{"nil figure", nil, "nil *Figure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error, want %q", what, tc.want)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("%s: %v does not wrap ErrInvalid", what, err)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %q lacks %q", what, err, tc.want)
				}
				if tc.fig != nil && tc.fig.Title != "" && !strings.Contains(err.Error(), tc.fig.Title) {
					t.Errorf("%s: error %q does not name the figure %q", what, err, tc.fig.Title)
				}
			}
			_, err := tc.fig.PNG(0, 0)
			check("PNG", err)
			_, err = tc.fig.HTML()
			check("HTML", err)
			check("Save", tc.fig.Save(filepath.Join(t.TempDir(), "x.png")))
			t.Setenv(EnvPlotDir, t.TempDir())
			paths, err := tc.fig.Show()
			check("Show", err)
			if len(paths) != 0 {
				t.Errorf("Show wrote %v for an invalid figure", paths)
			}
		})
	}
}

func TestInputsAreCopied(t *testing.T) {
	labels := []string{"a", "b"}
	values := []float64{1, 2}
	fig := Bars("copy", "", labels, values)
	values[1] = math.NaN()
	labels = append(labels[:1], "c", "d")
	_ = labels
	if _, err := fig.PNG(0, 0); err != nil {
		t.Fatalf("figure changed with its caller's slices: %v", err)
	}
}

func TestRidge(t *testing.T) {
	cases := []struct {
		peak, bw, want float64
	}{
		{67000, 4800, 67000.0 / 4800},
		{51200, 3350, 51200.0 / 3350},
		{1000, 1000, 1},
		{100, 400, 0.25},
	}
	for _, tc := range cases {
		if got := Ridge(tc.peak, tc.bw); math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("Ridge(%v, %v) = %v, want %v", tc.peak, tc.bw, got, tc.want)
		}
		// The ridge is where both roofs meet.
		r := Ridge(tc.peak, tc.bw)
		if a := Attainable(tc.peak, tc.bw, r); math.Abs(a-tc.peak) > 1e-9*tc.peak {
			t.Errorf("Attainable at the ridge = %v, want the peak %v", a, tc.peak)
		}
		if a := Attainable(tc.peak, tc.bw, r/2); math.Abs(a-tc.peak/2) > 1e-9*tc.peak {
			t.Errorf("Attainable at half the ridge = %v, want %v (memory-bound)", a, tc.peak/2)
		}
		if a := Attainable(tc.peak, tc.bw, r*10); a != tc.peak {
			t.Errorf("Attainable past the ridge = %v, want the peak %v", a, tc.peak)
		}
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 0}, {-1, 5}, {math.NaN(), 1}, {math.Inf(1), 1}} {
		if r := Ridge(bad[0], bad[1]); !math.IsNaN(r) {
			t.Errorf("Ridge(%v, %v) = %v, want NaN", bad[0], bad[1], r)
		}
	}
	// The rendered chart marks the ridge at peak/bw and its roof passes through it.
	page, err := Roofline("r", 1000, 250, nil).HTML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "ridge: 4 FLOP/B") || !strings.Contains(string(page), "[4,1000]") {
		t.Errorf("ridge (4 FLOP/B, 1000 GFLOP/s) not in the page")
	}
	// The axis ranges include the ridge and every point.
	fig := sampleRoofline()
	xlo, xhi, ylo, yhi := fig.rooflineRanges()
	for _, p := range fig.points {
		if p.Intensity <= xlo || p.Intensity >= xhi || p.GFLOPS <= ylo || p.GFLOPS >= yhi {
			t.Errorf("point %q outside the axes [%g,%g]x[%g,%g]", p.Name, xlo, xhi, ylo, yhi)
		}
	}
	if r := Ridge(67000, 4800); r <= xlo || r >= xhi || 67000 >= yhi {
		t.Errorf("ridge outside the axes")
	}
}

func TestShowOutsideNotebook(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	t.Setenv(EnvPlotDir, dir)
	paths, err := sampleBars().Show()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "sgemm-4096-speedup.png"), filepath.Join(dir, "sgemm-4096-speedup.html")}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
}

func TestShowDefaultDir(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(EnvPlotDir, "")
	paths, err := Roofline("", 100, 10, nil).Show()
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || paths[0] != filepath.Join("plots", "figure.png") {
		t.Fatalf("paths %v", paths)
	}
}

func TestShowInNotebook(t *testing.T) {
	var shown []*protocol.DisplayData
	restore := func(nb func() bool, dd func(*protocol.DisplayData), de func() error) func() {
		return func() { inNotebook, displayData, displayErr = nb, dd, de }
	}(inNotebook, displayData, displayErr)
	defer restore()
	inNotebook = func() bool { return true }
	displayData = func(d *protocol.DisplayData) { shown = append(shown, d) }
	displayErr = func() error { return nil }
	dir := t.TempDir()
	t.Setenv(EnvPlotDir, dir)

	for _, tc := range []struct {
		env      string
		wantHTML bool
	}{{"", true}, {"1", true}, {"0", false}} {
		shown = nil
		t.Setenv(EnvPlotHTML, tc.env)
		if paths, err := sampleLines().Show(); err != nil || len(paths) != 0 {
			t.Fatalf("%s=%q: Show = %v, %v", EnvPlotHTML, tc.env, paths, err)
		}
		if len(shown) != 1 {
			t.Fatalf("%s=%q: %d outputs, want one with every representation", EnvPlotHTML, tc.env, len(shown))
		}
		data := shown[0].Data
		b, _ := data[protocol.MIMEImagePNG].([]byte)
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s=%q: the output's PNG does not decode: %v", EnvPlotHTML, tc.env, err)
		}
		h, hasHTML := data[protocol.MIMETextHTML].(string)
		if hasHTML != tc.wantHTML || (hasHTML && !strings.Contains(h, `class="gpulab-chart"`)) {
			t.Errorf("%s=%q: HTML %v, want %v", EnvPlotHTML, tc.env, hasHTML, tc.wantHTML)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Show in a notebook wrote files: %v", entries)
	}
	displayErr = func() error { return errors.New("pipe closed") }
	if _, err := sampleLines().Show(); err == nil || !strings.Contains(err.Error(), "pipe closed") {
		t.Errorf("display error not reported: %v", err)
	}
}

func TestSlug(t *testing.T) {
	cases := map[string]string{
		"SGEMM 4096³: speedup (x)": "sgemm-4096-speedup-x",
		"  --Hello,  World!-- ":    "hello-world",
		"":                         "figure",
		"³³³":                      "figure",
		"a/b\\c..d":                "a-b-c-d",
	}
	for in, want := range cases {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Slug(strings.Repeat("abc ", 100)); len(got) > 81 || strings.HasSuffix(got, "-") {
		t.Errorf("long slug %q", got)
	}
}

func TestFormat(t *testing.T) {
	cases := map[float64]string{
		3.2: "3.2", 9.6: "9.6", 1: "1", 12.53: "12.5", 0.0123: "0.0123", 1234: "1234",
		51200: "51200", 67000.0 / 4800: "14", 0.85: "0.85", -2: "-2", 0: "0", 1.23e8: "1.23e+08",
	}
	for v, want := range cases {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
	ticks := map[float64]string{0: "0", 0.5: "0.5", 1000: "1000", 10000: "10k", 1 << 20: "1.05M", 1e9: "1G", 1e-4: "1e-4"}
	for v, want := range ticks {
		if got := formatTick(v); got != want {
			t.Errorf("formatTick(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestLogTicks(t *testing.T) {
	for _, r := range [][2]float64{{1, 1e6}, {0.03, 4}, {300, 800}, {1e-3, 1e20}, {5, 5.5}} {
		ticks := logTicks{}.Ticks(r[0], r[1])
		labelled := 0
		for _, tk := range ticks {
			if tk.Label != "" {
				labelled++
			}
		}
		if labelled < 2 {
			t.Errorf("range %v: %d labelled ticks", r, labelled)
		}
	}
}

// TestWriteSamples writes one PNG and one HTML of each kind to
// $GPULAB_PLOT_SAMPLES, for looking at them.
func TestWriteSamples(t *testing.T) {
	dir := os.Getenv("GPULAB_PLOT_SAMPLES")
	if dir == "" {
		t.Skip("set GPULAB_PLOT_SAMPLES=dir to write sample figures")
	}
	for name, fig := range samples() {
		for _, ext := range []string{".png", ".html"} {
			if err := fig.Save(filepath.Join(dir, name+ext)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// nodeHarness runs a page's scripts in node (echarts server-side rendering to
// SVG, no DOM) and prints each series' tooltip, to prove the generated
// JavaScript runs.
const nodeHarness = `
const fs = require('fs'), vm = require('vm');
const html = fs.readFileSync(process.argv[2], 'utf8');
const scripts = [...html.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)].map(m => m[1]);
const ctx = {console, setTimeout, clearTimeout, setInterval, clearInterval,
  window: {addEventListener() {}}, document: {getElementById: () => null, createElement: () => null}};
vm.createContext(ctx);
vm.runInContext(scripts[0], ctx);
vm.runInContext("var __init = echarts.init; echarts.init = function (dom, theme) { var c = __init(null, theme, {renderer: 'svg', ssr: true, width: 900, height: 500}); globalThis.__chart = c; return c; };", ctx);
for (const s of scripts.slice(1)) vm.runInContext(s, ctx);
const svg = vm.runInContext('__chart.renderToSVGString()', ctx);
if (!svg.startsWith('<svg')) { throw new Error('no SVG'); }
const opt = vm.runInContext('__chart.getOption()', ctx);
const tip = opt.tooltip[0];
for (const s of opt.series) {
  const d = s.data[0];
  const v = (d && typeof d === 'object' && 'value' in d) ? d.value : d;
  const p = {seriesName: s.name, name: (d && d.name) || ((opt.xAxis[0].data || [])[0]), value: v};
  console.log('TIP ' + tip.formatter(tip.trigger === 'axis' ? [p] : p));
}
const yl = opt.yAxis && opt.yAxis[0] && opt.yAxis[0].axisLabel && opt.yAxis[0].axisLabel.formatter;
if (typeof yl === 'function' && String(yl).includes('decodeURIComponent')) {
  console.log('YNAMES ' + [0, 0.5, 1, 2].map(v => yl(v)).join('|') + ' IN SVG ' + svg.includes(yl(0)));
}
process.exit(0);
`

func TestHTMLRunsInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	dir := t.TempDir()
	harness := filepath.Join(dir, "harness.js")
	if err := os.WriteFile(harness, []byte(nodeHarness), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"bars":     {"TIP naive: <b>1x</b>"},
		"lines":    {"TIP <b>naive copy</b><br>bytes: 1024<br>GB/s: 2"},
		"roofline": {"TIP <b>SpGEMM</b><br>AI: 0.12 FLOP/B<br>14.6 GFLOP/s<br>2.5% of the roof (576 GFLOP/s, memory-bound)"},
		"hostile":  {"TIP &lt;/script&gt;&lt;!--&#39;&quot;x: <b>1</b>"},
		"lanes":    {`YNAMES lane zero||'"<x> · one| IN SVG true`},
	}
	figs := samples()
	hostile := `</script><!--'"x`
	figs["hostile"] = Bars(hostile, hostile, []string{hostile}, []float64{1})
	figs["lanes"] = Lines("lanes", "ms", "lane", Series{Name: "copy", X: []float64{0, 1}, Y: []float64{-0.3, 0.3}},
		Series{Name: "compute", X: []float64{0, 1}, Y: []float64{0.7, 1.3}}).WithYNames("lane zero", `'"<x> · one`)
	for name, fig := range figs {
		t.Run(name, func(t *testing.T) {
			page := filepath.Join(dir, name+".html")
			if err := fig.Save(page); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, node, harness, page).CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%.2000s", err, out)
			}
			for _, w := range want[name] {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// Extreme but valid inputs render (or fail with an error) without panicking.
func TestExtremes(t *testing.T) {
	many := make([]float64, 2000)
	xs := make([]float64, 2000)
	for i := range many {
		many[i] = float64(i%17) + 0.5
		xs[i] = float64(i + 1)
	}
	labels := make([]string, 300)
	for i := range labels {
		labels[i] = strings.Repeat("long label ", 1+i%4)
	}
	var pts []RooflinePoint
	for i := 0; i < 60; i++ {
		pts = append(pts, RooflinePoint{Name: "k" + strings.Repeat("x", i%7), Intensity: math.Pow(10, float64(i%9)-4), GFLOPS: math.Pow(10, float64(i%6))})
	}
	cases := []struct {
		name string
		fig  *Figure
	}{
		{"300 bars", Bars("many bars", "speedup", labels, many[:300]).WithReference(1, "")},
		{"2000-point lines", Lines("dense", "i", "v", Series{Name: "a", X: xs, Y: many}, Series{Name: "b", X: xs, Y: xs}).LogX()},
		{"25 series", Lines("crowd", "x", "y", crowd(25)...)},
		{"60 roofline points", Roofline("crowded roof", 1e6, 10, pts)},
		{"huge values", Bars("huge", "", []string{"a", "b"}, []float64{1.7e308, -1.7e308})},
		{"tiny values", Lines("tiny", "x", "y", Series{Name: "a", X: []float64{1e-300, 2e-300}, Y: []float64{1e-300, 3e-300}}).LogX().LogY()},
		{"constant", Lines("flat", "x", "y", Series{Name: "a", X: []float64{3, 3, 3}, Y: []float64{0, 0, 0}})},
		{"negative lines", Lines("neg", "x", "y", Series{Name: "a", X: []float64{-3, -2, -1}, Y: []float64{-5, -7, -6}}).WithReference(-1, "ignored")},
		{"roof ref outside range", Roofline("r", 100, 10, nil).WithReference(1e9, "way up")},
		{"untitled", Bars("", "", []string{""}, []float64{0})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, sz := range [][2]int{{0, 0}, {160, 100}, {1920, 1080}} {
				if b, err := tc.fig.PNG(sz[0], sz[1]); err == nil {
					if _, err := png.Decode(bytes.NewReader(b)); err != nil {
						t.Errorf("%v: bad PNG: %v", sz, err)
					}
				} else if !strings.Contains(err.Error(), "plot") {
					t.Errorf("%v: error without context: %v", sz, err)
				}
			}
			if _, err := tc.fig.HTML(); err != nil {
				t.Logf("HTML: %v", err)
			}
		})
	}
}

func crowd(n int) []Series {
	out := make([]Series, n)
	for i := range out {
		out[i] = Series{Name: "series " + strings.Repeat("#", i%5), X: []float64{1, 2, 3, 4}, Y: []float64{float64(i), float64(i) + 1, float64(i) * 2, 3}}
	}
	return out
}

func TestPointsRender(t *testing.T) {
	f := Lines("clusters", "x", "y", Series{Name: "a", X: []float64{0, 1, 2}, Y: []float64{1, 0, 2}}, Series{Name: "b", X: []float64{5, 6}, Y: []float64{5, 4}}).Points()
	png, err := f.PNG(400, 300)
	if err != nil || len(png) < 1000 {
		t.Fatalf("png %d bytes, %v", len(png), err)
	}
	html, err := f.HTML()
	if err != nil || !strings.Contains(string(html), `"symbolSize":4`) {
		t.Errorf("html without the scatter symbols (%v)", err)
	}
}

// TestLegendOutside: a legend finds a free corner, and says when it has
// none, so that PNG moves it out of the data area.
func TestLegendOutside(t *testing.T) {
	c := draw.New(vgimg.New(400, 300))
	f := Lines("t", "x", "y", Series{Name: "a", X: []float64{0, 1}, Y: []float64{0, 1}})
	p := f.newPlot()
	entry := legendEntry{name: "a series", thumb: func(draw.Canvas, vg.Rectangle) {}}
	free := &legendBox{entries: []legendEntry{entry}, style: f.textStyle(p, 10, false, textColor), lay: &layout{}}
	free.Plot(c, p)
	if free.coversData {
		t.Error("an empty plot has no free corner")
	}
	full := &layout{}
	full.add(vg.Rectangle{Min: c.Min, Max: c.Max}) // data everywhere
	crowded := &legendBox{entries: []legendEntry{entry}, style: free.style, lay: full}
	crowded.Plot(c, p)
	if !crowded.coversData {
		t.Error("a legend over data does not say so")
	}
}

func TestRoofLabel(t *testing.T) {
	if got := roofLabel("copy", 0.87); got != "copy: 87% of roof" {
		t.Errorf("%q", got)
	}
	if got := roofLabel("copy", math.Inf(1)); got != "copy: ‡ effective" {
		t.Errorf("a cache-served point (Effective) is not marked: %q", got)
	}
	if got := roofLabel("copy", 1.17); got != "copy: ‡ effective" {
		t.Errorf("a point above the roof is not flagged: %q", got)
	}
}

func TestWrapTitle(t *testing.T) {
	for _, tc := range []struct {
		title string
		max   int
		want  []string
	}{
		{"", 10, []string{""}},
		{"short", 10, []string{"short"}},
		{"copy: GB/s against bytes", 10, []string{"copy: GB/s", "against", "bytes"}},
		{"a  spaced   title", 7, []string{"a", "spaced", "title"}},
		{"prefill 1024×32 tokens: GPU time by operation", 24, []string{"prefill 1024×32 tokens:", "GPU time by operation"}},
		{"unbreakable-very-long-word here", 8, []string{"unbreakable-very-long-word", "here"}},
	} {
		if got := wrapTitle(tc.title, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("wrapTitle(%q, %d) = %q, want %q", tc.title, tc.max, got, tc.want)
		}
	}
}

// TestScatterPointsPlaceTheLegend: the points of a scatter plot count as
// data for the legend, as lines do: with points all over the plot there is
// no free corner.
func TestScatterPointsPlaceTheLegend(t *testing.T) {
	grid := Series{Name: "grid"}
	for i := 0; i <= 40; i++ {
		for j := 0; j <= 40; j++ {
			grid.X, grid.Y = append(grid.X, float64(i)/4), append(grid.Y, float64(j)/4)
		}
	}
	f := Lines("points everywhere", "x", "y", grid, Series{Name: "b", X: []float64{5}, Y: []float64{4}}).Points()
	c := draw.New(vgimg.New(400, 300))
	p, _, leg, err := f.buildPlot(400)
	if err != nil {
		t.Fatal(err)
	}
	p.Draw(c)
	leg.Plot(p.DataCanvas(c), p)
	if !leg.coversData {
		t.Error("the legend found a free corner among points in every corner")
	}
}

// TestPaletted: a chart of few colours keeps them exactly; beyond 256, the
// most frequent are exact and every other becomes the nearest kept one.
func TestPaletted(t *testing.T) {
	few := image.NewRGBA(image.Rect(0, 0, 20, 10))
	for i := range few.Pix {
		few.Pix[i] = uint8(i % 7 * 40)
	}
	pal := paletted(few)
	for y := 0; y < 10; y++ {
		for x := 0; x < 20; x++ {
			if got, want := color.RGBAModel.Convert(pal.At(x, y)), few.RGBAAt(x, y); got != want {
				t.Fatalf("(%d, %d) = %v, want %v", x, y, got, want)
			}
		}
	}

	many := image.NewRGBA(image.Rect(0, 0, 300, 10)) // 300 greys, grey 0 in most pixels
	for x := 0; x < 300; x++ {
		for y := 0; y < 10; y++ {
			g := uint8(0)
			if y == 0 {
				g = uint8(x * 255 / 299)
			}
			many.SetRGBA(x, y, color.RGBA{g, g, g, 255})
		}
	}
	pal = paletted(many)
	if len(pal.Palette) != 256 {
		t.Fatalf("%d colours, want 256", len(pal.Palette))
	}
	for x := 0; x < 300; x++ {
		want := many.RGBAAt(x, 0)
		got := color.RGBAModel.Convert(pal.At(x, 0)).(color.RGBA)
		if d := int(got.R) - int(want.R); d < -1 || d > 1 {
			t.Errorf("grey %d became %d: not the nearest kept grey", want.R, got.R)
		}
		if pal.At(x, 5) != pal.Palette[0] || pal.Palette[0] != (color.RGBA{0, 0, 0, 255}) {
			t.Fatalf("the most frequent colour is not kept exactly")
		}
	}

	rgba, err := sampleRoofline().PNG(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	img, err := png.Decode(bytes.NewReader(rgba))
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(&plain, paletteToRGBA(img)); err != nil {
		t.Fatal(err)
	}
	if len(rgba)*2 > plain.Len() {
		t.Errorf("a chart's PNG is %d bytes, against %d in full colour: want at most half", len(rgba), plain.Len())
	}
}

func paletteToRGBA(img image.Image) *image.RGBA {
	out := image.NewRGBA(img.Bounds())
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			out.Set(x, y, img.At(x, y))
		}
	}
	return out
}

// TestBarsRange: a log bar chart's axis starts below its lowest bar (a
// baseline at 1 next to 70 still shows), and WithYAtLeast lifts a linear
// one's top, in the PNG and the HTML alike.
func TestBarsRange(t *testing.T) {
	for _, tc := range []struct {
		fig    *Figure
		lo, hi float64
	}{
		{Bars("s", "speedup", []string{"base", "fast"}, []float64{1, 70.6}).LogY().WithReference(1, "baseline"), 0.5, 200},
		{Bars("s", "speedup", []string{"slow", "base"}, []float64{0.27, 1}).LogY(), 0.1, 2},
		{Bars("s", "words", []string{"a", "b"}, []float64{0, 1}).WithYAtLeast(32), 0, 40},
		{Bars("s", "words", []string{"a", "b"}, []float64{0, 1}), 0, 1.2},
	} {
		lo, hi := tc.fig.barsRange()
		if math.Abs(lo-tc.lo) > 1e-9 || math.Abs(hi-tc.hi) > 1e-9 {
			t.Errorf("%v, log %v: range [%g, %g], want [%g, %g]", tc.fig.values, tc.fig.logY, lo, hi, tc.lo, tc.hi)
		}
		if _, err := tc.fig.PNG(400, 300); err != nil {
			t.Error(err)
		}
		html, err := tc.fig.HTML()
		if err != nil {
			t.Fatal(err)
		}
		if tc.fig.logY && !strings.Contains(string(html), `"type":"log"`) {
			t.Errorf("log bars: no log axis in the HTML")
		}
	}
}

// TestYNames: a line chart's named y values show as the y axis's labels,
// in the PNG (as ticks) and in the HTML (a formatter with the names).
func TestYNames(t *testing.T) {
	f := Lines("timeline", "ms", "lane", Series{Name: "a", X: []float64{0, 1}, Y: []float64{-0.3, 0.3}},
		Series{Name: "b", X: []float64{0, 1}, Y: []float64{0.7, 1.3}}).WithYNames("stream 0 · copy", "stream 0 · <compute>")
	p, _, _, err := f.buildPlot(400)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		labels = append(labels, tk.Label)
	}
	if want := []string{"stream 0 · copy", "stream 0 · <compute>"}; !slices.Equal(labels, want) || p.Y.Min != -0.5 || p.Y.Max != 1.5 {
		t.Errorf("y ticks %q on [%g, %g], want %q on [-0.5, 1.5]", labels, p.Y.Min, p.Y.Max, want)
	}
	html, err := f.HTML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `[decodeURIComponent('stream%200%20%C2%B7%20copy'),decodeURIComponent('stream%200%20%C2%B7%20%3Ccompute%3E')]`) || strings.Contains(string(html), "<compute>") {
		t.Errorf("the HTML lacks the encoded names")
	}
	if _, err := Bars("b", "y", []string{"a"}, []float64{1}).WithYNames("x").PNG(300, 200); err == nil || !strings.Contains(err.Error(), "WithYNames is for line charts") {
		t.Errorf("bars with named y values: %v", err)
	}
}

// TestDataTicks: ticks sit at the distinct x values of the series, thinned
// past maxDataTicks; the chart renders with them on a linear and a log axis.
func TestDataTicks(t *testing.T) {
	ts := dataTicks([]Series{{X: []float64{1024, 2048, 4096}}, {X: []float64{4096, 1024}}})
	if len(ts) != 3 || ts[0].Value != 1024 || ts[2].Label != "4096" {
		t.Errorf("ticks %+v", ts)
	}
	var many []float64
	for k := 1008; k <= 1100; k += 4 {
		many = append(many, float64(k))
	}
	if ts := dataTicks([]Series{{X: many}}); len(ts) > maxDataTicks || ts[0].Value != 1008 {
		t.Errorf("%d ticks from %d values: %+v", len(ts), len(many), ts)
	}
	s := Series{Name: "naive", X: []float64{1008, 1016, 1024, 1032, 1040}, Y: []float64{1300, 1250, 480, 1260, 1310}}
	for _, f := range []*Figure{Lines("k", "k", "GFLOP/s", s).XTicksAtData(), Lines("n", "n", "GFLOP/s", s).LogX().XTicksAtData()} {
		if _, err := f.PNG(0, 0); err != nil {
			t.Fatal(err)
		}
	}
}
