package lfm2

// The sentences of notebook 06's GPU section, written from the runs on the
// page (Run): where the prefill's time goes, what the decode work changed,
// how the MoE paths compare, what the pipeline gives, and how the engine
// compares with HF transformers. Each function returns Markdown, or an
// error naming what the run lacks.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// Operations the findings name.
const (
	opRouter            = "router"
	opPersistentExperts = "experts (persistent)"
)

// PrefillFindings says where the run's profiled prefill spends its GPU
// time (the experts' share, the next operations) and how its samples/s
// compare with HF transformers'.
func PrefillFindings(r *Run, hf *HFPeer) (string, error) {
	share, err := expertShare(r)
	if err != nil {
		return "", err
	}
	var next []string
	for _, o := range r.PrefillOps {
		if !strings.HasPrefix(o.Name, "expert") && len(next) < 3 {
			next = append(next, fmt.Sprintf("`%s` (%s)", o.Name, runMS(o.MS)))
		}
	}
	versus, err := prefillVersusHF(r, hf)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("- **Where the time goes** (%s): %s The next operations are %s. The lanes overlap, so the operations add up to more than the %s of the fastest prefill.\n- **Against HF transformers:** %s\n",
		r.Source(), share, bench.JoinAnd(next), runMS(r.PrefillMS), versus), nil
}

// expertShare says what share of the prefill's summed GPU time the experts
// take, naming their operations.
func expertShare(r *Run) (string, error) {
	if len(r.PrefillOps) == 0 {
		return "", fmt.Errorf("lfm2: %s (%s) has no prefill profile", r.Model, r.Source())
	}
	total := TotalMS(r.PrefillOps)
	experts, names := ExpertMS(r.PrefillOps)
	if len(names) == 0 {
		return "", fmt.Errorf("lfm2: %s (%s): no expert operation in the prefill profile", r.Model, r.Source())
	}
	return fmt.Sprintf("the experts (%s) take %s of the summed GPU time, %s of %s.",
		bench.JoinAnd(codeSpans(names)), runPct(experts/total), runMS(experts), runMS(total)), nil
}

// prefillVersusHF sets the run's samples/s against HF's, in batches of 64
// and in one batch, and says how micro-batched the engine's run was.
func prefillVersusHF(r *Run, hf *HFPeer) (string, error) {
	mbs, err := r.MicroBatches()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s samples/s are %s HF's %s in batches of 64 and %s its %s in one batch of %d, its fastest (HF %s). The engine runs micro-batches of %d sequences.",
		runRate(r.SamplesPerSec), runX(r.SamplesPerSec/hf.Prefill64), runRate(hf.Prefill64), runX(r.SamplesPerSec/hf.Prefill1024),
		runRate(hf.Prefill1024), r.Batch, hf.session(r), r.Batch/mbs), nil
}

// elemBytes is the bytes of a weight of the run's dtype.
func elemBytes(r *Run) int {
	if r.DType == BF16 {
		return 2
	}
	return 4
}

// expertBytes is what the experts of one MoE layer read at least in a
// decode step of batch sequences: the distinct experts that batch·top-k
// uniform choices reach on average.
func expertBytes(c *Config, batch, elemSize int) float64 {
	reached := 1 - math.Pow(1-float64(c.ExpertsPerToken)/float64(c.Experts), float64(batch))
	return float64(c.Experts) * reached * float64(3*c.Hidden*c.MoEIntermediate*elemSize)
}

// moeLayers counts the layers with experts.
func moeLayers(c *Config) int {
	n := 0
	for l := range c.Layers {
		if c.IsMoE(l) {
			n++
		}
	}
	return n
}

// bandwidthShare is bytes read in ms as a share of the run's GPU's DRAM
// bandwidth.
func bandwidthShare(bytes, ms float64, r *Run) float64 {
	return bytes / (ms * 1e-3) / (r.PeakGBps * 1e9)
}

