package gemm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// The OpenCL ladder follows Cedric Nugteren's "Tutorial: OpenCL SGEMM tuning
// for Kepler": steps 1 to 4 are his kernels 1 to 4, step 5 his kernel 6 (2D
// register blocking) with the transposed A tile of his kernel 5 and the
// float4 loads of his kernel 7, step 6 his kernel 9 (prefetching), all
// adapted to row-major
// C = A·B and to any M, N, K: partial tiles are zero-filled by bounds-checked
// loads and stores are guarded, so no padded copies are made. Each step is
// the file kernels/opencl/gemm/<name>.cl; its header comment explains the
// idea, the traffic it saves and what it costs. Every kernel is called gemm
// and takes (int M, int N, int K, A, B, C).
//
// There is no clBLAS here: the baseline is step 01_naive, and the notebook
// compares the OpenCL steps with cuBLAS from the CUDA run separately.
//
// Tile parameters are -D defines. Each step lists configurations, the
// preferred first (chosen for NVIDIA H100/H200: 32-wide warps, at most 1024
// work-items and 48 KiB of __local memory per group); a device that cannot
// run one (too few work-items per group for the kernel, too little __local
// memory) gets the next. The kernels are built without -cl-fast-relaxed-math:
// it implies -cl-finite-math-only, under which a NaN in A need not reach C.

// OpenCLConfig is one set of tile parameters of an OpenCL step and the
// launch geometry they imply.
type OpenCLConfig struct {
	Step    string         // e.g. "05_2d_register_blocking"
	Defines map[string]int // the -D defines, e.g. {"TS": 32, "WPT": 8}
	// Local is the work-group size and Tile the C elements one work-group
	// computes, both as {along N, along M}: NDRange dimension 0 walks the
	// columns of C, dimension 1 its rows.
	Local, Tile [2]int
	LocalBytes  int // __local memory the kernel declares per work-group
	// Source, if set, is compiled instead of the step's file: an exercise's
	// own kernel, with the step's launch geometry.
	Source string

	// shared is the block of C whose work-items share their loads of A
	// and B: Tile for the tiled steps, 1×1 for the naive one.
	shared [2]int
}

// Options returns the build options: the defines in name order, e.g.
// "-DTS=32 -DWPT=8".
func (c OpenCLConfig) Options() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(c.Defines)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "-D%s=%d", name, c.Defines[name])
	}
	return b.String()
}

// WorkItems is the number of work-items per work-group.
func (c OpenCLConfig) WorkItems() int { return c.Local[0] * c.Local[1] }

// Global returns the NDRange for shape s: whole work-groups covering C.
func (c OpenCLConfig) Global(s Shape) [2]int {
	return [2]int{clCeilDiv(s.N, c.Tile[0]) * c.Local[0], clCeilDiv(s.M, c.Tile[1]) * c.Local[1]}
}

// Traffic is the global-memory traffic of the configuration for shape s,
// ignoring caches: a work-group reads the whole K extent of its rows of A
// and columns of B, so A is read once per column of tiles and B once per
// row of tiles, and C is written once:
// 4·(M·K·⌈N/TileN⌉ + K·N·⌈M/TileM⌉ + M·N) bytes. The naive step is the case
// of 1×1 tiles: 4·(2·M·N·K + M·N).
func (c OpenCLConfig) Traffic(s Shape) float64 {
	return clTiledTraffic(s, c.shared[1], c.shared[0])
}

func clTiledTraffic(s Shape, tm, tn int) float64 {
	m, n, k := float64(s.M), float64(s.N), float64(s.K)
	return 4 * (m*k*float64(clCeilDiv(s.N, tn)) + k*n*float64(clCeilDiv(s.M, tm)) + m*n)
}

func clCeilDiv(a, b int) int { return (a + b - 1) / b }

// fits reports why the device cannot run c, judging by the device's limits
// alone (the built kernel may allow fewer work-items).
func (c OpenCLConfig) fits(dev opencl.DeviceInfo) error {
	if n := c.WorkItems(); n > dev.MaxWorkGroupSize {
		return fmt.Errorf("%s: %d work-items per group, device allows %d", c.Options(), n, dev.MaxWorkGroupSize)
	}
	for i, l := range c.Local {
		if i < len(dev.MaxWorkItemSizes) && l > dev.MaxWorkItemSizes[i] {
			return fmt.Errorf("%s: %d work-items along dimension %d, device allows %d", c.Options(), l, i, dev.MaxWorkItemSizes[i])
		}
	}
	if uint64(c.LocalBytes) > dev.LocalMemBytes {
		return fmt.Errorf("%s: %d bytes of __local memory, device has %d", c.Options(), c.LocalBytes, dev.LocalMemBytes)
	}
	return nil
}

