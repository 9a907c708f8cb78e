package lfm2

import (
	"slices"
	"strings"
	"testing"

	"gpulab/engine"
)

// cpuDevice is the engine device cpu, as engine.Open gives it (without
// measuring the host, which the engines do not need).
var cpuDevice = &engine.Device{Info: engine.Info{ID: "cpu", Kind: engine.CPU}}

// TestOpenCPU: Open on cpu is the reference on the directory's weights,
// and OpenRandom on cpu the reference on RandomTensors' weights, which
// WriteRandomModel writes.
func TestOpenCPU(t *testing.T) {
	dir := t.TempDir()
	c, err := WriteRandomModel(dir, []byte(fixtureConfig), 7)
	if err != nil {
		t.Fatal(err)
	}
	_, w := loadModel(t, dir)
	batch := RandomBatch(c, 2, 5, 3)
	want, err := Logits(c, w, batch)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := Open(dir, []*engine.Device{cpuDevice}, CUDAOptions{MaxBatch: 2, MaxSeq: 5})
	if err != nil {
		t.Fatal(err)
	}
	random, err := OpenRandom(c, 7, []*engine.Device{cpuDevice}, CUDAOptions{DType: F32})
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]Engine{"Open": opened, "OpenRandom": random} {
		if _, ok := m.(*CPUModel); !ok {
			t.Errorf("%s on cpu gave a %T, want the CPU reference", name, m)
		}
		got, err := m.Logits(batch)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: logits differ from the reference on the written weights (%v)", name, err)
		}
		if err := m.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
}

// TestOpenErrors: devices and options the engines cannot run are errors
// that say why, before any weight is loaded.
func TestOpenErrors(t *testing.T) {
	big, err := Preset("lfm2-8b-a1b")
	if err != nil {
		t.Fatal(err)
	}
	small, err := ParseConfig([]byte(fixtureConfig))
	if err != nil {
		t.Fatal(err)
	}
	opencl := &engine.Device{Info: engine.Info{ID: "opencl:0:0", Name: "pthread", Kind: engine.OpenCL}}
	gpu := &engine.Device{Info: engine.Info{ID: "cuda:0", Kind: engine.CUDA}}
	for _, tc := range []struct {
		name string
		c    *Config
		devs []*engine.Device
		o    CUDAOptions
		want string
	}{
		{"no device", small, nil, CUDAOptions{}, "no device"},
		{"bf16 on the CPU", small, []*engine.Device{cpuDevice}, CUDAOptions{DType: BF16}, "the CPU reference computes in f32"},
		{"unknown dtype", small, []*engine.Device{cpuDevice}, CUDAOptions{DType: "f16"}, `dtype "f16"`},
		{"MoE path on the CPU", small, []*engine.Device{cpuDevice}, CUDAOptions{MoE: MoEWgmma}, `MoE path "wgmma" is the CUDA engine's`},
		{"OpenCL", small, []*engine.Device{opencl}, CUDAOptions{}, "no engine for opencl:0:0 (pthread)"},
		{"the CPU with a GPU", small, []*engine.Device{cpuDevice, gpu}, CUDAOptions{}, "cpu alone"},
		{"8B on the CPU", big, []*engine.Device{cpuDevice}, CUDAOptions{}, "8.34 billion parameters (33.4 GB in float32)"},
	} {
		_, err := OpenRandom(tc.c, 1, tc.devs, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestCheckDType(t *testing.T) {
	for _, tc := range []struct {
		kind  engine.Kind
		dtype string
		ok    bool
	}{
		{engine.CPU, "", true}, {engine.CPU, F32, true}, {engine.CPU, BF16, false},
		{engine.CUDA, F32, true}, {engine.CUDA, BF16, true}, {engine.CUDA, "fp8", false},
	} {
		if err := CheckDType(tc.kind, tc.dtype); (err == nil) != tc.ok {
			t.Errorf("CheckDType(%s, %q) = %v, want ok %v", tc.kind, tc.dtype, err, tc.ok)
		}
	}
}

// TestCPUModelBench: the CPU's benchmark hooks report the rates of what
// they timed, and refuse a decode of no steps.
func TestCPUModelBench(t *testing.T) {
	c, err := ParseConfig([]byte(fixtureConfig))
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenRandom(c, 1, []*engine.Device{cpuDevice}, CUDAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.BenchPrefill(RandomBatch(c, 3, 4, 1), 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Batch != 3 || p.Seq != 4 || p.Seconds <= 0 || !sameRate(p.SamplesPerSec, 3/p.Seconds) || !sameRate(p.TokensPerSec, 12/p.Seconds) || p.Profile != nil {
		t.Errorf("prefill %+v", p)
	}
	d, err := m.BenchDecode(2, 4, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Batch != 2 || d.Steps != 3 || d.Seconds <= 0 || !sameRate(d.TokensPerSec, 6/d.Seconds) {
		t.Errorf("decode %+v", d)
	}
	if _, err := m.BenchDecode(2, 4, 0, 1); err == nil || !strings.Contains(err.Error(), "0 steps") {
		t.Errorf("a decode of 0 steps: %v", err)
	}
}

// sameRate says whether rates a and b agree to 1e-9 relative.
func sameRate(a, b float64) bool { return a == b || (a-b)*(a-b) <= 1e-18*b*b }
