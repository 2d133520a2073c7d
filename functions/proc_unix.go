//go:build unix

package functions

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command in a process group of its own, so
// signals reach the processes it started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL when kill is set) to the process
// group of p. A group that is gone already is not an error.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
}
