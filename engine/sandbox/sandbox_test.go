package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpulab/engine/interrupt"
	"gpulab/engine/proctree"
)

var (
	// testDir holds every directory the tests make; uid 65534 can traverse it.
	testDir string
	// bwrapSandbox and fallbackSandbox are made once, before any test
	// starts processes: a fork elsewhere while New writes the trampoline
	// copy would hold it open for writing, and exec would fail with ETXTBSY.
	bwrapSandbox, fallbackSandbox *Sandbox
)

func TestMain(m *testing.M) {
	if IsTrampoline() {
		err := ExecMain(os.Args[2:])
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	if args := strings.Fields(os.Getenv(interruptedEnv)); len(args) == 3 {
		interruptedChild(args[0], args[1], args[2])
	}
	os.Exit(runTests(m))
}

// interruptedEnv makes the test binary a child of TestInterrupted:
// "MODE WORKDIR MARKER".
const interruptedEnv = "GPULAB_SANDBOX_TEST_INTERRUPTED"

// interruptedChild catches signals as lab does and runs, in a sandbox of
// mode (bwrap or fallback), a script that leaves two sleeps with marker
// on their command lines (one in a session of its own) and waits for them.
func interruptedChild(mode, workDir, marker string) {
	interrupt.Catch("child", os.Stderr)
	s, err := New(Options{WorkDir: workDir, Disable: mode == "fallback"})
	if err == nil {
		var p *Process
		script := fmt.Sprintf("setsid sleep %s </dev/null >/dev/null 2>&1 & sleep %s & wait", marker, marker)
		if p, err = s.Start(context.Background(), shell(script)); err == nil {
			err = p.Wait()
		}
	}
	fmt.Fprintln(os.Stderr, err)
	interrupt.Exit(3)
}

// TestInterrupted: a SIGTERM that ends the caller (with package
// interrupt's handler, as lab's) kills every process of its sandboxed
// runs, those that left the run's session included.
func TestInterrupted(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Sandbox) {
		mode := map[bool]string{true: "bwrap", false: "fallback"}[s.Bwrap() != ""]
		m := marker()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), interruptedEnv+"="+mode+" "+hostDir(t)+" "+m)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, pid := range alive(t, m) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		for deadline := time.Now().Add(20 * time.Second); len(alive(t, m)) < 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the sleeps did not start: %s", stderr.String())
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 143 {
			t.Errorf("the caller ended with %v, want exit status 143; stderr:\n%s", err, stderr.String())
		}
		checkNoneAlive(t, m)
	})
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testDir = dir
	if bwrapSandbox, err = New(Options{WorkDir: filepath.Join(dir, "bwrap")}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if fallbackSandbox, err = New(Options{WorkDir: filepath.Join(dir, "fallback"), Disable: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if rc := m.Run(); rc != 0 {
		return rc
	}
	return checkNoChildren()
}

// checkNoChildren fails the test binary if, after all tests, it has child
// processes: zombies the sweeps did not reap, or survivors.
func checkNoChildren() int {
	procs, err := proctree.List()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rc := 0
	for pid, info := range procs {
		if info.PPid == os.Getpid() {
			fmt.Fprintf(os.Stderr, "FAIL: child process %d (state %c) left over after all tests\n", pid, info.State)
			rc = 1
		}
	}
	return rc
}

// needBwrap is the bwrap sandbox, or skips the test where bwrap does not work.
func needBwrap(t *testing.T) *Sandbox {
	t.Helper()
	if bwrapSandbox.Bwrap() == "" {
		t.Skipf("bwrap does not work here: %s", bwrapSandbox.Reason())
	}
	return bwrapSandbox
}

// eachMode runs test under bwrap (skipped where it does not work) and in the fallback.
func eachMode(t *testing.T, test func(t *testing.T, s *Sandbox)) {
	t.Run("bwrap", func(t *testing.T) { test(t, needBwrap(t)) })
	t.Run("fallback", func(t *testing.T) { test(t, fallbackSandbox) })
}

// shell is a Spec that runs script with /bin/sh, as uid 65534 when root.
func shell(script string) Spec {
	return Spec{
		Path:     "/bin/sh",
		Args:     []string{"-c", script},
		Env:      []string{"PATH=/usr/bin:/bin"},
		DropUser: true,
	}
}

// run starts spec, waits for it, and returns its stdout and stderr.
func run(t *testing.T, ctx context.Context, s *Sandbox, spec Spec) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errOut
	p, err := s.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	return out.String(), errOut.String(), err
}

// marker is a duration for sleep, a little over 1000 s, that no other
// process has on its command line.
func marker() string { return fmt.Sprintf("1000.%09d", rand.IntN(1e9)) }

// alive lists the pids of live (not zombie) processes with arg on their
// command line.
func alive(t *testing.T, arg string) []int {
	t.Helper()
	procs, err := proctree.List()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for pid := range procs {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkNoneAlive fails if a process with arg on its command line is alive,
// a moment after the sweep (a survivor would have had time to exec).
func checkNoneAlive(t *testing.T, arg string) {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	if pids := alive(t, arg); len(pids) > 0 {
		t.Errorf("processes with %q still alive after Wait: %v", arg, pids)
	}
}

// hostDir makes a directory under testDir that uid 65534 can read.
func hostDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(testDir, "host-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// containsRun reports whether args contains want as consecutive elements.
func containsRun(args []string, want ...string) bool {
	for i := range args {
		if len(args)-i >= len(want) && slices.Equal(args[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

func TestBwrapArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ro, outside, prog := filepath.Join(dir, "ro"), filepath.Join(dir, "outside"), filepath.Join(dir, "prog")
	mkdir(t, ro)
	mkdir(t, outside)
	mkdir(t, filepath.Join(ro, "secretdir"))
	for _, f := range []string{filepath.Join(ro, "secret"), filepath.Join(outside, "secret"), filepath.Join(dir, "dev-a"), filepath.Join(dir, "dev-b"), prog} {
		writeFile(t, f, "x")
	}
	spec := Spec{
		Path:     prog,
		Args:     []string{"arg"},
		Env:      []string{"A=1=2", "B="},
		ReadOnly: []string{ro, filepath.Join(dir, "missing")},
		Hide:     []string{filepath.Join(ro, "secret"), filepath.Join(ro, "secretdir"), filepath.Join(outside, "secret"), filepath.Join(ro, "missing")},
		Devices:  []string{filepath.Join(dir, "dev-*")},
		TmpSize:  1 << 20,
	}
	s := &Sandbox{bwrap: "/usr/bin/bwrap", root: true}
	args, err := s.bwrapArgs(spec, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--info-fd", "3", "--unshare-user", "--disable-userns"},
		{"--proc", "/proc", "--dev", "/dev"},
		{"--dev-bind-try", filepath.Join(dir, "dev-a"), filepath.Join(dir, "dev-a"), "--dev-bind-try", filepath.Join(dir, "dev-b"), filepath.Join(dir, "dev-b")},
		{"--size", "1048576", "--tmpfs", "/tmp"},
		{"--ro-bind-try", ro, ro},
		{"--ro-bind", "/dev/null", filepath.Join(ro, "secret")},
		{"--tmpfs", filepath.Join(ro, "secretdir"), "--remount-ro", filepath.Join(ro, "secretdir")},
		{"--ro-bind", prog, prog},
		{"--clearenv", "--setenv", "A", "1=2", "--setenv", "B", ""},
		{"--chdir", "/tmp", "--", prog, "arg"},
	} {
		if !containsRun(args, want...) {
			t.Errorf("args lack %q:\n%q", want, args)
		}
	}
	for _, absent := range []string{filepath.Join(dir, "missing"), filepath.Join(outside, "secret"), filepath.Join(ro, "missing")} {
		if slices.Contains(args, absent) {
			t.Errorf("args mention %s, which is missing or not bound:\n%q", absent, args)
		}
	}
	if target, err := os.Readlink("/bin"); err == nil && !containsRun(args, "--symlink", target, "/bin") {
		t.Errorf("args do not recreate the symlink /bin -> %s:\n%q", target, args)
	}
	if args, _ := s.bwrapArgs(spec, false); slices.Contains(args, "--unshare-user") {
		t.Errorf("root without DropUser: args unshare the user namespace:\n%q", args)
	}
	spec.Devices = []string{"/dev/[nvidia"}
	if _, err := s.bwrapArgs(spec, true); err == nil {
		t.Error("a malformed device pattern was accepted")
	}
}

func TestStartRejectsBadSpecs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Spec)
	}{
		{"relative program", func(s *Spec) { s.Path = "sh" }},
		{"missing program", func(s *Spec) { s.Path = "/nonexistent/program" }},
		{"environment entry without =", func(s *Spec) { s.Env = []string{"PATH"} }},
		{"environment entry without key", func(s *Spec) { s.Env = []string{"=x"} }},
		{"relative read-only path", func(s *Spec) { s.ReadOnly = []string{"etc"} }},
		{"missing writable path", func(s *Spec) { s.Writable = []string{"/nonexistent/build"} }},
		{"relative working directory", func(s *Spec) { s.Dir = "build" }},
		{"negative tmp size", func(s *Spec) { s.TmpSize = -1 }},
		{"negative limit", func(s *Spec) { s.Limits.AddressSpace = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := shell("true")
			tc.edit(&spec)
			if p, err := fallbackSandbox.Start(context.Background(), spec); err == nil {
				p.Wait()
				t.Fatal("Start accepted the spec")
			}
		})
	}
}

// TestFileSystem runs as root, when it is, without DropUser: root owns the
// system files, so only the read-only mounts, not file permissions, can stop
// the writes.
func TestFileSystem(t *testing.T) {
	t.Parallel()
	s := needBwrap(t)
	checkout, err := os.Getwd() // this package's directory: in the checkout, or in a GPU bundle's src/ (no sources there)
	if err != nil {
		t.Fatal(err)
	}
	seen := filepath.Base(checkout) // a name the listing of the checkout's parent must show
	bound, unbound := hostDir(t), hostDir(t)
	writeFile(t, filepath.Join(bound, "secret.txt"), "SECRET")
	mkdir(t, filepath.Join(bound, "secretdir"))
	writeFile(t, filepath.Join(bound, "secretdir", "key"), "SECRET")
	writeFile(t, filepath.Join(unbound, "file"), "x")
	tmpName := "sandbox-test-" + strconv.Itoa(rand.IntN(1e9))
	for _, tc := range []struct{ name, script string }{
		{"/usr is read-only", "! touch /usr/sandbox-test"},
		{"/etc is read-only", "! touch /etc/sandbox-test"},
		{"the checkout is readable", "ls " + filepath.Dir(checkout) + " | grep -qx " + seen},
		{"the checkout is read-only", "! touch " + filepath.Join(checkout, "sandbox-test")},
		{"/tmp is writable", "echo x > /tmp/" + tmpName + " && test -s /tmp/" + tmpName},
		{"a hidden file is empty", "! grep -q SECRET " + filepath.Join(bound, "secret.txt")},
		{"a hidden directory is empty", "test -z \"$(ls -A " + filepath.Join(bound, "secretdir") + ")\""},
		{"a hidden directory is read-only", "! touch " + filepath.Join(bound, "secretdir", "x")},
		{"an unbound directory is invisible", "test ! -e " + filepath.Join(unbound, "file")},
		{"no capabilities", "grep -q 'CapEff:[[:space:]]*0*$' /proc/self/status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := shell(tc.script)
			spec.DropUser = false
			spec.ReadOnly = []string{filepath.Dir(checkout), bound}
			spec.Hide = []string{filepath.Join(bound, "secret.txt"), filepath.Join(bound, "secretdir")}
			if _, stderr, err := run(t, context.Background(), s, spec); err != nil {
				t.Errorf("%s: %v\n%s", tc.script, err, stderr)
			}
		})
	}
	t.Run("a program outside the bound paths runs alone", func(t *testing.T) {
		dir := hostDir(t)
		program := filepath.Join(dir, "program")
		writeFile(t, filepath.Join(dir, "sibling"), "x")
		writeFile(t, program, "#!/bin/sh\ntest -x \"$0\" && test ! -e "+filepath.Join(dir, "sibling")+"\n")
		if err := os.Chmod(program, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := run(t, context.Background(), s, Spec{Path: program}); err != nil {
			t.Errorf("%v: %s", err, stderr)
		}
	})
	if _, err := os.Stat(filepath.Join("/tmp", tmpName)); err == nil {
		os.Remove(filepath.Join("/tmp", tmpName))
		t.Error("a file written to /tmp inside is visible on the host")
	}
}

func TestNetwork(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, s *Sandbox) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan struct{}, 1)
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
				accepted <- struct{}{}
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		spec := Spec{
			Path:     "/bin/bash",
			Args:     []string{"-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)},
			DropUser: true,
		}
		_, stderr, err := run(t, context.Background(), s, spec)
		// The process has ended: a connection it made is queued already,
		// and the accepting goroutine needs only to be scheduled, which a
		// loaded machine may take a while to do.
		connected := false
		wait := 200 * time.Millisecond
		if s.Bwrap() == "" {
			wait = 30 * time.Second // the connection is expected: wait for it as long as it takes
		}
		select {
		case <-accepted:
			connected = true
		case <-time.After(wait):
		}
		if s.Bwrap() != "" && (err == nil || connected) {
			t.Errorf("the sandboxed process reached a listener on the host's loopback (exit: %v, accepted: %v)", err, connected)
		}
		if s.Bwrap() == "" && (err != nil || !connected) {
			// The fallback claims that the network is open; check the
			// probe itself works, so that the bwrap case means something.
			t.Errorf("without bwrap the connection failed (exit: %v, accepted: %v): %s", err, connected, stderr)
		}
	})
}

func TestUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("DropUser needs root")
	}
	eachMode(t, func(t *testing.T, s *Sandbox) {
		stdout, stderr, err := run(t, context.Background(), s, shell("id -u; id -G"))
		if err != nil {
			t.Fatalf("%v: %s", err, stderr)
		}
		if want := "65534\n65534\n"; stdout != want {
			t.Errorf("id -u; id -G = %q, want %q", stdout, want)
		}
	})
}

