//go:build unix

package jupyter

import (
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup starts cmd in a process group of its own, which the
// programs it starts (GoNB's cell programs, go build, shell commands)
// inherit.
func setProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killProcessGroup kills that whole group and waits (at most 5 s) until it
// is gone, so that nothing still writes into the kernel's directory when
// Close removes it.
func killProcessGroup(cmd *exec.Cmd) {
	pgid := -cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGKILL)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pgid, 0) == syscall.ESRCH {
			return
		}
	}
}
