package kernelcard

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
	"gpulab/engine/gemm"
)

// openCLDevice opens the first OpenCL device (PoCL on a machine without
// a GPU), or skips.
func openCLDevice(t *testing.T) *engine.Device {
	t.Helper()
	infos, _ := engine.Devices()
	for _, info := range infos {
		if info.Kind == engine.OpenCL {
			dev, err := engine.Open(info.ID)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(dev.Close)
			return dev
		}
	}
	t.Skip("no OpenCL device (make deps installs PoCL)")
	return nil
}

const tileKernel = `
__kernel void tiled(__global const float* in, __global float* out) {
    __local float tile[TS][TS];
    int x = get_local_id(0), y = get_local_id(1);
    tile[y][x] = in[get_global_id(1) * get_global_size(0) + get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(1) * get_global_size(0) + get_global_id(0)] = tile[x][y];
}
`

func TestLocalArray(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"__local float tile[TS][TS];", true},
		{"  local int hist[256];", true},
		{"__local volatile unsigned counts [64];", true},
		{"__kernel void k(__local float* scratch) {", false}, // a parameter: sized at the launch
		{"float4 v = vload4(0, p); // no local memory", false},
		{"__global float* out;", false},
	} {
		if got := localArray.MatchString(tc.src); got != tc.want {
			t.Errorf("localArray(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}

// TestOpenCLCard builds a kernel with a 16×16 __local tile on a real
// OpenCL device and reads what the driver says of it.
func TestOpenCLCard(t *testing.T) {
	dev := openCLDevice(t)
	c := Of(dev, Kernel{Label: "tile", Source: tileKernel, Options: []string{"-DTS=16"}, Entry: "tiled", Grid: [3]int{4, 2}, Block: [3]int{16, 16}})
	if c.Error != "" {
		t.Fatal(c.Error)
	}
	// PoCL 3 (Debian 12) reports the tile's bytes; PoCL 6 (Debian 13)
	// reports 0, which the card must then call unknown.
	local := "| 1 KiB |"
	switch {
	case c.StaticShared == 16*16*4:
	case c.StaticShared == 0 && c.LocalUnreported:
		local = "| not reported |"
		t.Logf("%s reports no __local bytes for the tile: the card says so", dev.Name)
	default:
		t.Errorf("__local bytes %d (unreported: %v), want the tile's 1024, or 0 marked unreported", c.StaticShared, c.LocalUnreported)
	}
	if c.MaxThreads < 256 || c.PreferredMultiple < 1 {
		t.Errorf("max work-group size %d, preferred multiple %d", c.MaxThreads, c.PreferredMultiple)
	}
	if c.Launch != "NDRange 64×32 in work-groups of 16×16 = 256 work-items" {
		t.Errorf("launch %q", c.Launch)
	}
	md := c.Markdown()
	for _, want := range []string{"**Kernel card: `tiled`** (tile) on " + dev.ID, "`-DTS=16`", local, "no occupancy"} {
		if !strings.Contains(md, want) {
			t.Errorf("card lacks %q:\n%s", want, md)
		}
	}

	odd := Of(dev, Kernel{Source: tileKernel, Options: []string{"-DTS=16"}, Entry: "tiled", Block: [3]int{3, 3}})
	if c.PreferredMultiple > 1 && !strings.Contains(strings.Join(odd.Notes, ";"), "9 work-items per group is not a multiple of the preferred") {
		t.Errorf("3×3 work-groups: notes %q", odd.Notes)
	}
	for _, tc := range []struct {
		k    Kernel
		want string
	}{
		{Kernel{Source: "__kernel void f( {", Entry: "f"}, "it does not build"},
		{Kernel{Source: tileKernel, Options: []string{"-DTS=4"}, Entry: "nope"}, "nope"},
	} {
		if c := Of(dev, tc.k); !strings.Contains(c.Error, tc.want) || !strings.Contains(c.Markdown(), "*No card: ") {
			t.Errorf("%q: error %q, want %q", tc.k.Entry, c.Error, tc.want)
		}
	}
}

func TestCPUHasNoCard(t *testing.T) {
	c := Of(&engine.Device{Info: engine.Info{ID: "cpu", Kind: engine.CPU}}, Kernel{Entry: "f"})
	if !strings.Contains(c.Error, "runs no kernels") {
		t.Errorf("%q", c.Error)
	}
}

// TestCUDACard compiles a kernel with a known footprint on the GPU: a
// 32×32 shared tile (4 KiB) and a launch of 1024 threads, whose
// occupancy the driver and the model must agree on.
func TestCUDACard(t *testing.T) {
	ctx := cudatest.Context(t)
	dev := &engine.Device{Info: engine.Info{ID: ctx.ID(), Name: ctx.Properties().Name, Kind: engine.CUDA}, CUDA: ctx}
	src := `extern "C" __global__ void transpose(const float* in, float* out, int n) {
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    if (x < n && y < n) out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
`
	c := Of(dev, Kernel{Label: "transpose", Name: "transpose.cu", Source: src, Entry: "transpose", Grid: [3]int{8, 8}, Block: [3]int{32, 32}})
	if c.Error != "" {
		t.Fatal(c.Error)
	}
	if c.StaticShared != 32*32*4 || c.Registers <= 0 || c.LocalBytes != 0 {
		t.Errorf("shared %d (want 4096), registers %d, local %d", c.StaticShared, c.Registers, c.LocalBytes)
	}
	o := c.Occupancy
	if o == nil || o.Driver < 1 || o.Disagree != "" || o.Warps != 32*o.Blocks {
		t.Fatalf("occupancy %+v", o)
	}
	counts := map[string]int{}
	for _, k := range c.PTXCounts {
		counts[k.Class] = k.N
	}
	if counts["ld.global"] != 1 || counts["st.global"] != 1 || counts["ld.shared"] != 1 || counts["st.shared"] != 1 || counts["bar"] != 1 {
		t.Errorf("PTX counts %v, want one global load and store, one shared load and store, one barrier", c.PTXCounts)
	}
	if c.SASS == "" && !strings.Contains(strings.Join(c.Notes, ";"), "not on PATH") {
		t.Errorf("no SASS, and no note saying why: %q", c.Notes)
	}
	t.Log("\n" + c.Markdown())
}

// TestGEMMCardsOnGPU builds the cards of notebook 01's CUDA ladder at
// 4096³ and checks what the steps' comments say of them: every kernel
// step has one card, with a launch and an occupancy (step 12 off Hopper:
// a card saying it needs one); every FP32 step has FMAs; tiling brings
// shared loads (03 on), float4 brings 16-byte global loads (06), double
// buffering brings cp.async (08), and no step spills.
func TestGEMMCardsOnGPU(t *testing.T) {
	ctx := cudatest.Context(t)
	s := gemm.Shape{M: 4096, N: 4096, K: 4096}
	l := GEMM(engine.CUDA, []string{ctx.ID()}, s)
	if l.Note() != "" {
		t.Fatal(l.Note())
	}
	count := func(c Card, class string, bytes int) int {
		for _, k := range c.PTXCounts {
			if k.Class == class {
				if bytes == 0 {
					return k.N
				}
				return k.ByBytes[bytes]
			}
		}
		return 0
	}
	hopper := ctx.Properties().Major == 9
	byStep := map[string]Card{}
	for _, st := range gemm.Steps(engine.CUDA) {
		for _, c := range l.Cards(st.Name) {
			if _, dup := byStep[c.Label]; dup {
				t.Errorf("%s: two cards", c.Label)
			}
			byStep[c.Label] = c
		}
	}
	for _, k := range gemm.CUDAKernels(s, ctx.Properties().Name) {
		c, ok := byStep[k.Step]
		if !ok {
			t.Errorf("%s: no card", k.Step)
			continue
		}
		t.Logf("\n%s", c.Markdown())
		if k.Hopper && !hopper {
			if !strings.Contains(c.Error, "needs sm_90 (Hopper)") {
				t.Errorf("%s off Hopper: error %q", k.Step, c.Error)
			}
			continue
		}
		if c.Error != "" {
			t.Errorf("%s: %s", k.Step, c.Error)
			continue
		}
		if c.Kernel != k.Entry || c.LocalBytes != 0 {
			t.Errorf("%s: kernel %s (want %s), %d bytes of local memory per thread", k.Step, c.Kernel, k.Entry, c.LocalBytes)
		}
		if c.Occupancy == nil || c.Occupancy.Blocks < 1 || c.Occupancy.Disagree != "" || c.DynamicShared != k.Launch.SharedMem {
			t.Errorf("%s: occupancy %+v, %d B of dynamic shared memory", k.Step, c.Occupancy, c.DynamicShared)
		}
		n := k.Step[:2]
		if n > "09" {
			continue
		}
		if count(c, "fma", 0) == 0 || count(c, "ld.global", 0) == 0 || count(c, "st.global", 0) == 0 {
			t.Errorf("%s: PTX counts %v", k.Step, c.PTXCounts)
		}
		if n >= "03" && count(c, "ld.shared", 0) == 0 {
			t.Errorf("%s: no shared loads: %v", k.Step, c.PTXCounts)
		}
		if n >= "06" && n != "08" && count(c, "ld.global", 16) == 0 {
			t.Errorf("%s: no 16-byte global loads: %v", k.Step, c.PTXCounts)
		}
		if n == "08" && count(c, "cp.async", 0) == 0 {
			t.Errorf("%s: no cp.async: %v", k.Step, c.PTXCounts)
		}
	}
}

// TestCUDAGEMMKernels checks, without a GPU, the kernels whose cards
// notebook 01 shows under the CUDA steps: one per kernel step, under the
// step that shows its file, with the suite's launch; step 10 saying where
// its tiles come from, and step 12 saying, off Hopper, that it needs one.
func TestCUDAGEMMKernels(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPULAB_CACHE_DIR", dir)
	s := gemm.Shape{M: 4096, N: 4096, K: 4096}
	kernelsOn := func(props cuda.Properties) map[string]Kernel {
		out := map[string]Kernel{}
		for _, st := range gemm.Steps(engine.CUDA) {
			for _, k := range cudaGEMMKernels(st, s, props) {
				if _, dup := out[k.Label]; dup {
					t.Errorf("%s: two kernels", k.Label)
				}
				if k.Source != st.Code || k.Name != strings.TrimPrefix(st.File, "cuda/") {
					t.Errorf("%s under %s: source %s, not the step's file", k.Label, st.Name, k.Name)
				}
				out[k.Label] = k
			}
		}
		return out
	}
	h100 := cuda.Properties{Name: "NVIDIA H100 80GB HBM3", Major: 9}
	a100 := cuda.Properties{Name: "NVIDIA A100-SXM4-80GB", Major: 8}
	on := kernelsOn(a100)
	launches := gemm.CUDAKernels(s, a100.Name)
	if len(on) != len(launches) {
		t.Errorf("%d kernels, want one for each of the %d kernel steps", len(on), len(launches))
	}
	for _, g := range launches {
		k, ok := on[g.Step]
		if !ok {
			t.Errorf("%s: no kernel", g.Step)
			continue
		}
		if !k.launchKnown() || k.Entry != g.Entry || k.Grid != [3]int{g.Launch.Grid.X, g.Launch.Grid.Y, g.Launch.Grid.Z} ||
			k.Block != [3]int{g.Launch.Block.X, g.Launch.Block.Y, g.Launch.Block.Z} || k.Shared != g.Launch.SharedMem || !slices.Equal(k.Options, g.Options) {
			t.Errorf("%s: kernel %+v, want the suite's %+v", g.Step, k, g)
		}
	}
	for step, entry := range map[string]string{"11_wmma_tf32": "wmma_tf32", "11_wmma_bf16": "wmma_bf16", "12_wgmma_tma": "wgmma_bf16"} {
		if on[step].Entry != entry {
			t.Errorf("%s: entry %q, want %s", step, on[step].Entry, entry)
		}
	}
	if got := on["12_wgmma_tma"].Unsupported; !strings.Contains(got, "needs sm_90 (Hopper)") {
		t.Errorf("12_wgmma_tma on an A100: %q", got)
	}
	c := Of(&engine.Device{Info: engine.Info{ID: "cuda:0", Name: a100.Name, Kind: engine.CUDA}}, on["12_wgmma_tma"])
	if !strings.Contains(c.Markdown(), "*No card: needs sm_90 (Hopper)") {
		t.Errorf("12_wgmma_tma's card on an A100:\n%s", c.Markdown())
	}
	for step, k := range kernelsOn(h100) {
		if k.Unsupported != "" {
			t.Errorf("%s on an H100: %q", step, k.Unsupported)
		}
	}
	const untuned = "tiles BM=128 BN=128 BK=16 WM=64 WN=32 (the default; `lab bench gemm --size 4096x4096x4096` tunes them)"
	if got := on["10_autotuned"].Notes; !slices.Equal(got, []string{untuned}) {
		t.Errorf("10_autotuned, no cache: notes %q, want %q", got, untuned)
	}
	cache := `{"NVIDIA A100-SXM4-80GB 4096x4096x4096": {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64}}`
	if err := os.WriteFile(filepath.Join(dir, "gemm-autotune.json"), []byte(cache), 0o644); err != nil {
		t.Fatal(err)
	}
	// 256×128 tiles of 64×64 warp tiles: 4·2 warps = 256 threads, 4096/128 = 32 by 4096/256 = 16 blocks.
	const tuned = "tiles BM=256 BN=128 BK=16 WM=64 WN=64 (tuned on this GPU for this shape)"
	if k := kernelsOn(a100)["10_autotuned"]; !slices.Equal(k.Notes, []string{tuned}) || k.Grid != [3]int{32, 16} || k.Block != [3]int{256} {
		t.Errorf("10_autotuned, cached: notes %q, grid %v, block %v; want %q, 32×16, 256", k.Notes, k.Grid, k.Block, tuned)
	}
	if k := kernelsOn(h100)["10_autotuned"]; !slices.Equal(k.Notes, []string{untuned}) {
		t.Errorf("10_autotuned on a GPU the cache does not know: notes %q", k.Notes)
	}
}

// TestCUDACardMarkdown renders a CUDA card made by hand (no GPU needed):
// the resources, the occupancy with its limiter in bold, the counts, the
// listings folded and cut, and what the card could not say.
func TestCUDACardMarkdown(t *testing.T) {
	o := Theoretical(hopper, Resources{Threads: 1024, Registers: 38, StaticShared: 8192}, 1)
	ptx := strings.Repeat("\tfma.rn.f32 %f1, %f2, %f3, %f1;\n", maxListingLines+5)
	c := Card{Label: "03_smem_tiling", Kernel: "sgemm", Device: "cuda:0 (NVIDIA H100 80GB HBM3)", Backend: string(engine.CUDA),
		Launch: "grid 128×128 = 16384 blocks, block 32×32 = 1024 threads", Options: []string{"-DVEC=1", "--gpu-architecture=sm_90", "-I/usr/local/cuda/include"},
		Registers: 38, StaticShared: 8192, LocalBytes: 16, Occupancy: &o, Waves: 124.1, PTX: ptx,
		PTXCounts: []InstructionCount{{Class: "ld.global", N: 2, ByBytes: map[int]int{4: 2}}, {Class: "fma", N: 32}},
		Notes:     []string{"no SASS: no disassembler here"}}
	md := c.Markdown()
	for _, want := range []string{
		"**Kernel card: `sgemm`** (03_smem_tiling) on cuda:0 (NVIDIA H100 80GB HBM3) · grid 128×128 = 16384 blocks, block 32×32 = 1024 threads · `-DVEC=1 --gpu-architecture=sm_90`",
		"| 38 | 16 B (spills or arrays indexed at run time: slow) | 8 KiB | 50%: 1 block, 32 of 64 warps per SM; the grid is 124.1 waves | **registers**: 1 (38 registers × 1024 threads of 65536 per SM); threads: 2; shared memory: 25; blocks: 32 |",
		"**PTX** (static counts): `ld.global` 2 (2×4 B) · `fma` 32",
		fmt.Sprintf("▸ the first %d of %d lines of the PTX of <code>sgemm</code>", maxListingLines, maxListingLines+5),
		"*No SASS: no disassembler here.*",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("card lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "-I/usr/local/cuda/include") {
		t.Errorf("the include directory is shown:\n%s", md)
	}
}
