package functions

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeEmpty reports whether nothing is left to read in the pipe f
// (FIONREAD).
func pipeEmpty(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	n := 0
	_ = rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return err != nil || n == 0
}
