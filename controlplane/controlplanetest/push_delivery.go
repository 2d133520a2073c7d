package controlplanetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sortie-run/sortie"
)

func testPushDeliveredMax(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	f.putPush(pushConfig(run.ID, "hook"), T0+1)
	f.updatePush(run.ID, "hook", sortie.PushDelivery{DeliveredVersion: 5})
	late := sortie.PushDelivery{DeliveredVersion: 3, Failures: 2, NextAttemptMs: T0 + 70, LastError: "HTTP 500"}
	f.updatePush(run.ID, "hook", late)
	want := late
	want.DeliveredVersion = 5
	if diff := cmp.Diff(want, f.getPush(run.ID, "hook").Delivery); diff != "" {
		t.Errorf("UpdatePushDelivery(version 3 after 5): version must stay 5, the rest recorded (-want +got):\n%s", diff)
	}

	stores := []sortie.PushStore{f.cp}
	if f.h.SharedAcrossProcesses() {
		stores = append(stores, f.h.MakePeer(f.ctx, t, f.cp))
	}
	const n = 20
	versions := rand.Perm(n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		d := sortie.PushDelivery{DeliveredVersion: int64(versions[i] + 1), NextAttemptMs: T0 + int64(i)}
		errs[i] = stores[i%len(stores)].UpdatePushDelivery(f.ctx, run.ID, "hook", d)
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent UpdatePushDelivery(version %d) = %v, want success", versions[i]+1, err)
		}
	}
	if got := f.getPush(run.ID, "hook").Delivery.DeliveredVersion; got != n {
		t.Errorf("after %d concurrent UpdatePushDelivery calls with versions 1..%d in order %v, DeliveredVersion = %d, want %d",
			n, n, versions, got, n)
	}
}

// pending returns the first page of pending configurations at nowMs
// ordered by run and ID, and the next page's token, failing t when the
// call does.
func (f *fixture) pending(nowMs int64, limit int) ([]sortie.PushConfig, string) {
	f.t.Helper()
	got, next, err := f.cp.PendingPushConfigs(f.ctx, nowMs, limit, "")
	must(f.t, fmt.Sprintf("PendingPushConfigs(%d, %d, \"\")", nowMs, limit), err)
	slices.SortFunc(got, func(a, b sortie.PushConfig) int {
		return strings.Compare(string(a.RunID)+"/"+a.ID, string(b.RunID)+"/"+b.ID)
	})
	return got, next
}

// wantPending fails t unless the pending configurations at nowMs are
// exactly the stored want, named by "run/id".
func (f *fixture) wantPending(when string, nowMs int64, want ...[2]string) {
	f.t.Helper()
	var cfgs []sortie.PushConfig
	for _, k := range want {
		cfgs = append(cfgs, *f.getPush(sortie.RunID(k[0]), k[1]))
	}
	slices.SortFunc(cfgs, func(a, b sortie.PushConfig) int {
		return strings.Compare(string(a.RunID)+"/"+a.ID, string(b.RunID)+"/"+b.ID)
	})
	got, next := f.pending(nowMs, 1000)
	if diff := cmp.Diff(cfgs, got, cmpopts.EquateEmpty()); diff != "" {
		f.t.Errorf("PendingPushConfigs(%d, 1000) %s (-want +got):\n%s", nowMs, when, diff)
	}
	if next != "" {
		f.t.Errorf("PendingPushConfigs(%d, 1000) %s: next page token %q, want \"\" (%d pending fit one page)", nowMs, when, next, len(got))
	}
}

func testPushPending(t *testing.T, f *fixture) {
	ps := f.cp
	working, _ := f.working(T0)
	done, lid := f.working(T0 + 1)
	done = f.finish(done.ID, 1, lid, result(`{"ok":true}`), T0+5)
	w, d := string(working.ID), string(done.ID)
	f.wantPending("with no configurations", T0+10)
	for _, id := range []string{"due", "done", "later", "deleted"} {
		f.putPush(pushConfig(working.ID, id), T0+10)
	}
	f.putPush(pushConfig(done.ID, "terminal"), T0+10)
	f.updatePush(working.ID, "done", sortie.PushDelivery{DeliveredVersion: working.Version, Done: true})
	f.updatePush(working.ID, "later", sortie.PushDelivery{Failures: 1, NextAttemptMs: T0 + 1000, LastError: "HTTP 502"})
	must(t, "DeletePushConfig(deleted)", ps.DeletePushConfig(f.ctx, working.ID, "deleted"))

	f.wantPending("before later's next attempt (new config of a terminal run included; done, deleted excluded)",
		T0+999, [2]string{w, "due"}, [2]string{d, "terminal"})
	f.wantPending("at later's next attempt", T0+1000, [2]string{w, "due"}, [2]string{w, "later"}, [2]string{d, "terminal"})

	f.updatePush(done.ID, "terminal", sortie.PushDelivery{DeliveredVersion: done.Version, Done: true})
	f.updatePush(working.ID, "due", sortie.PushDelivery{Failures: 1, NextAttemptMs: T0 + 2000, LastError: "HTTP 429"})
	f.wantPending("after due failed and terminal was delivered", T0+1999, [2]string{w, "later"})
	f.wantPending("once due's retry time passed", T0+2500, [2]string{w, "due"}, [2]string{w, "later"})
	must(t, "DeletePushConfig(later)", ps.DeletePushConfig(f.ctx, working.ID, "later"))
	f.wantPending("after later was deleted", T0+2500, [2]string{w, "due"})
}

