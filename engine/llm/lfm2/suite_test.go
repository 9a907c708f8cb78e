package lfm2

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda/cudatest"
	"gpulab/engine/enginetest"
)

func TestParseBenchSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want BenchSize
		err  string
	}{
		{"lfm2:batch=1024,seq=32,decode=32", BenchSize{Batch: 1024, Seq: 32, Decode: 32, DecodeBatch: 64, GPUs: 1}, ""},
		{"lfm2:batch=4", BenchSize{Batch: 4, Seq: 32, Decode: 32, DecodeBatch: 64, GPUs: 1}, ""},
		{"lfm2:batch=3,seq=5,decode=0,dbatch=2,gpus=2,micro=2048,fixture=1",
			BenchSize{Batch: 3, Seq: 5, Decode: 0, DecodeBatch: 2, GPUs: 2, MicroTokens: 2048, Fixture: true}, ""},
		{"lfm2:batch=0", BenchSize{}, "at least 1"},
		{"lfm2:fixture=2", BenchSize{}, "fixture is 0 or 1"},
		{"lfm2:batch=4,heads=8", BenchSize{}, `unknown field "heads"`},
		{"batch=4", BenchSize{}, `does not start with "lfm2:"`},
		{"lfm2:seq=-1", BenchSize{}, "is not a count"},
	} {
		got, err := ParseBenchSize(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseBenchSize(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseBenchSize(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		case tc.err == "":
			if again, err := ParseBenchSize(got.String()); err != nil || again != got {
				t.Errorf("%q: String() %q reads back as %+v, %v", tc.in, got.String(), again, err)
			}
		}
	}
}

// TestFixtureConfig: the suite's model has the MoE fixture's shape.
func TestFixtureConfig(t *testing.T) {
	want, err := LoadConfig(filepath.Join(fixtures, "moe"))
	if err != nil {
		t.Skipf("no fixture: %v", err)
	}
	got, err := ParseConfig([]byte(fixtureConfig))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("fixtureConfig = %+v, %v; the fixture's config.json is %+v", got, err, want)
	}
}

// TestCheckGreedy: the check recomputes the sequences as prompt and picked
// tokens, and charges each picked token its gap to the top logit at its
// position, relative to max(|top|, 1).
func TestCheckGreedy(t *testing.T) {
	const vocab = 4
	// The reference's logits at position p of a sequence: token p%4 on top
	// at 2, token (p+1)%4 at 1.9, the others at -3.
	reference := func(seqs [][]int) ([]float32, error) {
		var out []float32
		for _, s := range seqs {
			for p := range s {
				row := []float32{-3, -3, -3, -3}
				row[p%vocab], row[(p+1)%vocab] = 2, 1.9
				out = append(out, row...)
			}
		}
		return out, nil
	}
	prompts := [][]int{{0, 1}, {2, 3}}
	same := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6 || math.IsInf(a, 1) && math.IsInf(b, 1) }
	for _, tc := range []struct {
		name       string
		picked     [][]int
		gap, share float64 // the largest gap / max(|top|, 1); the share of tokens not the top one
		worst      int
	}{
		{"every token the top one", [][]int{{1, 2, 3}, {1, 2, 3}}, 0, 0, 0},
		{"a near-tie", [][]int{{1, 2, 3}, {1, 3, 3}}, 0.1 / 2, 1.0 / 6, 4},
		{"a wrong token and a near-tie", [][]int{{1, 0, 3}, {1, 3, 3}}, 5.0 / 2, 2.0 / 6, 1},
		{"not picked", [][]int{{1, 2, -1}, {1, 2, 3}}, math.Inf(1), math.Inf(1), 2},
	} {
		for _, share := range []bool{false, true} {
			var seen [][]int
			got, err := checkGreedy(func(seqs [][]int) ([]float32, error) { seen = seqs; return reference(seqs) }, vocab, prompts, tc.picked, share)
			want := tc.gap
			if share {
				want = tc.share
			}
			if err != nil || !same(got.MaxRelErr, want) || got.Worst != tc.worst {
				t.Errorf("%s, share %v: %+v, %v; want error %g at %d", tc.name, share, got, err, want, tc.worst)
			}
			if want := [][]int{append([]int{0, 1}, tc.picked[0][:2]...), append([]int{2, 3}, tc.picked[1][:2]...)}; !reflect.DeepEqual(seen, want) {
				t.Errorf("%s: the reference ran %v, want %v", tc.name, seen, want)
			}
		}
	}
	if _, err := checkGreedy(reference, vocab, prompts, [][]int{{1}}, false); err == nil {
		t.Error("one picked row for two prompts passed")
	}
}

