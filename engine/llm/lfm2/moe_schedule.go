package lfm2

// The MoE schedule experiment of notebook 06: the experts of one MoE layer
// step run by three schedules of the same units of work (step 08's: a token
// tile of an expert and one or two output rows), on a CUDA device:
//
//	per-expert  step 13: one launch per expert with tokens, its grid sized by its count (the baseline)
//	static      step 08: a persistent grid; warp g takes units g, g + warps, g + 2·warps, ...
//	queue       step 14: a persistent grid; each warp takes its next unit from an atomic counter
//
// The routing is drawn on the host, evenly or skewed (most tokens to a few
// experts, where the schedules differ), and grouped on the device by step
// 07 as the engine groups it. Each schedule's output is checked pair by
// pair against the CPU reference's SwiGLU experts (forward.go), each is
// timed between events, and each kernel's theoretical occupancy comes from
// the driver's occupancy query.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cuda"
)

// The schedules, the variants of the moe-schedule suite.
const (
	schedulePerExpert = "per-expert"
	scheduleStatic    = "static"
	scheduleQueue     = "queue"
)

// moeSchedules are the schedules in the order the suite runs them, the
// baseline first.
var moeSchedules = []string{schedulePerExpert, scheduleStatic, scheduleQueue}

// moeScheduleSuite is the suite's name, for bench.Lookup and lab bench.
const moeScheduleSuite = "moe-schedule"

// The suite's weights are bf16, as the engine runs the 8B model, with
// seeded random values; moeScheduleSeed also draws the routing.
const (
	moeScheduleDType = "bf16"
	moeScheduleSeed  = 1
)

// moeScheduleSizes are the suite's default sizes: the MoE layer of
// LFM2-8B-A1B (the fields not given come from its preset) for a decode-like
// batch (64 sequences, the most the engine runs the persistent kernel for)
// and a prefill-like one (1024 tokens), each with an even and a skewed load.
var moeScheduleSizes = []string{
	"moe:tokens=64,skew=0", "moe:tokens=64,skew=90", "moe:tokens=1024,skew=0", "moe:tokens=1024,skew=90",
}

func init() {
	bench.Register(bench.Suite{
		Name: moeScheduleSuite,
		Doc: "The experts of one MoE layer step (silu(x·w1)·(x·w3), then ·w2, for each token's top-k experts, bf16 weights, " +
			"CUDA-core FMAs) run by three schedules of the same units of work (step 08's: a token tile of an expert and one " +
			"or two output rows, one warp each): per-expert (baseline, step 13: one launch per expert with tokens, its grid " +
			"sized by its count), static (step 08: a persistent grid, warp g takes units g, g+warps, ...) and queue (step 14: " +
			"a persistent grid, warps take units from an atomic counter that the device resets). Sizes: " +
			"moe:tokens=T,experts=E,topk=K,hidden=H,inter=I,skew=S; fields not given are LFM2-8B-A1B's MoE layer; skew=S " +
			"sends S% of the tokens to the same K experts (0..K-1), the others choose K distinct experts uniformly. Timed: " +
			"the experts' kernels, from tokens already grouped by expert (step 07, once); the per-expert launches use counts " +
			"the host has, so the device-to-host wait they need in an engine is not counted. Checked pair by pair against " +
			"the CPU reference's experts. GB/s is effective weight bandwidth: the chosen experts' weights counted once per " +
			"step, per second (re-reads per token tile and activations are not counted), so % of peak is a share of the " +
			"DRAM peak, not measured DRAM traffic. Params record each kernel's registers, blocks per SM and theoretical " +
			"occupancy (% of the SM's maximum warps, from cuOccupancyMaxActiveBlocksPerMultiprocessor), the blocks, warps " +
			"and launches of the step, and wave_fill: the share of the warp slots the schedule holds that do work, if " +
			"every unit took the same time (a model, not a measurement). CUDA only.",
		Sizes: func(engine.Info) []string { return moeScheduleSizes },
		Cases: moeScheduleCases,
	})
}

// moeShape is one MoE layer step: Tokens tokens, each routed to TopK of
// Experts experts of width Inter over a hidden size of Hidden.
type moeShape struct {
	Tokens, Experts, TopK, Hidden, Inter int
	// Skew is the percentage of tokens that choose the same TopK experts,
	// 0 .. TopK-1 (the hot ones); the others choose TopK distinct experts
	// uniformly. 0 loads the experts evenly.
	Skew int
}

