package controlplanetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sortie-run/sortie"
)

var concurrencyProperties = []property{
	{"ConcurrencyQueuesInOrder", testQueueOrder},
	{"ConcurrencyLimitHoldsLaunches", testLimitHolds},
	{"ConcurrencyCancelQueued", testCancelQueued},
	{"ConcurrencyLimitChangeApplies", testLimitChange},
	{"ConcurrencyRetryKeepsSlot", testRetryKeepsSlot},
	{"ConcurrencyReserveRefusesLaunch", testQueuedReserveNoLaunch},
	{"ConcurrencyConcurrentAdmissions", testConcurrentAdmissions},
	{"ConcurrencyBurstThroughEngine", testBurstThroughEngine},
}

// queuedRun reserves a run of key with limit at nowMs: it is queued.
func (f *fixture) queuedRun(key string, limit int, nowMs int64) *sortie.Run {
	f.t.Helper()
	run := NewRun(nowMs)
	run.Concurrency = &sortie.RunConcurrency{Key: key, Limit: limit}
	got := f.reserve(run, nowMs)
	if !got.Queued() || got.LeaseExpiresMs != 0 {
		f.t.Fatalf("Reserve(run with key %q) = attempt %d state %s lease %d, want queued with nothing due", key, got.Attempt, got.State, got.LeaseExpiresMs)
	}
	return got
}

// admitted records attempt 1 of a queued run under limit; it returns
// the launch ID or the error.
func (f *fixture) admitted(cp sortie.ControlPlane, id sortie.RunID, limit int, nowMs int64) (string, error) {
	lid := sortie.NewLaunchID()
	_, err := cp.RecordLaunch(f.ctx, sortie.Launch{RunID: id, Attempt: 1, LaunchID: lid, Limit: limit, NowMs: nowMs})
	return lid, err
}

func (f *fixture) queueState(key string) sortie.QueueState {
	f.t.Helper()
	qs, err := f.cp.Queues(f.ctx)
	must(f.t, "Queues", err)
	for _, q := range qs {
		if q.Key == key {
			return q
		}
	}
	return sortie.QueueState{Key: key}
}