// DecodeBeforeFindings says where a batch-1 decode step of r (the profile
// before the decode work) went: the step, the bytes it must read, and the
// router's and the persistent experts' time per layer with the experts'
// share of the bandwidth.
func DecodeBeforeFindings(r *Run) (string, error) {
	c, d, err := r.batchOneDecode()
	if err != nil {
		return "", err
	}
	router, okR := findOp(d.StepOps, opRouter)
	experts, okE := findOp(d.StepOps, opPersistentExperts)
	if !okR || !okE || router.Calls == 0 || experts.Calls == 0 {
		return "", fmt.Errorf("lfm2: %s (%s): the batch-1 step's profile lacks the %s or the %s", r.Model, r.Source(), opRouter, opPersistentExperts)
	}
	es := elemBytes(r)
	perLayer := expertBytes(c, 1, es)
	expertsMS := experts.MS / float64(experts.Calls)
	return fmt.Sprintf("In this profile (%s), a batch-1 step took %s and had to read at least %.1f GB of weights. The router took %s per layer (%d calls a step), for %d scores per token; the persistent experts took %s per layer, reading their %d chosen experts' %.0f MB at %s of the %s's bandwidth.\n",
		r.Source(), runMS(d.MS/float64(d.Steps)), DecodeStepBytes(c, 1, es)/1e9, runMS(router.MS/float64(router.Calls)), router.Calls, c.Experts,
		runMS(expertsMS), c.ExpertsPerToken, perLayer/1e6, runPct(bandwidthShare(perLayer, expertsMS, r)), r.shortGPU()), nil
}

// DecodeMarkdown tabulates each run's decode at the batch sizes of the
// first run's: the step, tokens/s, the profiled step, the persistent
// experts' time, and the bytes a step must read over the time as a share
// of each run's own GPU's bandwidth, which compares across GPUs.
func DecodeMarkdown(runs ...*Run) (string, error) {
	if len(runs) == 0 || len(runs[0].Decode) == 0 {
		return "", fmt.Errorf("lfm2: no decode to tabulate")
	}
	var b strings.Builder
	b.WriteString("| batch | run | ms/step | tokens/s | profiled step (sum of operations) | persistent experts | experts read at | step reads at |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	rate := func(bytes, ms float64, r *Run) string {
		return fmt.Sprintf("%.2f TB/s (%s)", bytes/(ms*1e-3)/1e12, runPct(bandwidthShare(bytes, ms, r)))
	}
	for _, first := range runs[0].Decode {
		batch := first.Batch
		for _, r := range runs {
			c, err := r.ModelConfig()
			if err != nil {
				return "", err
			}
			d, err := r.DecodeAt(batch)
			if err != nil {
				return "", err
			}
			es := elemBytes(r)
			stepMS, expertMS := d.MS/float64(d.Steps), OpMS(d.StepOps, opPersistentExperts)
			experts := "—"
			if expertMS > 0 {
				experts = rate(float64(moeLayers(c))*expertBytes(c, batch, es), expertMS, r)
			}
			fmt.Fprintf(&b, "| %d | %s | %.2f | %s | %.2f ms | %.3f ms | %s | %s |\n", batch, r.Source(), stepMS, runRate(d.TokensPerSec),
				TotalMS(d.StepOps), expertMS, experts, rate(DecodeStepBytes(c, batch, es), stepMS, r))
		}
	}
	b.WriteString("\nBandwidth: the bytes a step must read (the chosen experts: the distinct ones that batch × top-k uniform choices reach), over the time; in brackets, the share of that GPU's DRAM bandwidth.\n")
	return b.String(), nil
}

