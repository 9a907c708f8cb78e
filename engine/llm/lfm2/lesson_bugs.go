package lfm2

// The LFM2 development log's bugs as experiments: each is injected into the
// CPU reference, and the reference's own logits catch it, position by
// position, as the log's author caught them by comparing with a CPU
// reference; on a CUDA device, the RoPE sign bug is compiled into the GPU
// kernel too, and the reference catches that.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine"
	"gpulab/engine/plot"
)

// A LogitsChange is what a change to the reference forward (a bug injected,
// a cache dropped) does to the logits of a fixture's batch.
type LogitsChange struct {
	Fixture string // dense or moe
	Change  string // what was changed, e.g. "the RoPE sign bug"
	// ByPosition is max |changed − reference| at each position, over the
	// sequences and the vocabulary.
	ByPosition []float64
	// Baseline is max |reference − transformers| at each position: how
	// close two correct fp32 forwards come.
	Baseline []float64
	// TopChanged counts the (sequence, position) rows whose most likely
	// token changed, of Rows.
	TopChanged, Rows int
}

// Max is the largest change and its position.
func (ch LogitsChange) Max() (float64, int) {
	at := 0
	for p, d := range ch.ByPosition {
		if d > ch.ByPosition[at] {
			at = p
		}
	}
	return ch.ByPosition[at], at
}

// Caught lists the positions where the change exceeds ReferenceTolerance:
// where a check against the reference sees it.
func (ch LogitsChange) Caught() []int {
	var out []int
	for p, d := range ch.ByPosition {
		if d > ReferenceTolerance {
			out = append(out, p)
		}
	}
	return out
}

// compare measures changed, logits of f's batch, against the reference's.
func (f *Fixture) compare(change string, changed []float32) (LogitsChange, error) {
	ref, err := Logits(f.Config, f.Weights, f.Batch)
	if err != nil {
		return LogitsChange{}, err
	}
	v := f.Config.Vocab
	ch := LogitsChange{Fixture: f.Name, Change: change, Rows: len(ref) / v,
		ByPosition: PositionDiffs(changed, ref, f.Seq(), v), Baseline: PositionDiffs(ref, f.Logits, f.Seq(), v)}
	for r := 0; r < len(ref); r += v {
		if Argmax(ref[r:r+v]) != Argmax(changed[r:r+v]) {
			ch.TopChanged++
		}
	}
	return ch, nil
}

// RoPESignBug runs the fixture's batch with the RoPE sign bug injected
// (LogitsRotating with RoPESignBug) and measures the change.
func (f *Fixture) RoPESignBug() (LogitsChange, error) {
	bug, err := LogitsRotating(f.Config, f.Weights, f.Batch, RoPESignBug)
	if err != nil {
		return LogitsChange{}, err
	}
	return f.compare("the RoPE sign bug", bug)
}

// CUDARoPESignBug runs the fixture's batch on the CUDA engine compiled
// with the RoPE sign bug (CUDAOptions.RoPESignBug, -DROPE_SIGN_BUG=1 in
// 03_rope.cu) on devs, and measures its logits against the CPU
// reference's: the reference catching the GPU kernel, as in the
// development log.
func (f *Fixture) CUDARoPESignBug(devs []*engine.Device) (LogitsChange, error) {
	if len(devs) == 0 || slices.ContainsFunc(devs, func(d *engine.Device) bool { return d.Kind != engine.CUDA }) {
		return LogitsChange{}, fmt.Errorf("lfm2: the RoPE sign bug is compiled into the CUDA engine: it needs CUDA devices")
	}
	m, err := Open(f.Dir, devs, CUDAOptions{RoPESignBug: true, MaxBatch: len(f.Batch), MaxSeq: f.Seq()})
	if err != nil {
		return LogitsChange{}, err
	}
	got, err := m.Logits(f.Batch)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return LogitsChange{}, err
	}
	return f.compare("the CUDA engine with the RoPE sign bug (`-DROPE_SIGN_BUG=1`), against the CPU reference", got)
}

