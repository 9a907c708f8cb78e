package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gpulab/datasets"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
	"gpulab/engine/llm/hub/hubtest"
	"gpulab/engine/llm/lfm2"
	"gpulab/engine/llm/tokenizer"
)

// lfm2TestConfig is a tiny lfm2_moe whose sequences end at 12 tokens.
const lfm2TestConfig = `{"model_type": "lfm2_moe", "hidden_size": 16, "num_hidden_layers": 3, "vocab_size": 260,
  "num_attention_heads": 4, "num_key_value_heads": 2, "layer_types": ["conv", "full_attention", "conv"],
  "max_position_embeddings": 12, "num_dense_layers": 1, "intermediate_size": 24,
  "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8}`

// lfm2TestModel writes a random model of lfm2TestConfig with a tokenizer:
// the 256 byte characters as ids 0..255 (no merges) and <|bos|> = 256 in
// front of every encoding.
func lfm2TestModel(t *testing.T) (string, *lfm2.Config, *lfm2.Weights, *tokenizer.Tokenizer) {
	t.Helper()
	dir := t.TempDir()
	c, err := lfm2.WriteRandomModel(dir, []byte(lfm2TestConfig), 5)
	if err != nil {
		t.Fatal(err)
	}
	vocab, next := map[string]int{}, 256
	for b := range 256 { // GPT-2's byte characters: printable Latin-1 as itself, the others from U+0100 on
		r := rune(b)
		if !('!' <= b && b <= '~' || '¡' <= b && b <= '¬' || '®' <= b && b <= 'ÿ') {
			r, next = rune(next), next+1
		}
		vocab[string(r)] = b
	}
	tj, _ := json.Marshal(map[string]any{
		"added_tokens":  []any{map[string]any{"id": 256, "content": "<|bos|>", "special": true}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}},
			"special_tokens": map[string]any{"<|bos|>": map[string]any{"ids": []int{256}}}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
	})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	ck, err := lfm2.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	w, err := lfm2.LoadWeights(c, ck)
	if err != nil {
		t.Fatal(err)
	}
	return dir, c, w, tok
}

// TestLFM2Logits: the command writes what lfm2.Logits computes, as
// [batch, seq, vocab].
func TestLFM2Logits(t *testing.T) {
	dir, c, w, _ := lfm2TestModel(t)
	out := filepath.Join(t.TempDir(), "l.npy")
	code, stdout, errs := lab("lfm2", "logits", "--model", dir, "--ids", "1 2 3, 259 0 7", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got, shape, err := datasets.ReadNPYTensor(out)
	if err != nil || !slices.Equal(shape, []int{2, 3, 260}) {
		t.Fatalf("%s: shape %v, %v (stdout %q)", out, shape, err, stdout)
	}
	want, err := lfm2.Logits(c, w, [][]int{{1, 2, 3}, {259, 0, 7}})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("logits differ from lfm2.Logits (%v)", err)
	}
}