// moeShapePrefix starts every size of the suite.
const moeShapePrefix = "moe:"

// parseMoEShape reads a size such as "moe:tokens=64,skew=90"; the fields
// not given are LFM2-8B-A1B's MoE layer, with one token and no skew.
func parseMoEShape(spec string) (moeShape, error) {
	c, err := Preset("lfm2-8b-a1b")
	if err != nil {
		return moeShape{}, err
	}
	s := moeShape{Tokens: 1, Experts: c.Experts, TopK: c.ExpertsPerToken, Hidden: c.Hidden, Inter: c.MoEIntermediate}
	fields := map[string]*int{"tokens": &s.Tokens, "experts": &s.Experts, "topk": &s.TopK, "hidden": &s.Hidden,
		"inter": &s.Inter, "skew": &s.Skew}
	if err := bench.ParseFields(spec, moeShapePrefix, fields); err != nil {
		return moeShape{}, fmt.Errorf("lfm2: %s: %w", moeScheduleSuite, err)
	}
	return s, s.validate()
}

func (s moeShape) String() string {
	return fmt.Sprintf("%stokens=%d,experts=%d,topk=%d,hidden=%d,inter=%d,skew=%d", moeShapePrefix, s.Tokens, s.Experts,
		s.TopK, s.Hidden, s.Inter, s.Skew)
}

// pairs is the number of (token, expert) pairs.
func (s moeShape) pairs() int { return s.Tokens * s.TopK }

// memory is what a step of shape s holds with elements of es bytes. On the
// device: the inputs, both experts' weights and the SwiGLU outputs in elem;
// the grouped rows' tokens, the grouping, the outputs (f32) and the queue
// counters in 4-byte words (allocate). On the host, at the check's peak:
// the routes, counts, offsets and rows of the grouping, each pair's place
// in its expert's list; the inputs and one expert's weights read back as
// raw elements and as float32 (reference); and the reference, the outputs
// read back and reordered (check).
func (s moeShape) memory(es int) (host, device engine.Need) {
	t, e, h, im, p := float64(s.Tokens), float64(s.Experts), float64(s.Hidden), float64(s.Inter), float64(s.pairs())
	device = engine.Need{Bytes: engine.BytesOf(float64(es)*(t*h+3*e*im*h+p*im) + 4*(p+4*e+2+p*h+4)),
		Holds: "the inputs, the experts' weights, the SwiGLU outputs, the grouping and the experts' outputs"}
	host = engine.Need{Bytes: engine.BytesOf(4*p + 8*e + 4*(e+1) + 4*p + 8*p + float64(4+es)*(t*h+3*im*h) + 3*4*p*h),
		Holds: "the routing and grouping, the inputs and an expert's weights read back, the reference and the outputs read back"}
	return host, device
}

// moeMaxWeights bounds the experts' weights of a shape: 2⁴⁰ elements,
// far more than a GPU holds (the allocation then says how much is free).
const moeMaxWeights = 1 << 40

