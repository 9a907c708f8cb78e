package lfm2

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/cuda/cudatest"
)

// TestFixtureRoPESignBug: on both fixtures the bug leaves position 0 exactly
// as it was and moves every later position beyond the tolerance, while the
// reference stays within it of transformers.
func TestFixtureRoPESignBug(t *testing.T) {
	for _, name := range []string{"dense", "moe"} {
		ch, err := fixture(t, name).RoPESignBug()
		if err != nil {
			t.Fatal(err)
		}
		if ch.ByPosition[0] != 0 || len(ch.Caught()) != len(ch.ByPosition)-1 || ch.Caught()[0] != 1 {
			t.Errorf("%s: change by position %v", name, ch.ByPosition)
		}
		for p, d := range ch.Baseline {
			if d > ReferenceTolerance {
				t.Errorf("%s: position %d: the reference is %g from transformers", name, p, d)
			}
		}
		if ch.Rows != 27 || ch.TopChanged == 0 {
			t.Errorf("%s: the top token changed in %d of %d rows", name, ch.TopChanged, ch.Rows)
		}
		if md := RoPEBugMarkdown(ch); !strings.Contains(md, "A check of the first token alone would pass") {
			t.Errorf("%s: %s", name, md)
		}
	}
}

// TestFixtureCUDARoPESignBug: on a CUDA device, the engine compiled with
// the sign bug is caught by the CPU reference from position 1 on, and
// position 0, where the bug is the identity, stays within the tolerance;
// without CUDA devices it says what it needs. The GPU part skips without
// a GPU.
func TestFixtureCUDARoPESignBug(t *testing.T) {
	f := fixture(t, "moe")
	if _, err := f.CUDARoPESignBug([]*engine.Device{cpuDevice}); err == nil || !strings.Contains(err.Error(), "needs CUDA devices") {
		t.Errorf("on the CPU: %v", err)
	}
	ctx := cudatest.Context(t)
	dev := &engine.Device{Info: engine.Info{ID: "cuda:0", Kind: engine.CUDA}, CUDA: ctx}
	for _, name := range []string{"dense", "moe"} {
		ch, err := fixture(t, name).CUDARoPESignBug([]*engine.Device{dev})
		if err != nil {
			t.Fatal(err)
		}
		worst, _ := ch.Max()
		t.Logf("%s: max |GPU with the bug − CPU reference| %.3g, by position %.3g", name, worst, ch.ByPosition)
		if ch.ByPosition[0] > ReferenceTolerance || len(ch.Caught()) != len(ch.ByPosition)-1 {
			t.Errorf("%s: change by position %v, want position 0 within %g and every other beyond it", name, ch.ByPosition, ReferenceTolerance)
		}
	}
}

