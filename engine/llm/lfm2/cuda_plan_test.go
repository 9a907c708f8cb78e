package lfm2

// Tests of the CUDA engine's host-side planning: they need no GPU.

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitCosts(t *testing.T) {
	for _, tc := range []struct {
		costs []float64
		g     int
		want  []int
	}{
		{[]float64{1, 1, 1, 1}, 1, []int{0, 4}},
		{[]float64{1, 1, 1, 1}, 2, []int{0, 2, 4}},
		{[]float64{1, 1, 1, 1}, 4, []int{0, 1, 2, 3, 4}},
		{[]float64{5, 1, 1, 1, 1, 1}, 2, []int{0, 1, 6}}, // the costly layer alone
		{[]float64{1, 1, 1, 1, 1, 5}, 2, []int{0, 5, 6}},
		{[]float64{3, 1, 1, 1, 3, 3}, 3, []int{0, 2, 5, 6}}, // by cost, not by count: 4, 5, 3
	} {
		got, err := splitCosts(tc.costs, tc.g)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("splitCosts(%v, %d) = %v, %v; want %v", tc.costs, tc.g, got, err, tc.want)
		}
	}
	for _, g := range []int{0, 5} {
		if _, err := splitCosts([]float64{1, 1, 1, 1}, g); err == nil || !strings.Contains(err.Error(), "4 layers") {
			t.Errorf("splitLayers over %d GPUs: %v, want an error naming the layers", g, err)
		}
	}
}

