package engine

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

func TestStatusBytes(t *testing.T) {
	status := "Name:\tlab\nVmPeak:\t  2000 kB\nVmSize:\t  1536 kB\nVmData:\t bad kB\nVmStk:\t 132\n"
	for _, tc := range []struct {
		field string
		want  uint64
		ok    bool
	}{
		{"VmSize", 1536 << 10, true},
		{"VmPeak", 2000 << 10, true},
		{"VmData", 0, false}, // not a number
		{"VmStk", 0, false},  // no unit
		{"VmRSS", 0, false},  // absent
	} {
		if got, ok := statusBytes(status, tc.field); got != tc.want || ok != tc.ok {
			t.Errorf("statusBytes(%s) = %d, %v; want %d, %v", tc.field, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRoom(t *testing.T) {
	for _, tc := range []struct{ limit, used, want uint64 }{
		{math.MaxUint64, 1 << 40, math.MaxUint64}, // RLIM_INFINITY
		{4 << 30, 1 << 30, 3 << 30},
		{4 << 30, 4 << 30, 0},
		{4 << 30, 5 << 30, 0}, // already past the limit
	} {
		if got := room(tc.limit, tc.used); got != tc.want {
			t.Errorf("room(%d, %d) = %d, want %d", tc.limit, tc.used, got, tc.want)
		}
	}
}

// TestCgroupRoom: the least room under any memory limit from the process's
// cgroup up to the hierarchy's root, in cgroup v2 and v1 layouts; no limit
// ("max", or v1's near-2^63 figure) and unreadable files count as none.
func TestCgroupRoom(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s + "\n")} }
	const v1None = "9223372036854771712"
	for _, tc := range []struct {
		name    string
		cgroups string
		sysfs   fstest.MapFS
		want    uint64
	}{
		{"v2, the container's own limit at the mount's root", "0::/\n", fstest.MapFS{
			"memory.max": file("4294967296"), "memory.current": file("1073741824")}, 3 << 30},
		{"v2, a tighter limit above the process's cgroup", "0::/user.slice/job\n", fstest.MapFS{
			"user.slice/job/memory.max": file("max"), "user.slice/job/memory.current": file("100"),
			"user.slice/memory.max": file("2147483648"), "user.slice/memory.current": file("1610612736")}, 512 << 20},
		{"v2, no limit anywhere", "0::/a\n", fstest.MapFS{
			"a/memory.max": file("max"), "a/memory.current": file("5")}, math.MaxUint64},
		{"v2, a limit already passed", "0::/a\n", fstest.MapFS{
			"a/memory.max": file("1000"), "a/memory.current": file("2000")}, 0},
		{"v1, the memory controller's line", "4:memory:/process_api/x\n3:cpuset:/\n0::/\n", fstest.MapFS{
			"memory/process_api/x/memory.limit_in_bytes": file("8589934592"), "memory/process_api/x/memory.usage_in_bytes": file("2147483648"),
			"memory/process_api/memory.limit_in_bytes": file(v1None), "memory/process_api/memory.usage_in_bytes": file("1"),
			"memory/memory.limit_in_bytes": file(v1None), "memory/memory.usage_in_bytes": file("1")}, 6 << 30},
		{"v1, controllers sharing a line", "5:cpu,memory:/j\n", fstest.MapFS{
			"memory/j/memory.limit_in_bytes": file("3000"), "memory/j/memory.usage_in_bytes": file("1000")}, 2000},
		{"unreadable and malformed files", "0::/a\ngarbage\n", fstest.MapFS{
			"a/memory.max": file("12 MiB"), "a/memory.current": file("1")}, math.MaxUint64},
	} {
		if got := cgroupRoom(tc.cgroups, tc.sysfs); got != tc.want {
			t.Errorf("%s: cgroupRoom = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// rlimitChildEnv makes the test binary, run again by
// TestHostMemoryAvailableUnderRlimit, lower its own address-space limit and
// print what HostMemoryAvailable says.
const rlimitChildEnv = "GPULAB_TEST_RLIMIT_AS_ROOM"

// TestHostMemoryAvailableUnderRlimit: under `ulimit -v`, the available
// figure is at most the room left under the limit, however much memory
// the host has free. A child process lowers its own limit (to what it
// already uses plus the room asked for) and reports the figure.
func TestHostMemoryAvailableUnderRlimit(t *testing.T) {
	if s := os.Getenv(rlimitChildEnv); s != "" {
		extra, _ := strconv.ParseUint(s, 10, 64)
		status, err := os.ReadFile("/proc/self/status")
		used, ok := statusBytes(string(status), "VmSize")
		if err != nil || !ok {
			fmt.Printf("no VmSize: %v\n", err)
			os.Exit(2)
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: used + extra, Max: math.MaxUint64}); err != nil {
			fmt.Printf("setrlimit: %v\n", err)
			os.Exit(2)
		}
		avail, err := HostMemoryAvailable()
		fmt.Printf("%d %v\n", avail, err)
		os.Exit(0)
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	const extra = 512 << 20
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostMemoryAvailableUnderRlimit$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", rlimitChildEnv, extra), HostMemoryEnv+"=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	var avail uint64
	var childErr string
	if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &avail, &childErr); err != nil || childErr != "<nil>" {
		t.Fatalf("child printed %q", out)
	}
	// The child's own allocations between reading VmSize and the check
	// only lower the figure.
	if avail == 0 || avail > extra {
		t.Errorf("under an address-space limit %d bytes above what the process used, HostMemoryAvailable = %d; want 0 < it ≤ %d", extra, avail, extra)
	}
}

// TestCheckRun: host and device needs are checked where they live; a
// device whose buffers are host memory (PoCL) adds its need to the host's,
// and the CPU backend's device need is not counted twice.
func TestCheckRun(t *testing.T) {
	t.Setenv(HostMemoryEnv, "1000")
	host, dev := Need{Bytes: 600, Holds: "inputs"}, Need{Bytes: 600, Holds: "buffers"}
	for _, tc := range []struct {
		name   string
		d      Device
		host   Need
		device Need
		where  string // the MemoryError's Where; "" for no error
		need   uint64
	}{
		{"cpu", Device{Info: Info{ID: "cpu", Kind: CPU}}, host, dev, "", 0},
		{"cpu, too much", Device{Info: Info{ID: "cpu", Kind: CPU}}, Need{Bytes: 1001, Holds: "inputs"}, dev, "host", 1001},
		{"pocl: both in host memory", Device{Info: Info{ID: "opencl:0:0", Kind: OpenCL, InHostMemory: true, MemoryBytes: 1 << 40}}, host, dev, "host", 1200},
		{"pocl: fits", Device{Info: Info{ID: "opencl:0:0", Kind: OpenCL, InHostMemory: true, MemoryBytes: 1 << 40}}, Need{Bytes: 300}, Need{Bytes: 600}, "", 0},
		{"a GPU's OpenCL: its own memory", Device{Info: Info{ID: "opencl:1:0", Kind: OpenCL, MemoryBytes: 500}}, host, dev, "opencl:1:0", 600},
		{"a GPU's OpenCL: fits", Device{Info: Info{ID: "opencl:1:0", Kind: OpenCL, MemoryBytes: 1 << 30}}, host, dev, "", 0},
	} {
		err := tc.d.CheckRun("run", tc.host, tc.device)
		var me *MemoryError
		switch {
		case tc.where == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.where != "" && !errors.As(err, &me):
			t.Errorf("%s: error %v, want a MemoryError", tc.name, err)
		case tc.where != "" && (me.Where != tc.where || me.Need != tc.need):
			t.Errorf("%s: %s needs %d, want %s and %d: %v", tc.name, me.Where, me.Need, tc.where, tc.need, err)
		}
	}
}
