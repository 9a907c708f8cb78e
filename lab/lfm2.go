package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/llm/hub"
	"gpulab/engine/llm/lfm2"
	"gpulab/engine/llm/tokenizer"
)

const lfm2Usage = `usage:
  lab lfm2 pull REPO_ID [--revision R] [--dir D]
      download a model from the Hugging Face hub ($HF_ENDPOINT, default huggingface.co; $HF_TOKEN
      for gated models): configs, tokenizer and safetensors, resumed if interrupted, sizes and
      checksums verified; prints the directory, which --model then takes (default: the user cache,
      gpulab/models/OWNER/NAME)
  lab lfm2 run --model DIR --prompt TEXT --max-new N [--device D] [--dtype f32|bf16]
               [--temperature T --top-p P --seed S]
      generate after the prompt (tokenized with DIR/tokenizer.json), streaming the text;
      prefill and decode tokens/s go to stderr
  lab lfm2 logits --model DIR --ids "1 2 3,4 5 6" --out F.npy [--device D] [--dtype f32|bf16]
      float32 logits of every position of equal-length sequences: [batch, seq, vocab]
  lab lfm2 bench (--model DIR | --random lfm2-8b-a1b) [--batch B] [--seq S] [--reps R]
               [--decode N [--decode-batch 1,64]] [--compare-moe] [--moe PATH] [--micro-tokens N]
               [--device D] [--dtype f32|bf16] [--seed S] [--ref F.npy --tol T] [--out F.npy] [--json F]
      prefill samples/s on seeded random ids (B sequences of S tokens, the fastest of R runs;
      on CUDA with the GPU time of every operation), optionally checked against reference
      logits of the same ids (--out writes them); with --decode, tokens/s of N greedy steps
      after S-token prompts at each --decode-batch; --compare-moe (CUDA) profiles one prefill
      with each MoE path: grouped cuBLAS GEMMs, grouped wgmma (bf16 on compute capability 9.0)
      and the persistent kernel; --moe runs one of them (grouped, wgmma or persistent) instead
      of the auto choice (persistent up to 256 token-expert pairs, then wgmma where it runs,
      else grouped)

Devices: cpu (the fp32 reference), cuda:N (the CUDA engine on GPU N) and all-gpus (the CUDA
engine pipelined over every GPU, at most one per layer). --random needs a CUDA device.
`

// lfm2Engine is what the lfm2 commands need from a device: the CPU
// reference (cpuLFM2) or the CUDA engine (*lfm2.CUDAModel).
type lfm2Engine interface {
	Config() *lfm2.Config
	// Logits runs equal-length sequences from empty caches and returns
	// float32 logits [batch, seq, vocab].
	Logits(batch [][]int) ([]float32, error)
	// Generate is lfm2.GenerateBatch on the device.
	Generate(prompts [][]int, n int, s lfm2.Sampling, emit func(step int, toks []int) error) error
	// BenchPrefill times the prefill of batch up to each sequence's first
	// new token (a sample), the fastest of reps runs. The CUDA engine warms
	// up first and adds a profile, operation by operation.
	BenchPrefill(batch [][]int, reps int) (*lfm2.PrefillResult, error)
	// BenchDecode times steps greedy tokens after batch random prompts of
	// prompt tokens each (lfm2.RandomBatch with seed), all decoding together.
	BenchDecode(batch, prompt, steps int, seed uint64) (*lfm2.DecodeResult, error)
	// Close frees what the engine holds on its devices.
	Close() error
}

var _ lfm2Engine = (*lfm2.CUDAModel)(nil) // the CUDA engine is one as it is

// cpuLFM2 is the fp32 CPU reference.
type cpuLFM2 struct {
	c *lfm2.Config
	w *lfm2.Weights
}

func (m cpuLFM2) Config() *lfm2.Config                    { return m.c }
func (m cpuLFM2) Logits(batch [][]int) ([]float32, error) { return lfm2.Logits(m.c, m.w, batch) }
func (m cpuLFM2) Generate(prompts [][]int, n int, s lfm2.Sampling, emit func(int, []int) error) error {
	return lfm2.GenerateBatch(m.c, m.w, prompts, n, s, emit)
}

