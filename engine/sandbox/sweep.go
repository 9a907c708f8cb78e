package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// live holds every started Process that Wait has not yet collected, by root
// pid. Its lock also keeps Start and the sweep apart, so that a sweep never
// mistakes a run that is just starting for a leftover.
var live = struct {
	sync.Mutex
	procs map[int]*Process
}{procs: map[int]*Process{}}

// sweepTimeout bounds Wait's sweep: a process in uninterruptible sleep (in a
// driver, say) can outlast SIGKILL for a while.
const sweepTimeout = 10 * time.Second

// procKey identifies a process over time: a pid can be reused, a pid
// together with its start time cannot.
type procKey struct {
	pid   int
	start uint64 // clock ticks after boot
}

// procInfo is what /proc/PID/stat tells the sweep.
type procInfo struct {
	procKey
	ppid, pgid int
	state      byte // 'Z' for a zombie
}

// owner is whose a process is, as far as the sweep of one run can tell.
type owner int

const (
	outsider  owner = iota // neither a descendant of the caller nor in the run's process group
	unclaimed              // a descendant of the caller that belongs to no run (its own children, say)
	mine                   // belongs to the run being swept
	another                // belongs to another live run
)

// sweep kills the leftover processes of the run until none is left.
func (p *Process) sweep() error {
	deadline := time.Now().Add(sweepTimeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		n, err := p.killRound()
		if err != nil || n == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sandbox: %d processes of %s outlived SIGKILL for %v", n, p.path, sweepTimeout)
		}
		time.Sleep(pause)
	}
}

// killRound SIGKILLs every process of the run that it finds and reaps those
// that are zombie children of the caller (orphans reparented to it, the child
// subreaper). It returns how many it found; a zombie counts until it is reaped.
func (p *Process) killRound() (int, error) {
	live.Lock()
	defer live.Unlock()
	procs, err := listProcs()
	if err != nil {
		return 0, fmt.Errorf("sandbox: sweeping %s: %w", p.path, err)
	}
	c := classifier{run: p, procs: procs, self: os.Getpid(), owners: map[int]owner{}}
	found := 0
	for pid, info := range procs {
		if c.owner(pid) != mine || pid == p.root && info.state == 'Z' {
			continue // the root ended: os/exec reaps it
		}
		found++
		// Remembered, so that it is still recognized once it is a zombie
		// with neither environment nor ancestry.
		p.known[info.procKey] = true
		switch {
		case info.state != 'Z':
			syscall.Kill(pid, syscall.SIGKILL)
		case info.ppid == c.self:
			// Only this pid: wait4(-1) would steal exit statuses from os/exec.
			unix.Wait4(pid, nil, unix.WNOHANG, nil)
		}
	}
	return found, nil
}

// classifier decides, for one snapshot of /proc, which processes belong to
// a run: those in its process group or below its root, bwrap's init, and
// the caller's descendants outside every run's tree (orphans and their
// children) that carry the run's token in their environment or, with
// DropUser, run as uid 65534. Orphans of another run that shed their token
// count as this run's too: with uid 65534 reserved for the sandbox, they are
// leftovers either way.
type classifier struct {
	run    *Process
	procs  map[int]procInfo
	self   int
	owners map[int]owner
}

func (c *classifier) owner(pid int) owner {
	if o, ok := c.owners[pid]; ok {
		return o
	}
	c.owners[pid] = outsider // breaks cycles in a snapshot taken while pids are reused
	o := c.classify(pid)
	c.owners[pid] = o
	return o
}

func (c *classifier) classify(pid int) owner {
	if pid == c.self {
		return unclaimed
	}
	info, ok := c.procs[pid]
	if !ok {
		return outsider
	}
	run := c.run
	switch {
	case pid == run.root || info.pgid == run.root || run.known[info.procKey]:
		return mine
	case live.procs[pid] != nil:
		return another
	case pid == run.bwrapInit && (info.ppid == run.root || info.ppid == c.self):
		return mine
	}
	if parent := c.owner(info.ppid); parent != unclaimed {
		return parent
	}
	if token := readToken(pid); token == run.token {
		return mine
	} else if token != "" && liveToken(token) {
		return another
	}
	if run.sandboxUID >= 0 {
		if s, err := readStatus(pid); err == nil && s.uid == run.sandboxUID {
			return mine
		}
	}
	return unclaimed
}

// liveToken reports whether token marks a live run; live is locked.
func liveToken(token string) bool {
	for _, p := range live.procs {
		if p.token == token {
			return true
		}
	}
	return false
}

// readToken is the value of tokenEnv in pid's environment, "" if it has
// none or it cannot be read (a zombie's cannot).
func readToken(pid int) string {
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if value, ok := bytes.CutPrefix(kv, []byte(tokenEnv+"=")); ok {
			return string(value)
		}
	}
	return ""
}

// listProcs reads /proc/PID/stat of every process. Processes that end while
// it reads are left out.
func listProcs() (map[int]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, err := readProcInfo(pid); err == nil {
			procs[pid] = info
		}
	}
	return procs, nil
}

func readProcInfo(pid int) (procInfo, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, err
	}
	// The command name (field 2) may contain anything; the fields after
	// its closing parenthesis start with field 3, the state.
	var fields []string
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
		fields = strings.Fields(string(stat[i+1:]))
	}
	if len(fields) < 20 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	info := procInfo{procKey: procKey{pid: pid}, state: fields[0][0]}
	if info.ppid, err = strconv.Atoi(fields[1]); err != nil {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	if info.pgid, err = strconv.Atoi(fields[2]); err != nil {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	if info.start, err = strconv.ParseUint(fields[19], 10, 64); err != nil {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return info, nil
}
