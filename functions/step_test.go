package functions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
)

// stepRig runs attempts of one run on the memory control plane, each
// launched as the engine launches it: with the run's recorded steps in its
// invocation.
type stepRig struct {
	t   *testing.T
	cp  *memory.ControlPlane
	w   *Worker
	run *sortie.Run
	// granter, when set, grants each attempt payload URLs as a Lambda or
	// Cloud Run host does (withURLs).
	granter sortie.Sealer
}

func newStepRig(t *testing.T, h Handler) *stepRig {
	cp := memory.New()
	t.Cleanup(func() { cp.Close() })
	run := &sortie.Run{ID: sortie.NewRunID(time.Now()), Agent: sortie.Manifest{Name: "test", Runtime: "go:h"},
		Policy: sortie.Policy{MaxAttempts: 5}}
	run, _, err := cp.Reserve(t.Context(), &sortie.Reservation{Run: run, NowMs: nowMs()})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := newWorker(register(h))
	return &stepRig{t: t, cp: cp, w: w, run: run}
}

// attempt launches and executes the run's next attempt; the invocation
// carries the recorded steps, or a reference to them when byRef is set.
func (r *stepRig) attempt(byRef bool) sortie.Outcome {
	r.t.Helper()
	ctx := r.t.Context()
	run, err := r.cp.Get(ctx, r.run.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	if run.State.Interrupted() {
		if run, err = r.cp.Resume(ctx, run.ID, json.RawMessage(`"go on"`)); err != nil {
			r.t.Fatal(err)
		}
	}
	inv := testInvocation("go:h", "")
	inv.RunID, inv.Attempt = run.ID, run.Attempt+1
	if run.Interrupt != nil {
		inv.Resume = &sortie.Resume{Checkpoint: run.Interrupt.Checkpoint, Input: run.ResumeInput}
	}
	if _, err := r.cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: inv.Attempt, LaunchID: inv.LaunchID, NowMs: nowMs()}); err != nil {
		r.t.Fatal(err)
	}
	steps, err := r.cp.Steps(ctx, run.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	if byRef && len(steps) > 0 {
		inv.StepsRef = &sortie.StepsRef{Count: len(steps)}
	} else if len(steps) > 0 {
		inv.Steps = steps
	}
	if r.granter != nil {
		if err := r.granter.Seal(ctx, inv); err != nil {
			r.t.Fatalf("grant attempt %d its payload URLs: %v", inv.Attempt, err)
		}
	}
	o, err := r.w.Execute(ctx, inv, NewControlPlaneReporter(r.cp, inv, "test"))
	if err != nil {
		r.t.Fatalf("Execute(attempt %d) = %v", inv.Attempt, err)
	}
	return o
}