// TestSuiteCPU: the suite runs on the CPU, its cases pass their check, and
// the decode cases are compared with decode at batch 1.
func TestSuiteCPU(t *testing.T) {
	suite, err := bench.Lookup("lfm2")
	if err != nil {
		t.Fatal(err)
	}
	if sizes := suite.Sizes(cpuDevice.Info); len(sizes) != 1 {
		t.Fatalf("CPU sizes %q", sizes)
	}
	recs, err := bench.Run(suite, cpuDevice, []string{"lfm2:batch=3,seq=5,decode=3,dbatch=2"}, bench.Options{Warmup: 1, MinReps: 2, MinTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Failed(recs); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		baseline      string
		tokens, batch int
	}{"prefill": {"prefill", 15, 3}, "decode_b1": {"decode_b1", 3, 1}, "decode_b2": {"decode_b1", 6, 2}}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for _, r := range recs {
		w, ok := want[r.Variant]
		if !ok || r.Baseline != w.baseline || r.Params["tokens"] != w.tokens || r.Params["batch"] != w.batch ||
			r.Params["dtype"] != F32 || r.Params["precision"] != "fp32" || r.GFLOPS <= 0 || r.MaxRelErr > suiteTolF32 {
			t.Errorf("%s: %+v", r.Variant, r)
		}
	}
}

// wrongEngine picks another token than each greedy one, a different
// other at each step (a random tiny model tends to repeat its last token,
// which a token off by the same amount at each step would copy).
type wrongEngine struct{ *CPUModel }

func (m wrongEngine) Generate(prompts [][]int, n int, s Sampling, emit func(int, []int) error) error {
	return m.CPUModel.Generate(prompts, n, s, func(step int, toks []int) error {
		wrong := make([]int, len(toks))
		for i, tok := range toks {
			wrong[i] = (tok + 1 + 7*step) % m.c.Vocab
		}
		return emit(step, wrong)
	})
}

// idleEngine picks nothing.
type idleEngine struct{ *CPUModel }

func (m idleEngine) Generate([][]int, int, Sampling, func(int, []int) error) error { return nil }

// TestSuiteCatchesWrongTokens: an engine that picks other tokens than the
// greedy ones, or none, fails every case, under both checks; the reference
// itself passes them.
func TestSuiteCatchesWrongTokens(t *testing.T) {
	c, err := ParseConfig([]byte(fixtureConfig))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := OpenRandom(c, suiteSeed, []*engine.Device{cpuDevice}, CUDAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := ref.(*CPUModel)
	for name, m := range map[string]Engine{"wrong": wrongEngine{cpu}, "idle": idleEngine{cpu}, "right": cpu} {
		for _, share := range []bool{false, true} { // the f32 check and the 8B's
			tol := map[bool]float64{false: suiteTolF32, true: suiteTolBF16}[share]
			r := &suiteRun{sz: BenchSize{Batch: 2, Seq: 4, Decode: 2, DecodeBatch: 2, GPUs: 1}, m: m, dtype: F32, reference: cpu.Logits, tol: tol, share: share, gpus: 1}
			cases, err := r.cases()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				if rec := bench.Measure(c, bench.Options{Warmup: 1, MinReps: 1, MinTime: time.Millisecond}); rec.OK != (name == "right") {
					t.Errorf("%s engine, %s, share %v: ok %v with max rel err %g", name, c.Variant, share, rec.OK, rec.MaxRelErr)
				}
			}
		}
	}
}

func TestSuiteErrors(t *testing.T) {
	opencl := &engine.Device{Info: engine.Info{ID: "opencl:0:0", Name: "pthread", Kind: engine.OpenCL}}
	for _, tc := range []struct {
		dev  *engine.Device
		size string
		want string
	}{
		{cpuDevice, "lfm2:batch=2,seq=4,gpus=2", "gpus=2 needs a CUDA device"},
		{cpuDevice, "lfm2:batch=2,seq=40,decode=30", "longer than max_position_embeddings = 64"},
		{cpuDevice, "lfm2:batch=2,layers=3", `unknown field "layers"`},
		{opencl, "lfm2:batch=2,seq=4", "no engine for opencl:0:0"},
	} {
		if _, _, err := suiteCases(tc.dev, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %s: %v, want an error with %q", tc.size, tc.dev.ID, err, tc.want)
		}
	}
}

// TestSuiteChecksMemory: a batch the host cannot hold the prompts and the
// reference logits of is refused before anything is drawn, with the need
// figured by hand for the fixture (a vocabulary of 211, every sequence
// checked on the CPU); the 8B model checks 16 sequences, its vocabulary is
// 65536; a size too large to count in bytes is refused all the same.
func TestSuiteChecksMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	// 1000 prompts of 8 tokens and their picked tokens; decode prompts of
	// 8 tokens with 4 steps at batch 1 and 4; the largest check is the
	// prefill's, 1000 sequences of 8 positions, a token and 211 logits each.
	need := 8*1000*(8+1) + 8*1*(8+4+1) + 8*4*(8+4+1) + 1000*8*(8+4*211)
	_, _, err := suiteCases(cpuDevice, "lfm2:batch=1000,seq=8,decode=4,dbatch=4")
	enginetest.WantMemoryError(t, err, uint64(need), "lfm2 lfm2:batch=1000,seq=8,decode=4,dbatch=4 needs")
	_, _, err = suiteCases(cpuDevice, "lfm2:batch=9000000000000000000,seq=8,decode=0")
	enginetest.WantMemoryError(t, err, math.MaxUint64)

	c, err := Preset(suitePreset)
	if err != nil {
		t.Fatal(err)
	}
	sz := BenchSize{Batch: 1024, Seq: 32, Decode: 32, DecodeBatch: 64}
	// Every prompt held; the largest check, of 16 sequences of 64 positions.
	want := 8*1024*(32+1) + 8*1*(32+32+1) + 8*64*(32+32+1) + 16*64*(8+4*65536)
	if got := suiteHostMemory(c, sz, suiteChecked); got.Bytes != uint64(want) {
		t.Errorf("the 8B model at %s: %d bytes of host memory, want %d", sz, got.Bytes, want)
	}
}