func TestPartsString(t *testing.T) {
	for _, tc := range []struct {
		from, to int
		want     string
	}{
		{0, 48, "layers 0-23"}, {0, 25, "layers 0-11 and the mixer of layer 12"},
		{25, 48, "the feed-forward of layer 12 and layers 13-23"}, {8, 10, "layer 4"},
		{9, 10, "the feed-forward of layer 4"}, {8, 9, "the mixer of layer 4"},
		{9, 13, "the feed-forward of layer 4 and layer 5 and the mixer of layer 6"},
	} {
		if got := partsString(tc.from, tc.to); got != tc.want {
			t.Errorf("partsString(%d, %d) = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestStageBytes8B: the 8B model's weights in bf16 are 2 bytes per
// parameter, plus 2 more for the fp32 ones (norms, conv kernels, router).
func TestStageBytes8B(t *testing.T) {
	c, err := Preset("lfm2-8b-a1b")
	if err != nil {
		t.Fatal(err)
	}
	o, err := CUDAOptions{DType: "bf16", MaxBatch: 1024, MaxSeq: 64, MaxTokens: 8192}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var params int64
	for _, p := range Parts(c) {
		params += p.Total
	}
	const h = 2048
	f32Params := int64(2*24*h+h) + 18*3*h + 22*(32*h+32) + 6*2*64
	b := stageBytes(c, o, 0, c.Layers, true, true)
	if want := 2*params + 2*f32Params; b.Weights != want {
		t.Errorf("weights %d bytes, want %d", b.Weights, want)
	}
	kv := int64(6 * 2 * 1024 * 8 * 64 * 64 * 4)
	if want := kv + 18*1024*2*h*4 + 64*64*4; b.Caches != want {
		t.Errorf("caches %d bytes, want %d", b.Caches, want)
	}
	if b.Total() > 60<<30 {
		t.Errorf("%v: does not fit an H100", b)
	}
	// Split in two by size, each half holds about half.
	bounds, err := splitCosts(sizeCosts(c, o), 2)
	if err != nil {
		t.Fatal(err)
	}
	first, second := stageBytes(c, o, 0, bounds[1], true, false), stageBytes(c, o, bounds[1], c.Layers, false, true)
	if r := float64(first.Weights) / float64(second.Weights); r < 0.8 || r > 1.25 {
		t.Errorf("split at layer %d: %v and %v", bounds[1], first, second)
	}
}

func TestCUDAOptions(t *testing.T) {
	o, err := CUDAOptions{MaxBatch: 64, MaxTokens: 16}.withDefaults()
	if err != nil || o.DType != "f32" || o.MaxSeq != 2048 || o.MaxTokens != 64 || o.MaxBatch != 64 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		o    CUDAOptions
		want string
	}{
		{CUDAOptions{DType: "f16"}, `dtype "f16"`},
		{CUDAOptions{MaxSeq: -1}, "MaxSeq -1"},
		{CUDAOptions{MoE: "fast"}, `MoE path "fast"`},
	} {
		if _, err := tc.o.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.o, err, tc.want)
		}
	}
}

// TestCUDABatches checks the batch checks and the micro-batch split, which
// need only the config and options.
func TestCUDABatches(t *testing.T) {
	c, err := ParseConfig([]byte(fwdConfig))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := CUDAOptions{MaxBatch: 4, MaxSeq: 10, MaxTokens: 12}.withDefaults()
	m := &CUDAModel{c: c, o: o, stages: make([]*stage, 1)}
	for _, tc := range []struct {
		batch [][]int
		extra int
		want  string
	}{
		{nil, 0, "empty"},
		{[][]int{{1, 2}, {3}}, 0, "ragged"},
		{[][]int{{1, 50}}, 0, "token 50"},
		{[][]int{{1}, {1}, {1}, {1}, {1}}, 0, "MaxBatch of 4"},
		{[][]int{{1, 2, 3}}, 8, "MaxSeq of 10"},
	} {
		if _, _, _, err := m.checkBatch(tc.batch, tc.extra); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkBatch(%v, %d): %v, want an error with %q", tc.batch, tc.extra, err, tc.want)
		}
	}
	b, s, flat, err := m.checkBatch([][]int{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, 0)
	if err != nil || b != 3 || s != 3 || !slices.Equal(flat, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("checkBatch: %d %d %v %v", b, s, flat, err)
	}
	// 3 sequences of 3 tokens, at most 12 tokens each: up to 4 micro-batches
	// (two per lane), of whole sequences.
	mbs, err := m.microBatches(b, s, 0, flat)
	if err != nil || len(mbs) != 3 || mbs[2].b0 != 2 || mbs[2].B != 1 || mbs[2].index != 2 || !slices.Equal(mbs[2].tokens, []int32{7, 8, 9}) {
		t.Errorf("micro-batches %+v, %v", mbs, err)
	}
	// 9 sequences: micro-batches of 3 (the 12-token limit would allow 4).
	if mbs, err := m.microBatches(9, 3, 0, nil); err != nil || len(mbs) != 3 || mbs[0].B != 3 {
		t.Errorf("micro-batches of 9 sequences %+v, %v", mbs, err)
	}
	// A decode step stays whole.
	if mbs, err := m.microBatches(4, 1, 5, nil); err != nil || len(mbs) != 1 || mbs[0].B != 4 || mbs[0].pos != 5 {
		t.Errorf("decode micro-batches %+v, %v", mbs, err)
	}
	if _, err := m.microBatches(1, 13, 0, nil); err == nil || !strings.Contains(err.Error(), "MaxTokens of 12") {
		t.Errorf("a sequence longer than MaxTokens: %v", err)
	}
	// On two stages, 17 sequences of 3 tokens make micro-batches of 3 (at
	// least 8 micro-batches), the first and the last cut in halves.
	two := &CUDAModel{c: c, o: o, stages: make([]*stage, 2)}
	mbs, err = two.microBatches(17, 3, 0, nil)
	var sizes []int
	for i, mb := range mbs {
		if mb.index != i || (i > 0 && mb.b0 != mbs[i-1].b0+mbs[i-1].B) {
			t.Errorf("micro-batch %d: %+v after %+v", i, mb, mbs[max(i-1, 0)])
		}
		sizes = append(sizes, mb.B)
	}
	if want := []int{1, 2, 3, 3, 3, 3, 1, 1}; err != nil || !slices.Equal(sizes, want) {
		t.Errorf("pipeline micro-batches of %v, %v; want %v", sizes, err, want)
	}
}

// TestRopeTable: rotating with the table is forward.go's rope.
func TestRopeTable(t *testing.T) {
	c := &Config{HeadDim: 8, RopeTheta: 1e4}
	table := ropeTable(c, 6)
	x := []float32{0.3, -1.2, 0.7, 2.0, 1.5, -0.4, 0.9, 0.1}
	for pos := range 6 {
		want := slices.Clone(x)
		rope(want, pos, c.RopeTheta)
		for i := range 4 {
			cos, sin := table[2*(pos*4+i)], table[2*(pos*4+i)+1]
			got0, got1 := x[i]*cos-x[i+4]*sin, x[i+4]*cos+x[i]*sin
			if got0 != want[i] || got1 != want[i+4] {
				t.Fatalf("position %d pair %d: %g %g, want %g %g", pos, i, got0, got1, want[i], want[i+4])
			}
		}
	}
}

func TestTop1Agreement(t *testing.T) {
	a := []float32{1, 2, 3, 9, 0, 0}
	b := []float32{1, 5, 3, 9, 0, 1}
	if got, err := Top1Agreement(a, b, 3); err != nil || got != 0.5 {
		t.Errorf("agreement %g, %v; want 0.5", got, err)
	}
	if _, err := Top1Agreement(a, b[:3], 3); err == nil {
		t.Error("mismatched lengths: no error")
	}
}

// TestCheckCUDAConfig: configs the kernels cannot run are refused, naming
// every problem.
func TestCheckCUDAConfig(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want []string
	}{
		{Config{HeadDim: 64, ConvL: 3, Experts: 32}, nil},
		{Config{HeadDim: 64, ConvL: 3, Experts: maxExperts}, nil},
		{Config{HeadDim: 63, ConvL: 3}, []string{"head_dim 63"}},
		{Config{HeadDim: 64, ConvL: 0, Experts: maxExperts + 1}, []string{"conv_L_cache 0", "num_experts 1025 (want at most 1024)"}},
	} {
		err := checkCUDAConfig(&tc.c)
		if (err == nil) != (tc.want == nil) {
			t.Errorf("%+v: %v, want errors %q", tc.c, err, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want an error with %q", tc.c, err, w)
			}
		}
	}
}
