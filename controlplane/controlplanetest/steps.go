package controlplanetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

var stepProperties = []property{
	{"StepRecordedOnce", testStepRecordedOnce},
	{"StepConflictOnOtherContent", testStepConflict},
	{"StepsReplayAfterRetry", testStepsAfterRetry},
	{"StepsReplayAfterResume", testStepsAfterResume},
	{"StepsOfTerminalRunImmutable", testStepsTerminal},
	{"StepRefusesStaleClaims", testStepStale},
	{"StepRefusesBadInput", testStepBadInput},
	{"StepsBytesLimit", testStepsBytesLimit},
	{"StepConcurrentSameName", testStepConcurrentSameName},
	{"StepByReference", testStepByReference},
}

// step returns a completed step of attempt with a JSON result.
func step(name string, attempt int, result string) sortie.Step {
	return sortie.Step{Name: name, Attempt: attempt, Status: sortie.StepCompleted, Result: json.RawMessage(result),
		StartedMs: T0 + int64(attempt)*100, DurationMs: 7, Tries: 1}
}

func stepRecord(id sortie.RunID, lid string, st sortie.Step, nowMs int64) sortie.StepRecord {
	return sortie.StepRecord{RunID: id, Attempt: st.Attempt, LaunchID: lid, Step: st, NowMs: nowMs}
}

func (f *fixture) recordStep(id sortie.RunID, lid string, st sortie.Step, nowMs int64) *sortie.Step {
	f.t.Helper()
	got, err := f.cp.RecordStep(f.ctx, stepRecord(id, lid, st, nowMs))
	must(f.t, fmt.Sprintf("RecordStep(%s, %q)", id, st.Name), err)
	return got
}

func (f *fixture) steps(id sortie.RunID) []sortie.Step {
	f.t.Helper()
	got, err := f.cp.Steps(f.ctx, id)
	must(f.t, fmt.Sprintf("Steps(%s)", id), err)
	return got
}

// stored is st as the control plane stores it when recorded at nowMs.
func stored(st sortie.Step, nowMs int64) sortie.Step {
	st.RecordedMs = nowMs
	return st
}

// wantSteps fails t unless run id's steps are want, in order.
func (f *fixture) wantSteps(call string, id sortie.RunID, want ...sortie.Step) {
	f.t.Helper()
	if want == nil {
		want = []sortie.Step{}
	}
	if diff := cmp.Diff(want, f.steps(id), cmpJSON); diff != "" {
		f.t.Errorf("after %s, Steps(%s) (-want +got):\n%s", call, id, diff)
	}
}

// cmpJSON compares JSON values by content, not spacing.
var cmpJSON = cmp.Comparer(func(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
})

func testStepRecordedOnce(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	if got := f.steps(run.ID); len(got) != 0 {
		t.Fatalf("Steps of a new run = %v, want none", got)
	}
	a := step("fetch", 1, `{"pages":3}`)
	got := f.recordStep(run.ID, lid, a, T0+10)
	if diff := cmp.Diff(stored(a, T0+10), *got, cmpJSON); diff != "" {
		t.Errorf("RecordStep(fetch) returned (-want +got):\n%s", diff)
	}
	again := f.recordStep(run.ID, lid, a, T0+20) // a retried call: a no-op
	if diff := cmp.Diff(stored(a, T0+10), *again, cmpJSON); diff != "" {
		t.Errorf("RecordStep(fetch) again returned (-want +got):\n%s", diff)
	}
	b := step("summarise", 1, `"short"`)
	b.StartedMs = a.StartedMs + 1
	f.recordStep(run.ID, lid, b, T0+30)
	f.wantSteps("two steps", run.ID, stored(a, T0+10), stored(b, T0+30))
	if r := f.get(run.ID); len(r.Steps) != 0 {
		t.Errorf("Get(%s).Steps = %v, want none: steps are not part of the run record", run.ID, r.Steps)
	}
}

func testStepConflict(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	a := step("charge", 1, `{"receipt":"r-1"}`)
	f.recordStep(run.ID, lid, a, T0+10)
	other := a
	other.Result = json.RawMessage(`{"receipt":"r-2"}`)
	_, err := f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid, other, T0+20))
	wantErr(t, "RecordStep(charge) with another result", err, sortie.ErrConflict)
	slower := a
	slower.DurationMs++
	_, err = f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid, slower, T0+20))
	wantErr(t, "RecordStep(charge) with another duration", err, sortie.ErrConflict)
	f.wantSteps("conflicting records", run.ID, stored(a, T0+10))
}

