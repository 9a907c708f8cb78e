package lfm2

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestPick: logits ln(0.5), ln(0.3), ln(0.2) at temperature 1 are the
// probabilities 0.5, 0.3, 0.2; top-p 0.7 keeps the first two (0.8 >= 0.7),
// renormalized to 0.625 and 0.375.
func TestPick(t *testing.T) {
	logits := []float32{float32(math.Log(0.3)), float32(math.Log(0.5)), float32(math.Log(0.2))}
	all := Sampling{Temperature: 1}
	for _, tc := range []struct {
		u    float64
		want int
	}{{0.0, 1}, {0.49, 1}, {0.51, 0}, {0.79, 0}, {0.81, 2}, {0.999, 2}} {
		if got := all.pick(logits, tc.u); got != tc.want {
			t.Errorf("u=%g: token %d, want %d", tc.u, got, tc.want)
		}
	}
	nucleus := Sampling{Temperature: 1, TopP: 0.7}
	for _, tc := range []struct {
		u    float64
		want int
	}{{0.6, 1}, {0.63, 0}, {0.999, 0}} {
		if got := nucleus.pick(logits, tc.u); got != tc.want {
			t.Errorf("top-p u=%g: token %d, want %d", tc.u, got, tc.want)
		}
	}
	// A very low temperature is almost greedy.
	if got := (Sampling{Temperature: 1e-3}).pick(logits, 0.999); got != 1 {
		t.Errorf("cold sampling picked %d", got)
	}
	for _, bad := range []Sampling{{Temperature: -1}, {Temperature: 1, TopP: 1.5}, {TopP: math.NaN()}} {
		if bad.check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestGenerateSampled: the same seed repeats a sampled run, and a
// temperature-0 run is the greedy one.
func TestGenerateSampled(t *testing.T) {
	c, w := fwdModel(t)
	prompt := []int{1, 2, 3}
	s := Sampling{Temperature: 1.5, TopP: 0.9, Seed: 7}
	a, err := Generate(c, w, prompt, 8, s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(c, w, prompt, 8, s)
	for i := range a {
		if a[i] != b[i] || a[i] < 0 || a[i] >= c.Vocab {
			t.Fatalf("runs differ or token out of range: %v and %v", a, b)
		}
	}
	g, _ := Greedy(c, w, prompt, 8)
	z, _ := Generate(c, w, prompt, 8, Sampling{Seed: 99})
	for i := range g {
		if g[i] != z[i] {
			t.Fatalf("temperature 0 is not greedy: %v against %v", z, g)
		}
	}
	if _, err := Generate(c, w, prompt, 2, Sampling{Temperature: -1}); err == nil {
		t.Error("negative temperature accepted")
	}
}

// TestSamplingRefuses: the engine itself refuses a temperature that is
// negative or not finite and a top-p outside [0, 1], whatever its caller
// checked, before a token is generated.
func TestSamplingRefuses(t *testing.T) {
	c, w := loadModel(t, filepath.Join(fixtures, "dense"))
	inf := math.Inf(1)
	for _, s := range []Sampling{{Temperature: inf}, {Temperature: -inf}, {Temperature: -1}, {Temperature: math.NaN()},
		{Temperature: 1, TopP: inf}, {Temperature: 1, TopP: -0.5}, {Temperature: 1, TopP: 1.5}, {Temperature: 1, TopP: math.NaN()}} {
		emitted := 0
		err := GenerateBatch(c, w, [][]int{{1, 2}}, 2, s, func(int, []int) error { emitted++; return nil })
		if err == nil || !strings.Contains(err.Error(), "want a finite temperature >= 0 and top-p in [0, 1]") || emitted != 0 {
			t.Errorf("%+v: %v after %d tokens; want a refusal before any", s, err, emitted)
		}
	}
}
