package local

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

func inProcessLauncher(t *testing.T, fn func(context.Context, *sortie.Invocation) error) *Launcher {
	t.Helper()
	l, err := New(&Options{InProcess: fn, Grace: time.Second})
	if err != nil {
		t.Fatalf("New(InProcess) = %v, want nil", err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	return l
}

func TestInProcessStartOnce(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	l := inProcessLauncher(t, func(ctx context.Context, inv *sortie.Invocation) error {
		calls.Add(1)
		<-release
		return nil
	})
	inv := testInvocation(t)
	ref := start(t, l, inv)
	want := sortie.Ref{Provider: "local", Resource: "in-process", ID: inv.LaunchID, RunID: inv.RunID, Attempt: 1, LaunchID: inv.LaunchID}
	if diff := cmp.Diff(want, ref); diff != "" {
		t.Errorf("Start() ref (-want +got):\n%s", diff)
	}
	if again := start(t, l, inv); !cmp.Equal(ref, again) {
		t.Errorf("second Start(same launch ID) = %+v, want %+v", again, ref)
	}
	if st, _ := l.Describe(t.Context(), ref); st.Phase != sortie.PhaseRunning {
		t.Errorf("Describe(blocked function) = %+v, want running", st)
	}
	close(release)
	if st := waitEnded(t, l, ref); st.Phase != sortie.PhaseSucceeded {
		t.Errorf("Describe(function returned nil) = %+v, want succeeded", st)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("function calls for one launch ID = %d, want 1", n)
	}
}

func TestInProcessCancel(t *testing.T) {
	l := inProcessLauncher(t, func(ctx context.Context, inv *sortie.Invocation) error {
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(t.Context())
	ref, err := l.Start(ctx, testInvocation(t))
	if err != nil {
		t.Fatalf("Start() = %v, want nil", err)
	}
	cancel() // Start's context does not bound the attempt
	if st, _ := l.Describe(t.Context(), ref); st.Phase != sortie.PhaseRunning {
		t.Errorf("Describe() after Start's context ended = %+v, want running", st)
	}
	if err := l.Cancel(t.Context(), ref); err != nil {
		t.Fatalf("Cancel() = %v, want nil", err)
	}
	st, _ := l.Describe(t.Context(), ref)
	want := sortie.Status{Phase: sortie.PhaseCancelled, Reason: "stopped by Cancel; in-process worker: context canceled"}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Describe() after Cancel (-want +got):\n%s", diff)
	}
	other := inProcessLauncher(t, func(context.Context, *sortie.Invocation) error { return nil })
	if err := other.Cancel(t.Context(), ref); err != nil {
		t.Errorf("other launcher Cancel(in-process ref) = %v, want nil", err)
	}
	if st, err := other.Describe(t.Context(), ref); err != nil || st.Phase != sortie.PhaseNotFound {
		t.Errorf("other launcher Describe(in-process ref) = %+v, %v, want not-found", st, err)
	}
}

func TestInProcessPanicFails(t *testing.T) {
	l := inProcessLauncher(t, func(context.Context, *sortie.Invocation) error { panic("probe exploded") })
	ref := start(t, l, testInvocation(t))
	want := sortie.Status{Phase: sortie.PhaseFailed, Reason: "in-process worker panicked: probe exploded"}
	if diff := cmp.Diff(want, waitEnded(t, l, ref)); diff != "" {
		t.Errorf("Describe(panicking function) (-want +got):\n%s", diff)
	}
	errFn := inProcessLauncher(t, func(context.Context, *sortie.Invocation) error { return errors.New("boom") })
	ref = start(t, errFn, testInvocation(t))
	if st := waitEnded(t, errFn, ref); st.Phase != sortie.PhaseFailed || st.Reason != "in-process worker: boom" {
		t.Errorf("Describe(function returned boom) = %+v, want failed with the error", st)
	}
}