func testStepsAfterRetry(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	a, b := step("one", 1, `1`), step("two", 1, ``)
	b.StartedMs++
	b.Secret, b.Sealed = true, json.RawMessage(`{"v":1,"kid":"k1","ct":"AAEC"}`) // a secret step's envelope
	f.recordStep(run.ID, lid, a, T0+10)
	f.recordStep(run.ID, lid, b, T0+11)
	run = f.finish(run.ID, 1, lid, failure("crash", true), T0+20)
	run, lid2 := f.next(run, T0+5000)
	f.wantSteps("a retry", run.ID, stored(a, T0+10), stored(b, T0+11))
	_, err := f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid2, step("one", 2, `1`), T0+5010))
	wantErr(t, "RecordStep(one) by attempt 2 after attempt 1 recorded it", err, sortie.ErrConflict)
	c := step("three", 2, `3`)
	f.recordStep(run.ID, lid2, c, T0+5020)
	f.wantSteps("attempt 2's step", run.ID, stored(a, T0+10), stored(b, T0+11), stored(c, T0+5020))
}

func testStepsAfterResume(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	a := step("draft", 1, `{"text":"hello"}`)
	f.recordStep(run.ID, lid, a, T0+10)
	f.finish(run.ID, 1, lid, interrupt(sortie.StateInputRequired), T0+20)
	f.wantSteps("an interrupt", run.ID, stored(a, T0+10))
	run, err := f.cp.Resume(f.ctx, run.ID, json.RawMessage(`{"answer":"yes"}`))
	must(t, "Resume", err)
	run, lid2 := f.next(run, T0+40)
	f.wantSteps("the resume", run.ID, stored(a, T0+10))
	b := step("send", 2, `true`)
	f.recordStep(run.ID, lid2, b, T0+50)
	f.wantSteps("the resumed attempt's step", run.ID, stored(a, T0+10), stored(b, T0+50))
}

func testStepsTerminal(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	a := step("only", 1, `"x"`)
	f.recordStep(run.ID, lid, a, T0+10)
	f.finish(run.ID, 1, lid, result(`"done"`), T0+20)
	for _, st := range []sortie.Step{step("late", 1, `"y"`), a} {
		_, err := f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid, st, T0+30))
		wantErr(t, fmt.Sprintf("RecordStep(%q) on a completed run", st.Name), err, sortie.ErrTerminal)
	}
	cancelled, lid2 := f.working(T0 + 100)
	_, err := f.cp.RequestCancel(f.ctx, cancelled.ID, "stop")
	must(t, "RequestCancel", err)
	f.finish(cancelled.ID, 1, lid2, failure(sortie.ErrorTypeCancelled, false), T0+120)
	_, err = f.cp.RecordStep(f.ctx, stepRecord(cancelled.ID, lid2, step("late", 1, `1`), T0+130))
	wantErr(t, "RecordStep on a cancelled run", err, sortie.ErrTerminal)
	f.wantSteps("records after the end", run.ID, stored(a, T0+10))
	f.wantSteps("a record after the cancel", cancelled.ID)
}

func testStepStale(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	_, lid := f.launch(run.ID, 1, T0+1)
	_, err := f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid, step("early", 1, `1`), T0+2))
	wantErr(t, "RecordStep before the claim", err, sortie.ErrConflict)
	run = f.claim(run.ID, 1, lid, T0+3)
	_, err = f.cp.RecordStep(f.ctx, stepRecord(run.ID, sortie.NewLaunchID(), step("forged", 1, `1`), T0+4))
	wantErr(t, "RecordStep with another launch ID", err, sortie.ErrConflict)
	run = f.finish(run.ID, 1, lid, failure("crash", true), T0+5)
	_, lid2 := f.next(run, T0+5000)
	_, err = f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid, step("zombie", 1, `1`), T0+5002))
	wantErr(t, "RecordStep by attempt 1 while attempt 2 runs", err, sortie.ErrConflict)
	f.recordStep(run.ID, lid2, step("live", 2, `2`), T0+5003)
	f.wantSteps("stale records", run.ID, stored(step("live", 2, `2`), T0+5003))
}

