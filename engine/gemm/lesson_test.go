package gemm

import (
	"fmt"
	"strings"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// recorded is the H200 run that docs/gemm.md records.
func recorded(t *testing.T) []bench.Record {
	t.Helper()
	recs, err := bench.ReadJSON("../../docs/results/h200-gemm-cuda.json")
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestSteps(t *testing.T) {
	for _, kind := range []engine.Kind{engine.CUDA, engine.OpenCL, engine.CPU} {
		steps := Steps(kind)
		if len(steps) < 5 {
			t.Fatalf("%s: %d steps", kind, len(steps))
		}
		for i, s := range steps {
			if s.Code == "" || strings.HasPrefix(s.File, "kernels/") || i > 0 && s.Code == steps[i-1].Code {
				t.Errorf("%s step %d: %+v", kind, i, s.File)
			}
		}
	}
}

func TestRidgeMarkdown(t *testing.T) {
	dev := engine.Info{ID: "cuda:0", Name: "test GPU", PeakGFLOPS: 60000, PeakGBps: 3000} // ridge 20 FLOP/byte
	md := RidgeMarkdown([]engine.Info{dev, {ID: "cpu", Name: "no peaks"}}, 4096)
	for _, want := range []string{
		"| `cuda:0` test GPU | 20.0 |",
		" 683: can reach the compute roof |", // 2n³ / 12n² = n/6
		" 0.25: memory-bound |",              // 2 flops per 8 bytes
		" 7.97: memory-bound |",              // 32×32 tiles: 2n / (4·(2n/32 + 1))
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "no peaks") {
		t.Errorf("a device without peaks is in the table:\n%s", md)
	}
}

func TestChartGroups(t *testing.T) {
	var recs []bench.Record
	for _, r := range recorded(t) {
		if r.Device == "cuda:0" {
			recs = append(recs, r)
		}
	}
	groups := ChartGroups(recs)
	if len(groups) != 3 || groups[0].Title != "FP32 steps 01–05" || groups[2].Title != "tensor-core steps" {
		t.Fatalf("%d groups: %v", len(groups), groups)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		variants := map[string]bool{}
		for _, r := range g.Recs {
			variants[r.Variant], seen[r.Variant] = true, true
		}
		if len(variants) > 8 || len(variants) < 2 {
			t.Errorf("%s: %d series", g.Title, len(variants))
		}
	}
	for _, r := range recs {
		if !seen[r.Variant] {
			t.Errorf("%s is in no chart", r.Variant)
		}
	}
}

// TestTrafficMarkdown: CUDA has one table; OpenCL without a device gives
// the default tiles and says so; on a device each row names the tiles the
// suite runs there (OpenCLConfigOn), and its traffic is theirs.
func TestTrafficMarkdown(t *testing.T) {
	s := Shape{M: 4096, N: 4096, K: 4096}
	cu := TrafficMarkdown(engine.CUDA, nil, s)
	if !strings.Contains(cu, "| `01_naive` |") || !strings.Contains(cu, "global traffic at 4096³") || strings.Contains(cu, "tiles |") {
		t.Errorf("CUDA table:\n%s", cu)
	}
	def := TrafficMarkdown(engine.OpenCL, nil, s)
	for _, want := range []string{"at the default tiles", "| `-DTS=32` | 17.2 GB | 8.0 |"} {
		if !strings.Contains(def, want) {
			t.Errorf("lacks %q:\n%s", want, def)
		}
	}
	var ids []string
	devs, _ := engine.Devices()
	for _, d := range devs {
		if d.Kind == engine.OpenCL {
			ids = append(ids, d.ID)
			break
		}
	}
	if len(ids) == 0 {
		t.Skip("no OpenCL device")
	}
	md := TrafficMarkdown(engine.OpenCL, ids, s)
	if !strings.Contains(md, "opencl on "+ids[0]) || strings.Contains(md, "default tiles") {
		t.Errorf("device table:\n%s", md)
	}
	dev, err := engine.Open(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	c, err := OpenCLConfigOn(dev.OpenCL, "02_local_tiling")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("| `%s` | %.1f GB |", c.Options(), c.Traffic(s)/1e9); !strings.Contains(md, want) {
		t.Errorf("lacks %q:\n%s", want, md)
	}
}

func TestSmallGridNote(t *testing.T) {
	devs := []engine.Info{{ID: "cpu", Kind: engine.CPU, ComputeUnits: 16}, {ID: "cuda:0", Name: "H100", Kind: engine.CUDA, ComputeUnits: 132}, {ID: "cuda:1", Name: "small", Kind: engine.CUDA, ComputeUnits: 40}}
	md := SmallGridNote(devs, 1024, 128)
	for _, want := range []string{"- **H100** (`cuda:0`): `64` blocks of `128×128` at `1024³` for `132` SMs: fewer blocks than SMs, so `68` SMs have nothing to do.",
		"- **small** (`cuda:1`): `64` blocks of `128×128` at `1024³` for `40` SMs: `1.6` waves"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "cpu") || !strings.Contains(SmallGridNote(devs[:1], 1024, 128), "No GPU here") {
		t.Errorf("a CPU counted:\n%s", md)
	}
}
