package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// procStat is what the launcher reads from /proc/<pid>/stat (see proc(5)).
type procStat struct {
	state     byte   // field 3: R, S, D, Z, X, ...
	pgrp      int    // field 5: process group ID
	startTime string // field 22: start time in clock ticks after boot
	// exitStatus is field 52 (the wait status of an exited process), -1
	// when the kernel does not show it.
	exitStatus int
}

// exited reports whether the process has ended (a zombie not yet reaped
// by its parent, or dead).
func (s procStat) exited() bool { return s.state == 'Z' || s.state == 'X' }

// errGone means /proc has no such process.
var errGone = errors.New("no such process")

// readStat reads /proc/<pid>/stat. It returns errGone when the process
// does not exist.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return procStat{}, errGone
	} else if err != nil {
		return procStat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return parseStat(b)
}

// parseStat parses the text of /proc/<pid>/stat. The command name (field
// 2) may hold spaces and parentheses, so fields are counted after its
// last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc stat: no command name")
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 20", len(f))
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat: process group %q: %w", f[2], err)
	}
	s := procStat{state: f[0][0], pgrp: pgrp, startTime: string(f[19]), exitStatus: -1}
	if len(f) >= 50 {
		if v, err := strconv.Atoi(string(f[49])); err == nil {
			s.exitStatus = v
		}
	}
	return s, nil
}

// waitStatus decodes a wait(2) status: the exit code of a process that
// exited, or -1 and the signal number of one a signal killed.
func waitStatus(status int) (code, signal int) {
	if sig := status & 0x7f; sig != 0 {
		return -1, sig
	}
	return (status >> 8) & 0xff, 0
}
