//go:build !unix

package functions

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

// signalGroup stops p: there are no process groups or SIGTERM here, so both
// steps kill the process.
func signalGroup(p *os.Process, _ bool) { _ = p.Kill() }
