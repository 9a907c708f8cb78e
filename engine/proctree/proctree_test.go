package proctree

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestRead: the process table as this process sees itself.
func TestRead(t *testing.T) {
	self, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.PPid != os.Getppid() || self.Pgid != syscall.Getpgrp() || self.Zombie() || self.Start == 0 {
		t.Errorf("Read(self) = %+v; want ppid %d, pgid %d, running", self, os.Getppid(), syscall.Getpgrp())
	}
	procs, err := List()
	if got := procs[os.Getpid()]; err != nil || got.ID != self.ID || got.PPid != self.PPid || got.Pgid != self.Pgid { // the state may change
		t.Errorf("List: %v; self %+v", err, procs[os.Getpid()])
	}
	if got := Env(os.Getpid(), "PATH"); got != os.Getenv("PATH") {
		t.Errorf("Env(self, PATH) = %q", got)
	}
	if got := Env(os.Getpid(), "GPULAB_NO_SUCH_VARIABLE"); got != "" {
		t.Errorf("Env of a missing variable: %q", got)
	}
}

// TestKill: a tree whose processes left its group (setsid) and whose
// parent dies first is killed whole; the caller survives.
func TestKill(t *testing.T) {
	tree := NewTree()
	cmd := exec.Command("/bin/sh", "-c", "sleep 1000 & setsid sleep 1001 & wait")
	cmd.Env = append(os.Environ(), tree.Env())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { tree.Kill(cmd.Process.Pid, 5*time.Second) })
	for deadline := time.Now().Add(10 * time.Second); len(marked(t, tree)) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tree did not start: %v", marked(t, tree))
		}
	}
	if err := tree.Kill(cmd.Process.Pid, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if left := marked(t, tree); len(left) > 0 {
		t.Errorf("processes left alive: %v", left)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the child did not end")
	}
}

// marked lists the live processes that carry tree's mark.
func marked(t *testing.T, tree Tree) []int {
	t.Helper()
	procs, err := List()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for pid, info := range procs {
		if !info.Zombie() && Env(pid, tree.mark) != "" {
			pids = append(pids, pid)
		}
	}
	return pids
}
