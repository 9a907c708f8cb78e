package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
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

// lfm2Devices opens the devices of --device for an engine computing in
// dtype: cpu, cuda:N or engine.AllGPUs, the forms the flag takes. A dtype
// the device cannot run is a usage error.
func lfm2Devices(id, dtype string) ([]*engine.Device, error) {
	kind, _, _ := strings.Cut(id, ":") // the flag took cpu, cuda:N or all-gpus only
	if id == engine.AllGPUs {
		kind = string(engine.CUDA)
	}
	if err := lfm2.CheckDType(engine.Kind(kind), dtype); err != nil {
		return nil, usageError{fmt.Errorf("--dtype %s: %w", dtype, err)}
	}
	devs, err := engine.OpenDevices(id)
	if err != nil {
		return nil, fmt.Errorf("--device %s: %w", id, err)
	}
	return devs, nil
}

// openLFM2 loads the model in dir onto device in the options' dtype, sized
// by them. It returns the devices too, which name the run.
func openLFM2(dir, device string, o lfm2.CUDAOptions) (lfm2.Engine, []*engine.Device, error) {
	devs, err := lfm2Devices(device, o.DType)
	if err != nil {
		return nil, nil, err
	}
	m, err := lfm2.Open(dir, devs, o)
	return m, devs, err
}

// closeLFM2 closes m when a command ends. If the command failed, its error
// is the one reported.
func closeLFM2(m lfm2.Engine, err *error) {
	if cerr := m.Close(); *err == nil {
		*err = cerr
	}
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
	fs := newFlagSet("lfm2 pull", stderr)
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
	fs = newFlagSet("lfm2 "+name, stderr)
	fs.Usage = func() { fmt.Fprint(stderr, lfm2Usage) }
	model = fs.String("model", "", "a Hugging Face model directory: config.json, model.safetensors (or shards), tokenizer.json")
	device = deviceFlag(fs, "cpu", []string{devCPU, devCUDA, devAll}, "cpu, cuda:N or all-gpus")
	dtype = choiceFlag(fs, "dtype", lfm2.F32, []string{lfm2.F32, lfm2.BF16}, "f32 or bf16 (GPU)")
	return fs, model, device, dtype
}

