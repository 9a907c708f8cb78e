package engine

import (
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
