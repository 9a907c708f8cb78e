package gemm

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/opencl"
	"gpulab/kernels"
)

// clDevices opens every OpenCL device, or skips the test with the reason
// there is none. The devices are closed when the test ends.
func clDevices(t *testing.T) []*engine.Device {
	t.Helper()
	infos, missing := engine.Devices()
	var out []*engine.Device
	for _, info := range infos {
		if info.Kind != engine.OpenCL {
			continue
		}
		d, err := engine.Open(info.ID)
		if err != nil {
			t.Fatalf("open %s: %v", info.ID, err)
		}
		t.Cleanup(d.Close)
		out = append(out, d)
	}
	if len(out) == 0 {
		for _, m := range missing {
			if m.Kind == engine.OpenCL {
				t.Skipf("no OpenCL device: %s", m.Reason)
			}
		}
		t.Skip("no OpenCL device")
	}
	return out
}

// clCheckCases runs each case once and checks it against its reference.
func clCheckCases(t *testing.T, what string, cases []bench.Case) {
	t.Helper()
	for _, c := range cases {
		if err := c.Reset(); err != nil {
			t.Fatalf("%s %s: reset: %v", what, c.Variant, err)
		}
		if _, err := c.Run(); err != nil {
			t.Errorf("%s %s: run: %v", what, c.Variant, err)
			continue
		}
		chk, err := c.Check()
		if err != nil {
			t.Errorf("%s %s: check: %v", what, c.Variant, err)
			continue
		}
		if !(chk.MaxRelErr <= c.Tol) {
			t.Errorf("%s %s (%v): max relative error %g at %d (got %v, want %v), tolerance %g",
				what, c.Variant, c.Params["options"], chk.MaxRelErr, chk.Worst, chk.Got, chk.Want, c.Tol)
		}
	}
}

// TestOpenCLLadder checks every step, with the configuration the device
// gets, on shapes that are not multiples of any tile, skinny shapes, and
// shapes where K or N (or both) are, or are not, multiples of 4 (the float4
// and the scalar load paths of steps 4 to 6).
func TestOpenCLLadder(t *testing.T) {
	sizes := []string{"1x1x1", "7x5x3", "64", "255x257x129", "130x1x70", "1x200x33",
		"300x260x196", "129x130x132", "130x132x131", "1000x1023x999"}
	for _, dev := range clDevices(t) {
		for _, size := range sizes {
			p := mustProblem(t, size, 3)
			cases, closeAll, err := openCLCases(dev.OpenCL, p)
			if err != nil {
				t.Fatalf("%s %s: %v", dev.ID, size, err)
			}
			if len(cases) != len(clSteps) || !cases[0].Baseline || cases[0].Variant != "01_naive" {
				t.Errorf("%s %s: %d cases, the first %q baseline=%v; want %d, 01_naive first as the baseline",
					dev.ID, size, len(cases), cases[0].Variant, cases[0].Baseline, len(clSteps))
			}
			if testing.Verbose() && size == "1x1x1" {
				for _, c := range cases {
					t.Logf("%s %s: %v local %v", dev.ID, c.Variant, c.Params["options"], c.Params["local"])
				}
			}
			clCheckCases(t, dev.ID+" "+size, cases)
			closeAll()
		}
	}
}

// TestOpenCLFallbacks checks the smaller configurations that devices with
// fewer work-items or less __local memory get, on two awkward shapes.
func TestOpenCLFallbacks(t *testing.T) {
	for _, dev := range clDevices(t) {
		for _, size := range []string{"67x45x37", "68x72x36"} {
			s, _ := ParseShape(size)
			p, err := NewProblem(s, 5)
			if err != nil {
				t.Fatal(err)
			}
			want := p.Reference(FP32)
			for _, st := range clSteps {
				cfgs, err := OpenCLConfigs(st.name)
				if err != nil {
					t.Fatal(err)
				}
				for _, cfg := range cfgs[1:] {
					got, _, err := OpenCLGEMM(dev.OpenCL, cfg, s, p.A, p.B)
					if err != nil {
						t.Errorf("%s %s %s %s: %v", dev.ID, size, st.name, cfg.Options(), err)
						continue
					}
					if chk := bench.Compare(got, want); !(chk.MaxRelErr <= FP32.Tolerance(s.K)) {
						t.Errorf("%s %s %s %s: max relative error %g at %d", dev.ID, size, st.name, cfg.Options(), chk.MaxRelErr, chk.Worst)
					}
				}
			}
		}
	}
}

