package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// HostMemoryEnv names the environment variable that caps, in bytes, the host
// memory the lab counts as available (HostMemoryAvailable): a limit that
// neither /proc/meminfo, the rlimits nor the cgroup shows, or a small figure
// under which a test sees the checks refuse without allocating anything.
const HostMemoryEnv = "GPULAB_HOST_MEMORY"

// HostMemoryAvailable returns the bytes of host memory that new allocations
// can take, the least of:
//   - MemAvailable of /proc/meminfo (what the kernel can hand out without
//     swapping);
//   - the room left under the process's address-space and data rlimits
//     (ulimit -v, ulimit -d; the grader's sandbox sets one of them): the
//     limit less VmSize or VmData of /proc/self/status;
//   - the room left under the memory limit of the process's cgroup and of
//     every cgroup above it (a container's limit, cgroup v2 or v1);
//   - $GPULAB_HOST_MEMORY, when it is set.
//
// A value of the variable that is not a number of bytes is an error, and so
// is a missing /proc/meminfo (off Linux) unless the variable gives the
// figure.
func HostMemoryAvailable() (uint64, error) {
	limit := uint64(math.MaxUint64)
	if s := os.Getenv(HostMemoryEnv); s != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("engine: $%s = %q: want a number of bytes", HostMemoryEnv, s)
		}
		limit = n
	}
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		if limit != math.MaxUint64 {
			return limit, nil
		}
		return 0, fmt.Errorf("engine: host memory: %w", err)
	}
	avail, err := memAvailable(string(data))
	if err != nil {
		return 0, err
	}
	status, _ := os.ReadFile("/proc/self/status") // without it, the rlimits are not counted
	for _, r := range []struct {
		resource int
		used     string
	}{{syscall.RLIMIT_AS, "VmSize"}, {syscall.RLIMIT_DATA, "VmData"}} {
		var rl syscall.Rlimit
		if syscall.Getrlimit(r.resource, &rl) == nil {
			if used, ok := statusBytes(string(status), r.used); ok {
				avail = min(avail, room(rl.Cur, used))
			}
		}
	}
	if cgroups, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		avail = min(avail, cgroupRoom(string(cgroups), os.DirFS("/sys/fs/cgroup")))
	}
	return min(avail, limit), nil
}

// BytesOf is a byte count figured in float64, so that no product of sizes
// from a flag or a header can overflow it, as a Need's Bytes: the largest
// uint64 for anything beyond.
func BytesOf(n float64) uint64 {
	if n >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(n)
}

// room is what a limit leaves once used bytes are taken: all of it for an
// unlimited rlimit (RLIM_INFINITY is the largest uint64), none past it.
func room(limit, used uint64) uint64 {
	switch {
	case limit == math.MaxUint64:
		return math.MaxUint64
	case used >= limit:
		return 0
	}
	return limit - used
}

// statusBytes reads a "Field:  N kB" line of /proc/self/status's text.
func statusBytes(status, field string) (uint64, bool) {
	n, _, ok := kBLine(status, field)
	return n, ok
}

// kBLine finds the "Field:  N kB" line of a /proc file's text (meminfo,
// status) and returns its bytes and the line; ok is false where the line
// is missing (line "") or is not of that form.
func kBLine(text, field string) (bytes uint64, line string, ok bool) {
	for l := range strings.Lines(text) {
		rest, found := strings.CutPrefix(l, field+":")
		if !found {
			continue
		}
		if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
			if kB, err := strconv.ParseUint(f[0], 10, 53); err == nil {
				return kB << 10, l, true
			}
		}
		return 0, l, false
	}
	return 0, "", false
}

// cgroupRoom is the least room left under a memory limit of the cgroups
// that /proc/self/cgroup's text names, and of every cgroup above them,
// read from sysfs (the /sys/fs/cgroup hierarchy): for cgroup v2 (the line
// "0::PATH") memory.max less memory.current, for cgroup v1 (the memory
// controller's line) memory.limit_in_bytes less memory.usage_in_bytes
// under memory/. A limit of "max", or v1's figure for none (near 2^63), is
// no limit; a file that cannot be read or parsed is skipped.
func cgroupRoom(cgroups string, sysfs fs.FS) uint64 {
	avail := uint64(math.MaxUint64)
	for line := range strings.Lines(cgroups) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, limitFile, usageFile string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, limitFile, usageFile = ".", "memory.max", "memory.current"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, limitFile, usageFile = "memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		for p := path.Join(dir, f[2]); ; p = path.Dir(p) {
			limit, okL := cgroupBytes(sysfs, path.Join(p, limitFile))
			used, okU := cgroupBytes(sysfs, path.Join(p, usageFile))
			if okL && okU && limit < 1<<62 {
				avail = min(avail, room(limit, used))
			}
			if p == dir || p == "." {
				break
			}
		}
	}
	return avail
}

// cgroupBytes reads a cgroup file that holds one number of bytes.
func cgroupBytes(sysfs fs.FS, name string) (uint64, bool) {
	data, err := fs.ReadFile(sysfs, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil
}

// memAvailable reads the MemAvailable line of /proc/meminfo's text.
func memAvailable(meminfo string) (uint64, error) {
	n, line, ok := kBLine(meminfo, "MemAvailable")
	switch {
	case ok:
		return n, nil
	case line != "":
		return 0, fmt.Errorf("engine: /proc/meminfo: %q is not MemAvailable: N kB", strings.TrimSpace(line))
	}
	return 0, errors.New("engine: /proc/meminfo has no MemAvailable line")
}

// MemoryError is a refusal to allocate: what needs how many bytes of which
// memory, and how many are there.
type MemoryError struct {
	What      string // what needs the memory, e.g. "gemm 30000x30000x30000"
	For       string // what the memory holds, e.g. "A, B, C and the reference"
	Where     string // "host", or the device id whose memory it is
	Need      uint64
	Available uint64
}

func (e *MemoryError) Error() string {
	where := "host memory"
	if e.Where != "host" {
		where = "memory on " + e.Where
	}
	need := formatBytes(e.Need)
	if e.Need == math.MaxUint64 { // BytesOf's figure for more than a uint64 counts
		need = "more than " + need
	}
	return fmt.Sprintf("%s needs %s of %s for %s; %s is available", e.What, need, where, e.For, formatBytes(e.Available))
}

// formatBytes writes n in decimal units with one decimal: 10.8 GB.
func formatBytes(n uint64) string {
	for _, u := range []struct {
		size float64
		name string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if float64(n) >= u.size {
			return fmt.Sprintf("%.1f %s", float64(n)/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// CheckHostMemory returns a *MemoryError when need bytes, which what needs
// for purpose, exceed HostMemoryAvailable. Where the host does not say what
// is available (no /proc/meminfo and no $GPULAB_HOST_MEMORY) it checks
// nothing. Call it before allocating what a file's header or a flag sizes.
func CheckHostMemory(what, purpose string, need uint64) error {
	avail, err := HostMemoryAvailable()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case need > avail:
		return &MemoryError{What: what, For: purpose, Where: "host", Need: need, Available: avail}
	}
	return nil
}