// validate rejects shapes the kernels cannot run, naming every problem.
func (s moeShape) validate() error {
	var bad []string
	for _, f := range []struct {
		name string
		v    int
	}{{"tokens", s.Tokens}, {"experts", s.Experts}, {"hidden", s.Hidden}, {"inter", s.Inter}} {
		if f.v < 1 {
			bad = append(bad, fmt.Sprintf("%s %d (want at least 1)", f.name, f.v))
		}
	}
	if s.TopK < 1 || s.TopK > s.Experts {
		bad = append(bad, fmt.Sprintf("topk %d (want 1 to experts, %d)", s.TopK, s.Experts))
	}
	if s.Skew < 0 || s.Skew > 100 {
		bad = append(bad, fmt.Sprintf("skew %d (want a percentage, 0 to 100)", s.Skew))
	}
	if len(bad) == 0 {
		// The kernels number units and grouped rows with 32-bit ints (at
		// most one partial tile per expert); products in float64, which
		// cannot overflow.
		tiles := float64(s.Tokens)*float64(s.TopK)/moeTile + float64(s.Experts)
		if units := tiles * float64(max(s.Inter, (s.Hidden+1)/2)); units > math.MaxInt32 {
			bad = append(bad, fmt.Sprintf("up to %.3g units of work (want at most %d: fewer tokens or narrower experts)", units, math.MaxInt32))
		}
		if w := 3 * float64(s.Experts) * float64(s.Inter) * float64(s.Hidden); w > moeMaxWeights {
			bad = append(bad, fmt.Sprintf("%.3g expert weights (want at most %.3g)", w, float64(moeMaxWeights)))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("lfm2: %s size %s: %s", moeScheduleSuite, s, strings.Join(bad, ", "))
	}
	return nil
}

// route draws each token's TopK experts with seed: Skew% of the tokens
// take experts 0 .. TopK-1, the others TopK distinct experts uniformly. It
// returns [Tokens·TopK] expert ids, token by token, as the router writes
// them.
func (s moeShape) route(seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 0x6d6f65))
	ids := make([]int32, s.Experts)
	out := make([]int32, 0, s.pairs())
	for range s.Tokens {
		for e := range ids {
			ids[e] = int32(e)
		}
		if rng.IntN(100) >= s.Skew {
			for k := range s.TopK { // a partial Fisher–Yates shuffle
				j := k + rng.IntN(s.Experts-k)
				ids[k], ids[j] = ids[j], ids[k]
			}
		}
		out = append(out, ids[:s.TopK]...)
	}
	return out
}

// moeLaunch is one kernel launch of a schedule: units of work (one warp
// each, at a time) over blocks of persistentThreads, of the gate-up or the
// down product (kind "gate_up" or "down", as the records name them).
type moeLaunch struct {
	kind          string
	f             *cuda.Function
	blocks, units int
	args          []any
}

// moeStep is one MoE layer step on a CUDA device, ready to run by any
// schedule: the inputs, the weights, the tokens grouped by expert, and the
// outputs, all of them in step 08's layout.
type moeStep struct {
	shape moeShape
	o     CUDAOptions
	ctx   *cuda.Context
	k     *kernelSet // step 00's fill, step 07's grouping and step 08's static schedule
	// Steps 13 and 14 (one module: 14 includes 13).
	gateUpExpert, downExpert, gateUpQueue, downQueue *cuda.Function
	queueGateUpBlocks, queueDownBlocks               int // persistent grids, as step 08's
	timer                                            *cuda.Timer
	bufs                                             []*cuda.Buffer
	x                                                *cuda.Buffer // elem [T, H]
	w13, w2                                          *cuda.Buffer // elem [E, 2·IM, H], [E, H, IM]
	perm, meta                                       *cuda.Buffer // step 07's: each grouped row's token; counts | offsets | cursors | tile offsets
	act                                              *cuda.Buffer // elem [pairs, IM], grouped rows
	y                                                *cuda.Buffer // f32 [pairs, H], grouped rows
	queue                                            *cuda.Buffer // int32 [4]: step 14's counters
	routes                                           []int32      // each pair's expert, token by token
	counts                                           []int        // each expert's pairs
	offsets                                          []int32      // each expert's first grouped row, and the total
	slotRows                                         []int32      // each pair's grouped row
	want                                             []float32    // each pair's expert output [pairs, H], computed on the first check
}

// The inputs and weights are drawn on the device by step 00's
// fill_normal_elem, as tensors number 1 to 3 of the seed: x ~ N(0, 1), and
// weights of standard deviation 1/√fan-in, so that every output is of
// order 1 and a wrong one stands out against the tolerance.
const (
	moeTensorX = iota + 1
	moeTensorW13
	moeTensorW2
)