// TestOpenCLNaN puts a NaN in A and one in B: the row of C of the first and
// the column of the second must be NaN, as in the reference, and nothing
// else.
func TestOpenCLNaN(t *testing.T) {
	for _, dev := range clDevices(t) {
		for _, size := range []string{"255x257x129", "260x132x68"} {
			s, _ := ParseShape(size)
			p, err := NewProblem(s, 7)
			if err != nil {
				t.Fatal(err)
			}
			const row, col = 131, 129 // in the second tile of every step
			p.A[row*s.K+s.K-1] = float32(math.NaN())
			p.B[(s.K/2)*s.N+col] = float32(math.NaN())
			ref := p.Reference(FP32)
			nans := 0
			for _, v := range ref {
				if v != v {
					nans++
				}
			}
			if nans != s.N+s.M-1 {
				t.Fatalf("%s: the reference has %d NaNs, want row %d and column %d: %d", size, nans, row, col, s.N+s.M-1)
			}
			cases, closeAll, err := openCLCases(dev.OpenCL, p)
			if err != nil {
				t.Fatalf("%s %s: %v", dev.ID, size, err)
			}
			for _, c := range cases {
				if err := c.Reset(); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Run(); err != nil {
					t.Errorf("%s %s %s: run: %v", dev.ID, size, c.Variant, err)
					continue
				}
				chk, err := c.Check()
				if err != nil {
					t.Fatal(err)
				}
				if !(chk.MaxRelErr <= c.Tol) || chk.NonFinite != nans {
					t.Errorf("%s %s %s: max relative error %g at %d (got %v, want %v), %d non-finite values, want %d NaNs",
						dev.ID, size, c.Variant, chk.MaxRelErr, chk.Worst, chk.Got, chk.Want, chk.NonFinite, nans)
				}
			}
			closeAll()
		}
	}
}

// TestOpenCLBadInputs checks that bad shapes, operands, steps and defines
// are errors, not crashes.
func TestOpenCLBadInputs(t *testing.T) {
	dev := clDevices(t)[0]
	cfg, err := NewOpenCLConfig("02_local_tiling", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]float32, 12), make([]float32, 20)
	for _, tc := range []struct {
		name string
		s    Shape
		a, b []float32
	}{
		{"zero M", Shape{0, 5, 4}, nil, b},
		{"negative K", Shape{3, 5, -4}, a, b},
		{"short A", Shape{3, 5, 4}, a[:11], b},
		{"long B", Shape{3, 5, 4}, a, append(b, 0)},
		{"too large", Shape{1 << 16, 1 << 16, 1}, nil, nil},
	} {
		if _, _, err := OpenCLGEMM(dev.OpenCL, cfg, tc.s, tc.a, tc.b); err == nil {
			t.Errorf("OpenCLGEMM, %s %v: no error", tc.name, tc.s)
		}
	}
	if _, _, err := OpenCLGEMM(dev.OpenCL, OpenCLConfig{Step: "07_magic"}, Shape{3, 5, 4}, a, b); err == nil {
		t.Error("OpenCLGEMM, unknown step: no error")
	}
	if _, _, err := OpenCLGEMM(nil, cfg, Shape{3, 5, 4}, a, b); err == nil {
		t.Error("OpenCLGEMM, nil context: no error")
	}
	for _, p := range []*Problem{
		{Shape: Shape{0, 5, 4}},
		{Shape: Shape{3, 5, 4}, A: a[:11], B: b},
	} {
		if _, _, err := openCLCases(dev.OpenCL, p); err == nil {
			t.Errorf("openCLCases, shape %v with %d and %d elements: no error", p.Shape, len(p.A), len(p.B))
		}
	}
	if _, _, err := openCLCases(nil, &Problem{Shape: Shape{3, 5, 4}, A: a, B: b}); err == nil {
		t.Error("openCLCases, nil context: no error")
	}
}