// TestFlops8B counts the 8B model's operations from its config alone: the
// parameters a token multiplies by in each kind of layer.
func TestFlops8B(t *testing.T) {
	c, err := Preset("lfm2-8b-a1b")
	if err != nil {
		t.Fatal(err)
	}
	h, hd := 2048, 64
	attention := h*32*hd + 2*h*8*hd + 32*hd*h // q, k, v, out_proj
	conv := 3*h*h + h*h + h*3                 // in_proj, out_proj, the conv kernel
	dense := 3 * h * 7168
	moe := 32*h + 4*3*h*1792 // the router, 4 of 32 experts
	perToken := 6*attention + 18*conv + 2*dense + 22*moe
	const batch, seq = 16, 32
	attentionFlops := 6 * 4 * 32 * hd * seq * (seq + 1) / 2 // scores and sums over the causal positions
	want := float64(batch) * (2*float64(seq)*float64(perToken) + float64(attentionFlops) + 2*65536*float64(h))
	if got := PrefillFlops(c, batch, seq); math.Abs(got/want-1) > 1e-12 {
		t.Errorf("PrefillFlops = %.6g, want %.6g", got, want)
	}
	// A decode step at position p costs a one-token prefill at p.
	decode := 0.0
	for p := seq; p < seq+3; p++ {
		decode += float64(batch) * (2*float64(perToken) + float64(6*4*32*hd*(p+1)) + 2*65536*float64(h))
	}
	if got := DecodeFlops(c, batch, seq, 3); math.Abs(got/decode-1) > 1e-12 {
		t.Errorf("DecodeFlops = %.6g, want %.6g", got, decode)
	}
}

// TestDecodeStepBytes: at batch 1 a step reads every parameter a token
// uses; at a batch large enough to reach every expert, every parameter.
func TestDecodeStepBytes(t *testing.T) {
	c, err := Preset("lfm2-8b-a1b")
	if err != nil {
		t.Fatal(err)
	}
	var active, total float64
	for _, p := range Parts(c) {
		active, total = active+float64(p.Active), total+float64(p.Total)
	}
	if got := DecodeStepBytes(c, 1, 2); math.Abs(got/(2*active)-1) > 1e-12 {
		t.Errorf("batch 1: %.6g bytes, want 2 × %.6g active parameters", got, active)
	}
	if got := DecodeStepBytes(c, 4096, 2); math.Abs(got/(2*total)-1) > 1e-9 {
		t.Errorf("batch 4096: %.6g bytes, want 2 × %.6g parameters", got, total)
	}
}

// TestCUDASuite runs the suite on the GPU with the fixture's shape in f32,
// checked against the CPU reference on the same weights: every MoE path
// of the prefill and decode at two batch sizes.
func TestCUDASuite(t *testing.T) {
	cudatest.Context(t)
	dev, err := engine.Open("cuda:0")
	if err != nil {
		t.Fatal(err)
	}
	suite, err := bench.Lookup("lfm2")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := bench.Run(suite, dev, []string{"lfm2:batch=6,seq=7,decode=4,dbatch=3,fixture=1"}, bench.Options{Warmup: 1, MinReps: 2, MinTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Failed(recs); err != nil {
		t.Error(err)
	}
	variants := map[string]bool{}
	for _, r := range recs {
		variants[r.Variant] = true
	}
	for _, v := range []string{"prefill", "prefill_grouped", "prefill_persistent", "decode_b1", "decode_b3"} {
		if !variants[v] {
			t.Errorf("no %s record among %v", v, variants)
		}
	}
}