// NormEps runs the fixture's batch with every RMSNorm's epsilon set to eps
// (the development log's first kernels used 1e-6 where the model says
// 1e-5) and measures the change.
func (f *Fixture) NormEps(eps float64) (LogitsChange, error) {
	c := *f.Config
	c.NormEps = eps
	changed, err := Logits(&c, f.Weights, f.Batch)
	if err != nil {
		return LogitsChange{}, err
	}
	return f.compare(fmt.Sprintf("ε = %.0e", eps), changed)
}

// Decode runs each sequence of the fixture's batch one token at a time
// through its caches, as generation does, and measures the change from
// the prefill that runs all positions at once. With dropConvState, each
// conv layer's state (the last inputs of its causal convolution) is
// cleared before every token: a decode that forgets where the sequence was.
func (f *Fixture) Decode(dropConvState bool) (LogitsChange, error) {
	c, T := f.Config, f.Seq()
	out := make([]float32, len(f.Batch)*T*c.Vocab)
	for b, seq := range f.Batch {
		st := NewState(c)
		for t, tok := range seq {
			if dropConvState {
				for _, conv := range st.Conv {
					clear(conv)
				}
			}
			logits, err := Forward(c, f.Weights, st, []int{tok})
			if err != nil {
				return LogitsChange{}, err
			}
			copy(out[(b*T+t)*c.Vocab:], logits[0])
		}
	}
	change := "decode, token by token"
	if dropConvState {
		change = "decode with the conv state dropped"
	}
	return f.compare(change, out)
}

