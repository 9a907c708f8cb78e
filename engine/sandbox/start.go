package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"gpulab/engine/interrupt"
	"gpulab/engine/proctree"

	"golang.org/x/sys/unix"
)

// Spec is one sandboxed process.
type Spec struct {
	Path           string     // the program (absolute); must be readable+executable by the sandbox user
	Args           []string   // arguments after the program name
	Env            []string   // the complete environment, KEY=VALUE; nothing else is inherited
	ReadOnly       []string   // extra host paths bound read-only at the same path (skipped if missing)
	Writable       []string   // host paths bound read-write at the same path (e.g. a build directory)
	Hide           []string   // host paths hidden inside: a directory gets an empty read-only tmpfs, a file /dev/null; only paths that exist and lie under a bound path matter
	Devices        []string   // device nodes passed in with --dev-bind-try; glob patterns allowed (/dev/nvidia*)
	Dir            string     // working directory inside; default the private temp dir /tmp
	TmpSize        int64      // size of the private tmpfs at /tmp (default 256 MiB)
	ExtraFiles     []*os.File // become fd 3, 4, ... in the sandboxed program
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Limits         Limits
	DropUser       bool // when the caller is root: run as uid/gid 65534 (nobody) with no supplementary groups
}

// systemDirs are bound read-only (or recreated as symlinks) inside bwrap.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys", "/opt"}

const (
	// tokenEnv names the environment variable that marks the processes of
	// one sandboxed run, for the sweep.
	tokenEnv = "GPULAB_SANDBOX_TOKEN"
	// waitDelay bounds how long Wait waits for output after the process
	// ended or was killed, when a descendant keeps stdout or stderr open.
	waitDelay = time.Second
)

// Process is a started sandboxed process.
type Process struct {
	cmd        *exec.Cmd
	ctx        context.Context
	path       string   // Spec.Path, for errors
	root       int      // pid of the trampoline (which becomes bwrap or the program); also its process group
	token      string   // value of tokenEnv in this run's environment
	sandboxUID int      // 65534 when DropUser took effect, else -1: no uid marks this run's processes
	tmpDir     string   // the fallback's private temp dir, removed by Wait
	bwrapInfo  *os.File // read end of bwrap's --info-fd pipe
	bwrapInit  int      // pid of bwrap's init in the new pid namespace, once read from bwrapInfo; guarded by live
	canceled   atomic.Bool
	known      map[proctree.ID]bool // processes found to be this run's, guarded by live
	forget     func()               // ends the registration of kill with package interrupt
}

// Pid is the process id of the started process (bwrap's, when bwrap is in use).
func (p *Process) Pid() int { return p.root }

// Start starts spec in its own process group, with SIGKILL as its parent
// death signal, through the trampoline that sets spec.Limits: under bwrap, or
// in the fallback directly, with TMPDIR and HOME in a private temp dir under
// WorkDir. See the package documentation for what each mode protects.
func (s *Sandbox) Start(ctx context.Context, spec Spec) (*Process, error) {
	if ctx == nil {
		return nil, errors.New("sandbox: nil context")
	}
	if err := spec.validate(); err != nil {
		return nil, err
	}
	drop := spec.DropUser && s.root
	p := &Process{ctx: ctx, path: spec.Path, token: rand.Text(), sandboxUID: -1, known: map[proctree.ID]bool{}}
	if drop {
		p.sandboxUID = nobody
	}
	args := append([]string{s.trampoline, TrampolineArg}, spec.Limits.flags()...)
	args = append(args, "--")
	tokenVar := tokenEnv + "=" + p.token
	var env []string
	var dir string
	extraFiles := spec.ExtraFiles
	if s.bwrap != "" {
		bwrapArgs, err := s.bwrapArgs(spec, drop)
		if err != nil {
			return nil, err
		}
		args = append(append(args, s.bwrap), bwrapArgs...)
		env = []string{tokenVar} // for bwrap's own processes; the submission's environment is spec.Env
		infoR, infoW, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		defer infoW.Close()
		p.bwrapInfo = infoR
		extraFiles = append(slices.Clip(extraFiles), infoW) // the fd that bwrapArgs names in --info-fd
	} else {
		tmp, err := s.privateTmp(drop)
		if err != nil {
			return nil, err
		}
		p.tmpDir = tmp
		args = append(append(args, spec.Path), spec.Args...)
		env = append(slices.Clip(spec.Env), "TMPDIR="+tmp, "HOME="+tmp, tokenVar)
		dir = cmp.Or(spec.Dir, tmp)
	}

	cmd := exec.CommandContext(ctx, s.trampoline)
	cmd.Args, cmd.Env, cmd.Dir = args, env, dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = spec.Stdin, spec.Stdout, spec.Stderr, extraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if drop {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
	}
	cmd.Cancel = p.cancel
	cmd.WaitDelay = waitDelay
	p.cmd = cmd

	// Until Wait, a SIGINT or SIGTERM that ends the caller kills the run
	// too (package interrupt).
	forget, err := interrupt.Register(func() (func(), error) {
		live.Lock()
		defer live.Unlock()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		p.root = cmd.Process.Pid
		live.procs[p.root] = p
		return p.kill, nil
	})
	if err != nil {
		p.release()
		return nil, fmt.Errorf("sandbox: starting %s: %w", spec.Path, err)
	}
	p.forget = forget
	return p, nil
}

