package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopOnClosedStdout returns ctx, cancelled as Ctrl-C cancels it once
// stdout is a pipe (or socket) whose reader went away (`sortie run ...
// --json | head -3`): the command stops following and closes its host,
// which ends the attempts it runs, instead of being killed by SIGPIPE
// mid-run. SIGPIPE is received from here on, so a write to a closed pipe
// returns EPIPE; one on another descriptor (a worker's pipe, a client's
// connection) is an error of that write only, as Go makes it anyway.
func stopOnClosedStdout(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGPIPE)
	go func() {
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				if stdoutClosed() {
					return
				}
			}
		}
	}()
	return ctx
}

// stdoutClosed reports whether stdout is a pipe or socket with no reader
// left: poll reports an error or hang-up on it.
func stdoutClosed() bool {
	fds := []unix.PollFd{{Fd: int32(os.Stdout.Fd())}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}
