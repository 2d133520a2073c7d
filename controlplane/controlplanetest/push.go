package controlplanetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// pushProperties check [sortie.PushStore], the push part of the contract.
var pushProperties = []property{
	{"PushRoundTrip", testPushRoundTrip},
	{"PushSealedTokenIsCopied", testPushTokenCopied},
	{"PushListOrderedPerRun", testPushList},
	{"PushReplaceKeepsCreatedAndDelivery", testPushReplace},
	{"PushRefusesBadInputStoresNothing", testPushBadInput},
	{"PushRefusesBadFormatOrToken", testPushBadFormatOrToken},
	{"PushLimitUnderConcurrency", testPushLimitConcurrent},
	{"PushUnknownRunNotFound", testPushUnknownRun},
	{"PushUnknownConfigNotFound", testPushUnknownConfig},
	{"PushDeliveredVersionNeverDecreases", testPushDeliveredMax},
	{"PushPending", testPushPending},
	{"PushPendingLimit", testPushPendingLimit},
	{"PushPendingPagesReturnEachOnce", testPushPendingPages},
	{"PushPendingPagesSkipNothingDue", testPushPendingPagesChanging},
	{"PushPendingRefusesForgedTokens", testPushPendingForgedToken},
	{"PushLeavesRunUnchanged", testPushLeavesRun},
	{"PushDeliveryLease", testPushLease},
	{"PushClosedReturnsErrClosed", testPushClosed},
}

func pushConfig(run sortie.RunID, id string) *sortie.PushConfig {
	return &sortie.PushConfig{RunID: run, ID: id, URL: "https://hooks.example.com/sortie/" + id}
}

func (f *fixture) putPush(cfg *sortie.PushConfig, nowMs int64) *sortie.PushConfig {
	f.t.Helper()
	got, err := f.cp.PutPushConfig(f.ctx, cfg, nowMs)
	must(f.t, fmt.Sprintf("PutPushConfig(%s, %s)", cfg.RunID, cfg.ID), err)
	return got
}

func (f *fixture) getPush(run sortie.RunID, id string) *sortie.PushConfig {
	f.t.Helper()
	got, err := f.cp.GetPushConfig(f.ctx, run, id)
	must(f.t, fmt.Sprintf("GetPushConfig(%s, %s)", run, id), err)
	return got
}

func (f *fixture) listPush(run sortie.RunID) []sortie.PushConfig {
	f.t.Helper()
	got, err := f.cp.ListPushConfigs(f.ctx, run)
	must(f.t, fmt.Sprintf("ListPushConfigs(%s)", run), err)
	return got
}

func (f *fixture) updatePush(run sortie.RunID, id string, d sortie.PushDelivery) {
	f.t.Helper()
	err := f.cp.UpdatePushDelivery(f.ctx, run, id, d)
	must(f.t, fmt.Sprintf("UpdatePushDelivery(%s, %s, %+v)", run, id, d), err)
}

func pushIDs(cfgs []sortie.PushConfig) []string {
	out := make([]string, len(cfgs))
	for i, c := range cfgs {
		out[i] = string(c.RunID) + "/" + c.ID
	}
	return out
}

