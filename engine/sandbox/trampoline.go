package sandbox

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

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
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("%s: PR_SET_NO_NEW_PRIVS: %w", TrampolineArg, err)
	}
	if err := setRlimit(unix.RLIMIT_CORE, 0); err != nil {
		return fmt.Errorf("%s: RLIMIT_CORE: %w", TrampolineArg, err)
	}
	for i := len(rlimits) - 1; i >= 0; i-- {
		v := values[i]
		if v <= 0 {
			continue
		}
		if rlimits[i].resource == unix.RLIMIT_NPROC {
			n, err := countTasks(os.Getuid())
			if err != nil {
				return fmt.Errorf("%s: %w", TrampolineArg, err)
			}
			v += int64(n)
		}
		if err := setRlimit(rlimits[i].resource, uint64(v)); err != nil {
			return fmt.Errorf("%s: limit %s=%d: %w", TrampolineArg, rlimits[i].flag, v, err)
		}
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	return fmt.Errorf("%s: exec %s: %w", TrampolineArg, argv[0], err)
}

// setRlimit sets both the soft and the hard limit, so the program cannot
// raise it again.
func setRlimit(resource int, v uint64) error {
	return unix.Setrlimit(resource, &unix.Rlimit{Cur: v, Max: v})
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
