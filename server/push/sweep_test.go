package push_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// crowd is 20 pending configurations of 4 live runs, all delivered up to
// date and pointing at idle (which must get nothing), and behind them, last
// in the store's order, one due retry of a run changed since its last
// delivery, pointing at target.
type crowd struct {
	idle, target *receiver
	run          *sortie.Run // the target's run
	upToDate     map[string]sortie.PushConfig
}

func newCrowd(t *testing.T, e *env) *crowd {
	t.Helper()
	c := &crowd{idle: newReceiver(t, e.secrets["primary"], nil, nil),
		target: newReceiver(t, e.secrets["primary"], nil, nil), upToDate: map[string]sortie.PushConfig{}}
	for range 4 {
		run := e.submit(nil)
		for i := range 5 {
			id := fmt.Sprintf("live-%d", i)
			e.put(run.ID, id, c.idle.url("/"+id), "")
			if err := e.cp.UpdatePushDelivery(e.ctx, run.ID, id, sortie.PushDelivery{DeliveredVersion: run.Version}); err != nil {
				t.Fatalf("UpdatePushDelivery(%s, %s) = %v", run.ID, id, err)
			}
			c.upToDate[string(run.ID)+"/"+id] = e.cfg(run.ID, id)
		}
	}
	c.run = e.submit(nil)
	e.put(c.run.ID, "hook", c.target.url("/hook"), "")
	retry := sortie.PushDelivery{DeliveredVersion: c.run.Version, Failures: 1,
		NextAttemptMs: time.Now().UnixMilli() - 1000, LastError: "status 503"}
	if err := e.cp.UpdatePushDelivery(e.ctx, c.run.ID, "hook", retry); err != nil {
		t.Fatalf("UpdatePushDelivery(hook) = %v", err)
	}
	e.launch(c.run.ID) // a change written without Notify, as a worker elsewhere would
	c.run = e.get(c.run.ID)
	first, next, err := e.cp.PendingPushConfigs(e.ctx, time.Now().UnixMilli(), 5, "")
	if err != nil || next == "" || slices.ContainsFunc(first, func(p sortie.PushConfig) bool { return p.RunID == c.run.ID }) {
		t.Fatalf("PendingPushConfigs(limit 5) = %d configs, next %q, %v; want a first page without the retry and a next page", len(first), next, err)
	}
	return c
}

// check fails t unless target got the run's current version, verified,
// and the up-to-date configurations got nothing and are unchanged.
func (c *crowd) check(t *testing.T, e *env) {
	t.Helper()
	e.waitDelivered(c.run.ID, "hook", c.run.Version)
	if diff := cmp.Diff([]int64{c.run.Version}, c.target.versions()); diff != "" {
		t.Errorf("versions the retried configuration got (-want +got):\n%s", diff)
	}
	for _, r := range c.target.requests() {
		if r.Verify != nil {
			t.Errorf("target's Verify = %v, want nil", r.Verify)
		}
	}
	if n := len(c.idle.requests()); n != 0 {
		t.Errorf("up-to-date configurations got %d requests, want 0", n)
	}
	for k, want := range c.upToDate {
		got := e.cfg(want.RunID, want.ID)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("up-to-date configuration %s changed (-want +got):\n%s", k, diff)
		}
	}
}

// With more pending up-to-date configurations than one page (SweepLimit
// 5, 20 of them), one sweep reads every page: the retry last in the
// store's order is delivered without a Notify by the sweep Run starts
// with (the next is an hour away).
func TestSweepReadsEveryPage(t *testing.T) {
	e := newEnv(t)
	c := newCrowd(t, e)
	opts := testOptions()
	opts.SweepLimit, opts.SweepInterval = 5, time.Hour
	e.start(nil, opts)
	c.check(t, e)
}

// A sweep stops after SweepMax configurations (10 of 21, in pages of 5)
// and the next continues from its page token, so the retry beyond the
// bound is delivered by the third sweep, not starved by the first pages.
func TestSweepContinuesPastSweepMaxInTheNextSweep(t *testing.T) {
	e := newEnv(t)
	c := newCrowd(t, e)
	opts := testOptions()
	opts.SweepLimit, opts.SweepMax = 5, 10
	e.start(nil, opts)
	c.check(t, e)
}