// DecodeFigures draws a batch-1 decode step before and after the decode
// work by operation, in the order of before's (slowest first); each
// operation's time before ÷ after (those of at least 50 µs before) with
// the ratio of the two GPUs' bandwidths as the reference line (1 on one
// GPU model), what the bandwidth alone would give a bandwidth-bound
// operation; and the tokens/s before and after next to HF's.
func DecodeFigures(before, after *Run, hf *HFPeer) ([]*plot.Figure, error) {
	b1, err := before.DecodeAt(1)
	if err != nil {
		return nil, err
	}
	a1, err := after.DecodeAt(1)
	if err != nil {
		return nil, err
	}
	var order []string
	for _, o := range b1.StepOps {
		order = append(order, o.Name)
	}
	names, ratios := opRatios(b1.StepOps, a1.StepOps)
	bw := bandwidthRatio(before, after)
	gpus, ref := fmt.Sprintf("%s before, %s after", before.shortGPU(), after.shortGPU()), fmt.Sprintf("bandwidth alone: %s/%s = %.2f×", after.shortGPU(), before.shortGPU(), bw)
	if sameGPU(before, after) {
		gpus, ref = "both on the "+before.shortGPU(), "no change: 1×"
	}
	return []*plot.Figure{
		OpBars("batch-1 decode step, BEFORE the decode work ("+before.Tag()+")", b1.StepOps, order),
		OpBars("batch-1 decode step, AFTER the decode work ("+after.Tag()+")", a1.StepOps, order),
		plot.Bars(fmt.Sprintf("before ÷ after, per operation of ≥ 50 µs (%s)", gpus), "before ÷ after",
			names, ratios).WithValueSuffix("×").WithReference(bw, ref),
		plot.Bars(fmt.Sprintf("batch-1 greedy decode, tokens/s (before: %s; after: %s; HF: %s)", before.Tag(), after.Tag(), strings.TrimPrefix(hf.Device, "NVIDIA ")), "tokens/s",
			[]string{"gpulab before", "gpulab after", "HF transformers"},
			[]float64{b1.TokensPerSec, a1.TokensPerSec, hf.Decode}),
	}, nil
}

// opRatios is each operation's time in before over its time in after, for
// the operations of at least 50 µs in before that after also runs.
func opRatios(before, after []OpTime) (names []string, ratios []float64) {
	for _, o := range before {
		if a := OpMS(after, o.Name); o.MS >= 0.05 && a > 0 {
			names, ratios = append(names, o.Name), append(ratios, o.MS/a)
		}
	}
	return names, ratios
}

// DecodeFindings says what the decode work changed, from batch-1 steps
// before and after it (on one GPU model, or on GPUs of different
// bandwidths): the rate against HF's, which operations shrank beyond the
// bandwidth ratio (1 on one GPU model), which shrank less, which stayed,
// which got slower, and the share of each GPU's bandwidth the experts and
// the whole step reach.
func DecodeFindings(before, after *Run, hf *HFPeer) (string, error) {
	c, err := after.ModelConfig()
	if err != nil {
		return "", err
	}
	b1, err := before.DecodeAt(1)
	if err != nil {
		return "", err
	}
	a1, err := after.DecodeAt(1)
	if err != nil {
		return "", err
	}
	var bullets []string
	then := fmt.Sprintf(" Before the work, %s (%s), a %s step.", runRate(b1.TokensPerSec)+" tokens/s", before.Source(), runMS(b1.MS/float64(b1.Steps)))
	if sameGPU(before, after) {
		then += fmt.Sprintf(" On the same GPU model, the step is %s as fast.", runX(a1.TokensPerSec/b1.TokensPerSec))
	}
	bullets = append(bullets, decodeVersusHF(after, a1, hf)+then)
	names, ratios := opRatios(b1.StepOps, a1.StepOps)
	bullets = append(bullets, opChangeBullets(before, after, names, ratios)...)
	es := elemBytes(after)
	var shares []string
	for _, x := range []struct {
		r *Run
		d *DecodeRecord
	}{{before, b1}, {after, a1}} {
		if ms := OpMS(x.d.StepOps, opPersistentExperts); ms > 0 {
			shares = append(shares, fmt.Sprintf("%s of the %s's", runPct(bandwidthShare(float64(moeLayers(c))*expertBytes(c, 1, elemBytes(x.r)), ms, x.r)), x.r.shortGPU()))
		}
	}
	if len(shares) == 2 {
		bullets = append(bullets, fmt.Sprintf("The persistent experts went from %s bandwidth to %s.", shares[0], shares[1]))
	}
	calls := 0
	for _, o := range a1.StepOps {
		calls += o.Calls
	}
	step := DecodeStepBytes(c, 1, es)
	bullets = append(bullets, fmt.Sprintf("The whole step reads its %.1f GB at %s of the %s's bandwidth, in %d timed operations over %d layers.",
		step/1e9, runPct(bandwidthShare(step, a1.MS/float64(a1.Steps), after)), after.shortGPU(), calls, c.Layers))
	return bulletList(bullets), nil
}