// TestLFM2OutFiles: a directory given where a file is expected, or a file
// in a directory that does not exist, is refused before the model runs,
// and nothing is written anywhere; a run that fails leaves the file that
// was there; one that succeeds leaves its file and no temporary beside it.
func TestLFM2OutFiles(t *testing.T) {
	dir, _, _, _ := lfm2TestModel(t)
	outDir := t.TempDir()
	missing := filepath.Join(outDir, "no", "such", "l.npy")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logits", "--model", dir, "--ids", "1 2", "--out", outDir}, "--out " + outDir + " is a directory: want the file to write, such as " + filepath.Join(outDir, "logits.npy")},
		{[]string{"logits", "--model", dir, "--ids", "1 2", "--out", filepath.Join(outDir, "new") + "/"}, "is a directory"},
		{[]string{"logits", "--model", dir, "--ids", "1 2", "--out", missing}, "--out " + missing + ": there is no directory " + filepath.Dir(missing) + " to write it in"},
		{[]string{"bench", "--model", dir, "--batch", "1", "--seq", "2", "--out", outDir}, "--out " + outDir + " is a directory"},
		{[]string{"bench", "--model", dir, "--batch", "1", "--seq", "2", "--json", outDir}, "--json " + outDir + " is a directory: want the file to write, such as " + filepath.Join(outDir, "bench.json")},
	} {
		code, stdout, errs := lab(append([]string{"lfm2"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) || stdout != "" {
			t.Errorf("lab lfm2 %q: exit %d, stdout %q, stderr %q; want exit 2, %q and no run", tc.args, code, stdout, errs, tc.want)
		}
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Errorf("refused runs left %v in %s", ents, outDir)
	}

	out := filepath.Join(outDir, "l.npy")
	if err := os.WriteFile(out, []byte("the old logits"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := lab("lfm2", "logits", "--model", dir, "--ids", "1 260", "--out", out); code != 1 {
		t.Fatalf("a token outside the vocabulary: exit %d, %s", code, errs)
	}
	if data, _ := os.ReadFile(out); string(data) != "the old logits" {
		t.Errorf("a failed run left %q in %s", data, out)
	}
	if code, _, errs := lab("lfm2", "logits", "--model", dir, "--ids", "1 2", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, shape, err := datasets.ReadNPYTensor(out); err != nil || !slices.Equal(shape, []int{1, 2, 260}) {
		t.Errorf("%s: shape %v, %v", out, shape, err)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Errorf("%s holds %v, want l.npy alone", outDir, ents)
	}
}

// TestLFM2Run: the streamed text is the greedy continuation, decoded.
func TestLFM2Run(t *testing.T) {
	dir, c, w, tok := lfm2TestModel(t)
	code, stdout, errs := lab("lfm2", "run", "--model", dir, "--prompt", "hi", "--max-new", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	ids, _ := tok.Encode("hi", true)
	if !slices.Equal(ids, []int{256, 'h', 'i'}) {
		t.Fatalf("prompt ids %v", ids)
	}
	gen, err := lfm2.Greedy(c, w, ids, 5)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tok.Decode(gen)
	if stdout != want+"\n" {
		t.Errorf("stdout %q, want %q", stdout, want+"\n")
	}
	if !strings.Contains(errs, "prompt 3 tokens") || !strings.Contains(errs, "decode") {
		t.Errorf("stderr %q: want the prefill and decode rates", errs)
	}
}

// TestLFM2RunTrained: on the trained model, lab lfm2 run prints
// transformers' greedy continuation of a prompt of greedy.json, up to the
// first special token (where the model ends a file), and stops there.
func TestLFM2RunTrained(t *testing.T) {
	dir := filepath.Join("..", filepath.FromSlash(lfm2.TrainedDir))
	tr, err := lfm2.LoadTrained(dir)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no trained model at %s", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	ref, err := tr.Reference()
	if err != nil {
		t.Fatal(err)
	}
	g := ref.Greedy[0]
	cont := g.Continuation
	end := slices.IndexFunc(cont, tr.Tokenizer.IsSpecial)
	if end < 0 {
		t.Fatalf("the greedy continuation of %q has no special token in its %d tokens: pick a prompt that ends", g.Text, len(cont))
	}
	want, err := tr.Tokenizer.Decode(cont[:end])
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := lab("lfm2", "run", "--model", dir, "--prompt", g.Text, "--max-new", strconv.Itoa(len(cont)))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if stdout != want+"\n" || !strings.Contains(errs, "stopped at special token") {
		t.Errorf("after %q: stdout %q, want %q; stderr %q", g.Text, stdout, want+"\n", errs)
	}
}

// TestLFM2Pull: a model pulled from a hub (a local one, at HF_ENDPOINT)
// is a directory that lab lfm2 run takes, and gives the text it gives
// from the original; a bad id is a usage error.
func TestLFM2Pull(t *testing.T) {
	src, _, _, _ := lfm2TestModel(t)
	files := map[string][]byte{}
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	srv := httptest.NewServer(&hubtest.Hub{Repo: "gpulab/tiny", Files: files, LFS: map[string]bool{"model.safetensors": true}})
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	dir := filepath.Join(t.TempDir(), "tiny")
	code, stdout, errs := lab("lfm2", "pull", "gpulab/tiny", "--dir", dir)
	if code != 0 || strings.TrimSpace(stdout) != dir || !strings.Contains(errs, "model.safetensors: ") {
		t.Fatalf("exit %d, stdout %q: %s", code, stdout, errs)
	}
	run := func(model string) string {
		code, out, errs := lab("lfm2", "run", "--model", model, "--prompt", "hi", "--max-new", "5")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		return out
	}
	if a, b := run(src), run(dir); a != b {
		t.Errorf("the pulled model writes %q, the original %q", b, a)
	}
	if code, _, errs := lab("lfm2", "pull", "not-a-repo"); code != 2 && code != 1 || !strings.Contains(errs, "not a repository id") {
		t.Errorf("a bad id: exit %d, %s", code, errs)
	}
}

// TestLFM2Bench: a bench run's --out validates a second run, and a
// perturbed reference fails it.
func TestLFM2Bench(t *testing.T) {
	dir, _, _, _ := lfm2TestModel(t)
	tmp := t.TempDir()
	ref, js := filepath.Join(tmp, "ref.npy"), filepath.Join(tmp, "b.json")
	code, stdout, errs := lab("lfm2", "bench", "--model", dir, "--batch", "3", "--seq", "4", "--decode", "3", "--decode-batch", "1,2",
		"--out", ref, "--json", js)
	if code != 0 || !strings.Contains(stdout, "samples/s") || !strings.Contains(stdout, "decode at batch 1: 3 greedy steps after 4-token prompts") ||
		!strings.Contains(stdout, "decode at batch 2: 3 greedy steps") {
		t.Fatalf("exit %d: %s%s", code, stdout, errs)
	}
	var res lfm2.BenchRecord
	if data, err := os.ReadFile(js); err != nil || json.Unmarshal(data, &res) != nil || res.Batch != 3 || res.SamplesPerSec <= 0 ||
		len(res.Decode) != 2 || res.Decode[1].Batch != 2 || res.Decode[1].TokensPerSec <= 0 {
		t.Errorf("json %+v, %v", res, err)
	}
	code, stdout, errs = lab("lfm2", "bench", "--model", dir, "--batch", "3", "--seq", "4", "--ref", ref)
	if code != 0 || !strings.Contains(stdout, "validated 3/3 samples") || !strings.Contains(stdout, "top-1 agreement 100.00%") {
		t.Fatalf("exit %d: %s%s", code, stdout, errs)
	}
	data, shape, _ := datasets.ReadNPYTensor(ref)
	data[len(data)-1] += 0.5 // the last sample's last logit
	bad := filepath.Join(tmp, "bad.npy")
	if err := datasets.WriteNPYTensor(bad, data, shape); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs = lab("lfm2", "bench", "--model", dir, "--batch", "3", "--seq", "4", "--ref", bad)
	if code != 1 || !strings.Contains(stdout, "validated 2/3") || !strings.Contains(errs, "1 of 3 samples differ") {
		t.Errorf("perturbed reference: exit %d: %s%s", code, stdout, errs)
	}
}

// TestLFM2Errors: the bad inputs of issue #8 each give a clear error.
func TestLFM2Errors(t *testing.T) {
	dir, _, _, _ := lfm2TestModel(t)
	empty := t.TempDir()
	malformed := t.TempDir()
	os.WriteFile(filepath.Join(malformed, "config.json"), []byte(`{"model_type": "lfm2_moe",`), 0o644)
	truncated := t.TempDir()
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "model.safetensors" {
			data = data[:len(data)-100]
		}
		os.WriteFile(filepath.Join(truncated, f), data, 0o644)
	}
	out := filepath.Join(t.TempDir(), "x.npy")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--model", dir, "--prompt", ""}, 2, "--prompt is empty"},
		{[]string{"run", "--model", dir, "--prompt", "hello", "--max-new", "8"}, 1, "a 6-token prompt and 8 new tokens are longer than max_position_embeddings = 12"},
		{[]string{"logits", "--model", dir, "--ids", "1 260", "--out", out}, 1, "token 260 (at 1) is outside the vocabulary of 260"},
		{[]string{"logits", "--model", dir, "--ids", "0 1 2 3 4 5 6 7 8 9 10 11 12", "--out", out}, 1, "a sequence of 13 tokens is longer than max_position_embeddings = 12"},
		{[]string{"logits", "--model", dir, "--ids", "1 2,3", "--out", out}, 1, "ragged: sequence lengths [2 1]"},
		{[]string{"logits", "--model", dir, "--ids", "1 x", "--out", out}, 2, `"x" is not a token id`},
		{[]string{"logits", "--model", dir, "--ids", "1,,2", "--out", out}, 2, "sequence 1 is empty"},
		{[]string{"logits", "--model", empty, "--ids", "1", "--out", out}, 1, "config.json: no such file"},
		{[]string{"logits", "--model", malformed, "--ids", "1", "--out", out}, 1, "config.json: unexpected end of JSON"},
		{[]string{"logits", "--model", truncated, "--ids", "1", "--out", out}, 1, "model.safetensors"},
		{[]string{"logits", "--model", dir, "--ids", "1", "--out", out, "--device", "cuda:99"}, 1, `unknown device "cuda:99"`},
		{[]string{"logits", "--model", dir, "--ids", "1", "--out", out, "--dtype", "bf16"}, 2, "the CPU reference computes in f32"},
		{[]string{"logits", "--model", dir, "--ids", "1", "--out", out, "--device", "tpu"}, 2, `invalid value "tpu" for flag -device: want cpu, cuda:N or all-gpus`},
		{[]string{"bench", "--random", "lfm2-8b-a1b"}, 1, "8.34 billion parameters (33.4 GB in float32)"},
		{[]string{"bench", "--random", "gpt-5"}, 2, `no preset "gpt-5"`},
		{[]string{"bench", "--model", dir, "--random", "lfm2-8b-a1b"}, 2, "exactly one of --model DIR and --random NAME"},
		{[]string{"bench", "--model", dir, "--batch", "1", "--seq", "2", "--ref", out}, 1, "x.npy"},
		{[]string{"bench", "--model", dir, "--compare-moe"}, 2, "--compare-moe compares the CUDA engine's MoE paths"},
		{[]string{"bench", "--model", dir, "--decode", "2", "--decode-batch", "1,0"}, 2, `"0" is not a positive batch size`},
		{[]string{"bench", "--model", dir, "--reps", "0"}, 2, `invalid value "0" for flag -reps`},
		{[]string{"bench", "--model", dir, "--micro-tokens", "-1"}, 2, `invalid value "-1" for flag -micro-tokens`},
		{[]string{"bench", "--model", dir, "--moe", "wgmma"}, 2, "--moe picks the CUDA engine's MoE path"},
		{[]string{"bench", "--model", dir, "--device", "cuda:0", "--moe", "fastest"}, 2, `invalid value "fastest" for flag -moe: want grouped, wgmma or persistent`},
		{[]string{"frobnicate"}, 2, `unknown subcommand "frobnicate"`},
	} {
		code, _, errs := lab(append([]string{"lfm2"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("lab lfm2 %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// lfm2Fixture is a transformers fixture directory (from lab/) and its ids
// in --ids form.
func lfm2Fixture(t *testing.T, name string) (dir, ids string) {
	t.Helper()
	dir = filepath.Join("..", "datasets", "testdata", "lfm2", name)
	data, err := os.ReadFile(filepath.Join(dir, "ids.json"))
	if err != nil {
		t.Skipf("no fixture: %v", err)
	}
	var f struct{ Batch [][]int }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var seqs []string
	for _, seq := range f.Batch {
		seqs = append(seqs, strings.Trim(fmt.Sprint(seq), "[]"))
	}
	return dir, strings.Join(seqs, ",")
}

// TestLFM2CUDAFixtures: logits on one GPU and on the pipeline of every GPU
// match transformers' fixture logits within 1e-4.
func TestLFM2CUDAFixtures(t *testing.T) {
	cudatest.Context(t)
	for _, name := range []string{"dense", "moe"} {
		dir, ids := lfm2Fixture(t, name)
		want, wantShape, err := datasets.ReadNPYTensor(filepath.Join(dir, "logits.npy"))
		if err != nil {
			t.Fatal(err)
		}
		for _, device := range []string{"cuda:0", "all-gpus"} {
			out := filepath.Join(t.TempDir(), "l.npy")
			code, stdout, errs := lab("lfm2", "logits", "--model", dir, "--ids", ids, "--out", out, "--device", device)
			if code != 0 {
				t.Fatalf("%s on %s: exit %d: %s", name, device, code, errs)
			}
			got, shape, err := datasets.ReadNPYTensor(out)
			if err != nil || !slices.Equal(shape, wantShape) {
				t.Fatalf("%s on %s: shape %v, want %v, %v (stdout %q)", name, device, shape, wantShape, err, stdout)
			}
			worst := 0.0
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > worst || math.IsNaN(d) {
					worst = d
				}
			}
			if !(worst <= 1e-4) {
				t.Errorf("%s on %s: max |diff| %.3g from logits.npy, want <= 1e-4", name, device, worst)
			}
		}
	}
}

// TestLFM2CUDARun: greedy text on the GPU is the CPU reference's.
func TestLFM2CUDARun(t *testing.T) {
	cudatest.Context(t)
	dir, _, _, _ := lfm2TestModel(t)
	args := []string{"lfm2", "run", "--model", dir, "--prompt", "hi", "--max-new", "5"}
	_, want, _ := lab(args...)
	code, got, errs := lab(append(args, "--device", "cuda:0")...)
	if code != 0 || got != want {
		t.Errorf("exit %d, stdout %q, want %q (stderr %q)", code, got, want, errs)
	}
}

// TestLFM2CUDABench: bench on the GPU, validated against CPU logits of the
// same ids, with the operation profile, the MoE paths and decode at two
// batch sizes; and in bf16 and over every GPU.
func TestLFM2CUDABench(t *testing.T) {
	cudatest.Context(t)
	dir, _ := lfm2Fixture(t, "moe")
	tmp := t.TempDir()
	ref, js := filepath.Join(tmp, "ref.npy"), filepath.Join(tmp, "b.json")
	size := []string{"lfm2", "bench", "--model", dir, "--batch", "3", "--seq", "9"}
	if code, stdout, errs := lab(append(size, "--out", ref)...); code != 0 {
		t.Fatalf("CPU reference: exit %d: %s%s", code, stdout, errs)
	}
	code, stdout, errs := lab(append(size, "--device", "cuda:0", "--dtype", "f32", "--ref", ref, "--compare-moe",
		"--decode", "2", "--decode-batch", "1,3", "--json", js)...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, errs)
	}
	for _, want := range []string{"samples/s", "GPU time by operation", "router", "validated 3/3 samples",
		"MoE paths", "experts (persistent)", "expert w1|w3 gemms", "decode at batch 1:", "decode at batch 3:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	var res lfm2.BenchRecord
	if data, err := os.ReadFile(js); err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("%s: %v", js, err)
	}
	if len(res.PrefillOps) == 0 || len(res.MoE) != 2 || len(res.Decode) != 2 || len(res.Decode[0].StepOps) == 0 ||
		len(res.Stages) != 1 || res.Validated != 3 {
		t.Errorf("json %+v", res)
	}
	for _, extra := range [][]string{{"--device", "cuda:0", "--dtype", "bf16"}, {"--device", "all-gpus", "--ref", ref}} {
		if code, stdout, errs := lab(append(size, extra...)...); code != 0 {
			t.Errorf("%q: exit %d: %s%s", extra, code, stdout, errs)
		}
	}
}

// TestLFM2ProfileTables: the operation table gives each operation's share
// of the sum, and the MoE table puts the paths side by side, "-" where a
// path has no such operation.
func TestLFM2ProfileTables(t *testing.T) {
	var b strings.Builder
	lfm2.WriteOpTimes(&b, []lfm2.OpTime{{Name: "expert w1|w3 gemms", Calls: 24, MS: 3}, {Name: "router", Calls: 8, MS: 1}})
	if !regexp.MustCompile(`expert w1\|w3 gemms +24 +3\.000 +75\.0\n +router +8 +1\.000 +25\.0\n$`).MatchString(b.String()) {
		t.Errorf("operation table:\n%s", b.String())
	}
	b.Reset()
	lfm2.WriteMoEPaths(&b, []lfm2.MoERecord{
		{Path: "grouped", WallMS: 5, Ops: []lfm2.OpTime{{Name: "expert w1|w3 gemms", Calls: 24, MS: 3}, {Name: "router", Calls: 8, MS: 1}}},
		{Path: "persistent", WallMS: 9, Ops: []lfm2.OpTime{{Name: "experts (persistent)", Calls: 8, MS: 7}, {Name: "router", Calls: 8, MS: 1.5}}},
	})
	for _, want := range []string{`grouped +persistent\n`, `expert w1\|w3 gemms +3\.000 +-\n`, `router +1\.000 +1\.500\n`,
		`experts \(persistent\) +- +7\.000\n`, `wall +5\.000 +9\.000\n$`} {
		if !regexp.MustCompile(want).MatchString(b.String()) {
			t.Errorf("MoE table lacks %s:\n%s", want, b.String())
		}
	}
}

// TestBenchLFM2CPU: the lfm2 suite runs from lab bench on the CPU, its
// cases pass their check, and its records are written as JSON.
func TestBenchLFM2CPU(t *testing.T) {
	js := filepath.Join(t.TempDir(), "lfm2.json")
	code, stdout, errs := lab("bench", "lfm2", "--device", "cpu", "--reps", "2", "--warmup", "1", "--min-time", "1ms", "--json", js)
	if code != 0 || !strings.Contains(stdout, "lfm2 on cpu") {
		t.Fatalf("exit %d: %s%s", code, stdout, errs)
	}
	recs, err := bench.ReadJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	var variants []string
	for _, r := range recs {
		variants = append(variants, r.Variant)
		if !r.OK || r.Params["dtype"] != "f32" {
			t.Errorf("%s: %+v", r.Variant, r)
		}
	}
	if want := []string{"prefill", "decode_b1", "decode_b4"}; !slices.Equal(variants, want) {
		t.Errorf("variants %q, want %q", variants, want)
	}
}

// TestLFM2AllGPUsWithoutGPU: --device all-gpus on a host without a CUDA
// device says so, for the lfm2 commands as for lab bench.
func TestLFM2AllGPUsWithoutGPU(t *testing.T) {
	if n, err := cuda.DeviceCount(); err == nil && n > 0 {
		t.Skipf("%d CUDA devices here: all-gpus opens them", n)
	}
	dir, _, _, _ := lfm2TestModel(t)
	out := filepath.Join(t.TempDir(), "l.npy")
	code, _, errs := lab("lfm2", "logits", "--model", dir, "--ids", "1 2", "--out", out, "--device", "all-gpus")
	if code != 1 || !strings.Contains(errs, "--device all-gpus: no CUDA device") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// poisonLFM2Model rewrites the weights of lfm2TestModel's model in dir
// with tensor name changed by poison.
func poisonLFM2Model(t *testing.T, dir string, c *lfm2.Config, name string, poison func([]float32)) {
	t.Helper()
	tensors := lfm2.RandomTensors(c, 5, "F32")
	poison(tensors[name].Data)
	if err := lfm2.WriteSafetensors(filepath.Join(dir, "model.safetensors"), tensors); err != nil {
		t.Fatal(err)
	}
}

// TestLFM2NonFinite: a model with a NaN weight is refused at load, naming
// the tensor; one whose finite weights overflow fails naming the layer
// where the values stop being finite. Neither exits 0 nor writes logits.
func TestLFM2NonFinite(t *testing.T) {
	nanDir, c, _, _ := lfm2TestModel(t)
	poisonLFM2Model(t, nanDir, c, "model.layers.2.conv.out_proj.weight", func(v []float32) { v[17] = float32(math.NaN()) })
	hugeDir, _, _, _ := lfm2TestModel(t)
	poisonLFM2Model(t, hugeDir, c, "model.layers.1.operator_norm.weight", func(v []float32) {
		for i := range v {
			v[i] = math.MaxFloat32
		}
	})
	out := filepath.Join(t.TempDir(), "l.npy")
	for _, tc := range []struct {
		dir, want string
	}{
		{nanDir, "tensor model.layers.2.conv.out_proj.weight holds NaN at [1 1] (element 17 of 256)"},
		{hugeDir, "layer 1 (attention) output is not finite at position 0"},
	} {
		for _, args := range [][]string{
			{"lfm2", "run", "--model", tc.dir, "--prompt", "hi", "--max-new", "3"},
			{"lfm2", "logits", "--model", tc.dir, "--ids", "1 2 3", "--out", out},
		} {
			code, stdout, errs := lab(args...)
			if code != 1 || !strings.Contains(errs, tc.want) || strings.TrimSpace(stdout) != "" {
				t.Errorf("lab %q: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, stdout, errs, tc.want)
			}
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a failed run wrote %s", out)
	}
}

// TestLFM2BenchRefusesEarly: a sequence length past the model's limit, and
// a reference whose header claims another shape than the run's logits (a
// sparse file of 48 GB), are refused before the benchmark allocates for
// them or runs.
func TestLFM2BenchRefusesEarly(t *testing.T) {
	dir, _, _, _ := lfm2TestModel(t)
	ref := filepath.Join(t.TempDir(), "huge.npy")
	header := "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 1000000000), }"
	header += strings.Repeat(" ", 63-(10+len(header))%64) + "\n"
	f, err := os.Create(ref)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(header)), byte(len(header) >> 8)}, header...))
	if err == nil {
		err = f.Truncate(int64(10+len(header)) + 4*3*4*1000000000)
	}
	if err := errors.Join(err, f.Close()); err != nil {
		t.Skipf("no sparse 48 GB file here: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--batch", "1", "--seq", "20000000"}, "sequences of 20000000 tokens are longer than max_position_embeddings = 12"},
		{[]string{"--batch", "3", "--seq", "4", "--ref", ref}, "--ref " + ref + ": logits of shape [3 4 1000000000], but the run gives [3 4 260]"},
	} {
		code, stdout, errs, got := labAllocating(append([]string{"lfm2", "bench", "--model", dir}, tc.args...)...)
		if code != 1 || !strings.Contains(errs, tc.want) || strings.Contains(stdout, "samples/s") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q before the run", tc.args, code, stdout, errs, tc.want)
		}
		if got > 64<<20 {
			t.Errorf("%q: %d bytes allocated before the refusal", tc.args, got)
		}
	}
}
