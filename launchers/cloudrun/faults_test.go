package cloudrun_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// The fake's faults: what Cloud Run does that an emulator would not.

// holdRunJob makes RunJob calls from now on wait (a launch in flight)
// until release is called.
func (f *fakeRun) holdRunJob() (release func()) {
	f.mu.Lock()
	if f.runGate == nil {
		f.runGate = make(chan struct{})
	}
	f.mu.Unlock()
	return f.releaseRunJob
}

func (f *fakeRun) releaseRunJob() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runGate != nil {
		close(f.runGate)
		f.runGate = nil
	}
}

func (f *fakeRun) waitRunGate(ctx context.Context) error {
	f.mu.Lock()
	gate := f.runGate
	f.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// holdPending makes the executions RunJob creates from now on pending:
// accepted, their container not started, until release starts the ones
// not cancelled meanwhile.
func (f *fakeRun) holdPending() (release func()) {
	f.mu.Lock()
	f.pending = true
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pending = false
		for _, x := range f.execs {
			if !x.started && !x.cancelled {
				f.startContainer(x)
			}
		}
	}
}

// cancelOutside cancels execution name as an operator would outside
// Sortie (the console, gcloud run jobs executions cancel): not counted as
// one of Sortie's CancelExecution calls.
func (f *fakeRun) cancelOutside(t *testing.T, name string) {
	t.Helper()
	if err := f.cancel(name); err != nil {
		t.Fatalf("cancel execution %s outside Sortie: %v", name, err)
	}
}

// cancelCalls returns how many CancelExecution calls the fake received.
func (f *fakeRun) cancelCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancels
}

// freeze stops the container of execution name with SIGSTOP (a hung
// container) and waits until it is stopped.
func (f *fakeRun) freeze(t *testing.T, name string) {
	t.Helper()
	f.mu.Lock()
	x, ok := f.execs[name]
	f.mu.Unlock()
	if !ok {
		t.Fatalf("freeze: no execution %s", name)
	}
	pid := x.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("kill(%d, SIGSTOP) = %v", pid, err)
	}
	waitFor(t, "the container to stop", func() (bool, string) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_, rest, _ := strings.Cut(string(b), ") ")
		return err == nil && strings.HasPrefix(rest, "T"), rest
	})
}
