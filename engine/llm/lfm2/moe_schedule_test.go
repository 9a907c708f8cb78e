package lfm2

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

func TestParseMoEShape(t *testing.T) {
	// LFM2-8B-A1B's MoE layer: hidden 2048, 32 experts of width 1792, top-4.
	layer := moeShape{Tokens: 1, Experts: 32, TopK: 4, Hidden: 2048, Inter: 1792}
	for _, tc := range []struct {
		spec string
		want moeShape
	}{
		{"moe:tokens=64,skew=90", moeShape{64, 32, 4, 2048, 1792, 90}},
		{"moe:skew=0", layer},
		{" moe:tokens=13, experts=5,topk=2,hidden=37,inter=20,skew=100", moeShape{13, 5, 2, 37, 20, 100}},
	} {
		got, err := parseMoEShape(tc.spec)
		if err != nil || got != tc.want {
			t.Errorf("parseMoEShape(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
		if back, err := parseMoEShape(got.String()); err != nil || back != got {
			t.Errorf("%q: String() %q reads back as %+v, %v", tc.spec, got.String(), back, err)
		}
	}
	for _, tc := range []struct{ spec, want string }{
		{"tokens=64", `does not start with "moe:"`},
		{"moe:depth=3", `unknown field "depth"`},
		{"moe:tokens=-1", "is not a count"},
		{"moe:tokens=0", "tokens 0 (want at least 1)"},
		{"moe:topk=33", "topk 33 (want 1 to experts, 32)"},
		{"moe:experts=0,hidden=0", "experts 0 (want at least 1), hidden 0 (want at least 1), topk 4"},
		{"moe:skew=101", "skew 101 (want a percentage"},
		{"moe:tokens=4000000,inter=100000", "units of work"},
		{"moe:experts=1000000,hidden=1000000,inter=1000000", "expert weights (want at most"},
	} {
		if _, err := parseMoEShape(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseMoEShape(%q): %v, want an error with %q", tc.spec, err, tc.want)
		}
	}
}

// TestMoEMemory: a step's memory, figured by hand for LFM2-8B-A1B's layer
// (hidden 2048, 32 experts of width 1792, 4 per token) at 4096 tokens in
// bf16.
func TestMoEMemory(t *testing.T) {
	s := moeShape{Tokens: 4096, Experts: 32, TopK: 4, Hidden: 2048, Inter: 1792}
	host, device := s.memory(2)
	const p = 4096 * 4
	// x, w1|w3 and w2, the SwiGLU outputs in bf16; the grouped rows'
	// tokens, the grouping, the f32 outputs and the queue counters.
	if want := uint64(2*(4096*2048+3*32*1792*2048+p*1792) + 4*(p+4*32+2+p*2048+4)); device.Bytes != want {
		t.Errorf("device: %d bytes, want %d", device.Bytes, want)
	}
	// Routes, counts, offsets, grouped rows, the pairs' lists; x and one
	// expert read back raw and as float32; the reference, the outputs read
	// back and reordered.
	if want := uint64(4*p + 8*32 + 4*33 + 4*p + 8*p + (4+2)*(4096*2048+3*1792*2048) + 3*4*p*2048); host.Bytes != want {
		t.Errorf("host: %d bytes, want %d", host.Bytes, want)
	}
}

// TestMoERoute: every token gets TopK distinct experts; an even load
// spreads them uniformly, skew sends its share of the tokens to experts
// 0..TopK-1; the same seed gives the same routes.
func TestMoERoute(t *testing.T) {
	const tokens = 20000
	for _, skew := range []int{0, 90, 100} {
		s := moeShape{Tokens: tokens, Experts: 32, TopK: 4, Hidden: 8, Inter: 8, Skew: skew}
		routes := s.route(7)
		if len(routes) != tokens*4 {
			t.Fatalf("skew %d: %d choices, want %d", skew, len(routes), tokens*4)
		}
		counts, hot := make([]int, s.Experts), 0
		for tk := range tokens {
			ids := routes[tk*4 : tk*4+4]
			for i, e := range ids {
				if e < 0 || int(e) >= s.Experts || slices.Contains(ids[:i], e) {
					t.Fatalf("skew %d: token %d chose %v: want 4 distinct experts below 32", skew, tk, ids)
				}
				counts[e]++
			}
			if slices.Equal(ids, []int32{0, 1, 2, 3}) {
				hot++
			}
		}
		// Hot tokens: Skew% of them, plus the even ones that drew 0, 1, 2, 3
		// in that order (one in 32·31·30·29): five standard deviations.
		p := float64(skew) / 100
		if sd := math.Sqrt(tokens * p * (1 - p)); math.Abs(float64(hot)-tokens*p) > 5*sd+1 {
			t.Errorf("skew %d: %d of %d tokens chose experts 0-3, want about %.0f", skew, hot, tokens, tokens*p)
		}
		if skew == 0 { // each expert gets 4/32 of the tokens
			for e, n := range counts {
				if mean := tokens * 4.0 / 32; math.Abs(float64(n)-mean) > 5*math.Sqrt(mean*(1-4.0/32)) {
					t.Errorf("even load: expert %d got %d tokens, want about %.0f", e, n, mean)
				}
			}
		}
		if !slices.Equal(s.route(7), routes) || (skew < 100 && slices.Equal(s.route(8), routes)) {
			t.Errorf("skew %d: routes do not follow the seed", skew)
		}
	}
}

func TestWaveFill(t *testing.T) {
	for _, tc := range []struct {
		launches []waveSlots
		want     float64
	}{
		{nil, 100},
		{[]waveSlots{{128, 64}}, 100},
		{[]waveSlots{{100, 64}}, 100 * 100.0 / 128},                    // two rounds of 64 slots
		{[]waveSlots{{64, 64}, {1, 64}}, 100 * 65.0 / 128},             // a launch of one unit holds a whole wave
		{[]waveSlots{{1792, 2112}, {1024, 3168}}, 100 * 2816.0 / 5280}, // one expert at decode
	} {
		if got := waveFill(tc.launches); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("waveFill(%v) = %g, want %g", tc.launches, got, tc.want)
		}
	}
}

// TestMoEScheduleSuite: the suite is registered, its default sizes are
// LFM2-8B-A1B's layer at a decode-like and a prefill-like batch, each even
// and skewed, and anything but a CUDA device is refused with the reason.
func TestMoEScheduleSuite(t *testing.T) {
	s, err := bench.Lookup(moeScheduleSuite)
	if err != nil {
		t.Fatal(err)
	}
	var tokens, skews []int
	for _, size := range s.Sizes(engine.Info{}) {
		shape, err := parseMoEShape(size)
		if err != nil {
			t.Fatal(err)
		}
		if shape.Experts != 32 || shape.TopK != 4 || shape.Hidden != 2048 || shape.Inter != 1792 {
			t.Errorf("size %s is not LFM2-8B-A1B's MoE layer", size)
		}
		tokens, skews = append(tokens, shape.Tokens), append(skews, shape.Skew)
	}
	if !slices.Contains(tokens, 64) || !slices.Contains(tokens, 1024) || !slices.Contains(skews, 0) || slices.Max(skews) == 0 {
		t.Errorf("default sizes %v: want 64 and 1024 tokens, even and skewed", s.Sizes(engine.Info{}))
	}
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Cases(dev, "moe:tokens=1"); err == nil || !strings.Contains(err.Error(), "needs a CUDA device") {
		t.Errorf("moe-schedule on the CPU: %v, want an error saying it needs a CUDA device", err)
	}
}

// moeStepCase is one shape and element type for the CUDA tests.
type moeStepCase struct {
	dtype string
	shape moeShape
}

// TestCUDAMoESchedules runs each schedule three times (step 14's counters
// must come back to zero on the device between launches) and checks the
// experts' outputs pair by pair against the CPU reference; the three
// schedules compute the same units, so their outputs are bit for bit equal.
// Shapes: one token (decode), token counts and expert loads that are not
// multiples of the tile, skewed loads with experts of several tiles and
// empty ones, more experts than a warp has lanes (the scans' later groups),
// a hidden size no multiple of the down units' two rows or of a 16-byte
// load (37: the scalar path), and the real hidden size (the vector path).
func TestCUDAMoESchedules(t *testing.T) {
	ctx := cudatest.Context(t)
	for _, tc := range []moeStepCase{
		{"f32", moeShape{1, 8, 4, 37, 13, 0}}, {"bf16", moeShape{1, 32, 4, 64, 40, 0}},
		{"f32", moeShape{13, 5, 2, 48, 20, 0}}, {"bf16", moeShape{13, 5, 2, 48, 24, 60}},
		{"f32", moeShape{40, 3, 2, 64, 32, 90}}, {"bf16", moeShape{70, 40, 4, 64, 40, 90}},
		{"f32", moeShape{29, 70, 3, 37, 20, 0}}, {"bf16", moeShape{200, 8, 4, 2048, 64, 75}},
	} {
		m, err := newMoEStep(ctx, tc.shape, tc.dtype, 3)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.dtype, tc.shape, err)
		}
		var outputs [][]float32
		for _, schedule := range moeSchedules {
			if err := m.reset(); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := m.run(schedule); err != nil {
					t.Fatalf("%s %s %s: %v", tc.dtype, tc.shape, schedule, err)
				}
			}
			chk, err := m.check(schedule)
			if err != nil {
				t.Fatalf("%s %s %s: %v", tc.dtype, tc.shape, schedule, err)
			}
			if !(chk.MaxRelErr <= m.tolerance()) {
				t.Errorf("%s %s %s: max relative error %g at %d (got %g, want %g)", tc.dtype, tc.shape, schedule,
					chk.MaxRelErr, chk.Worst, chk.Got, chk.Want)
			}
			y, err := cuda.Download[float32](m.y, tc.shape.pairs()*tc.shape.Hidden)
			if err != nil {
				t.Fatal(err)
			}
			outputs = append(outputs, y)
			checkScheduleParams(t, m, schedule)
		}
		for i := 1; i < len(outputs); i++ {
			for j := range outputs[0] {
				if math.Float32bits(outputs[i][j]) != math.Float32bits(outputs[0][j]) {
					t.Errorf("%s %s: %s gives %g at %d, %s %g: the same units should give the same bits", tc.dtype, tc.shape,
						moeSchedules[i], outputs[i][j], j, moeSchedules[0], outputs[0][j])
					break
				}
			}
		}
		m.close()
	}
}