// kill kills every process of the run, reaps the root (the caller exits
// before its Wait would) and removes the private temp dir: the cleanup of
// a caller that is interrupted.
func (p *Process) kill() {
	syscall.Kill(-p.root, syscall.SIGKILL)
	p.sweep()
	unix.Wait4(p.root, nil, unix.WNOHANG, nil)
	p.release()
}

// Wait waits for the process and sweeps: as soon as the process has ended
// it kills every process left over from the run and reaps those reparented
// to the caller, so that leftovers holding stdout or stderr open do not delay
// Wait. (Output held open by a process the sweep cannot attribute is given
// up waitDelay after the end.) When the context ends first, the process group
// and every process of the run are killed, and the error wraps the context's
// error. Otherwise the error is the process's, as from exec.Cmd.Wait.
func (p *Process) Wait() error {
	exitErr := p.awaitExit()
	p.readBwrapInit()
	sweepErr := errors.Join(exitErr, p.sweep())
	err := p.cmd.Wait()
	live.Lock()
	delete(live.procs, p.root)
	live.Unlock()
	if p.canceled.Load() {
		ctxErr := p.ctx.Err()
		if err == nil || errors.Is(err, ctxErr) {
			err = fmt.Errorf("sandbox: %s killed: %w", p.path, ctxErr)
		} else {
			err = fmt.Errorf("sandbox: %s killed: %w: %w", p.path, ctxErr, err)
		}
	}
	if cleanupErr := errors.Join(sweepErr, p.release()); cleanupErr != nil {
		err = errors.Join(err, cleanupErr)
	}
	p.forget()
	return err
}

// awaitExit blocks until the root process has ended, leaving it for
// exec.Cmd.Wait to reap.
func (p *Process) awaitExit() error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.root, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("sandbox: waiting for %s: %w", p.path, err)
			}
			return nil
		}
	}
}

// cancel is the exec.Cmd's Cancel: it kills the process group at once and
// then every other process of this run that it can find.
func (p *Process) cancel() error {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	p.canceled.Store(true)
	_, err := p.killRound()
	return err
}

// readBwrapInit learns the pid of bwrap's init from what bwrap wrote to
// --info-fd (nothing, if it died first). bwrap does not reap its init, so
// when the init ends it is a zombie child of the caller, and since it runs in
// a new session without the token readable, only its pid identifies it.
func (p *Process) readBwrapInit() {
	if p.bwrapInfo == nil {
		return
	}
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if json.NewDecoder(p.bwrapInfo).Decode(&info) == nil {
		live.Lock()
		p.bwrapInit = info.ChildPid
		live.Unlock()
	}
}

// release closes the info pipe and removes the private temp dir.
func (p *Process) release() error {
	if p.bwrapInfo != nil {
		p.bwrapInfo.Close()
	}
	if p.tmpDir == "" {
		return nil
	}
	if err := os.RemoveAll(p.tmpDir); err != nil {
		return fmt.Errorf("sandbox: removing the private temp dir: %w", err)
	}
	return nil
}

