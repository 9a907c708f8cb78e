package kernelcard

import (
	"fmt"
	"strings"
	"testing"

	"gpulab/engine"
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

// TestOpenCLCard builds a kernel with a 16×16 __local tile on a real
// OpenCL device and reads what the driver says of it.
func TestOpenCLCard(t *testing.T) {
	dev := openCLDevice(t)
	c := Of(dev, Kernel{Label: "tile", Source: tileKernel, Options: []string{"-DTS=16"}, Entry: "tiled", Grid: [3]int{4, 2}, Block: [3]int{16, 16}})
	if c.Error != "" {
		t.Fatal(c.Error)
	}
	if c.StaticShared != 16*16*4 {
		t.Errorf("__local bytes %d, want the tile's 1024", c.StaticShared)
	}
	if c.MaxThreads < 256 || c.PreferredMultiple < 1 {
		t.Errorf("max work-group size %d, preferred multiple %d", c.MaxThreads, c.PreferredMultiple)
	}
	if c.Launch != "NDRange 64×32 in work-groups of 16×16 = 256 work-items" {
		t.Errorf("launch %q", c.Launch)
	}
	md := c.Markdown()
	for _, want := range []string{"**Kernel card: `tiled`** (tile) on " + dev.ID, "`-DTS=16`", "| 1 KiB |", "no occupancy"} {
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
// 4096³ and checks what the steps' comments say of them: every FP32
// kernel step has a launch, an occupancy and FMAs; tiling brings shared
// loads (03 on), float4 brings 16-byte global loads (06), double
// buffering brings cp.async (08), and no step spills.
func TestGEMMCardsOnGPU(t *testing.T) {
	ctx := cudatest.Context(t)
	l := GEMM(engine.CUDA, []string{ctx.ID()}, gemm.Shape{M: 4096, N: 4096, K: 4096})
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
	for _, st := range gemm.Steps(engine.CUDA) {
		cards := l.Cards(st.Name)
		if len(cards) == 0 {
			t.Errorf("%s: no card", st.Name)
			continue
		}
		for _, c := range cards {
			t.Logf("\n%s", c.Markdown())
			if c.Error != "" {
				if st.Name == "12_wgmma_tma" && ctx.Properties().Major != 9 {
					continue
				}
				t.Errorf("%s: %s", st.Name, c.Error)
				continue
			}
			if c.LocalBytes != 0 {
				t.Errorf("%s %s: %d bytes of local memory per thread", st.Name, c.Kernel, c.LocalBytes)
			}
		}
		c := cards[0]
		n := st.Name[:2]
		if n > "09" || c.Error != "" {
			continue
		}
		if c.Occupancy == nil || c.Occupancy.Blocks < 1 || c.Occupancy.Disagree != "" {
			t.Errorf("%s: occupancy %+v", st.Name, c.Occupancy)
		}
		if count(c, "fma", 0) == 0 || count(c, "ld.global", 0) == 0 || count(c, "st.global", 0) == 0 {
			t.Errorf("%s: PTX counts %v", st.Name, c.PTXCounts)
		}
		if n >= "03" && count(c, "ld.shared", 0) == 0 {
			t.Errorf("%s: no shared loads: %v", st.Name, c.PTXCounts)
		}
		if n >= "06" && n != "08" && count(c, "ld.global", 16) == 0 {
			t.Errorf("%s: no 16-byte global loads: %v", st.Name, c.PTXCounts)
		}
		if n == "08" && count(c, "cp.async", 0) == 0 {
			t.Errorf("%s: no cp.async: %v", st.Name, c.PTXCounts)
		}
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
