//go:build unix

package jupyter

import (
	"os/exec"
	"syscall"
	"time"

	"gpulab/engine/proctree"
)

// killable prepares cmd so that kill, once cmd has started, ends it and
// every process it started: cmd gets a process group of its own, which the
// programs it starts (GoNB's cell programs, go build, shell commands and
// their background children) inherit, and a proctree mark in its
// environment, which finds those that leave the group (GoNB starts gopls
// in a group of its own). kill waits (at most 5 s) until they are gone, so
// that nothing still writes into the kernel's directory when Close removes
// it.
func killable(cmd *exec.Cmd) (kill func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tree := proctree.NewTree()
	cmd.Env = append(cmd.Env, tree.Env())
	return func() { tree.Kill(cmd.Process.Pid, 5*time.Second) }
}
