// Package sandbox runs hostile programs — the student submissions that lab
// grade executes — each in its own process, isolated from the grading machine
// and from each other.
//
// Threat model: a submission is arbitrary code running with the rights of the
// sandbox user (uid 65534 when the grader is root). It may try to read or
// write files outside the directories it is given, reach the network, exhaust
// memory, CPU time, disk space, file descriptors or process slots, and outlive
// its time limit by forking, double-forking or calling setsid. Isolation comes
// from bubblewrap (mount, pid, network, ipc, uts and user namespaces over a
// read-only view of the system, no capabilities, no new privileges) and from
// resource limits that a trampoline sets on itself before it becomes bwrap, so
// that they bind from the first instruction. At the time limit the process
// group is killed, and after every run all leftover processes of the sandbox
// are swept. Where bubblewrap cannot run, only the resource limits, the
// unprivileged uid and the sweep remain, and the Sandbox says so. Kernel
// exploits, side channels and GPU isolation are out of scope.
//
// The caller reserves uid 65534 for sandboxed runs: a sweep kills every
// descendant of the caller that runs as it and belongs to no other live run.
// A root caller that does not set DropUser runs the submission as root (under
// bwrap without capabilities), and RLIMIT_NPROC does not bind root.
package sandbox

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"gpulab/engine/atomicfile"

	"golang.org/x/sys/unix"
)

// Options configure New.
type Options struct {
	Bwrap   string // path of bwrap; "" = $GPULAB_BWRAP, else "bwrap" on PATH
	Disable bool   // do not use bwrap (tests of the fallback, and `lab grade --sandbox none`)
	WorkDir string // a directory of the caller's; New puts the trampoline copy there (must be traversable by uid 65534: New chmods it 0755)
}

// Sandbox is how submissions are isolated on this machine.
type Sandbox struct {
	bwrap        string // absolute path of bwrap; "" in the fallback
	bwrapVersion string // first line of `bwrap --version`
	reason       string // why bwrap is not in use
	trampoline   string // the copy of the running executable that sets the limits
	workDir      string
	root         bool // the caller is root, so DropUser takes effect
}

const (
	// nobody is the uid and gid that DropUser runs the sandboxed process as.
	nobody = 65534
	// defaultTmpSize is the size of the private /tmp when Spec.TmpSize is 0.
	defaultTmpSize = 256 << 20
	// probeTimeout bounds New's trial run.
	probeTimeout = 10 * time.Second
	// probeProgram is what New's trial run executes.
	probeProgram = "/bin/true"
)

// New probes the machine. It copies the running executable to
// WorkDir/trampoline (mode 0555, so that uid 65534 can run it) and makes the
// calling process a child subreaper, so that orphaned descendants of sandboxed
// processes are reparented to it and can be swept. Then, unless Disable is
// set, it runs /bin/true under bwrap exactly as Start would (with DropUser
// when root). If bwrap is missing or that trial fails, the Sandbox falls back:
// Bwrap() is "" and Reason() says why, with bwrap's first line of stderr.
// New fails if the trial fails in the fallback too.
func New(o Options) (*Sandbox, error) {
	if o.WorkDir == "" {
		return nil, errors.New("sandbox: Options.WorkDir is empty")
	}
	workDir, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: work directory: %w", err)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: work directory: %w", err)
	}
	if err := os.Chmod(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: work directory: %w", err)
	}
	root := os.Geteuid() == 0
	if root {
		if err := checkTraversable(workDir); err != nil {
			return nil, err
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("sandbox: becoming a child subreaper: %w", err)
	}
	trampoline := filepath.Join(workDir, "trampoline")
	if err := installTrampoline(trampoline); err != nil {
		return nil, fmt.Errorf("sandbox: installing the trampoline: %w", err)
	}
	s := &Sandbox{trampoline: trampoline, workDir: workDir, root: root}
	if o.Disable {
		s.reason = "disabled"
	} else if err := s.useBwrap(cmp.Or(o.Bwrap, os.Getenv("GPULAB_BWRAP"), "bwrap")); err != nil {
		s.reason = err.Error()
	} else {
		return s, nil
	}
	if err := s.probe(); err != nil {
		return nil, fmt.Errorf("%w (in the fallback; bwrap: %s)", err, s.reason)
	}
	return s, nil
}