func testPushRoundTrip(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	in := pushConfig(run.ID, "ops-hook")
	in.KeyID = "webhook-2026"
	in.Format, in.SealedToken = sortie.PushFormatA2A, sealedToken("ops-hook")
	in.CreatedMs = 7
	in.Delivery = sortie.PushDelivery{DeliveredVersion: 99, Done: true}
	want := *in
	want.CreatedMs, want.Delivery = T0+10, sortie.PushDelivery{}
	got := f.putPush(in, T0+10)
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("PutPushConfig(new, CreatedMs and Delivery set by the caller) returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&want, f.getPush(run.ID, "ops-hook")); diff != "" {
		t.Errorf("GetPushConfig after PutPushConfig (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sortie.PushConfig{want}, f.listPush(run.ID)); diff != "" {
		t.Errorf("ListPushConfigs after PutPushConfig (-want +got):\n%s", diff)
	}
	pending, _, err := f.cp.PendingPushConfigs(f.ctx, T0+10, 10, "")
	must(t, "PendingPushConfigs", err)
	if diff := cmp.Diff([]sortie.PushConfig{want}, pending); diff != "" {
		t.Errorf("PendingPushConfigs after PutPushConfig (-want +got):\n%s", diff)
	}
	d := sortie.PushDelivery{DeliveredVersion: 3, Failures: 2, NextAttemptMs: T0 + 500, LastError: "HTTP 503"}
	f.updatePush(run.ID, "ops-hook", d)
	want.Delivery = d
	if diff := cmp.Diff(&want, f.getPush(run.ID, "ops-hook")); diff != "" {
		t.Errorf("GetPushConfig after UpdatePushDelivery (-want +got):\n%s", diff)
	}
}

func testPushList(t *testing.T, f *fixture) {
	a, b := f.submitted(T0), f.submitted(T0+1)
	if got := f.listPush(a.ID); len(got) != 0 {
		t.Errorf("ListPushConfigs(run without configurations) = %v, want none", pushIDs(got))
	}
	var want []sortie.PushConfig
	for i, id := range []string{"charlie", "alpha", "bravo"} {
		want = append(want, *f.putPush(pushConfig(a.ID, id), T0+int64(10+i)))
	}
	other := f.putPush(pushConfig(b.ID, "alpha"), T0+20)
	want[0], want[1], want[2] = want[1], want[2], want[0]
	if diff := cmp.Diff(want, f.listPush(a.ID)); diff != "" {
		t.Errorf("ListPushConfigs(%s) not ordered by ID or not isolated per run (-want +got):\n%s", a.ID, diff)
	}
	if diff := cmp.Diff([]sortie.PushConfig{*other}, f.listPush(b.ID)); diff != "" {
		t.Errorf("ListPushConfigs(%s) (-want +got):\n%s", b.ID, diff)
	}
	must(t, "DeletePushConfig(a, bravo)", f.cp.DeletePushConfig(f.ctx, a.ID, "bravo"))
	if diff := cmp.Diff([]sortie.PushConfig{want[0], want[2]}, f.listPush(a.ID)); diff != "" {
		t.Errorf("ListPushConfigs after DeletePushConfig(bravo) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sortie.PushConfig{*other}, f.listPush(b.ID)); diff != "" {
		t.Errorf("ListPushConfigs(%s) after deleting another run's config (-want +got):\n%s", b.ID, diff)
	}
}

func testPushReplace(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	for i := range sortie.MaxPushConfigs {
		f.putPush(pushConfig(run.ID, fmt.Sprintf("hook-%02d", i)), T0+1)
	}
	d := sortie.PushDelivery{DeliveredVersion: 4, Failures: 1, NextAttemptMs: T0 + 90, LastError: "dial tcp: timeout"}
	f.updatePush(run.ID, "hook-03", d)
	repl := pushConfig(run.ID, "hook-03")
	repl.URL, repl.KeyID = "https://other.example.com/in", "webhook-next"
	repl.Format, repl.SealedToken = sortie.PushFormatA2A, sealedToken("first")
	repl.Delivery = sortie.PushDelivery{Done: true}
	want := *repl
	want.CreatedMs, want.Delivery = T0+1, d
	got := f.putPush(repl, T0+50)
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("PutPushConfig(replacement at the %d-config limit) returned (-want +got):\n%s", sortie.MaxPushConfigs, diff)
	}
	if diff := cmp.Diff(&want, f.getPush(run.ID, "hook-03")); diff != "" {
		t.Errorf("GetPushConfig after replacement: CreatedMs and Delivery must be kept (-want +got):\n%s", diff)
	}
	repl.Format, repl.SealedToken = sortie.PushFormatSortie, sealedToken("second")
	want.Format, want.SealedToken = repl.Format, repl.SealedToken
	if diff := cmp.Diff(&want, f.putPush(repl, T0+60)); diff != "" {
		t.Errorf("PutPushConfig(replacing format and sealed token) returned (-want +got):\n%s", diff)
	}
	repl.KeyID, repl.Format, repl.SealedToken = "", "", nil
	want.KeyID, want.Format, want.SealedToken = "", "", nil
	f.putPush(repl, T0+70)
	if diff := cmp.Diff(&want, f.getPush(run.ID, "hook-03")); diff != "" {
		t.Errorf("GetPushConfig after a replacement without key ID, format and token: they must be cleared (-want +got):\n%s", diff)
	}
	if n := len(f.listPush(run.ID)); n != sortie.MaxPushConfigs {
		t.Errorf("ListPushConfigs after replacement = %d configs, want %d", n, sortie.MaxPushConfigs)
	}
}

func testPushBadInput(t *testing.T, f *fixture) {
	ps := f.cp
	run := f.submitted(T0)
	for i := range sortie.MaxPushConfigs {
		f.putPush(pushConfig(run.ID, fmt.Sprintf("hook-%02d", i)), T0+1)
	}
	before := f.listPush(run.ID)
	_, err := ps.PutPushConfig(f.ctx, pushConfig(run.ID, "one-too-many"), T0+2)
	var ve *sortie.ValidationError
	limit := fmt.Sprint(sortie.MaxPushConfigs)
	if !errors.As(err, &ve) || ve.Field != "push_configs" || !strings.Contains(ve.Reason, limit) {
		t.Errorf("PutPushConfig(config %d of a run) = %v, want a ValidationError of push_configs naming the limit %s", sortie.MaxPushConfigs+1, err, limit)
	}
	bad := map[string]*sortie.PushConfig{
		"nil":             nil,
		"id":              {RunID: run.ID, ID: "Bad ID", URL: "https://ok.example.com"},
		"url":             {RunID: run.ID, ID: "hook-00", URL: "ftp://files.example.com/x"},
		"url user info":   {RunID: run.ID, ID: "hook-00", URL: "https://user:pw@example.com/x"},
		"key_id":          {RunID: run.ID, ID: "hook-00", URL: "https://ok.example.com", KeyID: "UPPER"},
		"run_id":          {RunID: "not-a-run", ID: "hook-00", URL: "https://ok.example.com"},
		"oversize url":    {RunID: run.ID, ID: "hook-00", URL: "https://ok.example.com/" + strings.Repeat("a", 2048)},
		"empty config id": {RunID: run.ID, URL: "https://ok.example.com"},
	}
	for name, cfg := range bad {
		_, err := ps.PutPushConfig(f.ctx, cfg, T0+3)
		wantErr(t, "PutPushConfig(bad "+name+")", err, sortie.ErrInvalidArgument)
	}
	for name, limit := range map[string]int{"0": 0, "-1": -1, "1001": 1001} {
		_, _, err := ps.PendingPushConfigs(f.ctx, T0, limit, "")
		if !errors.As(err, &ve) || ve.Field != "limit" {
			t.Errorf("PendingPushConfigs(limit %s) = %v, want a ValidationError of limit", name, err)
		}
	}
	err = ps.UpdatePushDelivery(f.ctx, run.ID, "hook-00", sortie.PushDelivery{LastError: strings.Repeat("e", 257)})
	wantErr(t, "UpdatePushDelivery(257-byte LastError)", err, sortie.ErrInvalidArgument)
	err = ps.UpdatePushDelivery(f.ctx, run.ID, "hook-00", sortie.PushDelivery{DeliveredVersion: -1})
	wantErr(t, "UpdatePushDelivery(DeliveredVersion -1)", err, sortie.ErrInvalidArgument)
	if diff := cmp.Diff(before, f.listPush(run.ID)); diff != "" {
		t.Errorf("refused calls changed the run's push configurations (-want +got):\n%s", diff)
	}
}

func testPushUnknownRun(t *testing.T, f *fixture) {
	ps := f.cp
	f.submitted(T0)
	id := NewRun(T0 + 1).ID
	_, err := ps.PutPushConfig(f.ctx, pushConfig(id, "hook"), T0+2)
	wantErr(t, "PutPushConfig(unknown run)", err, sortie.ErrNotFound)
	_, err = ps.GetPushConfig(f.ctx, id, "hook")
	wantErr(t, "GetPushConfig(unknown run)", err, sortie.ErrNotFound)
	_, err = ps.ListPushConfigs(f.ctx, id)
	wantErr(t, "ListPushConfigs(unknown run)", err, sortie.ErrNotFound)
	wantErr(t, "DeletePushConfig(unknown run)", ps.DeletePushConfig(f.ctx, id, "hook"), sortie.ErrNotFound)
	err = ps.UpdatePushDelivery(f.ctx, id, "hook", sortie.PushDelivery{DeliveredVersion: 1})
	wantErr(t, "UpdatePushDelivery(unknown run)", err, sortie.ErrNotFound)
	pending, next, err := ps.PendingPushConfigs(f.ctx, T0+10, 1000, "")
	must(t, "PendingPushConfigs", err)
	if len(pending) != 0 || next != "" {
		t.Errorf("PendingPushConfigs after a refused put on an unknown run = %v, next %q, want none and no next page", pushIDs(pending), next)
	}
	if _, err := f.cp.Get(f.ctx, id); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(unknown run) after push calls = %v, want ErrNotFound (no run created)", err)
	}
}