// DecodeAfter is the run to set against before as "after" the decode
// work: one, when it was measured now with decode on the same GPU model
// as before (a same-GPU comparison), else recorded.
func DecodeAfter(before, one, recorded *Run) *Run {
	if one != nil && one.Live() && len(one.Decode) > 0 && one.DeviceName == before.DeviceName {
		return one
	}
	return recorded
}

// sameGPU says whether two runs ran on the same GPU model, so that their
// times compare without a bandwidth ratio.
func sameGPU(a, b *Run) bool { return a.DeviceName == b.DeviceName }

// bandwidthRatio is after's GPU's DRAM bandwidth over before's: 1 on the
// same GPU model.
func bandwidthRatio(before, after *Run) float64 {
	if sameGPU(before, after) {
		return 1
	}
	return after.PeakGBps / before.PeakGBps
}

// opChange is how an operation's time before ÷ after compares with the
// bandwidth ratio bw between the GPUs (1 on one GPU model).
type opChange int

const (
	opShrankBeyond opChange = iota // more than 1.2·bw (and 1.1)
	opShrankWithin                 // over 1.1, up to 1.2·bw
	opUnchanged                    // 0.9 to 1.1
	opSlower                       // below 0.9: a regression
)

func classifyOp(ratio, bw float64) opChange {
	switch {
	case ratio < 0.9:
		return opSlower
	case ratio <= 1.1:
		return opUnchanged
	case ratio > 1.2*bw:
		return opShrankBeyond
	}
	return opShrankWithin
}

// opChangeBullets says, for each class of change with operations in it,
// which operations changed by how much between before and after: those
// that shrank beyond the bandwidth ratio, those within it, those that
// stayed, and those that got slower.
func opChangeBullets(before, after *Run, names []string, ratios []float64) []string {
	bw := bandwidthRatio(before, after)
	var groups [4][]string
	var groupR [4][]float64
	for i, n := range names {
		k := classifyOp(ratios[i], bw)
		groups[k], groupR[k] = append(groups[k], n), append(groupR[k], ratios[i])
	}
	same := sameGPU(before, after)
	var bullets []string
	for k, ops := range groups {
		if len(ops) == 0 {
			continue
		}
		list, r := bench.JoinAnd(codeSpans(ops)), runRange(groupR[k])
		var s string
		switch k := opChange(k); {
		case k == opShrankBeyond && same:
			s = fmt.Sprintf("%s shrank %s on the same GPU model, where no change of bandwidth accounts for any of it.", list, r)
		case k == opShrankBeyond:
			s = fmt.Sprintf("%s shrank %s, beyond the %s that the %s's bandwidth over the %s's accounts for.", list, r, runX(bw), after.shortGPU(), before.shortGPU())
		case k == opShrankWithin && same:
			s = fmt.Sprintf("%s shrank a little, %s.", list, r)
		case k == opShrankWithin:
			s = fmt.Sprintf("%s shrank %s, no more than the %s of the bandwidth ratio (with a 20%% margin) accounts for: the work may not have touched them.", list, r, runX(bw))
		case k == opUnchanged && same:
			s = fmt.Sprintf("%s stayed within %s: the work left them as they were.", list, r)
		case k == opUnchanged:
			s = fmt.Sprintf("%s stayed within %s: less than the bandwidth ratio, so memory does not bound them; their launches and short grids are the likelier suspects.", list, r)
		default:
			s = fmt.Sprintf("%s got slower (before ÷ after %s): a regression to look into", list, r)
			if bw > 1 {
				s += fmt.Sprintf(", on a GPU with %s the bandwidth", runX(bw))
			}
			s += "."
		}
		bullets = append(bullets, s)
	}
	return bullets
}

