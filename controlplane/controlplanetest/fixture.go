package controlplanetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// T0 is the suite's base time, Unix ms (2026-01-01T00:00:00Z). Every
// property moves its clock forward from it.
const T0 = int64(1_767_225_600_000)

// NewRun returns a run built as the engine builds one before Reserve: a new
// run ID for nowMs, agent "probe" on runtime "go:probe", variables "{}" and
// the default policy.
func NewRun(nowMs int64) *sortie.Run {
	return &sortie.Run{
		ID:        sortie.NewRunID(time.UnixMilli(nowMs)),
		Agent:     sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		Variables: json.RawMessage(`{}`),
		Policy:    sortie.Policy{}.WithDefaults(),
	}
}

// fixture is one property's control plane with helpers that fail the test
// when a step that must succeed does not.
type fixture struct {
	t   *testing.T
	ctx context.Context
	h   Harness
	cp  sortie.ControlPlane
}

var sentinelNames = map[error]string{
	sortie.ErrNotFound: "ErrNotFound", sortie.ErrIdempotencyConflict: "ErrIdempotencyConflict",
	sortie.ErrConflict: "ErrConflict", sortie.ErrTerminal: "ErrTerminal",
	sortie.ErrCancelRequested: "ErrCancelRequested", sortie.ErrInvalidArgument: "ErrInvalidArgument",
	sortie.ErrClosed: "ErrClosed", sortie.ErrUnavailable: "ErrUnavailable",
}

// wantErr fails t unless err matches want with errors.Is.
func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want %s", call, err, sentinelNames[want])
		return
	}
	var te *sortie.TerminalError
	if want == sortie.ErrTerminal && (!errors.As(err, &te) || te.ID.Validate() != nil || !te.State.Terminal()) {
		t.Errorf("%s = %v, want a *sortie.TerminalError naming the run and its terminal state", call, err)
	}
}

// wantTerminal is wantErr for ErrTerminal that also checks the run and
// state the *sortie.TerminalError names.
func wantTerminal(t *testing.T, call string, err error, id sortie.RunID, state sortie.State) {
	t.Helper()
	wantErr(t, call, err, sortie.ErrTerminal)
	var te *sortie.TerminalError
	if errors.As(err, &te) && (te.ID != id || te.State != state) {
		t.Errorf("%s = %v, want it to name run %s, %s", call, err, id, state)
	}
}

// must fails t at once when a step that must succeed returned an error.
func must(t *testing.T, call string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s = %v, want success", call, err)
	}
}

func (f *fixture) reserve(run *sortie.Run, nowMs int64) *sortie.Run {
	f.t.Helper()
	got, created, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: run, NowMs: nowMs})
	must(f.t, fmt.Sprintf("Reserve(%s)", run.ID), err)
	if !created {
		f.t.Fatalf("Reserve(%s) created = false, want true", run.ID)
	}
	return got
}

// submitted reserves a new run at nowMs.
func (f *fixture) submitted(nowMs int64) *sortie.Run {
	f.t.Helper()
	return f.reserve(NewRun(nowMs), nowMs)
}

func (f *fixture) launch(id sortie.RunID, attempt int, nowMs int64) (*sortie.Run, string) {
	f.t.Helper()
	lid := sortie.NewLaunchID()
	run, err := f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: id, Attempt: attempt, LaunchID: lid, NowMs: nowMs})
	must(f.t, fmt.Sprintf("RecordLaunch(%s, %d)", id, attempt), err)
	return run, lid
}

func claimOf(id sortie.RunID, attempt int, lid string, nowMs int64) sortie.Claim {
	return sortie.Claim{RunID: id, Attempt: attempt, LaunchID: lid, Owner: "probe-worker", NowMs: nowMs}
}

func (f *fixture) claim(id sortie.RunID, attempt int, lid string, nowMs int64) *sortie.Run {
	f.t.Helper()
	run, err := f.cp.Claim(f.ctx, claimOf(id, attempt, lid, nowMs))
	must(f.t, fmt.Sprintf("Claim(%s, %d)", id, attempt), err)
	return run
}