func TestTimeLimit(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, s *Sandbox) {
		m := marker()
		// The limit leaves a loaded machine time to start the sandbox and
		// echo; Wait must come back soon after it, not when the sleeps of
		// a thousand seconds end.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// The background sleep inherits stdout, a pipe to the test.
		stdout, _, err := run(t, ctx, s, shell("sleep "+m+" & echo started; sleep "+m))
		deadline, _ := ctx.Deadline()
		if late := time.Since(deadline); late > 60*time.Second {
			t.Errorf("Wait returned %v after the deadline", late)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait = %v, want an error wrapping context.DeadlineExceeded", err)
		}
		if stdout != "started\n" {
			t.Errorf("stdout = %q, want \"started\\n\"", stdout)
		}
		checkNoneAlive(t, m)
	})
}

func TestEscape(t *testing.T) {
	t.Parallel()
	// Each escapee ($e) creates the file $r, then becomes "sleep MARKER";
	// the script exits as soon as $r exists.
	for _, tc := range []struct {
		name    string
		escapee string // a command that starts "sh -c $e" so that it outlives the script
		byUID   bool   // in the fallback only the uid identifies it
	}{
		{"background", `sh -c "$e" &`, false},
		{"setsid", `setsid sh -c "$e" &`, false},
		{"double fork and setsid", `(setsid sh -c "$e" &)`, false},
		{"double fork, setsid, empty environment", `(setsid env -i /bin/sh -c "$e" &)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachMode(t, func(t *testing.T, s *Sandbox) {
				if tc.byUID && s.Bwrap() == "" && os.Geteuid() != 0 {
					t.Skip("without bwrap, an escapee without the token is found only by uid 65534 (DropUser as root)")
				}
				m := marker()
				script := fmt.Sprintf(`r="${TMPDIR:-/tmp}/ready"; e="echo > $r; exec sleep %s </dev/null >/dev/null 2>&1"
					%s
					while [ ! -e "$r" ]; do sleep 0.01; done`, m, tc.escapee)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, stderr, err := run(t, ctx, s, shell(script)); err != nil {
					t.Fatalf("%v: %s", err, stderr)
				}
				checkNoneAlive(t, m)
			})
		})
	}
}

func TestForkBomb(t *testing.T) { // not parallel: RLIMIT_NPROC counts every process of the uid
	const attempts = 2000
	eachMode(t, func(t *testing.T, s *Sandbox) {
		m := marker()
		spec := shell(fmt.Sprintf(`i=0; while [ $i -lt %d ]; do sleep %s & i=$((i+1)); echo $i; done`, attempts, m))
		spec.Limits.Procs = 40
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stdout, stderr, err := run(t, ctx, s, spec)
		lines := strings.Fields(stdout)
		if len(lines) == 0 || len(lines) >= attempts {
			t.Errorf("the fork bomb started %d of %d children (exit: %v): %s", len(lines), attempts, err, firstLine(stderr))
		}
		t.Logf("started %d children, then: %v: %s", len(lines), err, firstLine(stderr))
		checkNoneAlive(t, m)
	})
}

func TestMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits Limits
		bytes  int64
		fails  bool
	}{
		{"64 MiB under an address space of 1 GiB", Limits{AddressSpace: 1 << 30}, 64 << 20, false},
		{"8 GiB under an address space of 1 GiB", Limits{AddressSpace: 1 << 30}, 8 << 30, true},
		{"64 MiB under a data size of 1 GiB", Limits{Data: 1 << 30}, 64 << 20, false},
		{"8 GiB under a data size of 1 GiB", Limits{Data: 1 << 30}, 8 << 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachMode(t, func(t *testing.T, s *Sandbox) {
				spec := Spec{
					Path:     "/usr/bin/perl",
					Args:     []string{"-e", `$x = "a" x $ARGV[0]`, strconv.FormatInt(tc.bytes, 10)},
					Limits:   tc.limits,
					DropUser: true,
				}
				_, stderr, err := run(t, context.Background(), s, spec)
				switch {
				case tc.fails && err == nil:
					t.Error("the allocation succeeded")
				case tc.fails && !strings.Contains(stderr, "Out of memory"):
					t.Errorf("perl failed (%v) but not for lack of memory: %s", err, firstLine(stderr))
				case !tc.fails && err != nil:
					t.Errorf("%v: %s", err, firstLine(stderr))
				}
			})
		})
	}
}

func TestFileSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size  string
		fails bool
	}{{"8M", false}, {"100M", true}} {
		t.Run(tc.size, func(t *testing.T) {
			eachMode(t, func(t *testing.T, s *Sandbox) {
				spec := shell(`head -c ` + tc.size + ` /dev/zero > "${TMPDIR:-/tmp}/big"`)
				spec.Limits.FileSize = 16 << 20
				if _, stderr, err := run(t, context.Background(), s, spec); (err != nil) != tc.fails {
					t.Errorf("writing %s under a file size limit of 16 MiB: %v (want failure: %v) %s", tc.size, err, tc.fails, stderr)
				}
			})
		})
	}
}

func TestExtraFiles(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, s *Sandbox) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		spec := shell("echo through fd 3 >&3")
		spec.ExtraFiles = []*os.File{w}
		p, err := s.Start(context.Background(), spec)
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, readErr := io.ReadAll(r)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if readErr != nil || string(got) != "through fd 3\n" {
			t.Errorf("read %q (%v) from fd 3, want \"through fd 3\\n\"", got, readErr)
		}
	})
}

func TestDescribe(t *testing.T) {
	limits := Limits{AddressSpace: 4 << 30, CPU: 129500 * time.Millisecond, Procs: 256, FileSize: 64 << 20, OpenFiles: 256}
	const rlimits = "rlimits: address space 4 GiB, CPU 130 s, processes +256, file size 64 MiB, open files 256, no core dumps"
	if s := bwrapSandbox; s.Bwrap() != "" {
		got := s.Describe(Spec{Limits: limits})
		for _, want := range []string{"bubblewrap ", "namespaces: mount, pid, network, ipc, uts, user", "private /tmp of 256 MiB", rlimits} {
			if !strings.Contains(got, want) {
				t.Errorf("Describe = %q, lacks %q", got, want)
			}
		}
		if strings.Contains(got, "NO SANDBOX") {
			t.Errorf("Describe = %q under bwrap", got)
		}
	}
	got := fallbackSandbox.Describe(Spec{Limits: limits})
	for _, want := range []string{"NO SANDBOX (bwrap: disabled)", rlimits, "the submission can read the file system and use the network"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q, lacks %q", got, want)
		}
	}
	if strings.Contains(got, "bubblewrap") || strings.Contains(got, "namespaces") {
		t.Errorf("Describe = %q in the fallback", got)
	}
	if os.Geteuid() == 0 {
		for _, s := range []*Sandbox{bwrapSandbox, fallbackSandbox} {
			if got := s.Describe(Spec{Limits: limits}); !strings.Contains(got, "root, which the process limit does not bind") {
				t.Errorf("Describe = %q, hides that root without DropUser stays root", got)
			}
			if got := s.Describe(Spec{Limits: limits, DropUser: true, TmpSize: 1 << 30}); !strings.Contains(got, "uid 65534") || s.Bwrap() != "" && !strings.Contains(got, "/tmp of 1 GiB") {
				t.Errorf("Describe = %q with DropUser and a 1 GiB /tmp", got)
			}
		}
	}
	if got := fallbackSandbox.Describe(Spec{}); !strings.Contains(got, "rlimits: no core dumps") {
		t.Errorf("Describe without limits = %q", got)
	}
}

// TestFallbackSaysWhy checks that a bwrap that is missing or does not start
// leads to the fallback, with the reason. Not parallel: New writes a
// trampoline copy (see bwrapSandbox).
func TestFallbackSaysWhy(t *testing.T) {
	dir := hostDir(t)
	broken := filepath.Join(dir, "broken-bwrap")
	writeFile(t, broken, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo bubblewrap 9.9; exit; fi\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
	if err := os.Chmod(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ bwrap, reason string }{
		{filepath.Join(dir, "missing-bwrap"), "not found"},
		{broken, "does not start: bwrap: No permissions to create a new namespace"},
	} {
		s, err := New(Options{Bwrap: tc.bwrap, WorkDir: filepath.Join(dir, "work-"+filepath.Base(tc.bwrap))})
		if err != nil {
			t.Fatal(err)
		}
		if s.Bwrap() != "" || !strings.Contains(s.Reason(), tc.reason) {
			t.Errorf("with %s: Bwrap() = %q, Reason() = %q, want a reason containing %q", tc.bwrap, s.Bwrap(), s.Reason(), tc.reason)
		}
		if got := s.Describe(Spec{}); !strings.HasPrefix(got, "NO SANDBOX (bwrap: "+s.Reason()+")") {
			t.Errorf("with %s: Describe = %q", tc.bwrap, got)
		}
	}
}

func TestNewRejectsUnreachableWorkDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root drops to uid 65534, which must reach the trampoline")
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{WorkDir: filepath.Join(private, "work")})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the work directory") {
		t.Errorf("New with a work directory that uid 65534 cannot reach: %v", err)
	}
}

// TestExecutable runs the executable's copy inside, as lab grade runs its
// workers; here the copy acts as the trampoline once more.
func TestExecutable(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, s *Sandbox) {
		spec := Spec{Path: s.Executable(), Args: []string{TrampolineArg, "-nofile=64", "--", "/bin/sh", "-c", "ulimit -n"}, DropUser: true}
		stdout, stderr, err := run(t, context.Background(), s, spec)
		if err != nil || stdout != "64\n" {
			t.Errorf("got %q, %v: %s", stdout, err, stderr)
		}
	})
}