func (spec *Spec) validate() error {
	if !filepath.IsAbs(spec.Path) {
		return fmt.Errorf("sandbox: program path %q is not absolute", spec.Path)
	}
	if _, err := os.Stat(spec.Path); err != nil {
		return fmt.Errorf("sandbox: program: %w", err)
	}
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("sandbox: environment entry %q is not KEY=VALUE", kv)
		}
	}
	for _, paths := range [][]string{spec.ReadOnly, spec.Writable, spec.Hide} {
		for _, path := range paths {
			if !filepath.IsAbs(path) {
				return fmt.Errorf("sandbox: bound path %q is not absolute", path)
			}
		}
	}
	for _, path := range spec.Writable {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("sandbox: writable path: %w", err)
		}
	}
	if spec.Dir != "" && !filepath.IsAbs(spec.Dir) {
		return fmt.Errorf("sandbox: working directory %q is not absolute", spec.Dir)
	}
	if spec.TmpSize < 0 {
		return fmt.Errorf("sandbox: negative TmpSize %d", spec.TmpSize)
	}
	return spec.Limits.validate()
}

// bwrapArgs are bwrap's arguments for spec; spec is valid. asNobody says
// whether the trampoline runs as uid 65534 (DropUser as root).
func (s *Sandbox) bwrapArgs(spec Spec, asNobody bool) ([]string, error) {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		// Start passes the info pipe after spec's extra files.
		"--info-fd", strconv.Itoa(3 + len(spec.ExtraFiles))}
	if !s.root || asNobody {
		// bwrap runs unprivileged and needs its own user namespace; the
		// submission may not create further ones (a large kernel attack surface).
		args = append(args, "--unshare-user", "--disable-userns")
	}
	var bound []string // host paths visible inside at the same path
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(dir)
			if err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			args = append(args, "--symlink", target, dir)
		case fi.IsDir():
			args = append(args, "--ro-bind-try", dir, dir)
		default:
			continue
		}
		bound = append(bound, dir)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	for _, pattern := range spec.Devices {
		devices, err := filepath.Glob(pattern)
		if err != nil {
			return nil, fmt.Errorf("sandbox: device pattern %q: %w", pattern, err)
		}
		for _, dev := range devices {
			args = append(args, "--dev-bind-try", dev, dev)
		}
	}
	tmpSize := cmp.Or(spec.TmpSize, defaultTmpSize)
	args = append(args, "--size", strconv.FormatInt(tmpSize, 10), "--tmpfs", "/tmp")
	for _, path := range spec.ReadOnly {
		if _, err := os.Stat(path); err == nil {
			args = append(args, "--ro-bind-try", path, path)
			bound = append(bound, path)
		}
	}
	for _, path := range spec.Writable {
		args = append(args, "--bind", path, path)
		bound = append(bound, path)
	}
	for _, path := range spec.Hide {
		fi, err := os.Stat(path)
		if err != nil || !within(path, bound) {
			continue
		}
		if fi.IsDir() {
			args = append(args, "--tmpfs", path, "--remount-ro", path)
		} else {
			args = append(args, "--ro-bind", "/dev/null", path)
		}
	}
	if !within(spec.Path, bound) {
		args = append(args, "--ro-bind", spec.Path, spec.Path)
	}
	args = append(args, "--clearenv")
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--chdir", cmp.Or(spec.Dir, "/tmp"), "--", spec.Path)
	return append(args, spec.Args...), nil
}

// within reports whether path is one of dirs or lies under one.
func within(path string, dirs []string) bool {
	for _, dir := range dirs {
		rel, err := filepath.Rel(dir, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// privateTmp makes the fallback's temp dir: mode 0700, owned by the sandbox user.
func (s *Sandbox) privateTmp(asNobody bool) (string, error) {
	dir, err := os.MkdirTemp(s.workDir, "tmp-")
	if err != nil {
		return "", fmt.Errorf("sandbox: private temp dir: %w", err)
	}
	if asNobody {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			os.Remove(dir)
			return "", fmt.Errorf("sandbox: private temp dir: %w", err)
		}
	}
	return dir, nil
}
