package functions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

// emitting returns a worker whose handler "h" emits n events of text
// size bytes each, then calls after (when not nil) and returns.
func emitting(t *testing.T, n, size int, window time.Duration, after func(*Call)) *Worker {
	w, _ := newWorker(register(func(_ context.Context, c *Call) (any, error) {
		for i := range n {
			if err := c.Emit("tick", fmt.Sprintf("%d%s", i, strings.Repeat("x", size)), nil); err != nil {
				t.Errorf("Emit %d = %v, want nil", i+1, err)
			}
		}
		if after != nil {
			after(c)
		}
		return "ok", nil
	}))
	w.EventWindow = window
	return w
}

// execute runs the handler on a recorder with heartbeats every hb.
func execute(t *testing.T, w *Worker, hb time.Duration) *recorder {
	t.Helper()
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs, inv.LeaseMs = hb.Milliseconds(), 3*hb.Milliseconds()
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatalf("Execute = %v, want nil", err)
	}
	return rep
}

func checkSeqs(t *testing.T, events []sortie.Event, n int) {
	t.Helper()
	if len(events) != n {
		t.Fatalf("reported %d events, want %d", len(events), n)
	}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, i+1)
		}
	}
}

func TestEventsBatchedBeforeFinish(t *testing.T) {
	// The window and the heartbeat interval outlast the attempt: only the
	// finish sends the events, as one batch before the outcome.
	rep := execute(t, emitting(t, 40, 0, time.Hour, nil), time.Hour)
	if d := cmp.Diff([]string{"events 40", "finish"}, rep.calls()); d != "" {
		t.Errorf("reporter calls (-want +got):\n%s", d)
	}
	events, _, _ := rep.snapshot()
	checkSeqs(t, events, 40)
}

func TestFullBatchesAreSentAtOnce(t *testing.T) {
	rep := execute(t, emitting(t, 250, 0, time.Hour, nil), time.Hour)
	want := []string{"events 100", "events 100", "events 50", "finish"}
	if d := cmp.Diff(want, rep.calls()); d != "" {
		t.Errorf("reporter calls for 250 events (-want +got):\n%s", d)
	}
	events, _, _ := rep.snapshot()
	checkSeqs(t, events, 250)
}

func TestBatchesStayUnderTheByteBudget(t *testing.T) {
	// Each event's worst case is over 6 × 16 KiB: at most five fit 512 KiB.
	rep := execute(t, emitting(t, 12, sortie.MaxEventTextBytes-8, time.Hour, nil), time.Hour)
	var sizes []string
	for _, op := range rep.calls() {
		if strings.HasPrefix(op, "events") {
			sizes = append(sizes, op)
		}
	}
	if d := cmp.Diff([]string{"events 5", "events 5", "events 2"}, sizes); d != "" {
		t.Errorf("batches of 12 events of 16 KiB (-want +got):\n%s", d)
	}
}

func TestWindowSendsEventsWhileTheHandlerRuns(t *testing.T) {
	var rep *recorder
	seen := make(chan struct{})
	w := emitting(t, 3, 0, 10*time.Millisecond, func(*Call) {
		// No heartbeat and no finish yet: only the window's timer sends.
		waitFor(t, "the window to send the events", func() bool {
			events, _, _ := rep.snapshot()
			return len(events) == 3
		})
		close(seen)
	})
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs, inv.LeaseMs = time.Hour.Milliseconds(), 3*time.Hour.Milliseconds()
	rep = newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	<-seen
	// The events may take more than one window (a slow machine); all of
	// them were sent before the finish, which came last.
	calls := rep.calls()
	if len(calls) < 2 || calls[len(calls)-1] != "finish" || slices.Contains(calls[:len(calls)-1], "finish") {
		t.Errorf("reporter calls = %q, want the events' batches, then the finish", calls)
	}
}

func TestHeartbeatSendsPendingEventsFirst(t *testing.T) {
	var rep *recorder
	w := emitting(t, 2, 0, time.Hour, func(*Call) {
		waitFor(t, "a heartbeat", func() bool {
			_, _, hb := rep.snapshot()
			return hb > 0
		})
	})
	inv := testInvocation("go:h", "")
	rep = newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	calls := rep.calls()
	if len(calls) < 2 || calls[0] != "events 2" || calls[1] != "heartbeat" {
		t.Errorf("reporter calls = %q, want the 2 events sent before the first heartbeat", calls)
	}
}

func TestEmitAfterAFailedBatchReturnsItsError(t *testing.T) {
	var errs [2]error
	w, _ := newWorker(register(func(_ context.Context, c *Call) (any, error) {
		errs[0], errs[1] = c.Emit("first", "", nil), c.Emit("second", "", nil)
		return "ok", nil
	}))
	w.EventWindow = -1 // each Emit sends its event before returning
	rep := newRecorder(t)
	rep.eventsErr = fmt.Errorf("store down: %w", errors.New("disk full"))
	if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "send events 1-1: store down") {
			t.Errorf("Emit %d after the first batch failed = %v, want that batch's error", i+1, err)
		}
	}
	if rep.finished().Result == nil {
		t.Errorf("finish = %+v, want the handler's result reported despite the lost events", rep.finished())
	}
}

func TestFlushSendsPendingEventsNow(t *testing.T) {
	var rep *recorder
	var flushErr error
	var seen int
	w := emitting(t, 2, 0, time.Hour, func(c *Call) {
		flushErr = c.Flush()
		events, _, _ := rep.snapshot()
		seen = len(events)
	})
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs, inv.LeaseMs = time.Hour.Milliseconds(), 3*time.Hour.Milliseconds()
	rep = newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	if flushErr != nil || seen != 2 {
		t.Errorf("Flush() = %v with %d events at the reporter after it returned, want nil and 2", flushErr, seen)
	}
}