// TestOpenCLConfigs checks the configuration tables without a device.
func TestOpenCLConfigs(t *testing.T) {
	vs := openCLVariants()
	if len(vs) != 6 || !vs[0].Baseline || vs[0].Name != "01_naive" {
		t.Fatalf("variants %v: want 6 steps, 01_naive first as the baseline", vs)
	}
	for _, v := range vs {
		if v.Kind != engine.OpenCL || v.Precision != FP32 || v.Traffic == nil || v.Doc == "" {
			t.Errorf("variant %s: %+v", v.Name, v)
		}
		cfgs, err := OpenCLConfigs(v.Name)
		if err != nil || len(cfgs) < 2 {
			t.Errorf("OpenCLConfigs(%s): %d configurations, %v", v.Name, len(cfgs), err)
			continue
		}
		for _, c := range cfgs {
			if c.WorkItems() > 1024 || c.LocalBytes > 48<<10 {
				t.Errorf("%s %s: %d work-items, %d bytes of __local memory: over NVIDIA's limits", v.Name, c.Options(), c.WorkItems(), c.LocalBytes)
			}
		}
		// The preferred configuration is the kernel file's own defaults.
		src, err := kernels.OpenCL("gemm/" + v.Name)
		if err != nil {
			t.Fatal(err)
		}
		for name, val := range cfgs[0].Defines {
			if def := fmt.Sprintf("#ifndef %s\n#define %s %d\n", name, name, val); !strings.Contains(src, def) {
				t.Errorf("%s: the source does not default %s to %d", v.Name, name, val)
			}
		}
	}

	// Traffic: the naive step reads A and B once per element of C; a 1×1×1
	// product needs only its compulsory bytes at every step.
	s := Shape{100, 200, 300}
	if got, want := vs[0].Traffic(s), 4*(2*100*200*300.0+100*200); got != want {
		t.Errorf("naive traffic %v: %g, want %g", s, got, want)
	}
	if got, want := vs[1].Traffic(s), 4*(100*300*7.0+300*200*4+100*200); got != want {
		t.Errorf("02_local_tiling traffic %v: %g, want %g", s, got, want)
	}
	for _, v := range vs {
		if got, want := v.Traffic(Shape{1, 1, 1}), (Shape{1, 1, 1}).MinBytes(); got != want {
			t.Errorf("%s traffic 1x1x1: %g, want %g", v.Name, got, want)
		}
	}

	// A small device gets a fallback; one that fits nothing is an error.
	h200 := opencl.DeviceInfo{Name: "H200", MaxWorkGroupSize: 1024, MaxWorkItemSizes: []int{1024, 1024, 64}, LocalMemBytes: 48 << 10}
	small := opencl.DeviceInfo{Name: "small", MaxWorkGroupSize: 64, MaxWorkItemSizes: []int{64, 64, 64}, LocalMemBytes: 16 << 10}
	for _, tc := range []struct {
		step      string
		dev       opencl.DeviceInfo
		want      string
		wantError bool
	}{
		{"02_local_tiling", h200, "-DTS=32", false},
		{"02_local_tiling", small, "-DTS=8", false},
		{"05_2d_register_blocking", h200, "-DPADA=4 -DTSK=16 -DTSM=128 -DTSN=128 -DWPTM=8 -DWPTN=8", false},
		{"05_2d_register_blocking", small, "-DPADA=4 -DTSK=16 -DTSM=64 -DTSN=64 -DWPTM=8 -DWPTN=8", false},
		{"06_prefetching", small, "-DPADA=4 -DTSK=8 -DTSM=32 -DTSN=32 -DWPTM=4 -DWPTN=4", false}, // 64×64 needs 16.5 KiB
		{"06_prefetching", opencl.DeviceInfo{Name: "tiny", MaxWorkGroupSize: 256, LocalMemBytes: 512}, "", true},
		{"07_magic", h200, "", true},
	} {
		got, err := firstFit(tc.step, tc.dev)
		if (err != nil) != tc.wantError || got != tc.want {
			t.Errorf("firstFit(%s, %s) = %q, %v; want %q, error %v", tc.step, tc.dev.Name, got, err, tc.want, tc.wantError)
		}
	}

	// Overrides: valid ones change the geometry, bad ones are errors.
	c, err := NewOpenCLConfig("03_more_work_per_thread", map[string]int{"WPT": 4})
	if err != nil || c.Local != [2]int{32, 8} || c.Tile != [2]int{32, 32} {
		t.Errorf("03 with WPT=4: local %v tile %v, %v; want local [32 8], tile [32 32]", c.Local, c.Tile, err)
	}
	for _, tc := range []struct {
		step string
		d    map[string]int
	}{
		{"03_more_work_per_thread", map[string]int{"WPT": 5}},
		{"04_wider_types", map[string]int{"WIDTH": 3}},
		{"05_2d_register_blocking", map[string]int{"WPTM": 6}},
		{"05_2d_register_blocking", map[string]int{"TSK": 4}}, // 128·4/4 loads over 256 work-items
		{"02_local_tiling", map[string]int{"TS": 0}},
		{"02_local_tiling", map[string]int{"WPT": 4}},
	} {
		if _, err := NewOpenCLConfig(tc.step, tc.d); err == nil {
			t.Errorf("NewOpenCLConfig(%s, %v): no error", tc.step, tc.d)
		} else if !strings.Contains(err.Error(), tc.step) {
			t.Errorf("NewOpenCLConfig(%s, %v): error %q does not name the step", tc.step, tc.d, err)
		}
	}
}

