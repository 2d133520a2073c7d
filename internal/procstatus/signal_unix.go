//go:build unix

package procstatus

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// signal names the signal that ended the process, or "".
func signal(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return unix.SignalName(ws.Signal())
	}
	return ""
}