// checkScheduleParams checks a schedule's record parameters against the
// step: its launches, the work they cover, and occupancies that are
// percentages.
func checkScheduleParams(t *testing.T, m *moeStep, schedule string) {
	t.Helper()
	p, err := m.params(schedule)
	if err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, n := range m.counts {
		if n > 0 {
			active++
		}
	}
	wantLaunches := 2
	if schedule == schedulePerExpert {
		wantLaunches = 2 * active
	}
	if p["launches"] != wantLaunches || p["active_experts"] != active || p["tiles"] != m.tiles() {
		t.Errorf("%s %s: launches %v, active experts %v, tiles %v; want %d, %d, %d", m.shape, schedule, p["launches"],
			p["active_experts"], p["tiles"], wantLaunches, active, m.tiles())
	}
	if p["gate_up_units"] != m.tiles()*m.shape.Inter || p["down_units"] != m.tiles()*m.downChunks() {
		t.Errorf("%s %s: units %v and %v", m.shape, schedule, p["gate_up_units"], p["down_units"])
	}
	for _, kind := range []string{"gate_up", "down"} {
		occ, _ := p[kind+"_occupancy"].(float64)
		if occ <= 0 || occ > 100 || p[kind+"_blocks"].(int) < 1 || p[kind+"_warps"] != p[kind+"_blocks"].(int)*persistentWarps {
			t.Errorf("%s %s: %s occupancy %v%%, blocks %v, warps %v", m.shape, schedule, kind, p[kind+"_occupancy"],
				p[kind+"_blocks"], p[kind+"_warps"])
		}
	}
	if fill, _ := p["wave_fill"].(float64); fill <= 0 || fill > 100 {
		t.Errorf("%s %s: wave fill %v%%", m.shape, schedule, p["wave_fill"])
	}
}