func testPushUnknownConfig(t *testing.T, f *fixture) {
	ps := f.cp
	run := f.submitted(T0)
	kept := f.putPush(pushConfig(run.ID, "kept"), T0+1)
	f.putPush(pushConfig(run.ID, "gone"), T0+1)
	_, err := ps.GetPushConfig(f.ctx, run.ID, "never")
	wantErr(t, "GetPushConfig(unknown config)", err, sortie.ErrNotFound)
	wantErr(t, "DeletePushConfig(unknown config)", ps.DeletePushConfig(f.ctx, run.ID, "never"), sortie.ErrNotFound)
	err = ps.UpdatePushDelivery(f.ctx, run.ID, "never", sortie.PushDelivery{DeliveredVersion: 1})
	wantErr(t, "UpdatePushDelivery(unknown config)", err, sortie.ErrNotFound)
	must(t, "DeletePushConfig(gone)", ps.DeletePushConfig(f.ctx, run.ID, "gone"))
	_, err = ps.GetPushConfig(f.ctx, run.ID, "gone")
	wantErr(t, "GetPushConfig(deleted config)", err, sortie.ErrNotFound)
	err = ps.UpdatePushDelivery(f.ctx, run.ID, "gone", sortie.PushDelivery{DeliveredVersion: 2})
	wantErr(t, "UpdatePushDelivery(deleted config)", err, sortie.ErrNotFound)
	wantErr(t, "DeletePushConfig(deleted config again)", ps.DeletePushConfig(f.ctx, run.ID, "gone"), sortie.ErrNotFound)
	_, err = ps.GetPushConfig(f.ctx, run.ID, "gone")
	wantErr(t, "GetPushConfig(deleted config after UpdatePushDelivery)", err, sortie.ErrNotFound)
	if diff := cmp.Diff([]sortie.PushConfig{*kept}, f.listPush(run.ID)); diff != "" {
		t.Errorf("ListPushConfigs after deleting another config (-want +got):\n%s", diff)
	}
}