// TestFixtureNormEps: the model's own epsilon changes nothing; the log's
// 1e-6 changes every position beyond the tolerance on these fixtures.
func TestFixtureNormEps(t *testing.T) {
	f := fixture(t, "moe")
	same, err := f.NormEps(f.Config.NormEps)
	if err != nil {
		t.Fatal(err)
	}
	if worst, _ := same.Max(); worst != 0 {
		t.Errorf("the config's own epsilon moves the logits by %g", worst)
	}
	wrong, err := f.NormEps(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if len(wrong.Caught()) != f.Seq() || wrong.Change != "ε = 1e-06" {
		t.Errorf("%s: change by position %v", wrong.Change, wrong.ByPosition)
	}
}

// TestFixtureDecode: decoding token by token is the prefill bit for bit;
// dropping the conv state leaves position 0 (whose state is empty anyway)
// and breaks the others.
func TestFixtureDecode(t *testing.T) {
	f := fixture(t, "dense")
	kept, err := f.Decode(false)
	if err != nil {
		t.Fatal(err)
	}
	if worst, _ := kept.Max(); worst != 0 {
		t.Errorf("decode differs from prefill by %g", worst)
	}
	dropped, err := f.Decode(true)
	if err != nil {
		t.Fatal(err)
	}
	if dropped.ByPosition[0] != 0 || len(dropped.Caught()) != f.Seq()-1 {
		t.Errorf("dropped conv state: change by position %v", dropped.ByPosition)
	}
}

func TestChangeMarkdown(t *testing.T) {
	base := []float64{1e-6, 2e-6, 1e-6}
	for _, tc := range []struct {
		name  string
		diffs []float64
		want  []string
	}{
		{"none", []float64{0, 0, 0}, []string{"bit for bit"}},
		{"rounding", []float64{1e-6, 5e-5, 0}, []string{"up to 5e-05 (position 1), within the tolerance", "cannot tell this change from rounding"}},
		{"everywhere", []float64{0.5, 2, 1}, []string{"up to 2 (position 1), 20000 times the tolerance", "Every position exceeds"}},
		{"after position 0", []float64{0, 3e-4, 1}, []string{"2 of 3 positions exceed the tolerance ([1 2]); at [0] the logits are exactly the reference's"}},
	} {
		md := ChangeMarkdown(LogitsChange{Fixture: "moe", Change: "a bug", ByPosition: tc.diffs, Baseline: base, TopChanged: 1, Rows: 3})
		for _, want := range tc.want {
			if !strings.Contains(md, want) {
				t.Errorf("%s: %q lacks %q", tc.name, md, want)
			}
		}
	}
}

// TestChangeFigure: a series per change and one baseline per fixture, with
// the zeros a log axis cannot show left out; a change that is 0 everywhere
// has no series.
func TestChangeFigure(t *testing.T) {
	base := []float64{1e-6, 2e-6}
	changes := []LogitsChange{
		{Fixture: "dense", Change: "bug", ByPosition: []float64{0, 1}, Baseline: base},
		{Fixture: "dense", Change: "other", ByPosition: []float64{0, 0}, Baseline: base},
		{Fixture: "moe", Change: "bug", ByPosition: []float64{2, 3}, Baseline: base},
	}
	series := changeSeries(changes)
	var names []string
	for _, s := range series {
		names = append(names, s.Name)
	}
	if !slices.Equal(series[0].X, []float64{1}) {
		t.Errorf("dense bug at x %v, want [1] (no zero on a log axis)", series[0].X)
	}
	if got := strings.Join(names, ", "); got != "dense: bug, dense: reference vs transformers, moe: bug, moe: reference vs transformers" {
		t.Errorf("series %s", got)
	}
	if err := ChangeFigure("t", changes...).Save(filepath.Join(t.TempDir(), "change.png")); err != nil {
		t.Error(err)
	}
}

// TestStoryMarkdown: each experiment's closing paragraph appears only when
// the numbers show what it says.
func TestStoryMarkdown(t *testing.T) {
	base := []float64{1e-6, 1e-6, 1e-6}
	change := func(name string, top int, diffs ...float64) LogitsChange {
		return LogitsChange{Fixture: "moe", Change: name, ByPosition: diffs, Baseline: base, TopChanged: top, Rows: 3}
	}
	firstExact := change("the RoPE sign bug", 1, 0, 0.5, 1)
	everywhere := change("ε = 1e-06", 0, 1e-3, 2e-3, 1e-3)
	for _, tc := range []struct {
		name    string
		md      string
		want    string
		present bool
	}{
		{"rope, first position exact", RoPEBugMarkdown(firstExact), "A check of the first token alone would pass", true},
		{"rope, first position moved", RoPEBugMarkdown(change("the RoPE sign bug", 1, 1e-3, 0.5, 1)), "A check of the first token alone", false},
		{"ε, no top token moved", NormEpsMarkdown(everywhere), "yet the most likely next token is the same", true},
		{"ε, a top token moved", NormEpsMarkdown(change("ε = 1e-06", 1, 1e-3, 2e-3, 1e-3)), "yet the most likely next token", false},
		{"ε, a top token moved, caught", NormEpsMarkdown(change("ε = 1e-06", 1, 1e-3, 2e-3, 1e-3)), "catches the wrong ε at every position", true},
		{"decode kept", ConvStateMarkdown(change("decode, token by token", 0, 0, 0, 0), change("decode with the conv state dropped", 2, 0, 1, 2)), "bit for bit: each token's work", true},
		{"decode dropped", ConvStateMarkdown(change("decode, token by token", 0, 0, 0, 0), change("decode with the conv state dropped", 2, 0, 1, 2)), "Without the conv state, position 0 is still exact", true},
		{"decode not exact", ConvStateMarkdown(change("decode, token by token", 0, 0, 1e-7, 0)), "bit for bit: each token's work", false},
	} {
		if strings.Contains(tc.md, tc.want) != tc.present {
			t.Errorf("%s: %q in the text: %v, want %v:\n%s", tc.name, tc.want, !tc.present, tc.present, tc.md)
		}
	}
}
