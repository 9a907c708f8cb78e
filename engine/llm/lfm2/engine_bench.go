package lfm2

// What `lab lfm2 bench` measures, on any Engine: Bench fills a BenchRecord
// part by part (the prefill with its profile, the MoE paths compared, the
// decode at each batch size), and the text tables that print it.

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// BenchSpec is what Bench measures: the prefill of Batch random sequences
// of Seq tokens (RandomBatch with Seed; the fastest of Reps runs, then one
// profiled run on CUDA); with CompareMoE, one profiled prefill of that
// batch with each MoE path (CUDA); and with DecodeSteps > 0, that many
// greedy steps after Seq-token prompts at each of DecodeBatches.
type BenchSpec struct {
	Batch, Seq, Reps int
	Seed             uint64
	DecodeSteps      int
	DecodeBatches    []int
	CompareMoE       bool
}

// check refuses sizes that cannot run.
func (s BenchSpec) check() error {
	if s.Batch <= 0 || s.Seq <= 0 || s.Reps <= 0 || s.DecodeSteps < 0 {
		return fmt.Errorf("lfm2: benchmark of %d sequences of %d tokens, %d runs, %d decode steps: want positive sizes", s.Batch, s.Seq, s.Reps, s.DecodeSteps)
	}
	for _, b := range s.decodeBatches() {
		if b <= 0 {
			return fmt.Errorf("lfm2: decode at batch %d: want a positive batch size", b)
		}
	}
	return nil
}

// decodeBatches is DecodeBatches when there are steps to decode.
func (s BenchSpec) decodeBatches() []int {
	if s.DecodeSteps == 0 {
		return nil
	}
	return s.DecodeBatches
}

// Check refuses, before an engine is sized or a prompt drawn, a benchmark
// that cannot run on a model of c: sizes that are not positive (check),
// sequences longer than max_position_embeddings (the prompts, and the
// prompts with the decode steps after them), and prompts (and, with
// logits, their logits) that the host cannot hold (CheckHostMemory).
func (s BenchSpec) Check(c *Config, logits bool) error {
	if err := s.check(); err != nil {
		return err
	}
	switch {
	case s.Seq > c.MaxPositions:
		return fmt.Errorf("lfm2: sequences of %d tokens are longer than max_position_embeddings = %d", s.Seq, c.MaxPositions)
	case len(s.decodeBatches()) > 0 && s.DecodeSteps > c.MaxPositions-s.Seq:
		return fmt.Errorf("lfm2: %d-token prompts and %d decode steps are longer than max_position_embeddings = %d", s.Seq, s.DecodeSteps, c.MaxPositions)
	}
	return s.CheckHostMemory(c, logits)
}

// CheckHostMemory refuses, with an *engine.MemoryError, a benchmark whose
// prompts the host cannot hold (8-byte tokens and a 24-byte slice header
// per sequence) and, with logits, their float32 logits at every position
// for a model of c.
func (s BenchSpec) CheckHostMemory(c *Config, logits bool) error {
	need, holds := 8*float64(s.Batch)*float64(s.Seq+3), "the prompts"
	if logits {
		need += 4 * float64(s.Batch) * float64(s.Seq) * float64(c.Vocab)
		holds = "the prompts and their logits"
	}
	return engine.CheckHostMemory(fmt.Sprintf("lfm2: %d sequences of %d tokens", s.Batch, s.Seq), holds, engine.BytesOf(need))
}

// Prompts is the batch the prefill runs: Batch random sequences of Seq
// tokens of c's vocabulary, seeded with Seed.
func (s BenchSpec) Prompts(c *Config) [][]int { return RandomBatch(c, s.Batch, s.Seq, s.Seed) }

// Sized sizes o, the options of the engine that runs s: sequences at once
// and positions of one sequence. A decode benchmark profiles one more step
// after the timed ones.
func (s BenchSpec) Sized(o CUDAOptions) CUDAOptions {
	o.MaxBatch, o.MaxSeq = s.Batch, s.Seq
	if bs := s.decodeBatches(); len(bs) > 0 {
		o.MaxBatch, o.MaxSeq = max(s.Batch, slices.Max(bs)), s.Seq+s.DecodeSteps+1
	}
	return o
}

// The parts of a benchmark, as Bench reports them.
const (
	PartPrefill = "prefill"
	PartMoE     = "moe"
	PartDecode  = "decode"
)