// TestCUDAMoEScheduleSuite runs the suite through bench.Lookup on every
// CUDA device at a small shape and at LFM2-8B-A1B's layer with few tokens:
// every schedule must pass its check.
func TestCUDAMoEScheduleSuite(t *testing.T) {
	cudatest.Context(t) // skips without a GPU
	devs, _ := engine.Devices()
	s, err := bench.Lookup(moeScheduleSuite)
	if err != nil {
		t.Fatal(err)
	}
	opt := bench.Options{Warmup: 1, MinReps: 2, MaxReps: 3, MinTime: time.Millisecond}
	for _, info := range devs {
		if info.Kind != engine.CUDA {
			continue
		}
		dev, err := engine.Open(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := bench.Run(s, dev, []string{"moe:tokens=9,experts=6,topk=2,hidden=64,inter=40,skew=50", "moe:tokens=3,skew=90"}, opt)
		dev.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := bench.Failed(recs); err != nil {
			t.Error(err)
		}
		if len(recs) != 2*len(moeSchedules) || recs[0].Variant != schedulePerExpert || recs[1].Baseline != schedulePerExpert {
			t.Errorf("%s: %d records, first %q compared with %q", info.ID, len(recs), recs[0].Variant, recs[1].Baseline)
		}
		t.Logf("\n%s\n%s", bench.Table(recs), MoEScheduleStory(recs))
	}
}