// Close has nothing to free: the weights are Go memory.
func (m cpuLFM2) Close() error { return nil }

// BenchPrefill times GenerateBatch of one token, host clock, no profile.
func (m cpuLFM2) BenchPrefill(batch [][]int, reps int) (*lfm2.PrefillResult, error) {
	var fastest time.Duration
	for i := range max(reps, 1) {
		start := time.Now()
		if err := m.Generate(batch, 1, lfm2.Sampling{}, func(int, []int) error { return nil }); err != nil {
			return nil, err
		}
		if d := time.Since(start); i == 0 || d < fastest {
			fastest = d
		}
	}
	b, s := len(batch), len(batch[0]) // Generate has checked the batch
	return &lfm2.PrefillResult{Batch: b, Seq: s, Seconds: fastest.Seconds(),
		SamplesPerSec: perSecond(b, fastest), TokensPerSec: perSecond(b*s, fastest)}, nil
}

// BenchDecode times one greedy GenerateBatch from its first token on.
func (m cpuLFM2) BenchDecode(batch, prompt, steps int, seed uint64) (*lfm2.DecodeResult, error) {
	if steps < 1 {
		return nil, fmt.Errorf("lfm2: decode benchmark of %d steps: want at least 1", steps)
	}
	var start time.Time
	err := m.Generate(lfm2.RandomBatch(m.c, batch, prompt, seed), steps+1, lfm2.Sampling{}, func(step int, _ []int) error {
		if step == 0 {
			start = time.Now()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	return &lfm2.DecodeResult{Batch: batch, Prompt: prompt, Steps: steps, Seconds: took.Seconds(),
		TokensPerSec: perSecond(batch*steps, took)}, nil
}

// lfm2Size is what a command will run at most: sequences at once, and
// positions of one sequence (prompt and new tokens together). The CUDA
// engine sizes its caches and buffers by it. microTokens, when not zero, is
// the CUDA engine's MaxTokens: the most tokens of one micro-batch, and moe
// its MoE path (lfm2.CUDAOptions.MoE).
type lfm2Size struct {
	batch, seq, microTokens int
	moe                     string
}

// openLFM2 loads the model in dir onto device in dtype, sized for size.
func openLFM2(dir, device, dtype string, size lfm2Size) (lfm2Engine, error) {
	if err := checkLFM2Device(device, dtype); err != nil {
		return nil, err
	}
	c, err := lfm2.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	ck, err := lfm2.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close() // both engines copy what they need
	if device == "cpu" {
		w, err := lfm2.LoadWeights(c, ck)
		if err != nil {
			return nil, err
		}
		return cpuLFM2{c, w}, nil
	}
	ctxs, err := lfm2Contexts(device, c)
	if err != nil {
		return nil, err
	}
	m, err := lfm2.NewPipeline(ctxs, c, ck, lfm2CUDAOptions(c, dtype, size)) // NewCUDA, for one context
	if err != nil {
		return nil, err
	}
	return m, nil
}

// openRandomLFM2 builds the preset architecture with seeded random weights
// on the CUDA device, sized for size. On the CPU it says why not.
func openRandomLFM2(preset string, seed uint64, device, dtype string, size lfm2Size) (lfm2Engine, error) {
	c, err := lfm2.Preset(preset)
	if err != nil {
		return nil, usageError{err}
	}
	if err := checkLFM2Device(device, dtype); err != nil {
		return nil, err
	}
	if device == "cpu" {
		var params int64
		for _, p := range lfm2.Parts(c) {
			params += p.Total
		}
		return nil, fmt.Errorf("--random %s has %.2f billion parameters (%.1f GB in float32): the CPU reference is for small checkpoints; run it on a CUDA device",
			preset, float64(params)/1e9, float64(params)*4/1e9)
	}
	ctxs, err := lfm2Contexts(device, c)
	if err != nil {
		return nil, err
	}
	m, err := lfm2.RandomModelCUDA(ctxs, c, seed, lfm2CUDAOptions(c, dtype, size))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// lfm2Contexts opens the CUDA device of cuda:N, or for all-gpus every CUDA
// device of the host up to one per layer of c (a pipeline stage holds at
// least one layer).
func lfm2Contexts(device string, c *lfm2.Config) ([]*cuda.Context, error) {
	if device != "all-gpus" {
		dev, err := engine.Open(device)
		if err != nil {
			return nil, err
		}
		defer dev.Close() // CUDA contexts live on for the process
		return []*cuda.Context{dev.CUDA}, nil
	}
	n, err := cuda.DeviceCount()
	switch {
	case err != nil:
		return nil, fmt.Errorf("--device all-gpus: %w", err)
	case n == 0:
		return nil, fmt.Errorf("--device all-gpus: the driver reports no CUDA device")
	}
	ctxs := make([]*cuda.Context, min(n, c.Layers))
	for i := range ctxs {
		if ctxs[i], err = cuda.NewContext(i); err != nil {
			return nil, fmt.Errorf("--device all-gpus: %w", err)
		}
	}
	return ctxs, nil
}

// lfm2CUDAOptions sizes the CUDA engine for size. Positions past
// max_position_embeddings are refused before they run, so the caches never
// need more.
func lfm2CUDAOptions(c *lfm2.Config, dtype string, size lfm2Size) lfm2.CUDAOptions {
	return lfm2.CUDAOptions{DType: dtype, MaxBatch: size.batch, MaxSeq: min(size.seq, c.MaxPositions), MaxTokens: size.microTokens, MoE: size.moe}
}

// closeLFM2 closes m when a command ends. If the command failed, its error
// is the one reported.
func closeLFM2(m lfm2Engine, err *error) {
	if cerr := m.Close(); *err == nil {
		*err = cerr
	}
}

// checkLFM2Device accepts the devices and dtypes the lfm2 commands know.
func checkLFM2Device(device, dtype string) error {
	switch dtype {
	case "f32", "bf16":
	default:
		return usageError{fmt.Errorf("--dtype %q: want f32 or bf16", dtype)}
	}
	switch {
	case device == "cpu" && dtype == "bf16":
		return usageError{fmt.Errorf("--dtype bf16 is the GPU path; the CPU reference computes in f32")}
	case device == "cpu" || device == "all-gpus" || strings.HasPrefix(device, "cuda:"):
		return nil
	}
	return usageError{fmt.Errorf("--device %q: want cpu, cuda:N or all-gpus", device)}
}

func lfm2Cmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, lfm2Usage)
		return usageError{fmt.Errorf("want run, logits or bench")}
	}
	switch args[0] {
	case "pull":
		return lfm2Pull(args[1:], stdout, stderr)
	case "run":
		return lfm2Run(args[1:], stdout, stderr)
	case "logits":
		return lfm2Logits(args[1:], stdout, stderr)
	case "bench":
		return lfm2Bench(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, lfm2Usage)
		return nil
	}
	fmt.Fprint(stderr, lfm2Usage)
	return usageError{fmt.Errorf("unknown subcommand %q", args[0])}
}

// lfm2Pull downloads a model from the hub and prints its directory.
func lfm2Pull(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lfm2 pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, lfm2Usage) }
	revision := fs.String("revision", "main", "a branch, tag or commit")
	dir := fs.String("dir", "", "where the files go (default: the user cache, gpulab/models/OWNER/NAME)")
	repo, err := oneArg(fs, args, "repository id (OWNER/NAME)")
	if err != nil {
		return err
	}
	if *dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no --dir and no user cache directory: %v", err)
		}
		*dir = filepath.Join(cache, "gpulab", "models", filepath.FromSlash(repo))
	}
	r, err := hub.Pull(context.Background(), repo, *dir, hub.Options{Revision: *revision, Progress: stderr})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s at %s: %d files in %s\n", r.ID, r.Commit, len(r.Files), *dir)
	fmt.Fprintln(stdout, *dir)
	return nil
}

