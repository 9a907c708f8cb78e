//go:build !unix

package jupyter

import "os/exec"

// killable: process groups are a Unix notion; elsewhere kill ends the
// kernel process alone.
func killable(cmd *exec.Cmd) (kill func()) { return func() { cmd.Process.Kill() } }