func (f *fixture) queuedIDs(key string) []sortie.RunID {
	f.t.Helper()
	runs, err := f.cp.Queued(f.ctx, key, 100)
	must(f.t, fmt.Sprintf("Queued(%q)", key), err)
	ids := make([]sortie.RunID, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids
}

// testQueueOrder: queued runs come back in submission (run ID) order,
// with their positions, per key; Queues counts them.
func testQueueOrder(t *testing.T, f *fixture) {
	var want []sortie.RunID
	for i := range 4 {
		want = append(want, f.queuedRun("probe/a", 2, T0+int64(i)).ID)
	}
	other := f.queuedRun("probe/b", 2, T0)
	if got := f.queuedIDs("probe/a"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Queued(probe/a) = %v, want %v (submission order)", got, want)
	}
	for i, id := range want {
		pos, err := f.cp.QueuePosition(f.ctx, "probe/a", id)
		if err != nil || pos != i+1 {
			t.Errorf("QueuePosition(probe/a, run %d) = %d, %v; want %d", i, pos, err, i+1)
		}
	}
	if got := f.queuedIDs("probe/b"); len(got) != 1 || got[0] != other.ID {
		t.Errorf("Queued(probe/b) = %v, want [%s]", got, other.ID)
	}
	if q := f.queueState("probe/a"); q.Waiting != 4 || q.Active != 0 {
		t.Errorf("Queues() for probe/a = %+v, want 4 waiting, 0 active", q)
	}
	runs, err := f.cp.Expired(f.ctx, T0+10*controlplaneLaunchGrace, 100)
	must(t, "Expired", err)
	if len(runs) != 0 {
		t.Errorf("Expired(long after) = %d runs, want none: the reconciler never launches a queued run", len(runs))
	}
}

// controlplaneLaunchGrace is controlplane.LaunchGraceMs (the suite does
// not import the package it checks).
const controlplaneLaunchGrace = 10_000

// testLimitHolds: with limit 2, a third admission fails with
// ErrConcurrencyLimit and leaves the run queued; a run that ends gives its
// slot to the next.
func testLimitHolds(t *testing.T, f *fixture) {
	const key = "probe/k"
	var runs []*sortie.Run
	for i := range 3 {
		runs = append(runs, f.queuedRun(key, 2, T0+int64(i)))
	}
	lid0, err := f.admitted(f.cp, runs[0].ID, 2, T0+10)
	must(t, "RecordLaunch(first queued, limit 2)", err)
	_, err = f.admitted(f.cp, runs[1].ID, 2, T0+11)
	must(t, "RecordLaunch(second queued, limit 2)", err)
	_, err = f.admitted(f.cp, runs[2].ID, 2, T0+12)
	wantErr(t, "RecordLaunch(third queued, limit 2)", err, sortie.ErrConflict)
	if !errors.Is(err, sortie.ErrConcurrencyLimit) {
		t.Errorf("RecordLaunch(third queued, limit 2) = %v, want ErrConcurrencyLimit", err)
	}
	if got := f.get(runs[2].ID); !got.Queued() || got.Version != runs[2].Version {
		t.Errorf("after the refused admission the run is attempt %d version %d, want queued at version %d", got.Attempt, got.Version, runs[2].Version)
	}
	if q := f.queueState(key); q.Active != 2 || q.Waiting != 1 {
		t.Errorf("Queues() = %+v, want 2 active, 1 waiting", q)
	}
	if pos, err := f.cp.QueuePosition(f.ctx, key, runs[2].ID); err != nil || pos != 1 {
		t.Errorf("QueuePosition(third) = %d, %v; want 1", pos, err)
	}
	f.claim(runs[0].ID, 1, lid0, T0+13)
	f.finish(runs[0].ID, 1, lid0, result(`1`), T0+14)
	_, err = f.admitted(f.cp, runs[2].ID, 2, T0+15)
	must(t, "RecordLaunch(third queued, after the first completed)", err)
	if q := f.queueState(key); q.Waiting != 0 {
		t.Errorf("Queues() after every run was admitted = %+v, want the key gone (nothing waiting)", q)
	}
}

// testCancelQueued: a queued run cancels at once, leaves its queue and is
// never launched.
func testCancelQueued(t *testing.T, f *fixture) {
	run := f.queuedRun("probe/c", 1, T0)
	got, err := f.cp.RequestCancel(f.ctx, run.ID, "not needed")
	must(t, "RequestCancel(queued)", err)
	if got.State != sortie.StateCancelled {
		t.Fatalf("RequestCancel(queued) state = %s, want cancelled", got.State)
	}
	if ids := f.queuedIDs("probe/c"); len(ids) != 0 {
		t.Errorf("Queued after the cancel = %v, want none", ids)
	}
	_, err = f.admitted(f.cp, run.ID, 1, T0+1)
	wantErr(t, "RecordLaunch(cancelled queued run)", err, sortie.ErrTerminal)
	other := f.queuedRun("probe/c", 1, T0+2)
	_, err = f.admitted(f.cp, other.ID, 1, T0+3)
	must(t, "RecordLaunch(next run; the cancelled one held no slot)", err)
}

// testLimitChange: an admission under a raised limit succeeds where the
// run's stored limit was full; the run keeps the limit it was admitted
// under.
func testLimitChange(t *testing.T, f *fixture) {
	a, b := f.queuedRun("probe/l", 1, T0), f.queuedRun("probe/l", 1, T0+1)
	_, err := f.admitted(f.cp, a.ID, 1, T0+2)
	must(t, "RecordLaunch(a, limit 1)", err)
	_, err = f.admitted(f.cp, b.ID, 0, T0+3) // the run's own limit: 1
	if !errors.Is(err, sortie.ErrConcurrencyLimit) {
		t.Errorf("RecordLaunch(b, the run's limit 1) = %v, want ErrConcurrencyLimit", err)
	}
	_, err = f.admitted(f.cp, b.ID, 2, T0+4)
	must(t, "RecordLaunch(b, limit raised to 2)", err)
	if got := f.get(b.ID); got.Concurrency == nil || got.Concurrency.Limit != 2 {
		t.Errorf("b's concurrency after its admission = %+v, want limit 2", got.Concurrency)
	}
}

// testRetryKeepsSlot: a run holds its slot across a retry (its next
// attempt needs none) and gives it back when it fails for good.
func testRetryKeepsSlot(t *testing.T, f *fixture) {
	a, b := f.queuedRun("probe/r", 1, T0), f.queuedRun("probe/r", 1, T0+1)
	lid, err := f.admitted(f.cp, a.ID, 1, T0+2)
	must(t, "RecordLaunch(a)", err)
	f.claim(a.ID, 1, lid, T0+3)
	run := f.finish(a.ID, 1, lid, failure(sortie.ErrorTypeExited, true), T0+4)
	_, lid2 := f.launch(a.ID, 2, run.LeaseExpiresMs)
	_, err = f.admitted(f.cp, b.ID, 1, run.LeaseExpiresMs+1)
	if !errors.Is(err, sortie.ErrConcurrencyLimit) {
		t.Errorf("RecordLaunch(b) while a retries = %v, want ErrConcurrencyLimit", err)
	}
	f.claim(a.ID, 2, lid2, run.LeaseExpiresMs+2)
	f.finish(a.ID, 2, lid2, failure(sortie.ErrorTypeExited, false), run.LeaseExpiresMs+3)
	_, err = f.admitted(f.cp, b.ID, 1, run.LeaseExpiresMs+4)
	must(t, "RecordLaunch(b) after a failed", err)
}

// testQueuedReserveNoLaunch: a run with a key cannot be reserved with its
// launch (its first launch is an admission).
func testQueuedReserveNoLaunch(t *testing.T, f *fixture) {
	run := NewRun(T0)
	run.Concurrency = &sortie.RunConcurrency{Key: "probe", Limit: 1}
	_, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: run, NowMs: T0, LaunchID: sortie.NewLaunchID()})
	wantErr(t, "Reserve(run with a key and a launch)", err, sortie.ErrInvalidArgument)
	if _, err := f.cp.Get(f.ctx, run.ID); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get after the refused Reserve = %v, want ErrNotFound (nothing stored)", err)
	}
}

// testConcurrentAdmissions: 16 admitters over two handles race for 20
// queued runs with limit 5: exactly 5 are admitted.
func testConcurrentAdmissions(t *testing.T, f *fixture) {
	const key, limit = "probe/race", 5
	var ids []sortie.RunID
	for i := range 20 {
		ids = append(ids, f.queuedRun(key, limit, T0+int64(i)).ID)
	}
	cps := []sortie.ControlPlane{f.cp, f.cp}
	if f.h.SharedAcrossProcesses() {
		cps = peers(f)
	}
	var admitted atomic.Int32
	parallel(16, func(i int) {
		for j := range 20 {
			id := ids[(i+j)%len(ids)]
			if _, err := f.admitted(cps[i%2], id, limit, T0+100); err == nil {
				admitted.Add(1)
			}
		}
	})
	if n := admitted.Load(); n != limit {
		t.Errorf("16 racing admitters over 20 queued runs with limit %d admitted %d, want %d", limit, n, limit)
	}
	if q := f.queueState(key); q.Active != limit || q.Waiting != 20-limit {
		t.Errorf("Queues() = %+v, want %d active and %d waiting", q, limit, 20-limit)
	}
}