// checkTraversable makes sure that uid 65534 can reach the trampoline in
// dir: dir and every directory above it must be searchable by others.
func checkTraversable(dir string) error {
	for ; ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("sandbox: work directory: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox: uid %d cannot reach the work directory: %s has mode %v", nobody, dir, fi.Mode().Perm())
		}
		if dir == "/" {
			return nil
		}
	}
}

// Bwrap is the path of the bwrap in use, "" in the fallback.
func (s *Sandbox) Bwrap() string { return s.bwrap }

// Reason says why bwrap is not in use ("" when it is).
func (s *Sandbox) Reason() string { return s.reason }

// Executable is the trampoline copy of the running executable, which uid
// 65534 can read and run: a Spec.Path that starts this very program in the
// sandbox (as a worker, say).
func (s *Sandbox) Executable() string { return s.trampoline }

// Describe is one line for the grade table and the log: what a process
// that Start runs with spec's limits, user and private /tmp is and is not
// protected by.
func (s *Sandbox) Describe(spec Spec) string {
	if s.bwrap != "" {
		return fmt.Sprintf("%s (namespaces: mount, pid, network, ipc, uts, user; read-only system, private /tmp of %s; %s); rlimits: %s; process group killed at the time limit",
			s.bwrapVersion, formatBytes(cmp.Or(spec.TmpSize, defaultTmpSize)), s.describeUser(spec.DropUser), spec.Limits.describe())
	}
	return fmt.Sprintf("NO SANDBOX (bwrap: %s): rlimits: %s; %s; process group and orphans killed at the time limit; the submission can read the file system and use the network",
		s.reason, spec.Limits.describe(), s.describeUser(spec.DropUser))
}

// describeUser names the uid the sandboxed process runs as.
func (s *Sandbox) describeUser(dropUser bool) string {
	switch {
	case s.root && dropUser:
		return fmt.Sprintf("uid %d", nobody)
	case s.root:
		return "root, which the process limit does not bind"
	case s.bwrap != "":
		return fmt.Sprintf("uid %d, the caller's", os.Getuid())
	default:
		return fmt.Sprintf("uid %d, the caller's: the submission can signal the grader and write its files", os.Getuid())
	}
}

// useBwrap adopts the bwrap at path if a trial run under it succeeds.
func (s *Sandbox) useBwrap(path string) error {
	abs, err := exec.LookPath(path)
	if err != nil {
		return fmt.Errorf("%s not found or not executable", path)
	}
	if abs, err = filepath.Abs(abs); err != nil {
		return err
	}
	version, err := exec.Command(abs, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %v", abs, err)
	}
	s.bwrap, s.bwrapVersion = abs, cmp.Or(firstLine(string(version)), "bubblewrap")
	if err := s.probe(); err != nil {
		s.bwrap, s.bwrapVersion = "", ""
		return fmt.Errorf("%s does not start: %v", abs, err)
	}
	return nil
}

// probe runs probeProgram the way Start runs a submission. The error carries
// the first line of the program's (or bwrap's, or the trampoline's) stderr.
func (s *Sandbox) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var stderr bytes.Buffer
	p, err := s.Start(ctx, Spec{Path: probeProgram, Stderr: &stderr, DropUser: true})
	if err != nil {
		return err
	}
	if err := p.Wait(); err != nil {
		if line := firstLine(stderr.String()); line != "" {
			return fmt.Errorf("%s", line)
		}
		return err
	}
	return nil
}

// installTrampoline copies the running executable to path, mode 0555. The
// copy is renamed into place (atomicfile) so that a trampoline in use is
// never rewritten.
func installTrampoline(path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := atomicfile.Write(path, func(w *bufio.Writer) error {
		_, err := io.Copy(w, src)
		return err
	}); err != nil {
		return err
	}
	return os.Chmod(path, 0o555)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// formatBytes writes n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