// lfm2Flags is a flag set with the flags every subcommand has.
func lfm2Flags(name string, stderr io.Writer) (fs *flag.FlagSet, model, device, dtype *string) {
	fs = flag.NewFlagSet("lfm2 "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, lfm2Usage) }
	model = fs.String("model", "", "a Hugging Face model directory: config.json, model.safetensors (or shards), tokenizer.json")
	device = fs.String("device", "cpu", "cpu, cuda:N or all-gpus")
	dtype = fs.String("dtype", "f32", "f32 or bf16 (GPU)")
	return fs, model, device, dtype
}

func lfm2Run(args []string, stdout, stderr io.Writer) (err error) {
	fs, model, device, dtype := lfm2Flags("run", stderr)
	prompt := fs.String("prompt", "", "the text to continue")
	maxNew := fs.Int("max-new", 32, "tokens to generate")
	temp := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	topP := fs.Float64("top-p", 0, "nucleus sampling: keep the most likely tokens up to this probability (0 or 1: all)")
	seed := fs.Uint64("seed", 1, "sampling seed")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	switch {
	case *model == "":
		return usageError{fmt.Errorf("--model is required")}
	case *prompt == "":
		return usageError{fmt.Errorf("--prompt is empty: give the text to continue")}
	case *maxNew <= 0:
		return usageError{fmt.Errorf("--max-new %d: want at least 1", *maxNew)}
	}
	tok, err := tokenizer.Load(filepath.Join(*model, "tokenizer.json"))
	if err != nil {
		return err
	}
	ids, err := tok.Encode(*prompt, true)
	if err != nil {
		return err
	}
	m, err := openLFM2(*model, *device, *dtype, lfm2Size{batch: 1, seq: len(ids) + *maxNew})
	if err != nil {
		return err
	}
	defer closeLFM2(m, &err)
	if err := lfm2.CheckTokens(m.Config(), 0, ids); err != nil {
		return fmt.Errorf("the prompt's tokens do not fit the model (is tokenizer.json the model's?): %w", err)
	}
	text := tok.Stream()
	start := time.Now()
	var prefill time.Duration
	err = m.Generate([][]int{ids}, *maxNew, lfm2.Sampling{Temperature: *temp, TopP: *topP, Seed: *seed}, func(step int, toks []int) error {
		if step == 0 {
			prefill = time.Since(start)
		}
		s, err := text.Next(toks[0])
		fmt.Fprint(stdout, s)
		return err
	})
	if err != nil {
		return err
	}
	decode := time.Since(start) - prefill
	fmt.Fprintln(stdout, text.Flush())
	fmt.Fprintf(stderr, "%s: prompt %d tokens in %v (%.1f tokens/s prefill); %d new tokens, decode %.1f tokens/s\n",
		*device, len(ids), prefill.Round(time.Millisecond), float64(len(ids))/prefill.Seconds(), *maxNew, perSecond(*maxNew-1, decode))
	return nil
}

