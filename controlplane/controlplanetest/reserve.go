package controlplanetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

func testReserveStoresNewRun(t *testing.T, f *fixture) {
	in := NewRun(T0)
	in.ContextID, in.Labels = "ctx-1", map[string]string{"team": "probe"}
	in.IdempotencyKey, in.RequestHash = "key-1", "hash-1"
	want := in.Clone()
	controlplane.NewRun(want, &sortie.Reservation{Run: want, NowMs: T0})
	got := f.reserve(in, T0)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Reserve(%s) returned run differs from NewRun's (-want +got):\n%s", in.ID, diff)
	}
	f.unchanged("Reserve", in.ID, want)
	if got.State != sortie.StateSubmitted || got.Version != 1 || got.LeaseExpiresMs != T0+controlplane.LaunchGraceMs {
		t.Errorf("Reserve(%s) = state %s version %d lease %d, want submitted, 1, %d",
			in.ID, got.State, got.Version, got.LeaseExpiresMs, T0+controlplane.LaunchGraceMs)
	}
	got.Labels["team"] = "changed by caller"
	if r := f.get(in.ID); r.Labels["team"] != "probe" {
		t.Errorf("changing the run Reserve returned changed the stored run: label %q, want %q", r.Labels["team"], "probe")
	}
}

func testReserveConcurrentSameKey(t *testing.T, f *fixture) {
	const n = 1000
	var created atomic.Int32
	runIDs := make([]sortie.RunID, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		run := NewRun(T0)
		run.IdempotencyKey, run.RequestHash = "same-key", "same-hash"
		got, c, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: run, NowMs: T0 + int64(i%10)})
		if errs[i] = err; err == nil {
			runIDs[i] = got.ID
		}
		if c {
			created.Add(1)
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Reserve #%d with key same-key = %v, want success", i, err)
		}
	}
	if c := created.Load(); c != 1 {
		t.Errorf("%d concurrent Reserve calls with one key: %d returned created=true, want exactly 1", n, c)
	}
	for i, id := range runIDs {
		if id != runIDs[0] {
			t.Fatalf("Reserve #%d returned run %s, want %s (the same run for every call)", i, id, runIDs[0])
		}
	}
	page, err := f.cp.List(f.ctx, sortie.ListQuery{PageSize: 1000})
	must(t, "List({})", err)
	if diff := cmp.Diff([]sortie.RunID{runIDs[0]}, ids(page.Runs)); diff != "" {
		t.Errorf("List after %d Reserve calls with one key (-want +got):\n%s", n, diff)
	}
}

func testReserveIdempotencyConflict(t *testing.T, f *fixture) {
	first := NewRun(T0)
	first.IdempotencyKey, first.RequestHash = "key-1", "hash-a"
	first = f.reserve(first, T0)

	other := NewRun(T0 + 1)
	other.IdempotencyKey, other.RequestHash = "key-1", "hash-b"
	_, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: other, NowMs: T0 + 1})
	wantErr(t, "Reserve(key-1, other hash)", err, sortie.ErrIdempotencyConflict)
	if _, err := f.cp.Get(f.ctx, other.ID); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(%s) after a refused Reserve = %v, want ErrNotFound", other.ID, err)
	}

	again := NewRun(T0 + 2)
	again.IdempotencyKey, again.RequestHash = "key-1", "hash-a"
	got, created, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: again, NowMs: T0 + 2})
	must(t, "Reserve(key-1, same hash)", err)
	if created || got.ID != first.ID {
		t.Errorf("Reserve(key-1, same hash) = run %s created %v, want run %s created false", got.ID, created, first.ID)
	}

	scoped := NewRun(T0 + 3)
	scoped.IdempotencyKey, scoped.RequestHash = "key-1", "hash-b"
	got, created, err = f.cp.Reserve(f.ctx, &sortie.Reservation{Run: scoped, Scope: "tenant-2", NowMs: T0 + 3})
	must(t, "Reserve(key-1 in scope tenant-2)", err)
	if !created || got.ID != scoped.ID {
		t.Errorf("Reserve(key-1 in scope tenant-2) = run %s created %v, want a new run %s", got.ID, created, scoped.ID)
	}
}

func testReserveExpiredRecord(t *testing.T, f *fixture) {
	reserve := func(nowMs int64, hash string) (*sortie.Run, bool) {
		run := NewRun(nowMs)
		run.IdempotencyKey, run.RequestHash = "key-ttl", hash
		got, created, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: run, TTLMs: 1000, NowMs: nowMs})
		must(t, fmt.Sprintf("Reserve(key-ttl, %s) at T0+%d", hash, nowMs-T0), err)
		return got, created
	}
	a, _ := reserve(T0, "hash-a")
	if got, created := reserve(T0+999, "hash-a"); created || got.ID != a.ID {
		t.Errorf("Reserve within the TTL = run %s created %v, want run %s created false", got.ID, created, a.ID)
	}
	b, created := reserve(T0+1000, "hash-b")
	if !created || b.ID == a.ID {
		t.Errorf("Reserve at the TTL's end with another hash = run %s created %v, want a new run (expired record counts as absent)", b.ID, created)
	}
	if got, created := reserve(T0+1500, "hash-b"); created || got.ID != b.ID {
		t.Errorf("Reserve after the record was replaced = run %s created %v, want run %s created false", got.ID, created, b.ID)
	}
	if r := f.get(a.ID); r.State != sortie.StateSubmitted {
		t.Errorf("Get(%s) after its record expired = state %s, want the run kept (submitted)", a.ID, r.State)
	}
}

