package engine

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
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

func TestOnCPU(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want bool
	}{
		{Info{ID: "cpu", Kind: CPU}, true},
		{Info{ID: "opencl:0:0", Kind: OpenCL, InHostMemory: true}, true}, // PoCL
		{Info{ID: "opencl:1:0", Kind: OpenCL}, false},                    // a GPU's OpenCL
		{Info{ID: "cuda:0", Kind: CUDA}, false},
	} {
		if got := tc.info.OnCPU(); got != tc.want {
			t.Errorf("%s: OnCPU = %v, want %v", tc.info.ID, got, tc.want)
		}
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
	// A figure kept without the method (measured from an unwritten source,
	// by an earlier version) is measured again.
	old := first
	old.GBps, old.Method = 1e6, ""
	data, _ = json.Marshal(old)
	os.WriteFile(CPUPeaksPath(), data, 0o644)
	cpuBW.Lock()
	cpuBW.kept = nil
	cpuBW.Unlock()
	if p := cpuBandwidth(); p.GBps == 1e6 || p.Method != cpuCopyMethod {
		t.Errorf("used a figure kept without the method: %+v", p)
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

func TestMemAvailable(t *testing.T) {
	for _, tc := range []struct {
		meminfo string
		want    uint64
		err     string
	}{
		{"MemTotal:       24684084 kB\nMemFree:  1 kB\nMemAvailable:   23965256 kB\n", 23965256 * 1024, ""},
		{"MemAvailable: 0 kB", 0, ""},
		{"MemTotal: 5 kB\n", 0, "no MemAvailable line"},
		{"MemAvailable: 12 MB\n", 0, `"MemAvailable: 12 MB" is not MemAvailable: N kB`},
		{"MemAvailable: -3 kB\n", 0, "is not MemAvailable"},
		{"MemAvailable: 99999999999999999999 kB\n", 0, "is not MemAvailable"},
	} {
		got, err := memAvailable(tc.meminfo)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("memAvailable(%q) = %d, %v; want an error with %q", tc.meminfo, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("memAvailable(%q) = %d, %v; want %d", tc.meminfo, got, err, tc.want)
		}
	}
}

// TestHostMemoryAvailable: the figure is MemAvailable, capped by
// $GPULAB_HOST_MEMORY; a variable that is not a number is an error.
func TestHostMemoryAvailable(t *testing.T) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	t.Setenv(HostMemoryEnv, "")
	avail, err := HostMemoryAvailable()
	if err != nil || avail == 0 {
		t.Fatalf("HostMemoryAvailable() = %d, %v", avail, err)
	}
	var total uint64
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kB, err := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total = kB << 10
		}
	}
	if avail > total {
		t.Errorf("available %d bytes > MemTotal %d", avail, total)
	}
	t.Setenv(HostMemoryEnv, "1000")
	if got, err := HostMemoryAvailable(); err != nil || got != 1000 {
		t.Errorf("with $%s=1000: %d, %v", HostMemoryEnv, got, err)
	}
	t.Setenv(HostMemoryEnv, "18446744073709551615")
	if got, err := HostMemoryAvailable(); err != nil || got > total {
		t.Errorf("with a cap above the host's: %d, %v; want at most MemTotal %d", got, err, total)
	}
	t.Setenv(HostMemoryEnv, "4G")
	if _, err := HostMemoryAvailable(); err == nil || !strings.Contains(err.Error(), `$GPULAB_HOST_MEMORY = "4G": want a number of bytes`) {
		t.Errorf("with $%s=4G: %v", HostMemoryEnv, err)
	}
	if err := CheckHostMemory("x", "y", 1); err == nil {
		t.Errorf("CheckHostMemory with a bad $%s: no error", HostMemoryEnv)
	}
}

func TestCheckHostMemory(t *testing.T) {
	t.Setenv(HostMemoryEnv, "3900000000")
	if _, err := os.Stat("/proc/meminfo"); err == nil {
		if avail, _ := HostMemoryAvailable(); avail < 3900000000 {
			t.Skipf("this host has only %d bytes available, under the cap the test sets", avail)
		}
	}
	if err := CheckHostMemory("gemm 30000x30000x30000", "A, B, C and the reference", 3900000000); err != nil {
		t.Errorf("what is available: %v", err)
	}
	err := CheckHostMemory("gemm 30000x30000x30000", "A, B, C and the reference", 10800000000)
	var me *MemoryError
	if !errors.As(err, &me) || me.Need != 10800000000 || me.Available != 3900000000 || me.Where != "host" {
		t.Fatalf("CheckHostMemory = %#v; want a *MemoryError of 10.8e9 needed and 3.9e9 available", err)
	}
	if want := "gemm 30000x30000x30000 needs 10.8 GB of host memory for A, B, C and the reference; 3.9 GB is available"; err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	dev, err := Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.CheckMemory("w", "p", 3900000001); !errors.As(err, &me) || me.Where != "host" {
		t.Errorf("the CPU device's memory is the host's: %v", err)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 bytes", 999: "999 bytes", 1000: "1.0 kB", 16 << 20: "16.8 MB", 10_800_000_000: "10.8 GB", 2e12: "2.0 TB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCheckDeviceMemory: on a CUDA device the check is against what
// cuMemGetInfo says is free; it needs no allocation to refuse.
func TestCheckDeviceMemory(t *testing.T) {
	var id string
	for _, i := range IDs() {
		if strings.HasPrefix(i, "cuda:") {
			id = i
			break
		}
	}
	if id == "" {
		t.Skip("no CUDA device: the device-memory check is for CUDA's free memory")
	}
	d, err := Open(id)
	if err != nil {
		t.Fatal(err)
	}
	free, total, err := d.CUDA.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d of %d bytes free", id, free, total)
	if err := d.CheckMemory("a test", "nothing", 1<<20); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	err = d.CheckMemory("a test", "nothing", total+1)
	var me *MemoryError
	if !errors.As(err, &me) || me.Where != id || me.Available > total || !strings.Contains(err.Error(), "of memory on "+id) {
		t.Errorf("more than the device has: %v", err)
	}
}