// DecodeStepFindings says where the time of r's batch-1 decode step goes:
// the step and its rate, the sum of its timed operations, the persistent
// experts' share of it and of the GPU's bandwidth, the next operations,
// and the share of the bandwidth at which the whole step reads.
func DecodeStepFindings(r *Run) (string, error) {
	c, d, err := r.batchOneDecode()
	if err != nil {
		return "", err
	}
	ops := slices.Clone(d.StepOps)
	slices.SortStableFunc(ops, func(a, b OpTime) int { return cmp.Compare(b.MS, a.MS) })
	total, stepMS := TotalMS(ops), d.MS/float64(d.Steps)
	var bullets []string
	bullets = append(bullets, fmt.Sprintf("A batch-1 step (%s) takes %s, %s tokens/s; its timed operations sum to %s, more than the step, because the events around each operation cost time too.",
		r.Source(), runMS(stepMS), runRate(d.TokensPerSec), runMS(total)))
	var next []string
	for _, o := range ops {
		if o.Name == opPersistentExperts {
			share := bandwidthShare(float64(moeLayers(c))*expertBytes(c, 1, elemBytes(r)), o.MS, r)
			bullets = append(bullets, fmt.Sprintf("The persistent experts take %s of it (%s), reading their weights at %s of the %s's bandwidth.",
				runMS(o.MS), runPct(o.MS/total), runPct(share), r.shortGPU()))
		} else if len(next) < 3 {
			next = append(next, fmt.Sprintf("`%s` (%s)", o.Name, runMS(o.MS)))
		}
	}
	if len(next) > 0 {
		bullets = append(bullets, fmt.Sprintf("The next operations are %s.", bench.JoinAnd(next)))
	}
	step := DecodeStepBytes(c, 1, elemBytes(r))
	bullets = append(bullets, fmt.Sprintf("The whole step reads its %.1f GB at %s of the %s's bandwidth.", step/1e9, runPct(bandwidthShare(step, stepMS, r)), r.shortGPU()))
	return bulletList(bullets), nil
}

// decodeVersusHF sets a batch-1 decode against HF's.
func decodeVersusHF(r *Run, d *DecodeRecord, hf *HFPeer) string {
	return fmt.Sprintf("At batch 1 the engine decodes %s tokens/s (%s, a %s step): %s HF's %s tokens/s (HF %s).",
		runRate(d.TokensPerSec), r.Source(), runMS(d.MS/float64(d.Steps)), runX(d.TokensPerSec/hf.Decode), runRate(hf.Decode), hf.session(r))
}

// MoEFindings says how the run's MoE paths compare at prefill size (the
// profiled wall of each, wgmma's operations against grouped's, the
// persistent kernel against the GEMMs) and what the experts take of a
// decode step at the largest batch the auto choice runs persistent.
func MoEFindings(r *Run) (string, error) {
	c, err := r.ModelConfig()
	if err != nil {
		return "", err
	}
	grouped, err := r.MoEPath(MoEGrouped)
	if err != nil {
		return "", err
	}
	var walls []string
	for _, p := range r.MoE {
		walls = append(walls, fmt.Sprintf("%s (%s)", runMS(p.WallMS), p.Path))
	}
	bullets := []string{fmt.Sprintf("The profiled prefills take %s (%s).", bench.JoinAnd(walls), r.Source())}
	if wgmma, err := r.MoEPath(MoEWgmma); err == nil {
		var diffs []string
		for _, o := range wgmma.Ops {
			g := OpMS(grouped.Ops, o.Name)
			if g > 0 && math.Abs(o.MS-g) >= 0.02*grouped.WallMS && math.Abs(o.MS/g-1) > 0.1 {
				diffs = append(diffs, fmt.Sprintf("`%s` %s against %s", o.Name, runMS(o.MS), runMS(g)))
			}
		}
		s := fmt.Sprintf("The two tensor-core paths' profiled walls are within %s of each other.", runPct(math.Abs(wgmma.WallMS/grouped.WallMS-1)))
		if len(diffs) > 0 {
			s += " The operations that differ by more than 2% of the wall, wgmma against grouped: " + strings.Join(diffs, "; ") + "."
		}
		bullets = append(bullets, s)
	}
	if p, err := r.MoEPath(MoEPersistent); err == nil {
		bullets = append(bullets, fmt.Sprintf("At prefill size the persistent kernel's prefill takes %s as long as the grouped GEMMs'.", runX(p.WallMS/grouped.WallMS)))
	}
	if s, ok := decodeExperts(r, c); ok {
		bullets = append(bullets, s)
	}
	return bulletList(bullets), nil
}