// testPushLimitConcurrent has 6 goroutines, spread over handles when the
// store is shared, add new configurations to a run that has room for 2:
// exactly 2 succeed and the others get the limit's ValidationError.
func testPushLimitConcurrent(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	for i := range sortie.MaxPushConfigs - 2 {
		f.putPush(pushConfig(run.ID, fmt.Sprintf("hook-%02d", i)), T0+1)
	}
	stores := []sortie.PushStore{f.cp}
	if f.h.SharedAcrossProcesses() {
		stores = append(stores, f.h.MakePeer(f.ctx, t, f.cp))
	}
	const n = 6
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, errs[i] = stores[i%len(stores)].PutPushConfig(f.ctx, pushConfig(run.ID, fmt.Sprintf("new-%d", i)), T0+2)
	})
	wins := 0
	for i, err := range errs {
		var ve *sortie.ValidationError
		switch {
		case err == nil:
			wins++
		case !errors.As(err, &ve) || ve.Field != "push_configs":
			t.Errorf("concurrent PutPushConfig(new-%d) = %v, want success or a ValidationError of push_configs", i, err)
		}
	}
	if wins != 2 {
		t.Errorf("%d concurrent PutPushConfig calls with room for 2: %d succeeded, want 2", n, wins)
	}
	if got := f.listPush(run.ID); len(got) != sortie.MaxPushConfigs {
		t.Errorf("ListPushConfigs after the race = %d configs %v, want %d", len(got), pushIDs(got), sortie.MaxPushConfigs)
	}
}
