package lfm2

import (
	"slices"
	"testing"

	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

// trainedChunk is the held-out sequences the CUDA engines run at a time.
const trainedChunk = 16

// TestTrainedCUDA: on the trained model, the fp32 engine matches
// transformers as the CPU reference does (logits of held-out code within
// 1e-4, the greedy continuations exactly); the bf16 engine picks the fp32
// engine's top token at no less than 99% of the 20 480 held-out positions
// (transformers' own bf16 against its fp32 is logged beside it); sampling
// with one seed gives one text, and streaming runs. Under compute-sanitizer
// the bf16 check takes the first 4 held-out sequences only.
func TestTrainedCUDA(t *testing.T) {
	dir := trainedModelDir(t)
	ctx := cudatest.Context(t)
	tr, err := LoadTrained(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := tr.Reference()
	if err != nil {
		t.Fatal(err)
	}
	least := 20000 // held-out positions
	if cuda.Sanitized() {
		ref.HeldOut, ref.HFTop1 = ref.HeldOut[:4], ref.HFTop1[:4]
		least = 4 * len(ref.HeldOut[0])
		// Each decoded token is some tens of launches, each slow under the
		// sanitizer: one greedy prompt, its first 16 tokens.
		ref.Greedy = ref.Greedy[:1]
		ref.Greedy[0].Continuation = ref.Greedy[0].Continuation[:16]
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	maxSeq := len(ref.HeldOut[0])
	for _, g := range ref.Greedy {
		maxSeq = max(maxSeq, len(g.Prompt)+len(g.Continuation))
	}
	o := CUDAOptions{MaxBatch: max(trainedChunk, len(ref.Batch)), MaxSeq: min(maxSeq, tr.Config.MaxPositions)}
	f32 := newCUDATest(t, []*cuda.Context{ctx}, tr.Config, ck, o)
	o.DType = BF16
	bf16 := newCUDATest(t, []*cuda.Context{ctx}, tr.Config, ck, o)

	check, err := CheckTrained(f32, ref)
	if check != nil {
		t.Logf("fp32: %s", check)
	}
	if err != nil {
		t.Error(err)
	}
	a, err := CompareHeldOut(f32, bf16, ref, trainedChunk)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (transformers %s on %s)", a, ref.HF.Transformers, ref.HF.Device)
	if a.Positions < least || a.BF16VsFP32 < 0.99 {
		t.Errorf("bf16 agrees with fp32 at %.2f%% of %d positions: want at least 99%% of at least %d", 100*a.BF16VsFP32, a.Positions, least)
	}
	if a.FP32VsHF < 0.99 {
		t.Errorf("the fp32 engine agrees with transformers' fp32 at only %.2f%% of the positions", 100*a.FP32VsHF)
	}

	g := ref.Greedy[0]
	for _, m := range []*CUDAModel{f32, bf16} {
		hot := Sampling{Temperature: 0.8, TopP: 0.95, Seed: 7}
		var texts []string
		for range 2 {
			run, err := StreamText(m, tr.Tokenizer, g.Text, cudatest.Size(48, 8), hot, nil)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, run.Text)
		}
		if texts[0] != texts[1] {
			t.Errorf("%s: seed 7 twice gave two texts:\n%q\n%q", m.Options().DType, texts[0], texts[1])
		}
		run, err := StreamText(m, tr.Tokenizer, g.Text, len(g.Continuation), Sampling{TopP: 0.5, Seed: 3}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, temperature 0 after %q: %s\n%q", m.Options().DType, g.Text, run, run.Text)
		if m == f32 && !slices.Equal(run.IDs, g.Continuation[:len(run.IDs)]) {
			t.Errorf("fp32, temperature 0 after %q: %v, want the greedy %v", g.Text, run.IDs, g.Continuation)
		}
	}
}