// clStep is one step of the ladder: its variant and how its defines shape
// the launch.
type clStep struct {
	name, doc string
	defaults  map[string]int   // the kernel file's own defaults
	fallbacks []map[string]int // tried in order after defaults
	naive     bool             // work-items share no loads
	derive    func(d map[string]int) (local, tile [2]int, localBytes int, err error)
}

// Steps 05 and 06 share their tile parameters: 06 only adds prefetching.
var (
	clBlockedDefaults  = map[string]int{"TSM": 128, "TSN": 128, "TSK": 16, "WPTM": 8, "WPTN": 8, "PADA": 4}
	clBlockedFallbacks = []map[string]int{
		{"TSM": 64, "TSN": 64, "TSK": 16, "WPTM": 8, "WPTN": 8, "PADA": 4},
		{"TSM": 32, "TSN": 32, "TSK": 8, "WPTM": 4, "WPTN": 4, "PADA": 4},
		{"TSM": 16, "TSN": 16, "TSK": 4, "WPTM": 4, "WPTN": 4, "PADA": 4},
	}
)

var clSteps = []clStep{
	{
		name:      "01_naive",
		doc:       "one work-item per element of C, A and B read from global memory (the OpenCL baseline)",
		defaults:  map[string]int{"WG": 16},
		fallbacks: []map[string]int{{"WG": 8}, {"WG": 4}, {"WG": 1}},
		naive:     true,
		derive: func(d map[string]int) ([2]int, [2]int, int, error) {
			wg := d["WG"]
			if wg < 1 {
				return [2]int{}, [2]int{}, 0, fmt.Errorf("WG=%d must be positive", wg)
			}
			return [2]int{wg, wg}, [2]int{wg, wg}, 0, nil
		},
	},
	{
		name:      "02_local_tiling",
		doc:       "TS×TS tiles of A and B in __local memory: TS× less global traffic",
		defaults:  map[string]int{"TS": 32},
		fallbacks: []map[string]int{{"TS": 16}, {"TS": 8}, {"TS": 4}},
		derive: func(d map[string]int) ([2]int, [2]int, int, error) {
			ts := d["TS"]
			if ts < 1 {
				return [2]int{}, [2]int{}, 0, fmt.Errorf("TS=%d must be positive", ts)
			}
			return [2]int{ts, ts}, [2]int{ts, ts}, 2 * 4 * ts * ts, nil
		},
	},
	{
		name:      "03_more_work_per_thread",
		doc:       "WPT elements of a column of C per work-item: one __local B load feeds WPT FMAs",
		defaults:  map[string]int{"TS": 32, "WPT": 8},
		fallbacks: []map[string]int{{"TS": 16, "WPT": 4}, {"TS": 8, "WPT": 4}, {"TS": 4, "WPT": 4}},
		derive: func(d map[string]int) ([2]int, [2]int, int, error) {
			ts, wpt := d["TS"], d["WPT"]
			if ts < 1 || wpt < 1 || ts%wpt != 0 {
				return [2]int{}, [2]int{}, 0, fmt.Errorf("TS=%d must be a positive multiple of WPT=%d", ts, wpt)
			}
			return [2]int{ts, ts / wpt}, [2]int{ts, ts}, 2 * 4 * ts * ts, nil
		},
	},
	{
		name:      "04_wider_types",
		doc:       "float4 global loads and stores, WIDTH elements of a row of C per work-item",
		defaults:  map[string]int{"TS": 32, "WIDTH": 4},
		fallbacks: []map[string]int{{"TS": 16, "WIDTH": 4}, {"TS": 8, "WIDTH": 4}, {"TS": 4, "WIDTH": 4}},
		derive: func(d map[string]int) ([2]int, [2]int, int, error) {
			ts, w := d["TS"], d["WIDTH"]
			if w != 2 && w != 4 && w != 8 && w != 16 {
				return [2]int{}, [2]int{}, 0, fmt.Errorf("WIDTH=%d must be 2, 4, 8 or 16", w)
			}
			if ts < 1 || ts%w != 0 {
				return [2]int{}, [2]int{}, 0, fmt.Errorf("TS=%d must be a positive multiple of WIDTH=%d", ts, w)
			}
			return [2]int{ts / w, ts}, [2]int{ts, ts}, 4*ts*(ts+1) + 4*ts*ts, nil
		},
	},
	{
		name:      "05_2d_register_blocking",
		doc:       "TSM×TSN tiles, a WPTM×WPTN block of C in registers per work-item, float4 __local loads",
		defaults:  clBlockedDefaults,
		fallbacks: clBlockedFallbacks,
		derive:    func(d map[string]int) ([2]int, [2]int, int, error) { return clDeriveBlocked(d, 1) },
	},
	{
		name:      "06_prefetching",
		doc:       "double-buffered __local slices: slice t+1 loads while slice t computes, one barrier per slice",
		defaults:  clBlockedDefaults,
		fallbacks: clBlockedFallbacks,
		derive:    func(d map[string]int) ([2]int, [2]int, int, error) { return clDeriveBlocked(d, 2) },
	},
}

