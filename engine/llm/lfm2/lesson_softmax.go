package lfm2

// The softmax of attention three ways: the naive one that overflowed in the
// LFM2 development log (exp(1000) = inf), the stable one that the reference
// runs, and the online one of kernel 04, on the fixture's own attention
// scores, scaled up until the naive one breaks.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine/plot"
)

// MaxExpArgument is ln(MaxFloat32), about 88.72: e^x overflows fp32 to
// +Inf for any larger x.
const MaxExpArgument = 88.72283905206835

// exp32 is e^x in fp32: +Inf once the result exceeds MaxFloat32, as expf
// gives it.
func exp32(x float32) float32 {
	e := math.Exp(float64(x))
	if e > math.MaxFloat32 {
		return float32(math.Inf(1))
	}
	return float32(e)
}

// NaiveSoftmax is e^x / Σ e^x in fp32, as the log's first attention kernel
// computed it. Once a score passes MaxExpArgument its e^x is +Inf, so is the
// sum, and the row becomes NaN (Inf/Inf) where it overflowed and 0
// elsewhere.
func NaiveSoftmax(x []float32) []float32 {
	p := make([]float32, len(x))
	var sum float32
	for i, v := range x {
		p[i] = exp32(v)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// StableSoftmax is the reference's softmax, the one Forward's attention
// runs: e^(x−max) / Σ e^(x−max). No exponent is above 0.
func StableSoftmax(x []float32) []float32 {
	p := slices.Clone(x)
	softmax(p)
	return p
}

// OnlineSoftmax is the softmax as kernel 04 computes it, in one pass over
// the scores: a running max m and a running sum l of e^(x−m); when a larger
// score arrives, l is rescaled by e^(m_old − m_new). Here a second pass
// divides each e^(x−m) by l; the kernel needs none, because it rescales its
// output row o, Σ e^(x−m)·v, the same way, and divides o by l once at the
// end. Scores are never stored, whatever the number of keys.
func OnlineSoftmax(x []float32) []float32 {
	m, l := float32(math.Inf(-1)), float32(0)
	for _, v := range x {
		mNew := max(m, v)
		l = l*exp32(m-mNew) + exp32(v-mNew)
		m = mNew
	}
	p := make([]float32, len(x))
	for i, v := range x {
		p[i] = exp32(v-m) / l
	}
	return p
}

// AttentionScores runs tokens through the reference up to attention layer
// l and returns the scores of the last token's query heads at that layer,
// q·k/√headDim against each position [heads][len(tokens)]: what its
// softmax turns into attention weights.
func AttentionScores(c *Config, w *Weights, tokens []int, l int) ([][]float32, error) {
	if l < 0 || l >= c.Layers || !c.IsAttention(l) {
		return nil, fmt.Errorf("lfm2: layer %d is not an attention layer (those are %v)", l, AttentionLayers(c))
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("lfm2: attention scores need at least one token")
	}
	if err := CheckTokens(c, 0, tokens); err != nil {
		return nil, err
	}
	st, x := NewState(c), embed(c, w, tokens)
	for i := range l {
		if err := decoderLayer(c, w, st, i, x, rope); err != nil {
			return nil, err
		}
	}
	lw := &w.Layers[l]
	q := queries(c, lw, st, l, rmsNormRows(x, lw.OpNorm, c.NormEps), rope)
	out := make([][]float32, c.Heads)
	for hh := range out {
		out[hh] = scores(c, st, l, q[len(tokens)-1], hh, len(tokens))
	}
	return out, nil
}

// ScoreBound is the largest score attention layer l can give: each query
// and key head is RMS-normalized (RMS 1) and scaled by its norm weights
// γ, so |q| ≤ max|γ_q|·√d and |k| ≤ max|γ_k|·√d, and q·k/√d ≤
// √d·max|γ_q|·max|γ_k|. Scaling both norm weights by g scales every score
// by g².
func ScoreBound(c *Config, w *Weights, l int) float64 {
	absMax := func(v []float32) (m float64) {
		for _, x := range v {
			m = max(m, math.Abs(float64(x)))
		}
		return m
	}
	return math.Sqrt(float64(c.HeadDim)) * absMax(w.Layers[l].QNorm) * absMax(w.Layers[l].KNorm)
}

// A SoftmaxTrial is the three softmaxes of rows of scores multiplied by
// Scale.
type SoftmaxTrial struct {
	Scale    float64
	MaxScore float32 // the largest scaled score
	// Probabilities is how many there are in all the Rows. NaiveRows is
	// the rows where the naive softmax overflowed (a NaN), and NaiveNaN and
	// NaiveZero how many of its probabilities there are NaN and 0.
	Rows, Probabilities, NaiveRows, NaiveNaN, NaiveZero int
	// StableNonFinite and OnlineNonFinite count NaN or Inf probabilities.
	StableNonFinite, OnlineNonFinite int
	// StableVsOnline is max |stable − online|; NaiveVsStable is max
	// |naive − stable|, NaN where a naive probability is NaN.
	StableVsOnline, NaiveVsStable float64
}

// SoftmaxTrials runs the three softmaxes on rows times each scale.
func SoftmaxTrials(rows [][]float32, scales []float64) []SoftmaxTrial {
	var out []SoftmaxTrial
	for _, s := range scales {
		tr := SoftmaxTrial{Scale: s, MaxScore: float32(math.Inf(-1)), Rows: len(rows)}
		for _, row := range rows {
			x := make([]float32, len(row))
			for i, v := range row {
				x[i] = float32(s) * v
				tr.MaxScore = max(tr.MaxScore, x[i])
			}
			naive, stable, online := NaiveSoftmax(x), StableSoftmax(x), OnlineSoftmax(x)
			tr.Probabilities += len(x)
			overflowed := slices.ContainsFunc(naive, func(p float32) bool { return math.IsNaN(float64(p)) })
			if overflowed {
				tr.NaiveRows++
			}
			for i := range x {
				n, st, on := float64(naive[i]), float64(stable[i]), float64(online[i])
				switch {
				case math.IsNaN(n):
					tr.NaiveNaN++
				case n == 0 && overflowed:
					tr.NaiveZero++
				}
				if math.IsNaN(st) || math.IsInf(st, 0) {
					tr.StableNonFinite++
				}
				if math.IsNaN(on) || math.IsInf(on, 0) {
					tr.OnlineNonFinite++
				}
				tr.StableVsOnline = max(tr.StableVsOnline, math.Abs(st-on))
				tr.NaiveVsStable = max(tr.NaiveVsStable, math.Abs(n-st)) // max keeps a NaN
			}
		}
		out = append(out, tr)
	}
	return out
}

// SoftmaxMarkdown is the trials as a table, then what they show: where the
// naive softmax breaks, and whether the stable and online ones stayed
// finite and agreed.
func SoftmaxMarkdown(trials []SoftmaxTrial) string {
	var b strings.Builder
	b.WriteString("| scale | largest score | rows that overflowed | naive: NaN | naive: 0 there | naive − stable | stable: not finite | online: not finite | stable − online |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, tr := range trials {
		fmt.Fprintf(&b, "| %g | %.3g | %d of %d | %d of %d | %d | %.2g | %d | %d | %.2g |\n", tr.Scale, tr.MaxScore, tr.NaiveRows, tr.Rows,
			tr.NaiveNaN, tr.Probabilities, tr.NaiveZero, tr.NaiveVsStable, tr.StableNonFinite, tr.OnlineNonFinite, tr.StableVsOnline)
	}
	b.WriteString("\n")
	first := slices.IndexFunc(trials, func(tr SoftmaxTrial) bool { return tr.NaiveNaN > 0 })
	switch {
	case first < 0:
		fmt.Fprintf(&b, "No score passed ln(MaxFloat32) = %.2f, and the naive softmax stayed finite at every scale, within %.2g of the stable one. ",
			MaxExpArgument, slices.MaxFunc(trials, func(a, c SoftmaxTrial) int { return cmp.Compare(a.NaiveVsStable, c.NaiveVsStable) }).NaiveVsStable)
	default:
		if first > 0 {
			ok := trials[first-1]
			fmt.Fprintf(&b, "Up to scale %g (largest score %.3g) the naive softmax agrees with the stable one within %.2g. ", ok.Scale, ok.MaxScore, ok.NaiveVsStable)
		}
		tr := trials[first]
		fmt.Fprintf(&b, "At scale %g the largest score is %.3g, past ln(MaxFloat32) = %.2f. In %d of the %d rows (one per query head) a score passes it: its e^x is +Inf in fp32, so is the row's sum, and the naive softmax returns NaN for the scores that overflowed (Inf/Inf), %d of the %d probabilities, and 0 for the other scores of those rows (a finite e^x over an infinite sum), %d of them. ",
			tr.Scale, tr.MaxScore, MaxExpArgument, tr.NaiveRows, tr.Rows, tr.NaiveNaN, tr.Probabilities, tr.NaiveZero)
	}
	bad, worst := 0, 0.0
	for _, tr := range trials {
		bad += tr.StableNonFinite + tr.OnlineNonFinite
		worst = max(worst, tr.StableVsOnline)
	}
	if bad == 0 {
		fmt.Fprintf(&b, "The stable and the online softmax stay finite at every scale and agree within %.2g: subtracting the running maximum keeps every exponent at or below 0.", worst)
	} else {
		fmt.Fprintf(&b, "The stable and the online softmax gave %d probabilities that are not finite.", bad)
	}
	return b.String()
}

// SoftmaxFigure draws the largest scaled score against the scale, log-log,
// with ln(MaxFloat32) as the line above which the naive softmax overflows.
func SoftmaxFigure(trials []SoftmaxTrial) *plot.Figure {
	s := plot.Series{Name: "largest score"}
	for _, tr := range trials {
		s.X, s.Y = append(s.X, tr.Scale), append(s.Y, float64(tr.MaxScore))
	}
	return plot.Lines("largest attention score, scaled", "scale", "score", s).LogX().LogY().
		WithReference(MaxExpArgument, fmt.Sprintf("ln(MaxFloat32) = %.1f: e^x overflows above", MaxExpArgument))
}
