package engine

import (
	"os"
	"strings"
	"testing"
)

func TestDevicesListsCPUFirst(t *testing.T) {
	devs, missing := Devices()
	if len(devs) == 0 || devs[0].ID != "cpu" {
		t.Fatalf("devices %+v", devs)
	}
	for _, d := range devs {
		t.Logf("%-12s %-40s peak %.0f GFLOP/s %.0f GB/s (%s)", d.ID, d.Name, d.PeakGFLOPS, d.PeakGBps, d.PeakNote)
		if d.PeakGBps < 0 || d.PeakGFLOPS < 0 {
			t.Errorf("%s: negative peak", d.ID)
		}
	}
	for _, m := range missing {
		t.Logf("missing %s", m)
		if m.Reason == "" {
			t.Errorf("family %s missing without a reason", m.Kind)
		}
	}
	if devs[0].PeakGBps <= 0 || devs[0].PeakGFLOPS <= 0 {
		t.Errorf("cpu peaks unknown: %+v", devs[0])
	}
}

func TestOpenUnknownListsValidIDs(t *testing.T) {
	for _, id := range []string{"gpu:7", "cuda:99", "opencl:9:9", ""} {
		_, err := Open(id)
		if err == nil || !strings.Contains(err.Error(), "valid ids: ") || !strings.Contains(err.Error(), "cpu") {
			t.Errorf("Open(%q): %v", id, err)
		}
	}
}

func TestOpenEveryDevice(t *testing.T) {
	devs, _ := Devices()
	for _, info := range devs {
		d, err := Open(info.ID)
		if err != nil {
			t.Fatalf("Open(%s): %v", info.ID, err)
		}
		switch d.Kind {
		case CUDA:
			if d.CUDA == nil {
				t.Errorf("%s: no CUDA context", d.ID)
			}
		case OpenCL:
			if d.OpenCL == nil {
				t.Errorf("%s: no OpenCL context", d.ID)
			}
		}
		d.Close()
	}
}

// TestCPUPeaksKept: the CPU's bandwidth is measured once per machine and
// kept, so that every cell and command of a run agrees; remeasuring
// replaces it; a kept figure of another CPU is not used.
func TestCPUPeaksKept(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cpuBW.Lock()
	cpuBW.kept = nil
	cpuBW.Unlock()
	first := cpuBandwidth()
	data, err := os.ReadFile(CPUPeaksPath())
	if err != nil || first.GBps <= 0 {
		t.Fatalf("not kept: %v %+v", err, first)
	}
	// Another process (no figure in memory) reads the same one.
	cpuBW.Lock()
	cpuBW.kept = nil
	cpuBW.Unlock()
	if again := cpuBandwidth(); again != first {
		t.Errorf("read back %+v, kept %+v", again, first)
	}
	if info := cpuInfo(); info.PeakGBps != first.GBps || !strings.Contains(info.PeakNote, "lab devices --remeasure") {
		t.Errorf("cpu info %+v", info)
	}
	// A figure kept for another CPU is measured again.
	os.WriteFile(CPUPeaksPath(), []byte(strings.Replace(string(data), `"model": "`, `"model": "another `, 1)), 0o644)
	cpuBW.Lock()
	cpuBW.kept = nil
	cpuBW.Unlock()
	if p := cpuBandwidth(); strings.HasPrefix(p.Model, "another") {
		t.Errorf("used another CPU's figure: %+v", p)
	}
}

// TestOpenDevices: an id opens its one device; all-gpus opens every CUDA
// device, or says why there is none.
func TestOpenDevices(t *testing.T) {
	devs, err := OpenDevices("cpu")
	if err != nil || len(devs) != 1 || devs[0].Info.ID != "cpu" {
		t.Fatalf("OpenDevices(cpu) = %v, %v; want the CPU alone", devs, err)
	}
	if _, err := OpenDevices("cuda:99"); err == nil {
		t.Errorf("OpenDevices(cuda:99): want an error")
	}
	all, err := OpenDevices(AllGPUs)
	cudaIDs := 0
	for _, id := range IDs() {
		if strings.HasPrefix(id, "cuda:") {
			cudaIDs++
		}
	}
	switch {
	case cudaIDs == 0 && (err == nil || !strings.Contains(err.Error(), "no CUDA device to open for all-gpus")):
		t.Errorf("OpenDevices(all-gpus) without a GPU = %v, %v; want an error saying there is none", all, err)
	case cudaIDs > 0 && (err != nil || len(all) != cudaIDs || all[0].Info.ID != "cuda:0"):
		t.Errorf("OpenDevices(all-gpus) = %d devices, %v; want the %d CUDA devices, cuda:0 first", len(all), err, cudaIDs)
	}
}