// clDeriveBlocked checks the constraints of steps 5 and 6 (see their #error
// lines) and returns their geometry; buffers is the copies of each slice.
func clDeriveBlocked(d map[string]int, buffers int) (local, tile [2]int, localBytes int, err error) {
	tsm, tsn, tsk, wptm, wptn, pad := d["TSM"], d["TSN"], d["TSK"], d["WPTM"], d["WPTN"], d["PADA"]
	switch {
	case tsm < 1 || tsn < 1 || tsk < 1 || wptm < 1 || wptn < 1 || pad < 0:
		err = fmt.Errorf("TSM, TSN, TSK, WPTM, WPTN must be positive and PADA not negative")
	case tsm%wptm != 0 || tsn%wptn != 0:
		err = fmt.Errorf("TSM=%d and TSN=%d must be multiples of WPTM=%d and WPTN=%d", tsm, tsn, wptm, wptn)
	case wptm%4 != 0 || wptn%4 != 0 || tsk%4 != 0 || pad%4 != 0:
		err = fmt.Errorf("WPTM=%d, WPTN=%d, TSK=%d and PADA=%d must be multiples of 4", wptm, wptn, tsk, pad)
	default:
		threads := (tsm / wptm) * (tsn / wptn)
		if (tsm*tsk/4)%threads != 0 || (tsk*tsn/4)%threads != 0 {
			err = fmt.Errorf("TSM·TSK/4=%d and TSK·TSN/4=%d float4 loads must be multiples of the %d work-items", tsm*tsk/4, tsk*tsn/4, threads)
		}
	}
	if err != nil {
		return local, tile, 0, err
	}
	return [2]int{tsn / wptn, tsm / wptm}, [2]int{tsn, tsm}, buffers * 4 * tsk * (tsm + pad + tsn), nil
}

func clFindStep(name string) (clStep, error) {
	for _, s := range clSteps {
		if s.name == name {
			return s, nil
		}
	}
	names := make([]string, len(clSteps))
	for i, s := range clSteps {
		names[i] = s.name
	}
	return clStep{}, fmt.Errorf("gemm: no OpenCL step %q (have: %s)", name, strings.Join(names, ", "))
}

// config returns the step's configuration for defines d: the kernel file's
// defaults overridden by d.
func (st clStep) config(d map[string]int) (OpenCLConfig, error) {
	all := maps.Clone(st.defaults)
	for name, v := range d {
		if _, ok := all[name]; !ok {
			return OpenCLConfig{}, fmt.Errorf("gemm: OpenCL step %s has no parameter %s (has: %s)",
				st.name, name, strings.Join(slices.Sorted(maps.Keys(st.defaults)), ", "))
		}
		all[name] = v
	}
	local, tile, bytes, err := st.derive(all)
	if err != nil {
		return OpenCLConfig{}, fmt.Errorf("gemm: OpenCL step %s: %w", st.name, err)
	}
	c := OpenCLConfig{Step: st.name, Defines: all, Local: local, Tile: tile, LocalBytes: bytes, shared: tile}
	if st.naive {
		c.shared = [2]int{1, 1}
	}
	return c, nil
}