func testPushPendingLimit(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	for i := range 5 {
		f.putPush(pushConfig(run.ID, fmt.Sprintf("hook-%d", i)), T0+1)
	}
	all, next := f.pending(T0+2, 1000)
	if len(all) != 5 || next != "" {
		t.Fatalf("PendingPushConfigs(limit 1000) = %d configs %v, next %q, want 5 and no next page", len(all), pushIDs(all), next)
	}
	if exact, next := f.pending(T0+2, 5); len(exact) != 5 || next != "" {
		t.Errorf("PendingPushConfigs(limit 5 of 5 pending) = %d configs, next %q, want 5 and no next page", len(exact), next)
	}
	some, next := f.pending(T0+2, 2)
	if len(some) != 2 || next == "" {
		t.Fatalf("PendingPushConfigs(limit 2 of 5 pending) = %d configs %v, next %q, want 2 and a next page", len(some), pushIDs(some), next)
	}
	for _, c := range some {
		if !slices.ContainsFunc(all, func(a sortie.PushConfig) bool { return cmp.Equal(a, c) }) {
			t.Errorf("PendingPushConfigs(limit 2) returned %+v, not among the pending %v", c, pushIDs(all))
		}
	}
}

func testPushLeavesRun(t *testing.T, f *fixture) {
	ps := f.cp
	run, lid := f.working(T0)
	f.append(run.ID, 1, lid, T0+3, event("before push"))
	before, evs := f.get(run.ID), f.events(run.ID, sortie.Cursor{}, 0)
	f.putPush(pushConfig(run.ID, "hook"), T0+4)
	f.putPush(pushConfig(run.ID, "hook"), T0+5)
	f.putPush(pushConfig(run.ID, "other"), T0+5)
	f.updatePush(run.ID, "hook", sortie.PushDelivery{DeliveredVersion: before.Version, Done: true})
	f.listPush(run.ID)
	f.getPush(run.ID, "hook")
	f.pending(T0+6, 10)
	must(t, "DeletePushConfig(other)", ps.DeletePushConfig(f.ctx, run.ID, "other"))
	f.unchanged("push configuration calls", run.ID, before)
	if diff := cmp.Diff(evs, f.events(run.ID, sortie.Cursor{}, 0)); diff != "" {
		t.Errorf("push configuration calls changed the run's events (-want +got):\n%s", diff)
	}
}

func testPushClosed(t *testing.T, f *fixture) {
	ps := f.cp
	run := f.submitted(T0)
	f.putPush(pushConfig(run.ID, "hook"), T0+1)
	must(t, "Close()", f.cp.Close())
	calls := map[string]func() error{
		"PutPushConfig": func() error { _, err := ps.PutPushConfig(f.ctx, pushConfig(run.ID, "new"), T0+2); return err },
		"GetPushConfig": func() error { _, err := ps.GetPushConfig(f.ctx, run.ID, "hook"); return err },
		"ListPushConfigs": func() error {
			_, err := ps.ListPushConfigs(f.ctx, run.ID)
			return err
		},
		"DeletePushConfig": func() error { return ps.DeletePushConfig(f.ctx, run.ID, "hook") },
		"LeasePushDelivery": func() error {
			_, err := ps.LeasePushDelivery(f.ctx, run.ID, "hook", "host", T0, T0+1)
			return err
		},
		"UpdatePushDelivery": func() error {
			return ps.UpdatePushDelivery(f.ctx, run.ID, "hook", sortie.PushDelivery{DeliveredVersion: 1})
		},
		"PendingPushConfigs": func() error { _, _, err := ps.PendingPushConfigs(f.ctx, T0+2, 10, ""); return err },
	}
	for name, call := range calls {
		wantErr(t, name+" after Close", call(), sortie.ErrClosed)
	}
}