func testStepBadInput(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	bad := map[string]sortie.Step{
		"no name":         step("", 1, `1`),
		"long name":       step(strings.Repeat("n", sortie.MaxStepNameBytes+1), 1, `1`),
		"control char":    step("a\nb", 1, `1`),
		"other attempt":   step("x", 2, `1`),
		"no result":       {Name: "x", Attempt: 1, Status: sortie.StepCompleted},
		"invalid JSON":    step("x", 1, `{`),
		"result too big":  step("x", 1, `"`+strings.Repeat("r", sortie.MaxStepResultBytes)+`"`),
		"another status":  {Name: "x", Attempt: 1, Status: "failed", Result: json.RawMessage(`1`)},
		"secret in clear": {Name: "x", Attempt: 1, Status: sortie.StepCompleted, Secret: true, Result: json.RawMessage(`"pw"`)},
		"negative timing": {Name: "x", Attempt: 1, Status: sortie.StepCompleted, Result: json.RawMessage(`1`), DurationMs: -1},
	}
	for what, st := range bad {
		_, err := f.cp.RecordStep(f.ctx, sortie.StepRecord{RunID: run.ID, Attempt: 1, LaunchID: lid, Step: st, NowMs: T0 + 5})
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || !strings.HasPrefix(ve.Field, "step") {
			t.Errorf("RecordStep(%s) = %v, want a *sortie.ValidationError naming a step field", what, err)
		}
	}
	_, err := f.cp.RecordStep(f.ctx, stepRecord(sortie.NewRunID(time.UnixMilli(T0)), lid, step("x", 1, `1`), T0+5))
	wantErr(t, "RecordStep of an unknown run", err, sortie.ErrNotFound)
	_, err = f.cp.Steps(f.ctx, sortie.NewRunID(time.UnixMilli(T0)))
	wantErr(t, "Steps of an unknown run", err, sortie.ErrNotFound)
	_, err = f.cp.Steps(f.ctx, "not-a-run-id")
	wantErr(t, "Steps(not-a-run-id)", err, sortie.ErrInvalidArgument)
	f.wantSteps("bad records", run.ID)
}

// testStepsBytesLimit fills a run with sortie.MaxStepsBytes of results:
// the next step is refused, naming the limit, and nothing changes.
func testStepsBytesLimit(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	big := `"` + strings.Repeat("b", sortie.MaxStepResultBytes-2) + `"`
	n := sortie.MaxStepsBytes / sortie.MaxStepResultBytes
	for i := range n {
		st := step(fmt.Sprintf("big-%02d", i), 1, big)
		st.StartedMs += int64(i)
		f.recordStep(run.ID, lid, st, T0+10)
	}
	_, err := f.cp.RecordStep(f.ctx, stepRecord(run.ID, lid, step("one-more", 1, `1`), T0+20))
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "steps" {
		t.Errorf("RecordStep past %d bytes of results = %v, want a *sortie.ValidationError naming steps", sortie.MaxStepsBytes, err)
	}
	if got := f.steps(run.ID); len(got) != n {
		t.Errorf("Steps holds %d steps after the refusal, want %d", len(got), n)
	}
}

// testStepConcurrentSameName has 8 goroutines record a step of the same
// name with different results: exactly one wins, the others get
// ErrConflict, and the winner's result is stored.
func testStepConcurrentSameName(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	recordConcurrently(t, f, []sortie.ControlPlane{f.cp}, run.ID, lid)
}

func recordConcurrently(t *testing.T, f *fixture, cps []sortie.ControlPlane, id sortie.RunID, lid string) {
	const n = 8
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, errs[i] = cps[i%len(cps)].RecordStep(f.ctx, stepRecord(id, lid, step("race", 1, fmt.Sprint(i)), T0+10))
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("RecordStep(race) by goroutines %d and %d both succeeded with different results", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, sortie.ErrConflict):
			t.Errorf("RecordStep(race) by goroutine %d = %v, want success or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("RecordStep(race): no goroutine of %d succeeded", n)
	}
	f.wantSteps("concurrent records", id, stored(step("race", 1, fmt.Sprint(winner)), T0+10))
}

func testSharedSteps(t *testing.T, f *fixture) {
	peer := f.h.MakePeer(f.ctx, t, f.cp)
	run, lid := f.working(T0)
	recordConcurrently(t, f, []sortie.ControlPlane{f.cp, peer}, run.ID, lid)
	a := step("from-peer", 1, `"p"`)
	a.StartedMs = T0 + 500
	if _, err := peer.RecordStep(f.ctx, stepRecord(run.ID, lid, a, T0+20)); err != nil {
		t.Fatalf("peer RecordStep = %v", err)
	}
	got := f.steps(run.ID)
	if len(got) != 2 || got[1].Name != "from-peer" {
		t.Errorf("Steps after a peer's record = %v, want race and from-peer", got)
	}
}