// ChangeMarkdown says what each change did: its largest effect against
// the tolerance and against how close the reference comes to transformers,
// where the reference check catches it, and how many top tokens it moved.
func ChangeMarkdown(changes ...LogitsChange) string {
	var b strings.Builder
	for _, ch := range changes {
		worst, at := ch.Max()
		fmt.Fprintf(&b, "- **%s, %s:** ", ch.Fixture, ch.Change)
		if worst == 0 {
			fmt.Fprintf(&b, "the logits are bit for bit the reference's at every position.")
		} else {
			fmt.Fprintf(&b, "the logits move by up to %.3g (position %d), %s the tolerance of %.0e; the reference and transformers, two correct forwards, differ by at most %.2g. ",
				worst, at, timesTolerance(worst), ReferenceTolerance, slices.Max(ch.Baseline))
			fmt.Fprintf(&b, "%s. ", caughtSentence(ch))
			fmt.Fprintf(&b, "The most likely token changes in %d of the %d rows (sequence, position).", ch.TopChanged, ch.Rows)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// allChanges reports whether every change satisfies ok.
func allChanges(changes []LogitsChange, ok func(LogitsChange) bool) bool {
	return len(changes) > 0 && !slices.ContainsFunc(changes, func(ch LogitsChange) bool { return !ok(ch) })
}

// onlyFirstExact reports whether position 0 is exactly the reference's and
// every later position is beyond the tolerance.
func onlyFirstExact(ch LogitsChange) bool {
	return ch.ByPosition[0] == 0 && len(ch.Caught()) == len(ch.ByPosition)-1
}

// RoPEBugMarkdown is ChangeMarkdown of the RoPE sign bug on the fixtures,
// then, where the numbers show it, what position 0 means for a check.
func RoPEBugMarkdown(changes ...LogitsChange) string {
	md := ChangeMarkdown(changes...)
	if allChanges(changes, onlyFirstExact) {
		md += "\nOn every fixture, position 0 is untouched and every later position is caught. At position 0 the angle is 0 and sin 0 = 0, so the bug's map is the identity, as RoPE's is; from position 1 on, the first half of every query and key head is wrong, and so is everything attention computes from them. A check of the first token alone would pass. Comparing every position with the reference, as the log did element by element, shows the bug from the second token on."
	}
	return md
}

// NormEpsMarkdown is ChangeMarkdown of a wrong RMSNorm epsilon on the
// fixtures, then, where the numbers show it, what greedy decoding would
// have seen of it.
func NormEpsMarkdown(changes ...LogitsChange) string {
	md := ChangeMarkdown(changes...)
	caught := func(ch LogitsChange) bool { return len(ch.Caught()) == len(ch.ByPosition) }
	switch {
	case allChanges(changes, func(ch LogitsChange) bool { return caught(ch) && ch.TopChanged == 0 }):
		md += "\nThe reference catches the wrong ε at every position of both fixtures, yet the most likely next token is the same at every position: greedy choices would not change, and only the comparison of the logits with the reference shows the bug."
	case allChanges(changes, caught):
		md += "\nThe reference catches the wrong ε at every position of both fixtures."
	}
	return md
}

// ConvStateMarkdown is ChangeMarkdown of decoding token by token, with and
// without the conv state, then, where the numbers show it, why.
func ConvStateMarkdown(changes ...LogitsChange) string {
	md := ChangeMarkdown(changes...)
	var kept, dropped []LogitsChange
	for _, ch := range changes {
		if strings.Contains(ch.Change, "dropped") {
			dropped = append(dropped, ch)
		} else {
			kept = append(kept, ch)
		}
	}
	if allChanges(kept, func(ch LogitsChange) bool { w, _ := ch.Max(); return w == 0 }) {
		md += "\nThrough the caches, decode gives the prefill's logits bit for bit: each token's work is the same arithmetic in the same order, whether the tokens around it run in the same call or not."
	}
	if allChanges(dropped, onlyFirstExact) {
		md += " Without the conv state, position 0 is still exact, since its state is empty either way, and every later position is wrong: a decode step's convolution finds the inputs before its token in the state, and nowhere else."
	}
	return md
}

// timesTolerance says how d compares with ReferenceTolerance.
func timesTolerance(d float64) string {
	switch r := d / ReferenceTolerance; {
	case r >= 10:
		return fmt.Sprintf("%.0f times", r)
	case r > 1:
		return fmt.Sprintf("%.2g times", r)
	default:
		return "within"
	}
}

// caughtSentence says at which positions the change exceeds the tolerance.
func caughtSentence(ch LogitsChange) string {
	caught, T := ch.Caught(), len(ch.ByPosition)
	switch {
	case len(caught) == 0:
		return "No position exceeds the tolerance: a check against the reference cannot tell this change from rounding"
	case len(caught) == T:
		return "Every position exceeds the tolerance"
	}
	var exact []int
	for p, d := range ch.ByPosition {
		if d == 0 {
			exact = append(exact, p)
		}
	}
	s := fmt.Sprintf("%d of %d positions exceed the tolerance (%v)", len(caught), T, caught)
	if len(exact) > 0 {
		s += fmt.Sprintf("; at %v the logits are exactly the reference's", exact)
	}
	return s
}

// ChangeFigure draws each change and each fixture's baseline (the
// reference against transformers) by position, on a log scale with the
// tolerance between them. A log axis cannot show 0: positions where a
// change is exactly 0 are left out (ChangeMarkdown says where).
func ChangeFigure(title string, changes ...LogitsChange) *plot.Figure {
	return plot.Lines(title, "position", "max |Δ logit|", changeSeries(changes)...).LogY().
		WithReference(ReferenceTolerance, fmt.Sprintf("tolerance %.0e", ReferenceTolerance))
}

// changeSeries is ChangeFigure's lines: each change, and after a fixture's
// first change its baseline, without the points at 0; a change that is 0
// everywhere has none.
func changeSeries(changes []LogitsChange) []plot.Series {
	var series []plot.Series
	add := func(name string, diffs []float64) {
		s := plot.Series{Name: name}
		for p, d := range diffs {
			if d > 0 && !math.IsInf(d, 0) {
				s.X, s.Y = append(s.X, float64(p)), append(s.Y, d)
			}
		}
		if len(s.X) > 0 {
			series = append(series, s)
		}
	}
	seen := map[string]bool{}
	for _, ch := range changes {
		add(ch.Fixture+": "+ch.Change, ch.ByPosition)
		if !seen[ch.Fixture] {
			seen[ch.Fixture] = true
			add(ch.Fixture+": reference vs transformers", ch.Baseline)
		}
	}
	return series
}
