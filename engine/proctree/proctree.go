// Package proctree reads the process table (/proc) and kills a process
// tree: a started child and everything it starts, wherever it went. A
// child's descendants can leave its process group (GoNB starts gopls in a
// group of its own; a program may call setsid) and, once their parent
// died, its ancestry; what they keep is their environment. A Tree marks
// the child's environment with a variable of its own, which every
// descendant inherits (unless it clears its environment), and Kill finds
// them by it.
package proctree

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ID identifies a process over time: a pid can be reused, a pid together
// with its start time cannot.
type ID struct {
	Pid   int
	Start uint64 // clock ticks after boot
}

// Info is what /proc/PID/stat says of a process.
type Info struct {
	ID
	PPid, Pgid int
	State      byte // 'Z' for a zombie
}

// Zombie reports whether the process has ended and waits to be reaped.
func (i Info) Zombie() bool { return i.State == 'Z' }

// List reads /proc/PID/stat of every process, by pid. Processes that end
// while it reads are left out.
func List() (map[int]Info, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make(map[int]Info, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, err := Read(pid); err == nil {
			procs[pid] = info
		}
	}
	return procs, nil
}

// Read reads /proc/PID/stat of one process.
func Read(pid int) (Info, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Info{}, err
	}
	// The command name (field 2) may contain anything; the fields after
	// its closing parenthesis start with field 3, the state.
	var fields []string
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
		fields = strings.Fields(string(stat[i+1:]))
	}
	if len(fields) < 20 {
		return Info{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	info := Info{ID: ID{Pid: pid}, State: fields[0][0]}
	if info.PPid, err = strconv.Atoi(fields[1]); err != nil {
		return Info{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	if info.Pgid, err = strconv.Atoi(fields[2]); err != nil {
		return Info{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	if info.Start, err = strconv.ParseUint(fields[19], 10, 64); err != nil {
		return Info{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return info, nil
}

// Env is the value of the variable name in pid's environment as it was
// started, "" if it has none or it cannot be read (a zombie's cannot, nor
// another user's).
func Env(pid int, name string) string {
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if value, ok := bytes.CutPrefix(kv, []byte(name+"=")); ok {
			return string(value)
		}
	}
	return ""
}

// markPrefix starts the name of the environment variable that marks the
// processes of a Tree; a random token ends it. A variable of its own for
// each tree: a tree started inside another (lab nbrun in a notebook cell)
// carries both marks.
const markPrefix = "GPULAB_PROCESS_TREE_"

// A Tree is a child process and every process it starts. The child must be
// started with Env in its environment (and, for Kill's pgid, in a process
// group of its own).
type Tree struct {
	mark string // the variable's name
}

// NewTree makes a Tree with a fresh mark.
func NewTree() Tree { return Tree{mark: markPrefix + rand.Text()} }

// Env is the entry KEY=VALUE to add to the child's environment.
func (t Tree) Env() string { return t.mark + "=1" }

// Kill SIGKILLs the process group pgid and every process of the tree (one
// in the group, one that carries the tree's mark, one that descends from
// either) until none is left alive, for at most timeout. Zombies count as gone: they no longer
// run, and their parent or init reaps them. It fails if some outlive
// SIGKILL for timeout, saying how many.
func (t Tree) Kill(pgid int, timeout time.Duration) error {
	syscall.Kill(-pgid, syscall.SIGKILL)
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		procs, err := List()
		if err != nil {
			return fmt.Errorf("finding the processes of group %d: %w", pgid, err)
		}
		c := classifier{tree: t, pgid: pgid, procs: procs, self: os.Getpid(), memo: map[int]bool{}}
		alive := 0
		for pid, info := range procs {
			if !info.Zombie() && c.member(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of group %d outlived SIGKILL for %v", alive, pgid, timeout)
		}
		time.Sleep(pause)
	}
}

// classifier decides, for one snapshot of the process table, which
// processes belong to a tree.
type classifier struct {
	tree  Tree
	pgid  int
	procs map[int]Info
	self  int
	memo  map[int]bool
}

// member reports whether pid is in the group, carries the mark, or
// descends from a member. The caller is never a member.
func (c *classifier) member(pid int) bool {
	if m, ok := c.memo[pid]; ok {
		return m
	}
	c.memo[pid] = false // breaks cycles in a snapshot taken while pids are reused
	info, ok := c.procs[pid]
	m := ok && pid != c.self && (info.Pgid == c.pgid || Env(pid, c.tree.mark) != "" || c.member(info.PPid))
	c.memo[pid] = m
	return m
}
