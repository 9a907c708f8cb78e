package sandbox

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TrampolineArg is the hidden first argument that makes a binary act as the
// trampoline: the lab command's main calls ExecMain(os.Args[2:]) when
// os.Args[1] == TrampolineArg.
const TrampolineArg = "sandbox-exec"

// IsTrampoline reports whether this process was started as the trampoline.
// A TestMain of a package that uses this one does
//
//	if sandbox.IsTrampoline() {
//		err := sandbox.ExecMain(os.Args[2:])
//		fmt.Fprintln(os.Stderr, err)
//		os.Exit(127)
//	}
func IsTrampoline() bool { return len(os.Args) > 1 && os.Args[1] == TrampolineArg }

// Limits are the resource limits of a sandboxed process (0 = not set).
// RLIMIT_CORE is always 0.
type Limits struct {
	AddressSpace int64         // RLIMIT_AS, bytes (CPU-only workers)
	Data         int64         // RLIMIT_DATA, bytes (GPU workers: the CUDA driver reserves huge address ranges, so RLIMIT_AS cannot be used there)
	CPU          time.Duration // RLIMIT_CPU (rounded up to seconds)
	Procs        int           // RLIMIT_NPROC = the sandbox user's current number of processes+threads + Procs
	FileSize     int64         // RLIMIT_FSIZE, bytes
	OpenFiles    int           // RLIMIT_NOFILE
}

// rlimit is one field of Limits: how the trampoline receives it, which
// resource it limits and how Describe names it.
type rlimit struct {
	flag     string
	resource int
	value    func(Limits) int64
	describe func(int64) string
}

// rlimits lists the fields of Limits in Describe's order. The trampoline
// applies them in reverse, so that the memory limits come last, right before
// the exec.
var rlimits = []rlimit{
	{"as", unix.RLIMIT_AS, func(l Limits) int64 { return l.AddressSpace },
		func(n int64) string { return "address space " + formatBytes(n) }},
	{"data", unix.RLIMIT_DATA, func(l Limits) int64 { return l.Data },
		func(n int64) string { return "data " + formatBytes(n) }},
	{"cpu", unix.RLIMIT_CPU, func(l Limits) int64 { return int64((l.CPU + time.Second - 1) / time.Second) },
		func(n int64) string { return fmt.Sprintf("CPU %d s", n) }},
	{"procs", unix.RLIMIT_NPROC, func(l Limits) int64 { return int64(l.Procs) }, // relative: ExecMain adds the uid's tasks
		func(n int64) string { return fmt.Sprintf("processes +%d", n) }},
	{"fsize", unix.RLIMIT_FSIZE, func(l Limits) int64 { return l.FileSize },
		func(n int64) string { return "file size " + formatBytes(n) }},
	{"nofile", unix.RLIMIT_NOFILE, func(l Limits) int64 { return int64(l.OpenFiles) },
		func(n int64) string { return fmt.Sprintf("open files %d", n) }},
}

func (l Limits) validate() error {
	for _, r := range rlimits {
		if r.value(l) < 0 {
			return fmt.Errorf("sandbox: limit %s is negative", r.flag)
		}
	}
	return nil
}

// flags are the trampoline's arguments that carry l.
func (l Limits) flags() []string {
	var flags []string
	for _, r := range rlimits {
		if v := r.value(l); v > 0 {
			flags = append(flags, fmt.Sprintf("-%s=%d", r.flag, v))
		}
	}
	return flags
}

// describe lists the limits that are set, for Describe.
func (l Limits) describe() string {
	var parts []string
	for _, r := range rlimits {
		if v := r.value(l); v > 0 {
			parts = append(parts, r.describe(v))
		}
	}
	return strings.Join(append(parts, "no core dumps"), ", ")
}