func testReserveWithoutKey(t *testing.T, f *fixture) {
	seen := map[sortie.RunID]bool{}
	for i := range 3 {
		run := NewRun(T0 + int64(i))
		run.RequestHash = "same-hash"
		got := f.reserve(run, T0+int64(i))
		if seen[got.ID] {
			t.Errorf("Reserve without a key returned run %s twice, want a new run each time", got.ID)
		}
		seen[got.ID] = true
	}
}

func testReserveBadInput(t *testing.T, f *fixture) {
	bad := NewRun(T0)
	bad.ID = "not-a-run-id"
	_, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: bad, NowMs: T0})
	wantErr(t, "Reserve(run ID not-a-run-id)", err, sortie.ErrInvalidArgument)
	_, _, err = f.cp.Reserve(f.ctx, &sortie.Reservation{NowMs: T0})
	wantErr(t, "Reserve(no run)", err, sortie.ErrInvalidArgument)
	long := NewRun(T0)
	long.IdempotencyKey = string(make([]byte, sortie.MaxIdempotencyKeyBytes+1))
	_, _, err = f.cp.Reserve(f.ctx, &sortie.Reservation{Run: long, NowMs: T0})
	wantErr(t, "Reserve(256-byte idempotency key)", err, sortie.ErrInvalidArgument)
	if _, err := f.cp.Get(f.ctx, long.ID); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(%s) after a refused Reserve = %v, want ErrNotFound", long.ID, err)
	}
	_, err = f.cp.Get(f.ctx, "not-a-run-id")
	wantErr(t, "Get(not-a-run-id)", err, sortie.ErrInvalidArgument)
}

func testUnknownRun(t *testing.T, f *fixture) {
	id := sortie.NewRunID(time.UnixMilli(T0))
	lid := sortie.NewLaunchID()
	_, err := f.cp.Get(f.ctx, id)
	wantErr(t, "Get(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.Events(f.ctx, id, sortie.Cursor{}, 0)
	wantErr(t, "Events(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: id, Attempt: 1, LaunchID: lid, NowMs: T0})
	wantErr(t, "RecordLaunch(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.Claim(f.ctx, claimOf(id, 1, lid, T0))
	wantErr(t, "Claim(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.Heartbeat(f.ctx, claimOf(id, 1, lid, T0))
	wantErr(t, "Heartbeat(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.AppendEvents(f.ctx, sortie.Append{RunID: id, Attempt: 1, LaunchID: lid, Events: []sortie.Event{event("x")}})
	wantErr(t, "AppendEvents(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.Finish(f.ctx, sortie.Finish{RunID: id, Attempt: 1, LaunchID: lid, Outcome: result(`1`)})
	wantErr(t, "Finish(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.RequestCancel(f.ctx, id, "")
	wantErr(t, "RequestCancel(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.Resume(f.ctx, id, nil)
	wantErr(t, "Resume(unknown)", err, sortie.ErrNotFound)
	_, err = f.cp.SetRef(f.ctx, id, 1, lid, sortie.Ref{Provider: "local", ID: "1"})
	wantErr(t, "SetRef(unknown)", err, sortie.ErrNotFound)
}

// testReserveWithLaunch: a reservation with a launch ID stores the run with
// attempt 1 recorded, as Reserve and RecordLaunch would, at version 1; a
// duplicate keeps the first reservation's launch; the attempt is claimed
// like any other and cannot be recorded again.
func testReserveWithLaunch(t *testing.T, f *fixture) {
	in := NewRun(T0)
	in.IdempotencyKey, in.RequestHash = "key-launch", "hash-a"
	lid := sortie.NewLaunchID()
	got, created, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: in, NowMs: T0, LaunchID: lid})
	must(t, "Reserve(with launch ID)", err)
	want := in.Clone()
	want.State, want.Policy, want.CreatedMs, want.UpdatedMs = sortie.StateSubmitted, in.Policy.WithDefaults(), T0, T0
	want.Attempt, want.Version = 1, 1
	want.Attempts = []sortie.Attempt{{Number: 1, LaunchID: lid, LaunchedMs: T0, StartByMs: T0 + want.Policy.StartTimeoutMs}}
	want.LeaseExpiresMs = T0 + want.Policy.StartTimeoutMs
	if diff := cmp.Diff(want, got); diff != "" || !created {
		t.Errorf("Reserve(with launch ID) = created %v, run (-want +got):\n%s", created, diff)
	}
	f.unchanged("Reserve(with launch ID)", in.ID, want)
	dup := NewRun(T0 + 1)
	dup.IdempotencyKey, dup.RequestHash = "key-launch", "hash-a"
	again, created, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: dup, NowMs: T0 + 1, LaunchID: sortie.NewLaunchID()})
	must(t, "Reserve(duplicate, another launch ID)", err)
	if diff := cmp.Diff(want, again); diff != "" || created {
		t.Errorf("Reserve(duplicate, another launch ID) = created %v, want the first run with its launch (-want +got):\n%s", created, diff)
	}
	_, err = f.cp.RecordLaunch(f.ctx, sortie.Launch{RunID: in.ID, Attempt: 1, LaunchID: sortie.NewLaunchID(), NowMs: T0 + 2})
	wantErr(t, "RecordLaunch(attempt 1, recorded at reservation)", err, sortie.ErrConflict)
	f.claim(in.ID, 1, lid, T0+3)
	bad := NewRun(T0)
	_, _, err = f.cp.Reserve(f.ctx, &sortie.Reservation{Run: bad, NowMs: T0, LaunchID: "not a launch id"})
	wantErr(t, "Reserve(malformed launch ID)", err, sortie.ErrInvalidArgument)
}