// TestOpenCLTune times other tile parameters of steps 5 and 6 on the GPU
// OpenCL devices, for choosing the defaults on new hardware. It runs only
// when GPULAB_CL_TUNE names a shape, e.g.
//
//	GPULAB_CL_TUNE=4096 go test ./engine/gemm -run OpenCLTune -v
func TestOpenCLTune(t *testing.T) {
	size := os.Getenv("GPULAB_CL_TUNE")
	if size == "" {
		t.Skip("set GPULAB_CL_TUNE to a shape, e.g. 4096, to time tile parameters")
	}
	p := mustProblem(t, size, 1)
	want := p.Reference(FP32)
	blocked := func(tsm, tsn, tsk, wptm, wptn, pad int) map[string]int {
		return map[string]int{"TSM": tsm, "TSN": tsn, "TSK": tsk, "WPTM": wptm, "WPTN": wptn, "PADA": pad}
	}
	tries := []map[string]int{
		blocked(128, 128, 16, 8, 8, 4), blocked(128, 128, 16, 8, 8, 0), blocked(128, 128, 8, 8, 8, 4),
		blocked(128, 128, 32, 8, 8, 4), blocked(128, 64, 16, 8, 8, 4), blocked(64, 128, 16, 8, 8, 4),
		blocked(128, 128, 16, 8, 4, 4), blocked(128, 128, 16, 4, 8, 4), blocked(64, 64, 16, 4, 4, 4),
		blocked(64, 64, 16, 8, 8, 4), blocked(256, 128, 16, 16, 8, 4), blocked(128, 256, 8, 8, 16, 4),
	}
	for _, dev := range clDevices(t) {
		info, err := dev.OpenCL.Device().Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Type == "CPU" && os.Getenv("GPULAB_CL_TUNE_CPU") == "" {
			t.Logf("%s: a CPU, skipped (set GPULAB_CL_TUNE_CPU=1 to time it anyway)", dev.ID)
			continue
		}
		bufs, err := clUpload(dev.OpenCL, p.Shape, p.A, p.B)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []string{"05_2d_register_blocking", "06_prefetching"} {
			for _, d := range tries {
				cfg, err := NewOpenCLConfig(step, d)
				if err != nil {
					t.Logf("%s %v: %v", step, d, err)
					continue
				}
				built, err := clBuild(dev.OpenCL, info, cfg)
				if err != nil {
					t.Logf("%s %s: %v", step, cfg.Options(), err)
					continue
				}
				best := time.Duration(math.MaxInt64)
				for range 5 {
					ev, err := built.launch(dev.OpenCL, p.Shape, bufs.a, bufs.b, bufs.c)
					if err != nil {
						t.Fatal(err)
					}
					d, err := ev.Duration()
					ev.Release()
					if err != nil {
						t.Fatal(err)
					}
					best = min(best, d)
				}
				got := make([]float32, p.M*p.N)
				if err := opencl.ReadSlice(dev.OpenCL, bufs.c, got); err != nil {
					t.Fatal(err)
				}
				chk := bench.Compare(got, want)
				t.Logf("%s %s %-22s %-58s %8.3f ms %8.0f GFLOP/s  max rel err %.2g",
					dev.ID, size, step, cfg.Options(), best.Seconds()*1e3, p.Flops()/best.Seconds()/1e9, chk.MaxRelErr)
			}
		}
		bufs.release()
	}
}

// firstFit is the options of the first configuration of step that dev's
// limits allow, as clBuildStep tries them before building.
func firstFit(step string, dev opencl.DeviceInfo) (string, error) {
	cfgs, err := OpenCLConfigs(step)
	if err != nil {
		return "", err
	}
	for _, c := range cfgs {
		if c.fits(dev) == nil {
			return c.Options(), nil
		}
	}
	return "", fmt.Errorf("no configuration of %s fits %s", step, dev.Name)
}