// working reserves a run at nowMs, records attempt 1 and claims it; it
// returns the claimed run and the attempt's launch ID.
func (f *fixture) working(nowMs int64) (*sortie.Run, string) {
	f.t.Helper()
	run := f.submitted(nowMs)
	_, lid := f.launch(run.ID, 1, nowMs+1)
	return f.claim(run.ID, 1, lid, nowMs+2), lid
}

// next launches and claims the run's next attempt after a retry.
func (f *fixture) next(run *sortie.Run, nowMs int64) (*sortie.Run, string) {
	f.t.Helper()
	_, lid := f.launch(run.ID, run.Attempt+1, nowMs)
	return f.claim(run.ID, run.Attempt+1, lid, nowMs+1), lid
}

func (f *fixture) finish(id sortie.RunID, attempt int, lid string, o sortie.Outcome, nowMs int64) *sortie.Run {
	f.t.Helper()
	run, err := f.cp.Finish(f.ctx, sortie.Finish{RunID: id, Attempt: attempt, LaunchID: lid, Outcome: o, NowMs: nowMs})
	must(f.t, fmt.Sprintf("Finish(%s, %d)", id, attempt), err)
	return run
}

func (f *fixture) get(id sortie.RunID) *sortie.Run {
	f.t.Helper()
	run, err := f.cp.Get(f.ctx, id)
	must(f.t, fmt.Sprintf("Get(%s)", id), err)
	return run
}

func (f *fixture) events(id sortie.RunID, after sortie.Cursor, limit int) []sortie.Event {
	f.t.Helper()
	evs, err := f.cp.Events(f.ctx, id, after, limit)
	must(f.t, fmt.Sprintf("Events(%s, %s, %d)", id, after, limit), err)
	return evs
}

func (f *fixture) append(id sortie.RunID, attempt int, lid string, nowMs int64, evs ...sortie.Event) []sortie.Event {
	f.t.Helper()
	out, err := f.cp.AppendEvents(f.ctx, sortie.Append{RunID: id, Attempt: attempt, LaunchID: lid, Events: evs, NowMs: nowMs})
	must(f.t, fmt.Sprintf("AppendEvents(%s, %d, %d events)", id, attempt, len(evs)), err)
	return out
}

// unchanged fails t when run id differs from want in any field.
func (f *fixture) unchanged(call string, id sortie.RunID, want *sortie.Run) {
	f.t.Helper()
	if diff := cmp.Diff(want, f.get(id)); diff != "" {
		f.t.Errorf("after %s, Get(%s) changed (-want +got):\n%s", call, id, diff)
	}
}

func result(s string) sortie.Outcome { return sortie.Outcome{Result: json.RawMessage(s)} }

func failure(typ string, retryable bool) sortie.Outcome {
	return sortie.Outcome{Error: &sortie.ErrorMessage{Type: typ, Message: "probe " + typ, Retryable: retryable}}
}

func interrupt(s sortie.State) sortie.Outcome {
	return sortie.Outcome{Interrupt: &sortie.Interrupt{State: s, Prompt: "which file?", Checkpoint: json.RawMessage(`{"step":2}`)}}
}

func event(text string) sortie.Event {
	return sortie.Event{Kind: "progress", Text: text, Data: json.RawMessage(`{"n":1}`), TimeMs: T0}
}

func ids(runs []*sortie.Run) []sortie.RunID {
	out := make([]sortie.RunID, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func cursors(evs []sortie.Event) []string {
	out := make([]string, len(evs))
	for i := range evs {
		out[i] = evs[i].Cursor().String()
	}
	return out
}

// parallel runs fn(i) for i in 0..n-1 on n goroutines released together.
func parallel(n int, fn func(i int)) {
	start := make(chan struct{})
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			fn(i)
		}()
	}
	close(start)
	for range n {
		<-done
	}
}
