package lfm2

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMaxExpArgument: e^x fits fp32 just below it and overflows just above.
func TestMaxExpArgument(t *testing.T) {
	if d := math.Abs(MaxExpArgument - math.Log(math.MaxFloat32)); d > 1e-12 {
		t.Errorf("MaxExpArgument is %g from ln(MaxFloat32)", d)
	}
	if e := exp32(88.72); math.IsInf(float64(e), 0) {
		t.Error("exp32(88.72) overflows")
	}
	if e := exp32(88.73); !math.IsInf(float64(e), 1) {
		t.Errorf("exp32(88.73) = %g, want +Inf", e)
	}
}

// TestSoftmaxes: the three softmaxes against float64 arithmetic; the naive
// one breaks where a score passes ln(MaxFloat32) or every score is far
// below 0, the other two do not.
func TestSoftmaxes(t *testing.T) {
	exact := func(x []float32) []float64 {
		m := float64(slices.Max(x))
		var sum float64
		p := make([]float64, len(x))
		for i, v := range x {
			p[i] = math.Exp(float64(v) - m)
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
		return p
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		x     []float32
		naive []float64 // nil: the exact softmax
	}{
		{"small", []float32{1, 2, 3, -1}, nil},
		{"one score", []float32{7}, nil},
		{"ties", []float32{0, 0, 0, 0}, nil},
		{"past ln(MaxFloat32)", []float32{100, 0, 50}, []float64{nan, 0, 0}},
		{"the log's exp(1000)", []float32{1000, 999, 0}, []float64{nan, nan, 0}},
		{"all far below 0", []float32{-200, -201}, []float64{nan, nan}}, // 0/0
	} {
		want := exact(tc.x)
		naiveWant := tc.naive
		if naiveWant == nil {
			naiveWant = want
		}
		for _, sm := range []struct {
			name string
			got  []float32
			want []float64
		}{
			{"naive", NaiveSoftmax(tc.x), naiveWant},
			{"stable", StableSoftmax(tc.x), want},
			{"online", OnlineSoftmax(tc.x), want},
		} {
			for i, w := range sm.want {
				g := float64(sm.got[i])
				if math.IsNaN(w) != math.IsNaN(g) || math.Abs(g-w) > 1e-6 {
					t.Errorf("%s: %s softmax of %v = %v, want %v", tc.name, sm.name, tc.x, sm.got, sm.want)
					break
				}
			}
		}
	}
}

// TestAttentionScores: on a model whose layer 0 attends, the scores are
// the normed, rotated query of the last token against the cached keys,
// over √d; on a fixture no score passes ScoreBound; a layer that does not
// attend is an error.
func TestAttentionScores(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(fwdConfig, `["conv", "full_attention", "conv", "full_attention"]`, `["full_attention", "conv", "conv", "full_attention"]`, 1)
	if _, err := WriteRandomModel(dir, []byte(cfg), 5); err != nil {
		t.Fatal(err)
	}
	c, w := loadModel(t, dir)
	tokens := []int{3, 14, 15, 9, 26}
	got, err := AttentionScores(c, w, tokens, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := NewState(c)
	if _, err := Forward(c, w, st, tokens); err != nil { // fills layer 0's key cache
		t.Fatal(err)
	}
	hd, last := c.HeadDim, len(tokens)-1
	x := rmsNormRows(embed(c, w, tokens[last:]), w.Layers[0].OpNorm, c.NormEps)
	q := linear(x, w.Layers[0].Q, c.Heads*hd)[0]
	for hh := range c.Heads {
		head := q[hh*hd : (hh+1)*hd]
		rmsNorm(head, head, w.Layers[0].QNorm, c.NormEps)
		rope(head, last, c.RopeTheta)
		kh := hh / (c.Heads / c.KVHeads)
		for j := range tokens {
			key := st.K[0][(j*c.KVHeads+kh)*hd : (j*c.KVHeads+kh+1)*hd]
			if want := dot(head, key) / float32(math.Sqrt(float64(hd))); math.Abs(float64(got[hh][j]-want)) > 1e-5 {
				t.Errorf("head %d, key %d: score %g, want %g", hh, j, got[hh][j], want)
			}
		}
	}
	f := fixture(t, "moe")
	for _, l := range AttentionLayers(f.Config) {
		scores, err := AttentionScores(f.Config, f.Weights, f.Batch[0], l)
		if err != nil {
			t.Fatal(err)
		}
		bound := ScoreBound(f.Config, f.Weights, l)
		for _, row := range scores {
			for _, s := range row {
				if math.Abs(float64(s)) > bound {
					t.Errorf("layer %d: score %g beyond the bound %g", l, s, bound)
				}
			}
		}
	}
	if _, err := AttentionScores(f.Config, f.Weights, f.Batch[0], 0); err == nil || !strings.Contains(err.Error(), "[1 4]") {
		t.Errorf("a conv layer: %v", err)
	}
}

// TestSoftmaxTrials: scores of up to 3, scaled by 1 and by 100: the naive
// softmax breaks at 100 in the row whose score passes ln(MaxFloat32) only.
func TestSoftmaxTrials(t *testing.T) {
	trials := SoftmaxTrials([][]float32{{0.1, 0.2, 3}, {0.1, 0.2, 0.3}}, []float64{1, 100})
	small, big := trials[0], trials[1]
	if small.NaiveNaN != 0 || small.NaiveVsStable > 1e-6 || small.MaxScore != 3 || small.Probabilities != 6 {
		t.Errorf("scale 1: %+v", small)
	}
	if big.MaxScore != 300 || big.NaiveRows != 1 || big.NaiveNaN != 1 || big.NaiveZero != 2 || !math.IsNaN(big.NaiveVsStable) {
		t.Errorf("scale 100: %+v", big)
	}
	for _, tr := range trials {
		if tr.StableNonFinite+tr.OnlineNonFinite != 0 || tr.StableVsOnline > 1e-6 {
			t.Errorf("scale %g: stable or online broke: %+v", tr.Scale, tr)
		}
	}
	md := SoftmaxMarkdown(trials)
	for _, want := range []string{"| 100 | 300 | 1 of 2 | 1 of 6 | 2 | NaN |", "Up to scale 1 (largest score 3)", "At scale 100 the largest score is 300", "In 1 of the 2 rows", "stay finite at every scale"} {
		if !strings.Contains(md, want) {
			t.Errorf("SoftmaxMarkdown lacks %q:\n%s", want, md)
		}
	}
	if md := SoftmaxMarkdown(trials[:1]); !strings.Contains(md, "No score passed") {
		t.Errorf("no overflow: %s", md)
	}
	if err := SoftmaxFigure(trials).Save(filepath.Join(t.TempDir(), "softmax.png")); err != nil {
		t.Error(err)
	}
}