// perSecond is n / d in 1/s, 0 when nothing was timed.
func perSecond(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func lfm2Logits(args []string, stdout, stderr io.Writer) (err error) {
	fs, model, device, dtype := lfm2Flags("logits", stderr)
	idsFlag := fs.String("ids", "", `token ids: sequences separated by commas, ids by spaces ("1 2 3,4 5 6")`)
	out := fs.String("out", "", "the .npy file to write")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *model == "" || *idsFlag == "" || *out == "" {
		return usageError{fmt.Errorf("--model, --ids and --out are required")}
	}
	batch, err := parseIDs(*idsFlag)
	if err != nil {
		return usageError{err}
	}
	m, err := openLFM2(*model, *device, *dtype, lfm2Size{batch: len(batch), seq: len(batch[0])})
	if err != nil {
		return err
	}
	defer closeLFM2(m, &err)
	if err := lfm2.CheckBatch(m.Config(), batch); err != nil {
		return err
	}
	start := time.Now()
	logits, err := m.Logits(batch)
	if err != nil {
		return err
	}
	took := time.Since(start)
	shape := []int{len(batch), len(batch[0]), m.Config().Vocab}
	if err := datasets.WriteNPYTensor(*out, logits, shape); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: float32 logits %v, in %v on %s\n", *out, shape, took.Round(time.Millisecond), *device)
	return nil
}

// parseIDs reads "1 2 3,4 5 6" as sequences of token ids.
func parseIDs(s string) ([][]int, error) {
	var batch [][]int
	for i, seq := range strings.Split(s, ",") {
		var ids []int
		for _, f := range strings.Fields(seq) {
			id, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("--ids: sequence %d: %q is not a token id", i, f)
			}
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("--ids: sequence %d is empty", i)
		}
		batch = append(batch, ids)
	}
	return batch, nil
}