// decodeExperts says what share of a decode step the persistent experts
// take at the largest batch the auto choice runs them at, and at what
// share of the bandwidth they read the experts.
func decodeExperts(r *Run, c *Config) (string, bool) {
	var d *DecodeRecord
	for i := range r.Decode {
		if r.Decode[i].Batch*c.ExpertsPerToken <= PersistentMaxPairs && (d == nil || r.Decode[i].Batch > d.Batch) {
			d = &r.Decode[i]
		}
	}
	if d == nil {
		return "", false
	}
	ms := OpMS(d.StepOps, opPersistentExperts)
	if ms == 0 {
		return "", false
	}
	bytes := float64(moeLayers(c)) * expertBytes(c, d.Batch, elemBytes(r))
	return fmt.Sprintf("Decoding at batch %d (%d (token, expert) pairs a step), the persistent experts take %s of the profiled step's %s (%s), and read the experts at %s of the %s's bandwidth; the timed step takes %s.",
		d.Batch, d.Batch*c.ExpertsPerToken, runMS(ms), runMS(TotalMS(d.StepOps)), runPct(ms/TotalMS(d.StepOps)),
		runPct(bandwidthShare(bytes, ms, r)), r.shortGPU(), runMS(d.MS/float64(d.Steps))), true
}

// PipelineFindings says what the pipelines give over one GPU: the first
// one's speedup against the bound of its bubble, its stages' busy times
// against one GPU's, and each other pipeline's speedup.
func PipelineFindings(one *Run, pipes ...*Run) (string, error) {
	if len(pipes) == 0 {
		return "", fmt.Errorf("lfm2: no pipeline to set against one GPU")
	}
	two := pipes[0]
	mbs, err := two.MicroBatches()
	if err != nil {
		return "", err
	}
	g := two.GPUs()
	speedup := two.SamplesPerSec / one.SamplesPerSec
	same := "measured now"
	if !two.Live() {
		same = "recorded at commits " + one.shortCommit() + " and " + two.shortCommit()
		if one.Commit == two.Commit {
			same = "recorded in one session, commit " + one.shortCommit()
		}
	}
	bullets := []string{fmt.Sprintf("%d GPUs give %s one (%s against %s samples/s; %s). With %d micro-batches over %d stages, a balanced pipeline idles each stage %d of %d slots: at most %s.",
		g, runX(speedup), runRate(two.SamplesPerSec), runRate(one.SamplesPerSec), same, mbs, g, g-1, mbs+g-1, runX(PipelineBound(mbs, g)))}
	if len(two.StageTimes) > 1 {
		var busy []string
		sum := 0.0
		for _, st := range two.StageTimes {
			busy, sum = append(busy, runMS(st.BusyMS)), sum+st.BusyMS
		}
		last := two.StageTimes[len(two.StageTimes)-1]
		s := fmt.Sprintf("The stages are busy %s; the last starts %s in.", bench.JoinAnd(busy), runMS(last.FirstMS))
		if len(one.StageTimes) == 1 {
			s += fmt.Sprintf(" Together they work %s, against one GPU's %s for the same prefill: smaller micro-batches cost more per sequence.", runMS(sum), runMS(one.StageTimes[0].BusyMS))
		}
		bullets = append(bullets, s)
	}
	for _, p := range pipes[1:] {
		bullets = append(bullets, fmt.Sprintf("%d GPUs give %s one (%s samples/s).", p.GPUs(), runX(p.SamplesPerSec/one.SamplesPerSec), runRate(p.SamplesPerSec)))
	}
	return bulletList(bullets), nil
}