func lfm2Run(args []string, stdout, stderr io.Writer) (err error) {
	fs, model, device, dtype := lfm2Flags("run", stderr)
	prompt := fs.String("prompt", "", "the text to continue")
	maxNew := numberFlag(fs, "max-new", 32, ints(1, maxCount), "tokens to generate")
	temp := numberFlag(fs, "temperature", 0, floats(nonNegative), "sampling temperature (0: greedy)")
	topP := numberFlag(fs, "top-p", 0, floats(fraction), "nucleus sampling: keep the most likely tokens up to this probability (0 or 1: all)")
	seed := numberFlag(fs, "seed", 1, seeds, "sampling seed")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	switch {
	case *model == "":
		return usageError{fmt.Errorf("--model is required")}
	case *prompt == "":
		return usageError{fmt.Errorf("--prompt is empty: give the text to continue")}
	}
	tok, err := tokenizer.Load(filepath.Join(*model, "tokenizer.json"))
	if err != nil {
		return err
	}
	ids, err := tok.Encode(*prompt, true)
	if err != nil {
		return err
	}
	m, _, err := openLFM2(*model, *device, lfm2.CUDAOptions{DType: *dtype, MaxBatch: 1, MaxSeq: len(ids) + *maxNew})
	if err != nil {
		return err
	}
	defer closeLFM2(m, &err)
	if err := lfm2.CheckTokens(m.Config(), 0, ids); err != nil {
		return fmt.Errorf("the prompt's tokens do not fit the model (is tokenizer.json the model's?): %w", err)
	}
	// The text streams as it is generated; the run ends early at a special
	// token such as <|endoftext|>, where the model ends a file.
	run, err := lfm2.StreamText(m, tok, *prompt, *maxNew, lfm2.Sampling{Temperature: *temp, TopP: *topP, Seed: *seed}, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stderr, "%s: %s\n", *device, run)
	return nil
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
	if err := checkOutFile("out", *out, "logits.npy"); err != nil {
		return err
	}
	batch, err := parseIDs(*idsFlag)
	if err != nil {
		return usageError{err}
	}
	m, _, err := openLFM2(*model, *device, lfm2.CUDAOptions{DType: *dtype, MaxBatch: len(batch), MaxSeq: len(batch[0])})
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
	batchN := numberFlag(fs, "batch", 1024, ints(1, maxCount), "sequences")
	seq := numberFlag(fs, "seq", 32, ints(1, maxCount), "tokens per sequence (and per decode prompt)")
	reps := numberFlag(fs, "reps", 3, ints(1, maxRuns), "timed prefill runs; the fastest counts")
	decodeN := numberFlag(fs, "decode", 0, ints(0, maxCount), "also time this many greedy decode steps")
	decodeBatches := fs.String("decode-batch", "1", "with --decode: the batch sizes to decode at, comma-separated (e.g. 1,64)")
	compareMoE := fs.Bool("compare-moe", false, "CUDA: also profile one prefill with each MoE path (grouped cuBLAS, grouped wgmma where it runs, persistent kernel)")
	seed := numberFlag(fs, "seed", 1, seeds, "seed of the random ids (and of --random's weights)")
	ref := fs.String("ref", "", "reference logits [batch, seq, vocab] of the same ids, to validate against")
	tol := numberFlag(fs, "tol", 1e-4, floats(nonNegative), "with --ref: the largest absolute difference a sample may have")
	out := fs.String("out", "", "write the logits here (.npy), e.g. to serve as a later --ref")
	jsonOut := fs.String("json", "", "write the result as JSON here")
	microTokens := numberFlag(fs, "micro-tokens", 0, ints(0, maxCount), "CUDA: the most tokens of one micro-batch (0: the engine's default, 8192); a prefill also takes at least 4 micro-batches per GPU")
	moe := choiceFlag(fs, "moe", lfm2.MoEAuto, []string{lfm2.MoEGrouped, lfm2.MoEWgmma, lfm2.MoEPersistent}, "CUDA: the MoE path, grouped, wgmma or persistent (default: auto, see lab lfm2 help)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	decodeAt, err := parseBatchSizes(*decodeBatches)
	switch {
	case err != nil:
		return usageError{err}
	case (*model == "") == (*random == ""):
		return usageError{fmt.Errorf("give exactly one of --model DIR and --random NAME")}
	case *compareMoE && *device == "cpu":
		return usageError{fmt.Errorf("--compare-moe compares the CUDA engine's MoE paths: give --device cuda:N or all-gpus")}
	case *moe != "" && *device == "cpu":
		return usageError{fmt.Errorf("--moe picks the CUDA engine's MoE path: give --device cuda:N or all-gpus")}
	}
	for _, o := range []struct{ flag, path, example string }{{"out", *out, "logits.npy"}, {"json", *jsonOut, "bench.json"}} {
		if o.path == "" {
			continue
		}
		if err := checkOutFile(o.flag, o.path, o.example); err != nil {
			return err
		}
	}
	spec := lfm2.BenchSpec{Batch: *batchN, Seq: *seq, Reps: *reps, Seed: *seed, DecodeSteps: *decodeN, DecodeBatches: decodeAt, CompareMoE: *compareMoE}
	o := spec.Sized(lfm2.CUDAOptions{DType: *dtype, MaxTokens: *microTokens, MoE: *moe})
	name, c := *model, (*lfm2.Config)(nil)
	if *random != "" {
		if c, err = lfm2.Preset(*random); err != nil {
			return usageError{err}
		}
		name = fmt.Sprintf("random %s (seed %d)", *random, *seed)
	} else if c, err = lfm2.LoadConfig(*model); err != nil {
		return err
	}
	// Lengths past the model's, what the host cannot hold and a reference
	// of another shape are refused before the model loads or a prompt is drawn.
	if err := spec.Check(c, *ref != "" || *out != ""); err != nil {
		return err
	}
	if err := checkRefShape(*ref, []int{spec.Batch, spec.Seq, c.Vocab}); err != nil {
		return err
	}
	var m lfm2.Engine
	var devs []*engine.Device
	if *random != "" {
		if devs, err = lfm2Devices(*device, *dtype); err != nil {
			return err
		}
		if m, err = lfm2.OpenRandom(c, *seed, devs, o); err != nil {
			return fmt.Errorf("--random %s: %w", *random, err)
		}
	} else if m, devs, err = openLFM2(*model, *device, o); err != nil {
		return err
	}
	defer closeLFM2(m, &err)
	res := lfm2.BenchRecord{Device: *device, DeviceName: devs[0].Name, PeakGBps: devs[0].PeakGBps, DType: *dtype, Model: name,
		Batch: *batchN, Seq: *seq, Reps: *reps, MicroTokens: *microTokens, MoEPath: *moe}
	var failed error // a reference the logits do not match: reported after the run
	err = lfm2.Bench(m, spec, &res, func(part string) error {
		switch part {
		case lfm2.PartPrefill:
			if len(res.Stages) > 1 {
				fmt.Fprintf(stdout, "pipeline: %s\n", strings.Join(res.Stages, "; "))
			}
			printPrefill(stdout, &res)
			if *ref == "" && *out == "" {
				return nil
			}
			var err error
			failed, err = checkLogits(stdout, m, spec, &res, *ref, *out, *tol)
			return err
		case lfm2.PartMoE:
			return lfm2.WriteMoEPaths(stdout, res.MoE)
		case lfm2.PartDecode:
			d := res.Decode[len(res.Decode)-1]
			fmt.Fprintf(stdout, "decode at batch %d: %d greedy steps after %d-token prompts in %.1f ms (%.2f ms/step): %.1f tokens/s\n",
				d.Batch, d.Steps, d.Prompt, d.MS, d.MS/float64(d.Steps), d.TokensPerSec)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		if err := bench.WriteJSONValue(*jsonOut, res); err != nil {
			return err
		}
	}
	return failed
}

// printPrefill writes a run's prefill: its rate, and on CUDA its profile by
// operation and, on a pipeline, by stage.
func printPrefill(w io.Writer, res *lfm2.BenchRecord) {
	fmt.Fprintf(w, "%s %s, %s: prefill of %d × %d tokens in %.1f ms (fastest of %d): %.2f samples/s, %.0f tokens/s\n",
		res.Device, res.DType, res.Model, res.Batch, res.Seq, res.PrefillMS, res.Reps, res.SamplesPerSec, res.TokensPerSec)
	if len(res.PrefillOps) == 0 {
		return
	}
	fmt.Fprintf(w, "one more prefill, GPU time by operation (summed over layers, micro-batches, lanes and GPUs; wall %.1f ms):\n", res.ProfileWallMS)
	lfm2.WriteOpTimes(w, res.PrefillOps)
	if len(res.StageTimes) > 1 {
		fmt.Fprintln(w, "the same prefill by stage (busy: at least one lane working):")
		for _, st := range res.StageTimes {
			fmt.Fprintf(w, "  stage %d, %s, %s: busy %.1f ms (%.0f%% of the wall), from %.1f to %.1f ms\n",
				st.Stage, st.Device, st.Parts, st.BusyMS, 100*st.BusyMS/res.ProfileWallMS, st.FirstMS, st.LastMS)
		}
	}
}

// checkLogits computes the logits of the prefill's batch, writes them to
// out and validates them against ref, where given. failed is a reference
// they do not match; err a failure to check.
func checkLogits(w io.Writer, m lfm2.Engine, spec lfm2.BenchSpec, res *lfm2.BenchRecord, ref, out string, tol float64) (failed, err error) {
	logits, err := m.Logits(spec.Prompts(m.Config()))
	if err != nil {
		return nil, err
	}
	shape := []int{spec.Batch, spec.Seq, m.Config().Vocab}
	if out != "" {
		if err := datasets.WriteNPYTensor(out, logits, shape); err != nil {
			return nil, err
		}
	}
	if ref == "" {
		return nil, nil
	}
	if failed, err = res.Validate(logits, ref, shape, tol); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "validated %d/%d samples against %s (max |diff| %.3g, tolerance %g); top-1 agreement %.2f%%\n",
		res.Validated, spec.Batch, ref, res.MaxDiff, tol, 100*res.Top1Agree)
	return failed, nil
}

// checkRefShape compares the shape in the header of the reference logits
// at path, if one is given, with the shape of the logits the run gives,
// reading none of the data the header claims.
func checkRefShape(path string, want []int) error {
	if path == "" {
		return nil
	}
	shape, err := datasets.NPYShape(path)
	if err != nil {
		return err
	}
	if !slices.Equal(shape, want) {
		return fmt.Errorf("--ref %s: logits of shape %v, but the run gives %v (--batch, --seq and the model's vocabulary)", path, shape, want)
	}
	return nil
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
