package controlplanetest

import (
	"fmt"
	"sync/atomic"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// testPushLease: one owner at a time holds a configuration's delivery
// lease, until it ends (the owner may end it early), or the configuration
// is deleted; recording progress keeps it; the lease returns the
// configuration as stored; a done or unknown configuration is refused.
func testPushLease(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	cfg := f.putPush(pushConfig(run.ID, "hook"), T0)
	lease := func(owner string, nowMs, untilMs int64) (*sortie.PushConfig, error) {
		return f.cp.LeasePushDelivery(f.ctx, run.ID, "hook", owner, nowMs, untilMs)
	}
	got, err := lease("host-a", T0+10, T0+100)
	must(t, "LeasePushDelivery(host-a)", err)
	if diff := gocmp.Diff(cfg, got); diff != "" {
		t.Errorf("LeasePushDelivery(host-a) returned (-stored +got):\n%s", diff)
	}
	_, err = lease("host-b", T0+50, T0+150)
	wantErr(t, "LeasePushDelivery(host-b, host-a's lease live)", err, sortie.ErrConflict)
	_, err = lease("host-a", T0+60, T0+160)
	must(t, "LeasePushDelivery(host-a again, its own)", err)
	_, err = lease("host-b", T0+159, T0+200)
	wantErr(t, "LeasePushDelivery(host-b, host-a's renewed lease live)", err, sortie.ErrConflict)
	_, err = lease("host-b", T0+160, T0+260)
	must(t, "LeasePushDelivery(host-b, host-a's lease ended)", err)
	must(t, "UpdatePushDelivery(version 3)", f.cp.UpdatePushDelivery(f.ctx, run.ID, "hook", sortie.PushDelivery{DeliveredVersion: 3}))
	_, err = lease("host-a", T0+170, T0+270)
	wantErr(t, "LeasePushDelivery(host-a after host-b recorded progress, host-b's lease live)", err, sortie.ErrConflict)
	got, err = lease("host-b", T0+170, T0+171) // renews, and ends it at T0+171
	must(t, "LeasePushDelivery(host-b, ending its lease)", err)
	if got.Delivery.DeliveredVersion != 3 {
		t.Errorf("LeasePushDelivery after progress = delivered version %d, want 3 (the progress as stored)", got.Delivery.DeliveredVersion)
	}
	_, err = lease("host-a", T0+171, T0+270)
	must(t, "LeasePushDelivery(host-a once host-b ended its lease)", err)
	must(t, "UpdatePushDelivery(done)", f.cp.UpdatePushDelivery(f.ctx, run.ID, "hook", sortie.PushDelivery{DeliveredVersion: 4, Done: true}))
	_, err = lease("host-a", T0+180, T0+280)
	wantErr(t, "LeasePushDelivery(done)", err, sortie.ErrConflict)
	_, err = f.cp.LeasePushDelivery(f.ctx, run.ID, "nope", "host-a", T0, T0+1)
	wantErr(t, "LeasePushDelivery(unknown configuration)", err, sortie.ErrNotFound)
	for name, call := range map[string]func() error{
		"no owner":    func() error { _, err := lease("", T0, T0+1); return err },
		"ends at now": func() error { _, err := lease("host-a", T0, T0); return err },
		"bad config": func() error {
			_, err := f.cp.LeasePushDelivery(f.ctx, run.ID, "Bad ID", "host-a", T0, T0+1)
			return err
		},
		"bad run":      func() error { _, err := f.cp.LeasePushDelivery(f.ctx, "x", "hook", "host-a", T0, T0+1); return err },
		"long owner":   func() error { _, err := lease(fmt.Sprintf("%0129d", 0), T0, T0+1); return err },
		"negative now": func() error { _, err := lease("host-a", -1, T0); return err },
	} {
		wantErr(t, "LeasePushDelivery("+name+")", call(), sortie.ErrInvalidArgument)
	}
	other := f.putPush(pushConfig(run.ID, "gone"), T0)
	_, err = f.cp.LeasePushDelivery(f.ctx, run.ID, other.ID, "host-a", T0, T0+1000)
	must(t, "LeasePushDelivery(gone)", err)
	must(t, "DeletePushConfig(gone)", f.cp.DeletePushConfig(f.ctx, run.ID, other.ID))
	f.putPush(pushConfig(run.ID, "gone"), T0)
	_, err = f.cp.LeasePushDelivery(f.ctx, run.ID, other.ID, "host-b", T0+1, T0+1000)
	must(t, "LeasePushDelivery(host-b, a configuration made again after a delete)", err)
}

// testSharedPushLease: of many concurrent leases of one configuration by
// different owners over two handles, one succeeds.
func testSharedPushLease(t *testing.T, f *fixture) {
	cps := peers(f)
	run := f.submitted(T0)
	f.putPush(pushConfig(run.ID, "hook"), T0)
	var won atomic.Int32
	parallel(20, func(i int) {
		_, err := cps[i%2].LeasePushDelivery(f.ctx, run.ID, "hook", fmt.Sprint("host-", i), T0+1, T0+10_000)
		if err == nil {
			won.Add(1)
		}
	})
	if n := won.Load(); n != 1 {
		t.Errorf("20 concurrent LeasePushDelivery calls by different owners over two handles: %d succeeded, want 1", n)
	}
}
