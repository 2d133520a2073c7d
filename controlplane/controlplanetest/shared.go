package controlplanetest

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func testClosed(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	must(t, "Close()", f.cp.Close())
	id, cl := run.ID, claimOf(run.ID, 1, lid, T0+5)
	calls := map[string]func() error{
		"Reserve": func() error {
			_, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: NewRun(T0), NowMs: T0})
			return err
		},
		"Get":  func() error { _, err := f.cp.Get(f.ctx, id); return err },
		"List": func() error { _, err := f.cp.List(f.ctx, sortie.ListQuery{}); return err },
		"RecordLaunch": func() error {
			_, err := f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: id, Attempt: 2, LaunchID: lid, NowMs: T0})
			return err
		},
		"SetRef": func() error {
			_, err := f.cp.SetRef(f.ctx, id, 1, lid, sortie.Ref{Provider: "local", ID: "1"})
			return err
		},
		"Claim":     func() error { _, err := f.cp.Claim(f.ctx, cl); return err },
		"Heartbeat": func() error { _, err := f.cp.Heartbeat(f.ctx, cl); return err },
		"Defer": func() error {
			_, err := f.cp.Defer(f.ctx, sortie.Deferral{RunID: id, Attempt: 1, LaunchID: lid, UntilMs: T0 + 9})
			return err
		},
		"AppendEvents": func() error {
			_, err := f.cp.AppendEvents(f.ctx, sortie.Append{RunID: id, Attempt: 1, LaunchID: lid, Events: []sortie.Event{event("x")}})
			return err
		},
		"Events": func() error { _, err := f.cp.Events(f.ctx, id, sortie.Cursor{}, 0); return err },
		"Finish": func() error {
			_, err := f.cp.Finish(f.ctx, sortie.Finish{RunID: id, Attempt: 1, LaunchID: lid, Outcome: result(`1`)})
			return err
		},
		"RequestCancel": func() error { _, err := f.cp.RequestCancel(f.ctx, id, ""); return err },
		"Resume":        func() error { _, err := f.cp.Resume(f.ctx, id, json.RawMessage(`{}`)); return err },
		"ResumeRef":     func() error { _, err := f.cp.ResumeRef(f.ctx, id, payloadRef(id, "resume-input-2-a")); return err },
		"Expired":       func() error { _, err := f.cp.Expired(f.ctx, T0, 0); return err },
	}
	for name, call := range calls {
		wantErr(t, name+" after Close", call(), sortie.ErrClosed)
	}
}

func testNotifier(t *testing.T, f *fixture) {
	n, ok := f.cp.(sortie.Notifier)
	if !ok {
		t.Fatalf("harness says Notifies, but %T does not implement sortie.Notifier", f.cp)
	}
	run := f.submitted(T0)
	other := f.submitted(T0 + 1)
	wake, stop := n.Subscribe(run.ID)
	otherWake, stopOther := n.Subscribe(other.ID)
	defer stopOther()
	woken := func() bool {
		select {
		case <-wake:
			return true
		default:
			return false
		}
	}
	_, lid := f.launch(run.ID, 1, T0+2)
	if !woken() {
		t.Errorf("after RecordLaunch returned, the subscriber had no wake-up, want one")
	}
	f.claim(run.ID, 1, lid, T0+3)
	f.append(run.ID, 1, lid, T0+4, event("e"))
	if !woken() || woken() {
		t.Errorf("after Claim and AppendEvents, want exactly one (coalesced) wake-up")
	}
	f.append(run.ID, 1, lid, T0+5, event("f"))
	if !woken() {
		t.Errorf("after AppendEvents returned, the subscriber had no wake-up, want one")
	}
	select {
	case <-otherWake:
		t.Errorf("a subscriber of run %s was woken by changes of run %s", other.ID, run.ID)
	default:
	}
	stop()
	stop()
	f.finish(run.ID, 1, lid, result(`1`), T0+6)
	if woken() {
		t.Errorf("a stopped subscription was woken, want no value")
	}
}

// peers returns the fixture's control plane and a second handle on its store.
func peers(f *fixture) []sortie.ControlPlane {
	return []sortie.ControlPlane{f.cp, f.h.MakePeer(f.ctx, f.t, f.cp)}
}

func testSharedVisibility(t *testing.T, f *fixture) {
	cps := peers(f)
	a, b := cps[0], cps[1]
	run := f.submitted(T0)
	got, err := b.Get(f.ctx, run.ID)
	must(t, "peer Get", err)
	if diff := cmp.Diff(run, got); diff != "" {
		t.Errorf("peer Get of a run reserved by the first handle (-want +got):\n%s", diff)
	}
	lid := sortie.NewLaunchID()
	_, err = b.RecordLaunch(f.ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 1})
	must(t, "peer RecordLaunch", err)
	_, err = a.RecordLaunch(f.ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: sortie.NewLaunchID(), NowMs: T0 + 1})
	wantErr(t, "RecordLaunch(attempt 1, already recorded through the peer)", err, sortie.ErrConflict)
	f.claim(run.ID, 1, lid, T0+2)
	done, err := b.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, Outcome: result(`"peer"`), NowMs: T0 + 3})
	must(t, "peer Finish", err)
	again, err := a.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, Outcome: result(`"first"`), NowMs: T0 + 4})
	must(t, "Finish after the peer's", err)
	if diff := cmp.Diff(done, again); diff != "" {
		t.Errorf("Finish after the peer finished returned (-peer's +got):\n%s", diff)
	}
}

func testSharedClaims(t *testing.T, f *fixture) {
	cps := peers(f)
	for i := range 5 {
		run := f.submitted(T0 + int64(i))
		_, lid := f.launch(run.ID, 1, T0+int64(i)+1)
		claimOnce(t, f, cps, run.ID, lid)
	}
}

func testSharedReserve(t *testing.T, f *fixture) {
	cps := peers(f)
	const n = 200
	var created atomic.Int32
	runIDs := make([]sortie.RunID, n)
	parallel(n, func(i int) {
		run := NewRun(T0)
		run.IdempotencyKey, run.RequestHash = "shared-key", "h"
		got, c, err := cps[i%2].Reserve(f.ctx, &sortie.Reservation{Run: run, NowMs: T0})
		if err != nil {
			runIDs[i] = sortie.RunID(fmt.Sprintf("error: %v", err))
			return
		}
		runIDs[i] = got.ID
		if c {
			created.Add(1)
		}
	})
	if c := created.Load(); c != 1 {
		t.Errorf("%d Reserve calls with one key over two handles: %d created, want 1", n, c)
	}
	for i, id := range runIDs {
		if id != runIDs[0] {
			t.Fatalf("Reserve #%d over two handles returned %s, want %s for every call", i, id, runIDs[0])
		}
	}
}

func testSharedAppends(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	appendNoGaps(t, f, peers(f), run.ID, lid)
}