// OpenCLConfigs returns the configurations of an OpenCL step in the order
// they are tried: the preferred one, then smaller fallbacks.
func OpenCLConfigs(step string) ([]OpenCLConfig, error) {
	st, err := clFindStep(step)
	if err != nil {
		return nil, err
	}
	var out []OpenCLConfig
	for _, d := range append([]map[string]int{nil}, st.fallbacks...) {
		c, err := st.config(d)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// NewOpenCLConfig returns the configuration of step with some defines
// overridden, e.g. {"TS": 16}; it is an error if they break the kernel's
// constraints.
func NewOpenCLConfig(step string, defines map[string]int) (OpenCLConfig, error) {
	st, err := clFindStep(step)
	if err != nil {
		return OpenCLConfig{}, err
	}
	return st.config(defines)
}

// OpenCLConfigOn returns the configuration of step that the gemm suite
// runs on ctx's device: the first one (the preferred, then the fallbacks)
// that both the device's limits and the built kernel's allow. It builds
// the step to find out.
func OpenCLConfigOn(ctx *opencl.Context, step string) (OpenCLConfig, error) {
	info, err := ctx.Device().Info()
	if err != nil {
		return OpenCLConfig{}, err
	}
	built, err := clBuildStep(ctx, info, step)
	if err != nil {
		return OpenCLConfig{}, err
	}
	return built.cfg, nil
}

// clBuilt is a step built for one device.
type clBuilt struct {
	cfg    OpenCLConfig
	kernel *opencl.Kernel
}

// clBuild compiles cfg's step on ctx and checks that the kernel can run cfg's
// work-groups there.
func clBuild(ctx *opencl.Context, dev opencl.DeviceInfo, cfg OpenCLConfig) (*clBuilt, error) {
	if err := cfg.fits(dev); err != nil {
		return nil, err
	}
	src := cfg.Source
	if src == "" {
		var err error
		if src, err = kernels.OpenCL("gemm/" + cfg.Step); err != nil {
			return nil, err
		}
	}
	prog, err := ctx.Build(src, cfg.Options())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Options(), err)
	}
	k, err := prog.Kernel(OpenCLKernel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Options(), err)
	}
	maxItems, _, localBytes, _, err := k.WorkGroupInfo()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Options(), err)
	}
	if cfg.WorkItems() > maxItems {
		return nil, fmt.Errorf("%s: %d work-items per group, the kernel allows %d on %s", cfg.Options(), cfg.WorkItems(), maxItems, dev.Name)
	}
	if localBytes > dev.LocalMemBytes {
		return nil, fmt.Errorf("%s: the kernel uses %d bytes of __local memory, %s has %d", cfg.Options(), localBytes, dev.Name, dev.LocalMemBytes)
	}
	return &clBuilt{cfg: cfg, kernel: k}, nil
}