// PeersMarkdown tabulates the engine against HF transformers: prefill and
// batch-1 decode of one run (with HF timed as hf says), the pipeline's
// speedup against its bubble bound, and the accuracy checks of acc; then
// the captions of HF's run and of acc (HFPeer.Caption,
// HFComparisonCaption), whose files hold no provenance of their own.
func PeersMarkdown(one, pipe *Run, hf *HFPeer, acc *HFComparison) (string, error) {
	d, err := one.DecodeAt(1)
	if err != nil {
		return "", err
	}
	mbs, err := pipe.MicroBatches()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| figure | gpulab | HF transformers %s | record |\n|---|---:|---:|---|\n", hf.Transformers)
	fmt.Fprintf(&b, "| prefill %d × %d, one GPU | %s samples/s | %s (batches of 64), %s (one batch); %s | %s |\n",
		one.Batch, one.Seq, runRate(one.SamplesPerSec), runRate(hf.Prefill64), runRate(hf.Prefill1024), hf.session(one), one.Source())
	fmt.Fprintf(&b, "| decode, batch 1, greedy | %s tokens/s | %s | %s |\n", runRate(d.TokensPerSec), runRate(hf.Decode), one.Source())
	fmt.Fprintf(&b, "| prefill, %d GPUs over one | %s (bubble bound %s) | | %s |\n",
		pipe.GPUs(), runX(pipe.SamplesPerSec/one.SamplesPerSec), runX(PipelineBound(mbs, pipe.GPUs())), pipe.Source())
	fmt.Fprintf(&b, "| bf16 against fp32, top-1 agreement (%d positions, HF's random 8B) | %.1f%% | %.1f%% (HF's bf16 against HF's fp32) | `%s` |\n",
		acc.Positions, 100*acc.Top1[top1Ours], 100*acc.Top1[top1HF], HFComparisonFile)
	fmt.Fprintf(&b, "| fp32 against HF's fp32, max \\|diff\\| (HF's RoPE frequencies) | %.3g | | `%s` |\n", acc.HFRoPE.Max, HFComparisonFile)
	fmt.Fprintf(&b, "| fp32 against HF's fp32, max \\|diff\\| (the engine's RoPE frequencies in HF) | %.2g | | `%s` |\n", acc.LabRoPE.Max, HFComparisonFile)
	b.WriteString("\n" + hf.Caption() + "\n\n" + HFComparisonCaption() + "\n")
	return b.String(), nil
}

// decodeWorkSentence says how the batch-1 step changed from before (b1)
// to one (a1): on one GPU model, the decode work's doing; on two, with the
// ratio of their DRAM bandwidths, which accounts for part of it.
func decodeWorkSentence(before, one *Run, b1, a1 *DecodeRecord) string {
	from, to := runMS(b1.MS/float64(b1.Steps)), runMS(a1.MS/float64(a1.Steps))
	if sameGPU(before, one) {
		return fmt.Sprintf("The decode work took the batch-1 step from %s (%s) to %s (%s).", from, before.Tag(), to, one.Tag())
	}
	return fmt.Sprintf("A batch-1 step took %s before the decode work (%s) and %s after it (%s), on another GPU model, whose DRAM bandwidth is %s the first's: "+
		"that ratio accounts for part of the change, and the decode section compares on one GPU model where a run on it exists.",
		from, before.Tag(), to, one.Tag(), runX(bandwidthRatio(before, one)))
}