// ExecMain is the trampoline: args are the limits as flags, "--", and the
// program with its arguments. It sets the limits on itself (and
// PR_SET_NO_NEW_PRIVS, so that no set-user-ID program can lift them) and then
// executes the program, which is bwrap or, in the fallback, the submission.
// It never returns on success.
func ExecMain(args []string) error {
	fs := flag.NewFlagSet(TrampolineArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	values := make([]int64, len(rlimits))
	for i, r := range rlimits {
		fs.Int64Var(&values[i], r.flag, 0, "")
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", TrampolineArg, err)
	}
	argv := fs.Args()
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return fmt.Errorf("%s: want limits, --, and an absolute program path; got %q", TrampolineArg, args)
	}
	// Everything the exec needs is made before the first limit: under a
	// small address-space limit the Go runtime can map no more memory, and
	// an allocation that needs some is a fatal error, not an error value
	// (it was, once in a while, for a trampoline already near its limit).
	// So the limits, the task count included, are figured first, the
	// collector is stopped, and nothing is allocated from the first
	// setrlimit to the execve.
	limits := make([]unix.Rlimit, len(rlimits))
	for i, r := range rlimits {
		v := values[i]
		if v > 0 && r.resource == unix.RLIMIT_NPROC {
			n, err := countTasks(os.Getuid())
			if err != nil {
				return fmt.Errorf("%s: %w", TrampolineArg, err)
			}
			v += int64(n)
		}
		limits[i] = unix.Rlimit{Cur: uint64(v), Max: uint64(v)}
	}
	path, err := unix.BytePtrFromString(argv[0])
	if err != nil {
		return fmt.Errorf("%s: exec %s: %w", TrampolineArg, argv[0], err)
	}
	argvp, err := cStrings(argv)
	if err != nil {
		return fmt.Errorf("%s: exec %s: %w", TrampolineArg, argv[0], err)
	}
	envp, err := cStrings(os.Environ())
	if err != nil {
		return fmt.Errorf("%s: exec %s: environment: %w", TrampolineArg, argv[0], err)
	}
	noCore := unix.Rlimit{}
	debug.SetGCPercent(-1)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("%s: PR_SET_NO_NEW_PRIVS: %w", TrampolineArg, err)
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &noCore); err != nil {
		return fmt.Errorf("%s: RLIMIT_CORE: %w", TrampolineArg, err)
	}
	for i := len(rlimits) - 1; i >= 0; i-- {
		if values[i] <= 0 {
			continue
		}
		// Both the soft and the hard limit, so the program cannot raise it.
		if err := unix.Setrlimit(rlimits[i].resource, &limits[i]); err != nil {
			return fmt.Errorf("%s: limit %s=%d: %w", TrampolineArg, rlimits[i].flag, limits[i].Cur, err)
		}
	}
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(path)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	runtime.KeepAlive(path)
	runtime.KeepAlive(argvp)
	runtime.KeepAlive(envp)
	return fmt.Errorf("%s: exec %s: %w", TrampolineArg, argv[0], errno)
}

// cStrings is ss as the NUL-terminated array of NUL-terminated strings
// that execve takes.
func cStrings(ss []string) ([]*byte, error) {
	out := make([]*byte, len(ss)+1)
	for i, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// countTasks counts the processes and threads whose real uid is uid, which
// is what RLIMIT_NPROC limits.
func countTasks(uid int) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("counting the tasks of uid %d: %w", uid, err)
	}
	total := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, err := readStatus(pid)
		if err != nil {
			continue // it ended meanwhile
		}
		if s.uid == uid {
			total += s.threads
		}
	}
	return total, nil
}

// procStatus is what /proc/PID/status tells the sandbox.
type procStatus struct {
	uid     int // real uid
	threads int
}

func readStatus(pid int) (procStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStatus{}, err
	}
	defer f.Close()
	s := procStatus{uid: -1}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "Uid":
			s.uid, err = strconv.Atoi(fields[0])
		case "Threads":
			s.threads, err = strconv.Atoi(fields[0])
		}
		if err != nil {
			return procStatus{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
		}
	}
	if err := sc.Err(); err != nil {
		return procStatus{}, err
	}
	if s.uid < 0 {
		return procStatus{}, errors.New("no Uid line in /proc/" + strconv.Itoa(pid) + "/status")
	}
	return s, nil
}