// newMoEStep compiles the kernels for shape s in dtype ("f32" or "bf16")
// on ctx, allocates and fills the step's buffers, routes the tokens with
// seed and groups them by expert. The caller closes it.
func newMoEStep(ctx *cuda.Context, s moeShape, dtype string, seed uint64) (*moeStep, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	o, err := CUDAOptions{DType: dtype}.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := Preset("lfm2-8b-a1b") // for the -D options of the other kernel files
	if err != nil {
		return nil, err
	}
	c.Hidden, c.Experts, c.ExpertsPerToken, c.MoEIntermediate = s.Hidden, s.Experts, s.TopK, s.Inter
	k, err := compileKernels(ctx, c, o)
	if err != nil {
		return nil, err
	}
	m := &moeStep{shape: s, o: o, ctx: ctx, k: k}
	if err := m.compileSchedules(); err != nil {
		return nil, err
	}
	if m.timer, err = ctx.NewTimer(nil); err != nil {
		return nil, fmt.Errorf("lfm2: %s: %w", moeScheduleSuite, err)
	}
	if err := m.allocate(); err != nil {
		m.close()
		return nil, err
	}
	if err := m.fill(seed); err != nil {
		m.close()
		return nil, err
	}
	if err := m.group(seed); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// compileSchedules compiles steps 13 and 14 (one module: 14 includes 13,
// which includes 08 for the units) with the defines step 08 is compiled with.
func (m *moeStep) compileSchedules() error {
	mod, err := compileFile(m.ctx, "14_moe_queue", elemOptions(m.o.DType))
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		dst  **cuda.Function
	}{{"moe_gate_up_expert", &m.gateUpExpert}, {"moe_down_expert", &m.downExpert},
		{"moe_gate_up_queue", &m.gateUpQueue}, {"moe_down_queue", &m.downQueue}} {
		if *f.dst, err = mod.Function(f.name); err != nil {
			return fmt.Errorf("lfm2: %w", err)
		}
	}
	if m.queueGateUpBlocks, err = persistentGrid(m.gateUpQueue, m.k.sms); err != nil {
		return err
	}
	m.queueDownBlocks, err = persistentGrid(m.downQueue, m.k.sms)
	return err
}

// alloc allocates n values of size bytes (at least one) and keeps the
// buffer for close.
func (m *moeStep) alloc(what string, n, size int) (*cuda.Buffer, error) {
	b, err := m.ctx.Alloc(max(n, 1) * size)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %s %s: %w", moeScheduleSuite, what, err)
	}
	m.bufs = append(m.bufs, b)
	return b, nil
}

// allocate makes every buffer of the step.
func (m *moeStep) allocate() error {
	s, es := m.shape, m.o.elemSize()
	p := s.pairs()
	for _, b := range []struct {
		dst     **cuda.Buffer
		what    string
		n, size int
	}{
		{&m.x, "inputs", s.Tokens * s.Hidden, es}, {&m.w13, "experts' w1|w3", s.Experts * 2 * s.Inter * s.Hidden, es},
		{&m.w2, "experts' w2", s.Experts * s.Hidden * s.Inter, es}, {&m.perm, "grouped rows' tokens", p, 4},
		{&m.meta, "grouping", 4*s.Experts + 2, 4}, {&m.act, "SwiGLU outputs", p * s.Inter, es},
		{&m.y, "experts' outputs", p * s.Hidden, 4}, {&m.queue, "queue counters", 4, 4},
	} {
		var err error
		if *b.dst, err = m.alloc(b.what, b.n, b.size); err != nil {
			return err
		}
	}
	// Zeroed once here; step 14 resets its counters on the device after
	// every launch.
	if err := m.queue.Memset(0, nil); err != nil {
		return fmt.Errorf("lfm2: %s queue counters: %w", moeScheduleSuite, err)
	}
	return nil
}

// fill draws the inputs and weights on the device.
func (m *moeStep) fill(seed uint64) error {
	s := m.shape
	for _, t := range []struct {
		b      *cuda.Buffer
		tensor uint64
		n      int
		std    float64
	}{
		{m.x, moeTensorX, s.Tokens * s.Hidden, 1},
		{m.w13, moeTensorW13, s.Experts * 2 * s.Inter * s.Hidden, 1 / math.Sqrt(float64(s.Hidden))},
		{m.w2, moeTensorW2, s.Experts * s.Hidden * s.Inter, 1 / math.Sqrt(float64(s.Inter))},
	} {
		if err := m.k.fillElem.Launch(gridStride(int64(t.n)), seed, t.tensor, t.n, float32(0), float32(t.std), t.b); err != nil {
			return fmt.Errorf("lfm2: %s: random tensor %d: %w", moeScheduleSuite, t.tensor, err)
		}
	}
	return nil
}

