package local

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sortie-run/sortie"
)

// pollInterval is how often Cancel reads /proc while it waits for a
// process another launcher started to exit.
const pollInterval = 10 * time.Millisecond

// Cancel stops the attempt ref names. It is idempotent: an attempt that
// already ended, or that no longer exists, is success.
//
// For an attempt this launcher started, it sends SIGTERM to the worker's
// process group, waits up to Options.Grace, sends SIGKILL, and returns once
// the worker is gone; an in-process attempt's context is cancelled and
// Cancel waits up to Grace for its function to return. For a subprocess
// started by another process (the CLI's cancel runs apart from the
// launching process), it signals the pid only while /proc/<pid>/stat shows
// the start time recorded in ref.Detail["start_time"] (so a reused pid is
// never signalled), with the same SIGTERM, Grace, SIGKILL sequence. An
// in-process attempt of another process cannot be reached and is left to
// cooperative cancellation. It returns a [*sortie.ValidationError] for a
// ref of another provider, a subprocess ref without a numeric ID or start
// time, and ctx's error when ctx ends first.
func (l *Launcher) Cancel(ctx context.Context, ref sortie.Ref) error {
	if err := checkRef(ref); err != nil {
		return fmt.Errorf("local: cancel: %w", err)
	}
	l.cancels.Add(1)
	if a, ok := l.lookup(ref); ok {
		return l.stop(ctx, a)
	}
	if ref.Resource == ResourceInProcess {
		return nil
	}
	pid, start, err := procRef(ref)
	if err != nil {
		return fmt.Errorf("local: cancel: %w", err)
	}
	return l.stopForeign(ctx, pid, start)
}

// grace is how long a stop waits after SIGTERM: Options.Grace, or less
// when ctx's deadline comes sooner, so SIGKILL lands before it.
func (l *Launcher) grace(ctx context.Context) time.Duration {
	g := l.opts.Grace
	if d, ok := ctx.Deadline(); ok {
		g = max(0, min(g, time.Until(d)*9/10))
	}
	return g
}

// Describe reports the attempt's phase: running; succeeded (exit code 0 or
// a nil error from the in-process function); failed (with ExitCode, -1
// when a signal killed the worker, and Reason); or not-found when the
// process is gone or its pid was reused (start time differs), or when the
// attempt ran under another process (in it, or on its warm workers: both
// are ResourceInProcess). LogURL is the log file path.
// It returns a [*sortie.ValidationError] for a malformed ref, and
// PhaseUnknown with the error when /proc cannot be read.
func (l *Launcher) Describe(_ context.Context, ref sortie.Ref) (sortie.Status, error) {
	if err := checkRef(ref); err != nil {
		return sortie.Status{}, fmt.Errorf("local: describe: %w", err)
	}
	if a, ok := l.lookup(ref); ok {
		return a.describe(), nil
	}
	if ref.Resource == ResourceInProcess {
		return sortie.Status{Phase: sortie.PhaseNotFound, Reason: "unknown to this process: the attempt ran under another sortie process (in it or on its warm workers), as before a restart of the host"}, nil
	}
	pid, start, err := procRef(ref)
	if err != nil {
		return sortie.Status{}, fmt.Errorf("local: describe: %w", err)
	}
	st, err := describeForeign(pid, start)
	st.LogURL = ref.Detail[DetailLog]
	if err != nil {
		return st, fmt.Errorf("local: describe pid %d: %w", pid, err)
	}
	return st, nil
}

func describeForeign(pid int, start string) (sortie.Status, error) {
	st, err := readStat(pid)
	switch {
	case errors.Is(err, errGone):
		return sortie.Status{Phase: sortie.PhaseNotFound, Reason: "process gone"}, nil
	case err != nil:
		return sortie.Status{Phase: sortie.PhaseUnknown, Transient: true, Reason: err.Error()}, err
	case st.startTime != start:
		return sortie.Status{Phase: sortie.PhaseNotFound, Reason: "process gone (its pid was reused)"}, nil
	case !st.exited():
		return sortie.Status{Phase: sortie.PhaseRunning}, nil
	case st.exitStatus < 0:
		return sortie.Status{Phase: sortie.PhaseUnknown, Reason: "process exited; its exit status is not readable"}, nil
	}
	code, sig := waitStatus(st.exitStatus)
	if code == 0 {
		return sortie.Status{Phase: sortie.PhaseSucceeded, ExitCode: &code}, nil
	}
	out := failedStatus("worker exit status %d", code)
	if sig != 0 {
		out = failedStatus("worker killed by signal %s", syscall.Signal(sig))
		out.Signal = unix.SignalName(syscall.Signal(sig))
	}
	out.ExitCode = &code
	return out, nil
}

// stopForeign stops a process another launcher started: SIGTERM, up to
// the grace, SIGKILL (also when ctx ends first), each only while its start
// time still matches.
func (l *Launcher) stopForeign(ctx context.Context, pid int, start string) error {
	if !signalForeign(pid, start, syscall.SIGTERM) {
		return nil
	}
	gone, err := waitForeign(ctx, pid, start, time.Now().Add(l.grace(ctx)))
	if gone {
		return nil
	}
	if !signalForeign(pid, start, syscall.SIGKILL) || err != nil {
		return err
	}
	_, err = waitForeign(ctx, pid, start, time.Time{})
	return err
}

// foreignAlive reports whether pid is still the live process that started
// at start.
func foreignAlive(pid int, start string) (procStat, bool) {
	st, err := readStat(pid)
	return st, err == nil && st.startTime == start && !st.exited()
}

// signalForeign signals the process (its group when it leads one) if it is
// still the one that started at start; it reports whether it did.
func signalForeign(pid int, start string, sig syscall.Signal) bool {
	st, ok := foreignAlive(pid, start)
	if !ok {
		return false
	}
	target := pid
	if st.pgrp == pid {
		target = -pid
	}
	return !errors.Is(syscall.Kill(target, sig), syscall.ESRCH)
}

// waitForeign polls /proc until the process is gone (true), the deadline
// passes (false; a zero deadline never passes) or ctx ends.
func waitForeign(ctx context.Context, pid int, start string, deadline time.Time) (bool, error) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if _, ok := foreignAlive(pid, start); !ok {
			return true, nil
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
		}
	}
}

func checkRef(ref sortie.Ref) error {
	if ref.Provider != Provider {
		return sortie.Invalidf("ref.provider", "%q is not %q", ref.Provider, Provider)
	}
	return nil
}

// procRef returns the pid and start time of a subprocess ref.
func procRef(ref sortie.Ref) (int, string, error) {
	pid, err := strconv.Atoi(ref.ID)
	if err != nil || pid <= 1 {
		return 0, "", sortie.Invalidf("ref.id", "%q is not a worker process ID", ref.ID)
	}
	start := ref.Detail[DetailStartTime]
	if start == "" {
		return 0, "", sortie.Invalidf("ref.detail.start_time", "missing: a process is never signalled without its recorded start time")
	}
	return pid, start, nil
}