// Bench measures s on m into rec, whose header (device, dtype, model,
// sizes) the caller fills, once s passes Check; Bench adds the commit and
// the date where they are empty, the pipeline's stages, and the results.
// After each part it calls report (if not nil) with PartPrefill, PartMoE
// or PartDecode (once per batch size, the last of rec.Decode), so that a
// caller can print as the run goes; an error from report stops the
// benchmark.
func Bench(m Engine, s BenchSpec, rec *BenchRecord, report func(part string) error) error {
	if err := s.Check(m.Config(), false); err != nil {
		return err
	}
	if report == nil {
		report = func(string) error { return nil }
	}
	if rec.Commit == "" {
		rec.Commit = bench.Commit()
	}
	if rec.Date == "" {
		rec.Date = time.Now().UTC().Format(time.RFC3339)
	}
	gpu, _ := m.(*CUDAModel)
	if gpu != nil {
		rec.Stages = nil
		for _, st := range gpu.Stages() {
			rec.Stages = append(rec.Stages, st.String())
		}
	}
	batch := s.Prompts(m.Config())
	if err := CheckBatch(m.Config(), batch); err != nil {
		return err
	}
	pr, err := m.BenchPrefill(batch, s.Reps)
	if err != nil {
		return err
	}
	rec.PrefillMS, rec.SamplesPerSec, rec.TokensPerSec = 1e3*pr.Seconds, pr.SamplesPerSec, pr.TokensPerSec
	rec.PrefillOps, rec.StageTimes, rec.Timeline = OpTimes(pr.Profile), StageTimes(pr.Profile), Timeline(pr.Profile)
	if pr.Profile != nil {
		rec.ProfileWallMS = ms(pr.Profile.Wall)
	}
	if err := report(PartPrefill); err != nil {
		return err
	}
	if s.CompareMoE {
		if gpu == nil {
			return fmt.Errorf("lfm2: comparing the MoE paths needs the CUDA engine")
		}
		profiles, err := gpu.CompareMoE(batch)
		if err != nil {
			return err
		}
		rec.MoE = nil
		for _, path := range gpu.MoEPaths() {
			p := profiles[path]
			rec.MoE = append(rec.MoE, MoERecord{Path: path, WallMS: ms(p.Wall), Ops: OpTimes(p)})
		}
		if err := report(PartMoE); err != nil {
			return err
		}
	}
	rec.Decode = nil
	for _, b := range s.decodeBatches() {
		dr, err := m.BenchDecode(b, s.Seq, s.DecodeSteps, s.Seed)
		if err != nil {
			return err
		}
		rec.Decode = append(rec.Decode, DecodeRecord{Batch: b, Prompt: s.Seq, Steps: s.DecodeSteps, MS: 1e3 * dr.Seconds,
			TokensPerSec: dr.TokensPerSec, StepOps: OpTimes(dr.StepProfile)})
		if err := report(PartDecode); err != nil {
			return err
		}
	}
	return nil
}

// WriteOpTimes writes a table of operations: calls, ms and each one's
// share of their sum.
func WriteOpTimes(w io.Writer, ops []OpTime) error {
	total, names := TotalMS(ops), []string{"operation"}
	for _, op := range ops {
		names = append(names, op.Name)
	}
	tw, name := numberTable(w, names)
	fmt.Fprintf(tw, "%s\tcalls\tms\t%%\t\n", name("operation"))
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.1f\t\n", name(op.Name), op.Calls, op.MS, 100*op.MS/max(total, 1e-12))
	}
	return tw.Flush()
}

// WriteMoEPaths writes the MoE paths' profiles side by side: each
// operation's ms under each path (- where a path has no such operation),
// then each prefill's wall time.
func WriteMoEPaths(w io.Writer, paths []MoERecord) error {
	ops := moeOperations(paths)
	fmt.Fprintln(w, "MoE paths, one prefill each, GPU ms by operation:")
	tw, name := numberTable(w, append([]string{"operation", "wall"}, ops...))
	fmt.Fprintf(tw, "%s\t", name("operation"))
	for _, p := range paths {
		fmt.Fprintf(tw, "%s\t", p.Path)
	}
	fmt.Fprintln(tw)
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t", name(op))
		for _, p := range paths {
			if t, ok := findOp(p.Ops, op); ok {
				fmt.Fprintf(tw, "%.3f\t", t.MS)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "%s\t", name("wall"))
	for _, p := range paths {
		fmt.Fprintf(tw, "%.3f\t", p.WallMS)
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// moeOperations lists every operation of the paths: the first path's in
// its order (slowest first), then each other path's new ones.
func moeOperations(paths []MoERecord) []string {
	var ops []string
	for _, p := range paths {
		for _, op := range p.Ops {
			if !slices.Contains(ops, op.Name) {
				ops = append(ops, op.Name)
			}
		}
	}
	return ops
}

// numberTable is a table of numbers right-aligned after a column of names,
// left-aligned: name pads a name to the longest of names.
func numberTable(w io.Writer, names []string) (*tabwriter.Writer, func(string) string) {
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight), func(n string) string { return fmt.Sprintf("  %-*s", width, n) }
}

// findOp is the operation called name in ops, and whether there is one.
func findOp(ops []OpTime, name string) (OpTime, bool) {
	for _, o := range ops {
		if o.Name == name {
			return o, true
		}
	}
	return OpTime{Name: name}, false
}

// OpMS is the time of the operation called name, 0 if ops lack it.
func OpMS(ops []OpTime, name string) float64 {
	o, _ := findOp(ops, name)
	return o.MS
}

// TotalMS is the operations' summed time.
func TotalMS(ops []OpTime) float64 {
	total := 0.0
	for _, o := range ops {
		total += o.MS
	}
	return total
}