// group routes the tokens on the host, then groups the pairs by expert on
// the device with step 07's scan and scatter, as the engine does after its
// router, and keeps the offsets and each pair's row on the host.
func (m *moeStep) group(seed uint64) error {
	s := m.shape
	fail := func(err error) error {
		return fmt.Errorf("lfm2: %s: group the tokens by expert: %w", moeScheduleSuite, err)
	}
	m.routes = s.route(seed)
	m.counts = make([]int, s.Experts)
	for _, e := range m.routes {
		m.counts[e]++
	}
	meta := make([]int32, 4*s.Experts+2) // counts | offsets | cursors | tile offsets, as the router leaves them
	for e, n := range m.counts {
		meta[e] = int32(n)
	}
	if err := cuda.CopyHtoD(m.meta, meta); err != nil {
		return fail(err)
	}
	routes, err := cuda.Upload(m.ctx, m.routes)
	if err != nil {
		return fail(err)
	}
	defer routes.Free()
	slotRow, err := m.alloc("pairs' rows", s.pairs(), 4)
	if err != nil {
		return err
	}
	load, err := m.alloc("expert load", s.Experts, 4)
	if err != nil {
		return err
	}
	if err := load.Memset(0, nil); err != nil {
		return fail(err)
	}
	warps := func(grid int) cuda.LaunchConfig { // blocks of one warp
		return cuda.LaunchConfig{Grid: cuda.Dim3{X: grid}, Block: cuda.Dim3{X: 32}}
	}
	if err := m.k.moeOffsets.Launch(warps(1), s.Experts, moeTile, m.meta, load); err != nil {
		return fail(err)
	}
	// No gather: the units read each token's row through perm, so the
	// grouped copy (the last argument) is never written.
	if err := m.k.moeScatter.Launch(warps(s.pairs()), m.x, s.Hidden, s.TopK, routes, m.meta, s.Experts, m.perm, slotRow, 0,
		cuda.DevicePtr(0)); err != nil {
		return fail(err)
	}
	m.offsets = make([]int32, s.Experts+1)
	if err := cuda.CopyDtoHAt(m.offsets, m.meta, 4*s.Experts); err != nil {
		return fail(err)
	}
	if m.slotRows, err = cuda.Download[int32](slotRow, s.pairs()); err != nil {
		return fail(err)
	}
	if int(m.offsets[s.Experts]) != s.pairs() {
		return fail(fmt.Errorf("the scan counted %d pairs, want %d", m.offsets[s.Experts], s.pairs()))
	}
	return nil
}

// tiles is the number of token tiles of the step: each expert's rows in
// tiles of moeTile, as step 07's tile offsets count them.
func (m *moeStep) tiles() int {
	n := 0
	for _, c := range m.counts {
		n += (c + moeTile - 1) / moeTile
	}
	return n
}

// downChunks is the down units of one tile: DOWN_ROWS output rows each.
func (m *moeStep) downChunks() int { return (m.shape.Hidden + moeDownRows - 1) / moeDownRows }

// moeDownRows is the w2 rows of a down unit (DOWN_ROWS in 08_moe_persistent.cu).
const moeDownRows = 2

// persistentWarps is the warps of a block of steps 08, 13 and 14 (WARPS).
const persistentWarps = persistentThreads / 32

