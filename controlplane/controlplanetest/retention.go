package controlplanetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sortie-run/sortie"
)

var retentionProperties = []property{
	{"DeleteRemovesEverything", testDeleteRemovesEverything},
	{"DeleteRefusesLiveRuns", testDeleteRefusesLive},
	{"EndedOldestFirstWithinLimit", testEnded},
}

// finished reserves a run at nowMs under idempotency key (none when empty),
// records a step, an event and a push configuration, and finishes it
// with o at nowMs+10.
func (f *fixture) finished(nowMs int64, key string, o sortie.Outcome) *sortie.Run {
	f.t.Helper()
	run := NewRun(nowMs)
	run.IdempotencyKey, run.RequestHash = key, "hash-"+key
	run.Policy.MaxAttempts = 1
	run = f.reserve(run, nowMs)
	_, lid := f.launch(run.ID, 1, nowMs+1)
	f.claim(run.ID, 1, lid, nowMs+2)
	f.append(run.ID, 1, lid, nowMs+3, event("half way"))
	f.recordStep(run.ID, lid, step("fetch", 1, `"page"`), nowMs+4)
	f.putPush(pushConfig(run.ID, "hook"), nowMs+5)
	return f.finish(run.ID, 1, lid, o, nowMs+10)
}

func testDeleteRemovesEverything(t *testing.T, f *fixture) {
	run := f.finished(T0, "key-deleted", result(`{"ok":true}`))
	kept := f.finished(T0+100, "", result(`{"kept":true}`))
	must(t, "Delete(completed)", f.cp.Delete(f.ctx, run.ID))

	_, err := f.cp.Get(f.ctx, run.ID)
	wantErr(t, "Get after Delete", err, sortie.ErrNotFound)
	_, err = f.cp.Events(f.ctx, run.ID, sortie.Cursor{}, 10)
	wantErr(t, "Events after Delete", err, sortie.ErrNotFound)
	_, err = f.cp.Steps(f.ctx, run.ID)
	wantErr(t, "Steps after Delete", err, sortie.ErrNotFound)
	_, err = f.cp.ListPushConfigs(f.ctx, run.ID)
	wantErr(t, "ListPushConfigs after Delete", err, sortie.ErrNotFound)
	wantErr(t, "Delete again", f.cp.Delete(f.ctx, run.ID), sortie.ErrNotFound)
	pending, _, err := f.cp.PendingPushConfigs(f.ctx, T0+1000, 100, "")
	must(t, "PendingPushConfigs", err)
	for _, p := range pending {
		if p.RunID == run.ID {
			t.Errorf("PendingPushConfigs after Delete lists %s/%s", p.RunID, p.ID)
		}
	}
	page, err := f.cp.List(f.ctx, sortie.ListQuery{})
	must(t, "List", err)
	if got := ids(page.Runs); !cmp.Equal(got, []sortie.RunID{kept.ID}) {
		t.Errorf("List after Delete = %v, want only the other run %s", got, kept.ID)
	}
	if got := f.steps(kept.ID); len(got) != 1 {
		t.Errorf("Steps(the other run) after Delete = %d steps, want 1", len(got))
	}

	// The key's record went with the run: the same request is a new run.
	again := NewRun(T0 + 200)
	again.IdempotencyKey, again.RequestHash = "key-deleted", "hash-key-deleted"
	got, created, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: again, NowMs: T0 + 200})
	must(t, "Reserve(key of the deleted run)", err)
	if !created || got.ID != again.ID || got.State != sortie.StateSubmitted {
		t.Errorf("Reserve(key of the deleted run) = run %s %s created %v, want the new run %s created",
			got.ID, got.State, created, again.ID)
	}
}

func testDeleteRefusesLive(t *testing.T, f *fixture) {
	submitted := f.submitted(T0)
	working, lid := f.working(T0 + 10)
	f.append(working.ID, 1, lid, T0+13, event("still going"))
	working = f.get(working.ID)
	interrupted := NewRun(T0 + 20)
	interrupted.Policy.MaxAttempts = 1
	interrupted = f.reserve(interrupted, T0+20)
	_, lid2 := f.launch(interrupted.ID, 1, T0+21)
	f.claim(interrupted.ID, 1, lid2, T0+22)
	interrupted = f.finish(interrupted.ID, 1, lid2, interrupt(sortie.StateInputRequired), T0+23)

	for _, run := range []*sortie.Run{submitted, working, interrupted} {
		err := f.cp.Delete(f.ctx, run.ID)
		call := fmt.Sprintf("Delete(%s run)", run.State)
		wantErr(t, call, err, sortie.ErrConflict)
		var live *sortie.LiveRunError
		if !errors.As(err, &live) || live.State != run.State || !strings.Contains(err.Error(), string(run.State)) {
			t.Errorf("%s = %v, want a *sortie.LiveRunError naming the state %s", call, err, run.State)
		}
		f.unchanged(call, run.ID, run)
	}
	if evs := f.events(working.ID, sortie.Cursor{}, 10); len(evs) != 1 {
		t.Errorf("Events(working run) after a refused Delete = %d events, want 1", len(evs))
	}
	wantErr(t, "Delete(unknown run)", f.cp.Delete(f.ctx, NewRun(T0).ID), sortie.ErrNotFound)
	var verr *sortie.ValidationError
	if err := f.cp.Delete(f.ctx, "not-a-run-id"); !errors.As(err, &verr) {
		t.Errorf("Delete(malformed ID) = %v, want a *sortie.ValidationError", err)
	}
}

func testEnded(t *testing.T, f *fixture) {
	failed := failure("boom", false)
	a := f.finished(T0, "", result(`1`))       // completed at T0+10
	b := f.finished(T0+100, "", failed)        // failed at T0+110
	c := f.finished(T0+200, "", result(`3`))   // completed at T0+210
	live, _ := f.working(T0 + 5)               // working since T0+7
	waiting := f.finished(T0+1, "", interrupt( // input-required at T0+11
		sortie.StateInputRequired))
	ended := func(beforeMs int64, limit int) []sortie.RunID {
		t.Helper()
		got, err := f.cp.Ended(f.ctx, beforeMs, limit)
		must(t, fmt.Sprintf("Ended(T0+%d, %d)", beforeMs-T0, limit), err)
		return got
	}
	for _, tc := range []struct {
		beforeMs int64
		limit    int
		want     []sortie.RunID
	}{
		{T0 + 10, 0, nil}, // strictly before: a run ended at T0+10 is not
		{T0 + 11, 0, []sortie.RunID{a.ID}},
		{T0 + 211, 0, []sortie.RunID{a.ID, b.ID, c.ID}},
		{T0 + 211, 2, []sortie.RunID{a.ID, b.ID}},
		{T0 + 10_000, 1, []sortie.RunID{a.ID}},
	} {
		if got := ended(tc.beforeMs, tc.limit); !cmp.Equal(got, tc.want, cmpopts.EquateEmpty()) {
			t.Errorf("Ended(T0+%d, %d) = %v, want %v (oldest first; not %s, working, nor %s, input-required)",
				tc.beforeMs-T0, tc.limit, got, tc.want, live.ID, waiting.ID)
		}
	}
	for _, id := range ended(T0+111, 0) {
		must(t, fmt.Sprintf("Delete(%s)", id), f.cp.Delete(f.ctx, id))
	}
	if got := ended(T0+10_000, 0); !cmp.Equal(got, []sortie.RunID{c.ID}) {
		t.Errorf("Ended after deleting the two oldest = %v, want [%s]", got, c.ID)
	}
	f.get(live.ID)
	f.get(waiting.ID)
}