func lfm2Bench(args []string, stdout, stderr io.Writer) (err error) {
	fs, model, device, dtype := lfm2Flags("bench", stderr)
	random := fs.String("random", "", "instead of --model: a preset architecture with seeded random weights (lfm2-8b-a1b; CUDA only)")
	batchN := fs.Int("batch", 1024, "sequences")
	seq := fs.Int("seq", 32, "tokens per sequence (and per decode prompt)")
	reps := fs.Int("reps", 3, "timed prefill runs; the fastest counts")
	decodeN := fs.Int("decode", 0, "also time this many greedy decode steps")
	decodeBatches := fs.String("decode-batch", "1", "with --decode: the batch sizes to decode at, comma-separated (e.g. 1,64)")
	compareMoE := fs.Bool("compare-moe", false, "CUDA: also profile one prefill with each MoE path (grouped cuBLAS, grouped wgmma where it runs, persistent kernel)")
	seed := fs.Uint64("seed", 1, "seed of the random ids (and of --random's weights)")
	ref := fs.String("ref", "", "reference logits [batch, seq, vocab] of the same ids, to validate against")
	tol := fs.Float64("tol", 1e-4, "with --ref: the largest absolute difference a sample may have")
	out := fs.String("out", "", "write the logits here (.npy), e.g. to serve as a later --ref")
	jsonOut := fs.String("json", "", "write the result as JSON here")
	microTokens := fs.Int("micro-tokens", 0, "CUDA: the most tokens of one micro-batch (0: the engine's default, 8192); a prefill also takes at least 4 micro-batches per GPU")
	moe := fs.String("moe", "", "CUDA: the MoE path, grouped, wgmma or persistent (default: auto, see lab lfm2 help)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	decodeAt, err := parseBatchSizes(*decodeBatches)
	switch {
	case err != nil:
		return usageError{err}
	case (*model == "") == (*random == ""):
		return usageError{fmt.Errorf("give exactly one of --model DIR and --random NAME")}
	case *batchN <= 0 || *seq <= 0 || *decodeN < 0 || *reps <= 0 || *microTokens < 0:
		return usageError{fmt.Errorf("--batch %d --seq %d --decode %d --reps %d --micro-tokens %d: want positive sizes", *batchN, *seq, *decodeN, *reps, *microTokens)}
	case *compareMoE && *device == "cpu":
		return usageError{fmt.Errorf("--compare-moe compares the CUDA engine's MoE paths: give --device cuda:N or all-gpus")}
	case *moe != "" && *device == "cpu":
		return usageError{fmt.Errorf("--moe picks the CUDA engine's MoE path: give --device cuda:N or all-gpus")}
	case !slices.Contains([]string{lfm2.MoEAuto, lfm2.MoEGrouped, lfm2.MoEWgmma, lfm2.MoEPersistent}, *moe):
		return usageError{fmt.Errorf("--moe %q: want grouped, wgmma or persistent", *moe)}
	}
	size := lfm2Size{batch: *batchN, seq: *seq, microTokens: *microTokens, moe: *moe}
	if *decodeN > 0 { // BenchDecode profiles one more step after the timed ones
		size.batch, size.seq = max(*batchN, slices.Max(decodeAt)), *seq+*decodeN+1
	}
	var m lfm2Engine
	name := *model
	if *random != "" {
		name = fmt.Sprintf("random %s (seed %d)", *random, *seed)
		m, err = openRandomLFM2(*random, *seed, *device, *dtype, size)
	} else {
		m, err = openLFM2(*model, *device, *dtype, size)
	}
	if err != nil {
		return err
	}
	defer closeLFM2(m, &err)
	c := m.Config()
	batch := lfm2.RandomBatch(c, *batchN, *seq, *seed)
	if err := lfm2.CheckBatch(c, batch); err != nil {
		return err
	}
	res := lfm2.BenchRecord{Commit: bench.Commit(), Device: *device, DType: *dtype, Model: name, Batch: *batchN, Seq: *seq, Reps: *reps, MicroTokens: *microTokens, MoEPath: *moe}
	gpu, _ := m.(*lfm2.CUDAModel)
	if gpu != nil {
		for _, st := range gpu.Stages() {
			res.Stages = append(res.Stages, st.String())
		}
		if len(res.Stages) > 1 {
			fmt.Fprintf(stdout, "pipeline: %s\n", strings.Join(res.Stages, "; "))
		}
	}
	pr, err := m.BenchPrefill(batch, *reps)
	if err != nil {
		return err
	}
	res.PrefillMS, res.SamplesPerSec, res.TokensPerSec = 1e3*pr.Seconds, pr.SamplesPerSec, pr.TokensPerSec
	fmt.Fprintf(stdout, "%s %s, %s: prefill of %d × %d tokens in %.1f ms (fastest of %d): %.2f samples/s, %.0f tokens/s\n",
		*device, *dtype, name, *batchN, *seq, res.PrefillMS, *reps, res.SamplesPerSec, res.TokensPerSec)
	if pr.Profile != nil {
		res.PrefillOps, res.StageTimes = lfm2.OpTimes(pr.Profile), lfm2.StageTimes(pr.Profile)
		fmt.Fprintf(stdout, "one more prefill, GPU time by operation (summed over layers, micro-batches, lanes and GPUs; wall %.1f ms):\n",
			msOf(pr.Profile.Wall))
		printOpTimes(stdout, res.PrefillOps)
		if len(res.StageTimes) > 1 {
			fmt.Fprintln(stdout, "the same prefill by stage (busy: at least one lane working):")
			for _, st := range res.StageTimes {
				fmt.Fprintf(stdout, "  stage %d, %s, %s: busy %.1f ms (%.0f%% of the wall), from %.1f to %.1f ms\n",
					st.Stage, st.Device, st.Parts, st.BusyMS, 100*st.BusyMS/msOf(pr.Profile.Wall), st.FirstMS, st.LastMS)
			}
		}
	}
	var failed error
	if *ref != "" || *out != "" {
		logits, err := m.Logits(batch)
		if err != nil {
			return err
		}
		shape := []int{*batchN, *seq, c.Vocab}
		if *out != "" {
			if err := datasets.WriteNPYTensor(*out, logits, shape); err != nil {
				return err
			}
		}
		if *ref != "" {
			if failed, err = validateLogits(&res, logits, *ref, shape, *tol); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "validated %d/%d samples against %s (max |diff| %.3g, tolerance %g); top-1 agreement %.2f%%\n",
				res.Validated, *batchN, *ref, res.MaxDiff, *tol, 100*res.Top1Agree)
		}
	}
	if *compareMoE {
		profiles, err := gpu.CompareMoE(batch)
		if err != nil {
			return err
		}
		for _, path := range gpu.MoEPaths() {
			p := profiles[path]
			res.MoE = append(res.MoE, lfm2.MoERecord{Path: path, WallMS: msOf(p.Wall), Ops: lfm2.OpTimes(p)})
		}
		printMoEPaths(stdout, res.MoE)
	}
	if *decodeN == 0 {
		decodeAt = nil
	}
	for _, b := range decodeAt {
		dr, err := m.BenchDecode(b, *seq, *decodeN, *seed)
		if err != nil {
			return err
		}
		rec := lfm2.DecodeRecord{Batch: b, Prompt: *seq, Steps: *decodeN, MS: 1e3 * dr.Seconds, TokensPerSec: dr.TokensPerSec}
		if dr.StepProfile != nil {
			rec.StepOps = lfm2.OpTimes(dr.StepProfile)
		}
		res.Decode = append(res.Decode, rec)
		fmt.Fprintf(stdout, "decode at batch %d: %d greedy steps after %d-token prompts in %.1f ms (%.2f ms/step): %.1f tokens/s\n",
			b, *decodeN, *seq, rec.MS, rec.MS/float64(*decodeN), rec.TokensPerSec)
	}
	if *jsonOut != "" {
		if err := bench.WriteJSONValue(*jsonOut, res); err != nil {
			return err
		}
	}
	return failed
}