// launches is the step's kernel launches under schedule, in order.
func (m *moeStep) launches(schedule string) ([]moeLaunch, error) {
	s := m.shape
	h, im, e := s.Hidden, s.Inter, s.Experts
	gateUpUnits, downUnits := m.tiles()*im, m.tiles()*m.downChunks()
	switch schedule {
	case schedulePerExpert:
		var out []moeLaunch
		es := int64(m.o.elemSize())
		for ex, n := range m.counts {
			if n == 0 {
				continue
			}
			w13, err := devicePtr(fmt.Sprintf("expert %d's w1|w3", ex), m.w13, int64(ex*2*im*h), int64(2*im*h), es)
			if err != nil {
				return nil, fmt.Errorf("lfm2: %w", err)
			}
			w2, err := devicePtr(fmt.Sprintf("expert %d's w2", ex), m.w2, int64(ex*h*im), int64(h*im), es)
			if err != nil {
				return nil, fmt.Errorf("lfm2: %w", err)
			}
			tiles, row0 := (n+moeTile-1)/moeTile, int(m.offsets[ex])
			gu, dn := tiles*im, tiles*m.downChunks()
			out = append(out,
				moeLaunch{"gate_up", m.gateUpExpert, moeCeilDiv(gu, persistentWarps), gu, []any{m.x, h, im, w13, m.perm, row0, n, m.act}},
				moeLaunch{"down", m.downExpert, moeCeilDiv(dn, persistentWarps), dn, []any{m.act, h, im, w2, row0, n, m.y}})
		}
		return out, nil
	case scheduleStatic: // as lane.moe's persistent path (cuda_forward.go)
		return []moeLaunch{
			{"gate_up", m.k.moeGateUp, m.k.gateUpBlocks, gateUpUnits, []any{m.x, h, im, m.w13, m.perm, m.meta, e, m.act}},
			{"down", m.k.moeDown, m.k.downBlocks, downUnits, []any{m.act, h, im, m.w2, m.meta, e, m.y}},
		}, nil
	case scheduleQueue:
		return []moeLaunch{
			{"gate_up", m.gateUpQueue, m.queueGateUpBlocks, gateUpUnits, []any{m.x, h, im, m.w13, m.perm, m.meta, e, m.act, m.queue}},
			{"down", m.downQueue, m.queueDownBlocks, downUnits, []any{m.act, h, im, m.w2, m.meta, e, m.y, m.queue}},
		}, nil
	}
	return nil, fmt.Errorf("lfm2: MoE schedule %q, want one of %s", schedule, strings.Join(moeSchedules, ", "))
}

// moeCeilDiv is ⌈a/b⌉ for a ≥ 0, b > 0.
func moeCeilDiv(a, b int) int { return (a + b - 1) / b }

