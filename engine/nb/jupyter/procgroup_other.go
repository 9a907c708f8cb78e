//go:build !unix

package jupyter

import "os/exec"

// setProcessGroup: process groups are a Unix notion; elsewhere Close kills
// the kernel process alone.
func setProcessGroup(cmd *exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