// SummaryFindings says what the recorded runs show, one bullet per part:
// the prefill (one) against HF, the decode work (before, one) against HF,
// the MoE paths as a choice by size, the pipelines, and bf16 against fp32
// beside HF's own (acc).
func SummaryFindings(one, before *Run, pipes []*Run, hf *HFPeer, acc *HFComparison) (string, error) {
	share, err := expertShare(one)
	if err != nil {
		return "", err
	}
	versus, err := prefillVersusHF(one, hf)
	if err != nil {
		return "", err
	}
	a1, err := one.DecodeAt(1)
	if err != nil {
		return "", err
	}
	b1, err := before.DecodeAt(1)
	if err != nil {
		return "", err
	}
	bullets := []string{
		fmt.Sprintf("**Prefill:** %s On one %s, %s", versus, one.shortGPU(), share),
		fmt.Sprintf("**Decode:** %s %s", decodeVersusHF(one, a1, hf), decodeWorkSentence(before, one, b1, a1)),
	}
	if moe, err := MoEFindings(one); err == nil {
		bullets = append(bullets, "**The MoE path is a choice by size:**\n"+indent(moe))
	}
	if len(pipes) > 0 {
		pipe, err := PipelineFindings(one, pipes...)
		if err != nil {
			return "", err
		}
		bullets = append(bullets, "**Pipelines:**\n"+indent(pipe))
	}
	bullets = append(bullets, fmt.Sprintf("**bf16 against fp32** (HF's random 8B, %d positions): the engine's bf16 picks the fp32 top token at %.1f%% of them, HF's own bf16 at %.1f%%. With the engine's RoPE frequencies, HF's fp32 agrees with the engine's fp32 within %.2g everywhere, against %.3g with HF's own frequencies: random weights amplify a last-bit difference (the median top-two margin is %.2g).",
		acc.Positions, 100*acc.Top1[top1Ours], 100*acc.Top1[top1HF], acc.LabRoPE.Max, acc.HFRoPE.Max, acc.MedianTop2Margin))
	return bulletList(bullets), nil
}

// bulletList is a Markdown list of the items.
func bulletList(items []string) string {
	var b strings.Builder
	for _, s := range items {
		b.WriteString("- " + s + "\n")
	}
	return b.String()
}

// indent nests a Markdown list one level.
func indent(list string) string {
	lines := strings.Split(strings.TrimRight(list, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n")
}

// codeSpans puts each name in backticks.
func codeSpans(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return out
}

// runX prints a ratio: two decimals below 10, one below 100, none above:
// "2.28×", "12.5×", "42×".
func runX(x float64) string {
	switch {
	case x >= 99.5:
		return fmt.Sprintf("%.0f×", x)
	case x >= 9.95:
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// runRange prints the range of ratios: "2.40–4.50×", or one ratio.
func runRange(v []float64) string {
	lo, hi := slices.Min(v), slices.Max(v)
	if runX(lo) == runX(hi) {
		return runX(lo)
	}
	return strings.TrimSuffix(runX(lo), "×") + "–" + runX(hi)
}

// runPct prints a share as a percentage: no decimals from 10% on, one
// from 1%, two significant digits below: "43%", "5.0%", "0.04%".
func runPct(share float64) string {
	switch p := 100 * math.Abs(share); {
	case p >= 9.95 || p == 0:
		return fmt.Sprintf("%.0f%%", 100*share)
	case p >= 0.995:
		return fmt.Sprintf("%.1f%%", 100*share)
	}
	return fmt.Sprintf("%.2g%%", 100*share)
}

// runRate prints a rate: no decimals from 100 on, one below: "4377", "47.6".
func runRate(v float64) string {
	if math.Abs(v) >= 99.95 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// runMS prints a time given in ms with three significant digits in the
// unit that keeps them: "178 ms", "2.19 ms", "10.5 s", "50.8 µs".
func runMS(ms float64) string {
	v, unit := ms, "ms"
	switch a := math.Abs(ms); {
	case a >= 999.5:
		v, unit = ms/1e3, "s"
	case a < 0.9995 && a > 0:
		v, unit = ms*1e3, "µs"
	}
	digits := 2
	for m := 10.0; m <= math.Abs(v)+1e-9 && digits > 0; m *= 10 {
		digits--
	}
	// Rounding can carry into a new digit: 99.96 is 100, not 100.0.
	if s := fmt.Sprintf("%.*f", digits, v); len(strings.ReplaceAll(strings.TrimLeft(s, "-0."), ".", "")) > 3 && digits > 0 {
		digits--
	}
	return fmt.Sprintf("%.*f %s", digits, v, unit)
}

// batchOneDecode is r's model and its batch-1 decode record.
func (r *Run) batchOneDecode() (*Config, *DecodeRecord, error) {
	c, err := r.ModelConfig()
	if err != nil {
		return nil, nil, err
	}
	d, err := r.DecodeAt(1)
	if err != nil {
		return nil, nil, err
	}
	return c, d, nil
}