// run times the step's launches under schedule on the default stream.
func (m *moeStep) run(schedule string) (time.Duration, error) {
	ls, err := m.launches(schedule)
	if err != nil {
		return 0, err
	}
	d, err := m.timer.Time(func() error {
		for _, l := range ls {
			cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.blocks}, Block: cuda.Dim3{X: persistentThreads}}
			if err := l.f.Launch(cfg, l.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("lfm2: %s %s: %w", moeScheduleSuite, schedule, err)
	}
	return d, nil
}

// reset fills the SwiGLU and expert outputs with NaN (all bits set, in both
// element types), so that a row no unit wrote fails the check.
func (m *moeStep) reset() error {
	for _, b := range []*cuda.Buffer{m.act, m.y} {
		if err := b.Memset(0xff, nil); err != nil {
			return fmt.Errorf("lfm2: %s: %w", moeScheduleSuite, err)
		}
	}
	return nil
}

// check compares the experts' outputs with the CPU reference pair by pair.
// After the queue schedule it also requires its counters to be back at
// zero: the device resets them, never the host.
func (m *moeStep) check(schedule string) (bench.Checked, error) {
	want, err := m.reference()
	if err != nil {
		return bench.Checked{}, err
	}
	h := m.shape.Hidden
	y, err := cuda.Download[float32](m.y, m.shape.pairs()*h)
	if err != nil {
		return bench.Checked{}, fmt.Errorf("lfm2: %s: read the experts' outputs: %w", moeScheduleSuite, err)
	}
	got := make([]float32, len(y))
	for p, row := range m.slotRows {
		copy(got[p*h:(p+1)*h], y[int(row)*h:])
	}
	if schedule == scheduleQueue {
		q, err := cuda.Download[int32](m.queue, 4)
		if err != nil {
			return bench.Checked{}, fmt.Errorf("lfm2: %s: read the queue counters: %w", moeScheduleSuite, err)
		}
		if slices.ContainsFunc(q, func(v int32) bool { return v != 0 }) {
			return bench.Checked{}, fmt.Errorf("lfm2: %s: the queue counters are %v after the runs, want zeros: the last warp out did not reset them", moeScheduleSuite, q)
		}
	}
	return bench.Compare(got, want), nil
}

// tolerance is the largest relative error check accepts: fp32 sums in
// another order, or in bf16 the SwiGLU outputs rounded to bf16 between the
// two products (as TestCUDAMoE allows).
func (m *moeStep) tolerance() float64 {
	if m.o.DType == "bf16" {
		return 1e-2
	}
	return 1e-4
}

// reference is each pair's expert output, [pairs, H] in pair order: the
// CPU reference's SwiGLU experts (forward.go) on the inputs and weights the
// GPU holds, each expert applied to all its tokens at once.
func (m *moeStep) reference() ([]float32, error) {
	if m.want != nil {
		return m.want, nil
	}
	s := m.shape
	h, im := s.Hidden, s.Inter
	x, err := m.readElem(m.x, 0, s.Tokens*h)
	if err != nil {
		return nil, err
	}
	pairsOf := make([][]int, s.Experts)
	for p, e := range m.routes {
		pairsOf[e] = append(pairsOf[e], p)
	}
	want := make([]float32, s.pairs()*h)
	for e, pairs := range pairsOf {
		if len(pairs) == 0 {
			continue
		}
		w13, err := m.readElem(m.w13, e*2*im*h, 2*im*h)
		if err != nil {
			return nil, err
		}
		w2, err := m.readElem(m.w2, e*h*im, h*im)
		if err != nil {
			return nil, err
		}
		expert := SwiGLU{W1: w13[:im*h], W3: w13[im*h:], W2: w2, Inter: im}
		rows := make([][]float32, len(pairs))
		for i, p := range pairs {
			t := p / s.TopK
			rows[i] = x[t*h : (t+1)*h]
		}
		for i, out := range expert.apply(rows, h) {
			copy(want[pairs[i]*h:], out)
		}
	}
	m.want = want
	return want, nil
}

// readElem reads n values of an elem buffer from element off as float32,
// through the checkpoint's conversions (Tensor.Float32).
func (m *moeStep) readElem(b *cuda.Buffer, off, n int) ([]float32, error) {
	es, dtype := m.o.elemSize(), "F32"
	if m.o.DType == "bf16" {
		dtype = "BF16"
	}
	raw := make([]byte, n*es)
	if err := cuda.CopyDtoHAt(raw, b, off*es); err != nil {
		return nil, fmt.Errorf("lfm2: %s: read %d values at element %d: %w", moeScheduleSuite, n, off, err)
	}
	return (&Tensor{DType: dtype, Shape: []int{n}, data: raw}).Float32(), nil
}

// kernelOccupancy is what the driver says of a kernel launched in blocks
// of persistentThreads: its registers per thread, the blocks that fit on an
// SM, and the theoretical occupancy, those blocks' warps as a percentage
// of the most warps an SM holds.
type kernelOccupancy struct {
	Regs, BlocksPerSM int
	Pct               float64
}

// occupancyOf queries f's occupancy on the step's device.
func (m *moeStep) occupancyOf(f *cuda.Function) (kernelOccupancy, error) {
	regs, err := f.Attribute(cuda.FuncNumRegs)
	if err != nil {
		return kernelOccupancy{}, fmt.Errorf("lfm2: %w", err)
	}
	blocks, err := f.MaxActiveBlocksPerSM(persistentThreads, 0)
	if err != nil {
		return kernelOccupancy{}, fmt.Errorf("lfm2: %w", err)
	}
	props := m.ctx.Properties()
	if props.MaxThreadsPerSM <= 0 {
		return kernelOccupancy{}, fmt.Errorf("lfm2: %s reports %d threads per SM: no occupancy", m.ctx.ID(), props.MaxThreadsPerSM)
	}
	return kernelOccupancy{Regs: regs, BlocksPerSM: blocks, Pct: 100 * float64(blocks*persistentThreads) / float64(props.MaxThreadsPerSM)}, nil
}

// waveSlots is one launch for waveFill: its units (one warp each, at a
// time) and the warps that fit on the GPU at once.
type waveSlots struct{ units, resident int }

// waveFill models how full a schedule keeps the GPU: if every unit took
// the same time, a launch of u units with r resident warps runs ⌈u/r⌉
// rounds and holds r warp slots in each, and launches on one stream run one
// after the other. It returns the units over the slots held, in percent
// (100 when there is no work).
func waveFill(ls []waveSlots) float64 {
	units, slots := 0, 0
	for _, l := range ls {
		units += l.units
		slots += moeCeilDiv(l.units, l.resident) * l.resident
	}
	if slots == 0 {
		return 100
	}
	return 100 * float64(units) / float64(slots)
}

// params describes the step under schedule for its bench record: the shape
// and the load, each kernel's occupancy, and the blocks, warps and launches.
func (m *moeStep) params(schedule string) (bench.Params, error) {
	s := m.shape
	ls, err := m.launches(schedule)
	if err != nil {
		return nil, err
	}
	active, busiest := 0, 0
	for _, n := range m.counts {
		if n > 0 {
			active++
		}
		busiest = max(busiest, n)
	}
	p := bench.Params{"tokens": s.Tokens, "experts": s.Experts, "topk": s.TopK, "hidden": s.Hidden, "inter": s.Inter,
		"skew": s.Skew, "dtype": m.o.DType, "precision": "fp32", "pairs": s.pairs(), "tiles": m.tiles(),
		"active_experts": active, "busiest_expert_tokens": busiest, "weight_bytes": m.weightBytes(), "launches": len(ls)}
	var slots []waveSlots
	type totals struct{ blocks, units int }
	sums := map[string]*totals{}
	for _, l := range ls {
		t := sums[l.kind]
		if t == nil { // the first launch of its kind: every other one runs the same kernel
			o, err := m.occupancyOf(l.f)
			if err != nil {
				return nil, err
			}
			t = &totals{}
			sums[l.kind] = t
			p[l.kind+"_kernel"], p[l.kind+"_regs"], p[l.kind+"_blocks_per_sm"], p[l.kind+"_occupancy"] = l.f.Name(), o.Regs, o.BlocksPerSM, o.Pct
		}
		t.blocks += l.blocks
		t.units += l.units
		resident := m.k.sms * p[l.kind+"_blocks_per_sm"].(int) * persistentWarps
		slots = append(slots, waveSlots{l.units, max(1, resident)})
	}
	for kind, t := range sums {
		p[kind+"_blocks"], p[kind+"_warps"], p[kind+"_units"] = t.blocks, t.blocks*persistentWarps, t.units
	}
	p["wave_fill"] = waveFill(slots)
	return p, nil
}

// weightBytes is the chosen experts' weights, each counted once: the bytes
// behind the suite's effective weight bandwidth.
func (m *moeStep) weightBytes() int {
	s, n := m.shape, 0
	for _, c := range m.counts {
		if c > 0 {
			n += 3 * s.Inter * s.Hidden * m.o.elemSize()
		}
	}
	return n
}

// flops is the step's multiply-adds, two FLOPs each: three products of
// Inter·Hidden per pair.
func (m *moeStep) flops() float64 {
	s := m.shape
	return 2 * 3 * float64(s.pairs()) * float64(s.Hidden) * float64(s.Inter)
}

// close frees the step's buffers and timer.
func (m *moeStep) close() {
	for _, b := range m.bufs {
		b.Free()
	}
	m.bufs = nil
	if m.timer != nil {
		m.timer.Destroy()
		m.timer = nil
	}
}

// moeScheduleCases is the suite's cases for one size on a CUDA device: the
// three schedules of one step, sharing its buffers and its reference.
func moeScheduleCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	if dev.Kind != engine.CUDA || dev.CUDA == nil {
		return nil, nil, fmt.Errorf("lfm2: %s needs a CUDA device (its kernels are CUDA C++ run through the driver); %s is a %s device",
			moeScheduleSuite, dev.ID, dev.Kind)
	}
	shape, err := parseMoEShape(size)
	if err != nil {
		return nil, nil, err
	}
	host, device := shape.memory(CUDAOptions{DType: moeScheduleDType}.elemSize())
	if err := dev.CheckRun(moeScheduleSuite+" "+size, host, device); err != nil {
		return nil, nil, err
	}
	m, err := newMoEStep(dev.CUDA, shape, moeScheduleDType, moeScheduleSeed)
	if err != nil {
		return nil, nil, err
	}
	var cases []bench.Case
	for _, schedule := range moeSchedules {
		p, err := m.params(schedule)
		if err != nil {
			m.close()
			return nil, nil, err
		}
		cases = append(cases, bench.Case{
			Variant: schedule, Params: p, Baseline: schedule == schedulePerExpert,
			Flops: m.flops(), Bytes: float64(m.weightBytes()),
			Reset: m.reset,
			Run:   func() (time.Duration, error) { return m.run(schedule) },
			Check: func() (bench.Checked, error) { return m.check(schedule) },
			Tol:   m.tolerance(),
		})
	}
	return cases, m.close, nil
}