func (r *stepRig) events() []sortie.Event {
	evs, err := r.cp.Events(r.t.Context(), r.run.ID, sortie.Cursor{}, 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

// stepKinds returns "ATTEMPT KIND NAME" of the run's step events.
func (r *stepRig) stepKinds() []string {
	var out []string
	for _, e := range r.events() {
		if strings.HasPrefix(e.Kind, "step.") {
			var d stepEvent
			_ = json.Unmarshal(e.Data, &d)
			out = append(out, strings.Join([]string{string(rune('0' + e.Attempt)), e.Kind, d.Name}, " "))
		}
	}
	return out
}

// A step is in the control plane before Step returns, and a retry replays
// it: its function ran once in all.
func TestStepRecordedBeforeReturnAndReplayed(t *testing.T) {
	var runs atomic.Int32
	var r *stepRig
	r = newStepRig(t, func(ctx context.Context, c *Call) (any, error) {
		n, err := Step(ctx, c, "count", func(context.Context) (int, error) { return int(runs.Add(1)) * 10, nil })
		if err != nil {
			return nil, err
		}
		steps, err := r.cp.Steps(ctx, c.RunID())
		if err != nil || len(steps) != 1 || string(steps[0].Result) != "10" {
			return nil, Permanent(errors.New("the step is not recorded after Step returned"))
		}
		if c.Attempt() == 1 {
			return nil, errors.New("flaky after the step")
		}
		return n, nil
	})
	if o := r.attempt(false); o.Error == nil || !o.Error.Retryable {
		t.Fatalf("attempt 1 = %+v, want a retryable error", o)
	}
	if o := r.attempt(false); string(o.Result) != "10" {
		t.Fatalf("attempt 2 = %+v, want result 10 (the recorded step)", o)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the step's function ran %d times, want 1", n)
	}
	want := []string{"1 step.started count", "1 step.completed count", "2 step.replayed count"}
	if diff := cmp.Diff(want, r.stepKinds()); diff != "" {
		t.Errorf("step events (-want +got):\n%s", diff)
	}
}

// A resumed attempt replays the steps of the interrupted one, also when
// its invocation names them by reference.
func TestStepReplayedOnResumeByReference(t *testing.T) {
	var runs atomic.Int32
	r := newStepRig(t, func(ctx context.Context, c *Call) (any, error) {
		draft, err := Step(ctx, c, "draft", func(context.Context) (string, error) {
			runs.Add(1)
			return "draft by attempt " + string(rune('0'+c.Attempt())), nil
		})
		if err != nil {
			return nil, err
		}
		if c.Resume() == nil {
			return nil, Interrupt(sortie.StateInputRequired, "approve?", nil)
		}
		return draft, nil
	})
	if o := r.attempt(false); o.Interrupt == nil {
		t.Fatalf("attempt 1 = %+v, want an interrupt", o)
	}
	if o := r.attempt(true); string(o.Result) != `"draft by attempt 1"` {
		t.Fatalf("attempt 2 = %+v, want the draft of attempt 1", o)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the step ran %d times, want 1", n)
	}
}

func TestStepNamesAreUniquePerAttempt(t *testing.T) {
	rep := newRecorder(t)
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		if _, err := c.Step(ctx, "twice", func(context.Context) (any, error) { return 1, nil }); err != nil {
			return nil, err
		}
		_, err := c.Step(ctx, "twice", func(context.Context) (any, error) { return 2, nil })
		return nil, err
	}))
	if _, err := w.Execute(t.Context(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	e := rep.finished().Error
	if e == nil || e.Type != errTypeInvalid || !strings.Contains(e.Message, `"twice"`) || e.Retryable {
		t.Errorf("a repeated step name finished with %+v, want invalid_argument naming it, not retryable", e)
	}
}

// A failing step is tried per its options; a permanent failure once.
func TestStepTries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      int // failures before success
		permanent bool
		wantRuns  int32
		wantOK    bool
	}{
		{"third try succeeds", 2, false, 3, true},
		{"out of tries", 5, false, 3, false},
		{"permanent", 5, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			rep := newRecorder(t)
			w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
				return c.Step(ctx, "flaky", func(context.Context) (any, error) {
					if n := runs.Add(1); int(n) <= tc.fail {
						if tc.permanent {
							return nil, Permanent(errors.New("bad request"))
						}
						return nil, errors.New("503 from the model")
					}
					return "ok", nil
				}, &StepOptions{Tries: 3, Backoff: time.Millisecond})
			}))
			if _, err := w.Execute(t.Context(), testInvocation("go:h", ""), rep); err != nil {
				t.Fatal(err)
			}
			o := rep.finished()
			if got := runs.Load(); got != tc.wantRuns || (o.Error == nil) != tc.wantOK {
				t.Fatalf("ran %d times, outcome %+v; want %d runs, success %v", got, o, tc.wantRuns, tc.wantOK)
			}
			if tc.wantOK && (len(rep.steps) != 1 || rep.steps[0].Tries != 3) {
				t.Errorf("recorded %+v, want one step of 3 tries", rep.steps)
			}
			if !tc.wantOK && (len(rep.steps) != 0 || o.Error.Retryable == tc.permanent) {
				t.Errorf("recorded %+v with outcome %+v; want nothing recorded, retryable %v", rep.steps, o.Error, !tc.permanent)
			}
		})
	}
}

// A cancel during a step's backoff stops it at once.
func TestStepStopsOnCancel(t *testing.T) {
	rep := newRecorder(t)
	started := make(chan struct{})
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		return c.Step(ctx, "slow", func(context.Context) (any, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			return nil, errors.New("try again")
		}, &StepOptions{Tries: 100, Backoff: time.Hour})
	}))
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs, inv.LeaseMs = 20, 60
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := w.Execute(context.Background(), inv, rep); err != nil {
			t.Error(err)
		}
	}()
	<-started
	rep.cancel.Store(true)
	<-done
	if e := rep.finished().Error; e == nil || e.Type != sortie.ErrorTypeCancelled {
		t.Errorf("a step cancelled in its backoff finished with %+v, want cancelled", e)
	}
}

// Events emitted before a step are sent before it is recorded; step.started
// comes first, step.completed after the record.
func TestStepFollowsItsEvents(t *testing.T) {
	rep := newRecorder(t)
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		return c.Step(ctx, "a", func(context.Context) (any, error) {
			return 1, c.Emit("progress", "inside", nil)
		})
	}))
	w.EventWindow = time.Hour // only a flush sends them
	if _, err := w.Execute(t.Context(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"events 2", "step a", "events 1", "finish"}, rep.calls()); diff != "" {
		t.Errorf("reporter calls (-want +got):\n%s", diff)
	}
	events, _, _ := rep.snapshot()
	if diff := cmp.Diff([]string{EventStepStarted, "progress", EventStepCompleted}, eventKinds(events)); diff != "" {
		t.Errorf("event kinds (-want +got):\n%s", diff)
	}
}

// A result over the limit is refused, naming it, and not recorded.
func TestStepResultLimit(t *testing.T) {
	rep := newRecorder(t)
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		return c.Step(ctx, "big", func(context.Context) (any, error) {
			return strings.Repeat("x", sortie.MaxStepResultBytes), nil
		})
	}))
	if _, err := w.Execute(t.Context(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	if e := rep.finished().Error; e == nil || !strings.Contains(e.Message, "MaxStepResultBytes") || e.Retryable || len(rep.steps) != 0 {
		t.Errorf("an oversize step finished with %+v and recorded %d steps, want a permanent error naming the limit and none", e, len(rep.steps))
	}
}