// parseBatchSizes reads --decode-batch: positive sizes separated by commas.
func parseBatchSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--decode-batch %q: %q is not a positive batch size", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// printOpTimes writes a table of operations: calls, ms and share of the sum.
func printOpTimes(w io.Writer, ops []lfm2.OpTime) {
	total, names := 0.0, []string{"operation"}
	for _, op := range ops {
		total += op.MS
		names = append(names, op.Name)
	}
	tw, name := numberTable(w, names)
	fmt.Fprintf(tw, "%s\tcalls\tms\t%%\t\n", name("operation"))
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.1f\t\n", name(op.Name), op.Calls, op.MS, 100*op.MS/max(total, 1e-12))
	}
	tw.Flush()
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

// printMoEPaths writes the MoE paths' profiles side by side: each
// operation's ms under each path (- where a path has no such operation),
// then each prefill's wall time.
func printMoEPaths(w io.Writer, paths []lfm2.MoERecord) {
	var ops []string // in the first path's order (slowest first), then the others' new ones
	ms := make([]map[string]float64, len(paths))
	for i, p := range paths {
		ms[i] = map[string]float64{}
		for _, op := range p.Ops {
			if !slices.Contains(ops, op.Name) {
				ops = append(ops, op.Name)
			}
			ms[i][op.Name] = op.MS
		}
	}
	fmt.Fprintln(w, "MoE paths, one prefill each, GPU ms by operation:")
	tw, name := numberTable(w, append([]string{"operation", "wall"}, ops...))
	fmt.Fprintf(tw, "%s\t", name("operation"))
	for _, p := range paths {
		fmt.Fprintf(tw, "%s\t", p.Path)
	}
	fmt.Fprintln(tw)
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t", name(op))
		for i := range paths {
			if t, ok := ms[i][op]; ok {
				fmt.Fprintf(tw, "%.3f\t", t)
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
	tw.Flush()
}

// validateLogits compares logits with the reference file, of the given
// shape, and fills res's validation fields. It returns a failure (not an
// error of the command's use) if a sample is off by more than tol.
func validateLogits(res *lfm2.BenchRecord, logits []float32, path string, shape []int, tol float64) (failed, err error) {
	refData, refShape, err := datasets.ReadNPYTensor(path)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(refShape, shape) {
		return nil, fmt.Errorf("--ref %s has shape %v, want %v (the same --batch, --seq and model)", path, refShape, shape)
	}
	B, T, V := shape[0], shape[1], shape[2]
	agree := 0
	res.Tol = tol
	for b := range B {
		worst := 0.0
		for t := range T {
			row, refRow := logits[(b*T+t)*V:(b*T+t+1)*V], refData[(b*T+t)*V:(b*T+t+1)*V]
			for i := range row {
				d := math.Abs(float64(row[i] - refRow[i]))
				if math.IsNaN(d) {
					d = math.Inf(1)
				}
				worst = max(worst, d)
			}
			if lfm2.Argmax(row) == lfm2.Argmax(refRow) {
				agree++
			}
		}
		res.MaxDiff = max(res.MaxDiff, worst)
		if worst <= tol {
			res.Validated++
		}
	}
	res.Top1Agree = float64(agree) / float64(B*T)
	if res.Validated < B {
		return fmt.Errorf("%d of %d samples differ from %s by more than %g (max %.3g)", B-res.Validated, B, path, tol, res.MaxDiff), nil
	}
	return nil, nil
}
