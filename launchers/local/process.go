package local

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/procstatus"
)

// logPath returns the log file of an attempt. The name derives only from
// the validated run ID (a ULID) and the attempt number, never from other
// invocation fields.
func (l *Launcher) logPath(inv *sortie.Invocation) string {
	if l.opts.LogDir == "" {
		return ""
	}
	return filepath.Join(l.opts.LogDir, fmt.Sprintf("%s-%d.log", inv.RunID, inv.Attempt))
}

// spawn starts the worker command for inv in its own process group, with
// payload and a newline on its stdin, and starts the goroutine that reaps
// it.
// stdinFile returns a file holding b, positioned at its start, for a
// child's stdin: the child reads the whole invocation from it even when
// this process exits right after Start (a pipe fed by a goroutine of ours
// would lose it). It is an anonymous memory file (memfd), or an unlinked
// temporary file where memfd is unavailable; nothing stays on disk.
func stdinFile(b []byte) (*os.File, error) {
	var f *os.File
	if fd, err := unix.MemfdCreate("sortie-invocation", unix.MFD_CLOEXEC); err == nil {
		f = os.NewFile(uintptr(fd), "sortie-invocation")
	} else if f, err = os.CreateTemp("", "sortie-invocation-*"); err != nil {
		return nil, err
	} else {
		os.Remove(f.Name())
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (l *Launcher) spawn(inv *sortie.Invocation, payload []byte) (*attempt, error) {
	cmd := exec.Command(l.opts.Command[0], l.opts.Command[1:]...)
	cmd.Env = l.opts.Env
	stdin, err := stdinFile(append(payload, '\n'))
	if err != nil {
		return nil, fmt.Errorf("stdin of worker: %w", err)
	}
	defer stdin.Close() // the child holds its own copy
	cmd.Stdin = stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	path := l.logPath(inv)
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
		defer f.Close() // the child holds its own copy
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("spawn worker %s: %w", l.resource, err)
	}
	pid := cmd.Process.Pid
	// The child is not reaped before the reaper runs, so /proc has it even
	// if it already exited.
	st, err := readStat(pid)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, fmt.Errorf("read start time of worker pid %d: %w", pid, err)
	}
	a := newAttempt(l.newRef(inv, strconv.Itoa(pid)), path)
	a.pid = pid
	a.ref.Detail = map[string]string{DetailStartTime: st.startTime}
	if path != "" {
		a.ref.Detail[DetailLog] = path
	}
	go l.reap(a, cmd)
	return a, nil
}

// reap waits for the child to exit, marks it exited before reaping it (so
// no signal can reach a process that reuses its pid), reaps it and records
// its exit status.
func (l *Launcher) reap(a *attempt, cmd *exec.Cmd) {
	if err := waitExited(a.pid); err == nil {
		a.markExited()
	}
	err := cmd.Wait()
	a.markExited()
	a.finish(procstatus.Of("worker", cmd.ProcessState, err))
	l.ended(a)
}

// waitExited blocks until child pid has exited, without reaping it.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
