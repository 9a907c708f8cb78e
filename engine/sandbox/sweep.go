package sandbox

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"gpulab/engine/proctree"

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
	procs, err := proctree.List()
	if err != nil {
		return 0, fmt.Errorf("sandbox: sweeping %s: %w", p.path, err)
	}
	c := classifier{run: p, procs: procs, self: os.Getpid(), owners: map[int]owner{}}
	found := 0
	for pid, info := range procs {
		if c.owner(pid) != mine || pid == p.root && info.Zombie() {
			continue // the root ended: os/exec reaps it
		}
		found++
		// Remembered, so that it is still recognized once it is a zombie
		// with neither environment nor ancestry.
		p.known[info.ID] = true
		switch {
		case !info.Zombie():
			syscall.Kill(pid, syscall.SIGKILL)
		case info.PPid == c.self:
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
	procs  map[int]proctree.Info
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
	case pid == run.root || info.Pgid == run.root || run.known[info.ID]:
		return mine
	case live.procs[pid] != nil:
		return another
	case pid == run.bwrapInit && (info.PPid == run.root || info.PPid == c.self):
		return mine
	}
	if parent := c.owner(info.PPid); parent != unclaimed {
		return parent
	}
	if token := proctree.Env(pid, tokenEnv); token == run.token {
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