// clBuildStep builds the first configuration of step that runs on ctx's device.
func clBuildStep(ctx *opencl.Context, dev opencl.DeviceInfo, step string) (*clBuilt, error) {
	cfgs, err := OpenCLConfigs(step)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, c := range cfgs {
		b, err := clBuild(ctx, dev, c)
		if err == nil {
			return b, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("gemm: OpenCL step %s: no configuration runs on %s: %w", step, dev.Name, errors.Join(errs...))
}

// launch enqueues C = A·B for shape s.
func (b *clBuilt) launch(ctx *opencl.Context, s Shape, a, bb, c *opencl.Buffer) (*opencl.Event, error) {
	g := b.cfg.Global(s)
	return ctx.Launch(b.kernel, g[:], b.cfg.Local[:], int32(s.M), int32(s.N), int32(s.K), a, bb, c)
}

// OpenCLGEMM computes C = A·B once on ctx with one configuration of a step
// (from OpenCLConfigs or NewOpenCLConfig) and returns C and the kernel's
// device time. It allocates, uploads and frees its own buffers: for
// exercises and notebooks, not for timing loops.
func OpenCLGEMM(ctx *opencl.Context, cfg OpenCLConfig, s Shape, a, b []float32) ([]float32, time.Duration, error) {
	if err := clCheckInputs(ctx, s, a, b); err != nil {
		return nil, 0, err
	}
	if _, err := clFindStep(cfg.Step); err != nil {
		return nil, 0, err
	}
	info, err := ctx.Device().Info()
	if err != nil {
		return nil, 0, err
	}
	built, err := clBuild(ctx, info, cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("gemm: OpenCL step %s: %w", cfg.Step, err)
	}
	bufs, err := clUpload(ctx, s, a, b)
	if err != nil {
		return nil, 0, err
	}
	defer bufs.release()
	ev, err := built.launch(ctx, s, bufs.a, bufs.b, bufs.c)
	if err != nil {
		return nil, 0, err
	}
	defer ev.Release()
	d, err := ev.Duration()
	if err != nil {
		return nil, 0, err
	}
	c := make([]float32, s.M*s.N)
	if err := opencl.ReadSlice(ctx, bufs.c, c); err != nil {
		return nil, 0, err
	}
	return c, d, nil
}

// clCheckInputs returns an error unless there is a context and a and b are
// the operands of a valid shape s.
func clCheckInputs(ctx *opencl.Context, s Shape, a, b []float32) error {
	if ctx == nil {
		return errors.New("gemm: OpenCL: no context")
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if len(a) != s.M*s.K || len(b) != s.K*s.N {
		return fmt.Errorf("gemm: shape %s: A has %d elements and B %d, want %d×%d = %d and %d×%d = %d",
			s, len(a), len(b), s.M, s.K, s.M*s.K, s.K, s.N, s.K*s.N)
	}
	return nil
}

// clOperands are the device copies of A, B and C.
type clOperands struct{ a, b, c *opencl.Buffer }

func (o *clOperands) release() {
	o.a.Release()
	o.b.Release()
	o.c.Release()
}

// clUpload allocates A, B and C on ctx and uploads a and b; on error
// it releases what it allocated.
func clUpload(ctx *opencl.Context, s Shape, a, b []float32) (_ *clOperands, err error) {
	o := &clOperands{}
	defer func() {
		if err != nil {
			o.release() // Release of a nil *Buffer does nothing
		}
	}()
	if o.a, err = ctx.Alloc(4 * s.M * s.K); err != nil {
		return nil, fmt.Errorf("gemm: A: %w", err)
	}
	if o.b, err = ctx.Alloc(4 * s.K * s.N); err != nil {
		return nil, fmt.Errorf("gemm: B: %w", err)
	}
	if o.c, err = ctx.Alloc(4 * s.M * s.N); err != nil {
		return nil, fmt.Errorf("gemm: C: %w", err)
	}
	if err = opencl.WriteSlice(ctx, o.a, a); err != nil {
		return nil, fmt.Errorf("gemm: upload A: %w", err)
	}
	if err = opencl.WriteSlice(ctx, o.b, b); err != nil {
		return nil, fmt.Errorf("gemm: upload B: %w", err)
	}
	return o, nil
}

// openCLVariants is the ladder, baseline first. Traffic is that of the
// preferred configuration; the bench cases use the one actually built.
func openCLVariants() []Variant {
	out := make([]Variant, len(clSteps))
	for i, st := range clSteps {
		out[i] = Variant{Name: st.name, Kind: engine.OpenCL, Doc: st.doc, Precision: FP32, Baseline: i == 0}
		// The built-in defaults are valid (TestOpenCLConfigs checks it);
		// were they not, Traffic would stay nil: the compulsory bytes.
		if cfg, err := st.config(nil); err == nil {
			out[i].Traffic = cfg.Traffic
		}
	}
	return out
}

// openCLCases uploads p's operands once and returns one case per step. A
// step that cannot be built on the device becomes a case whose Run fails,
// so that the others still run.
func openCLCases(ctx *opencl.Context, p *Problem) (cases []bench.Case, closeAll func(), err error) {
	if err := clCheckInputs(ctx, p.Shape, p.A, p.B); err != nil {
		return nil, nil, err
	}
	info, err := ctx.Device().Info()
	if err != nil {
		return nil, nil, err
	}
	bufs, err := clUpload(ctx, p.Shape, p.A, p.B)
	if err != nil {
		return nil, nil, err
	}
	zeros := make([]byte, 4*p.M*p.N)
	reset := func() error { return ctx.Write(bufs.c, 0, zeros) }
	readC := func() ([]float32, error) {
		c := make([]float32, p.M*p.N)
		return c, opencl.ReadSlice(ctx, bufs.c, c)
	}
	for _, v := range openCLVariants() {
		built, err := clBuildStep(ctx, info, v.Name)
		if err != nil {
			c := p.Case(v, readC)
			c.Reset = reset
			c.Run = func() (time.Duration, error) { return 0, err }
			cases = append(cases, c)
			continue
		}
		v.Traffic = built.cfg.Traffic
		c := p.Case(v, readC)
		g := built.cfg.Global(p.Shape)
		c.Params["options"] = built.cfg.Options()
		c.Params["local"] = fmt.Sprintf("%dx%d", built.cfg.Local[0], built.cfg.Local[1])
		c.Params["global"] = fmt.Sprintf("%dx%d", g[0], g[1])
		c.Reset = reset
		c.Run = func() (time.Duration, error) {
			ev, err := built.launch(ctx, p.Shape, bufs.a, bufs.b, bufs.c)
			if err != nil {
				return 0, err
			}
			defer ev.Release()
			return ev.Duration()
		}
		cases = append(cases, c)
	}
	return cases, bufs.release, nil
}
