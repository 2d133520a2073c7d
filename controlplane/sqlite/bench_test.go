package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/sqlite"
)

// lifecycle takes one run through Reserve (with a unique idempotency key),
// RecordLaunch, Claim, one AppendEvents of three events and Finish.
func lifecycle(ctx context.Context, cp sortie.ControlPlane, i int64) error {
	now := controlplanetest.T0 + i
	run := controlplanetest.NewRun(now)
	run.IdempotencyKey, run.RequestHash = fmt.Sprintf("bench-%d", i), "h"
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now})
	if err != nil {
		return err
	}
	lid := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now}); err != nil {
		return err
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "bench", NowMs: now}); err != nil {
		return err
	}
	evs := []sortie.Event{{Kind: "progress", Text: "start"}, {Kind: "progress", Text: "half"}, {Kind: "progress", Text: "done"}}
	if _, err := cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: evs, NowMs: now}); err != nil {
		return err
	}
	_, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
		Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`)}, NowMs: now})
	return err
}

// BenchmarkRunLifecycle measures one run's control-plane work (five write
// transactions) with synchronous FULL and NORMAL, one run at a time and 32
// runs in flight. ns/op is per run; runs/s is the throughput.
func BenchmarkRunLifecycle(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, inflight := range []int{1, 32} {
			b.Run(fmt.Sprintf("sync=%s/inflight=%d", sync, inflight), func(b *testing.B) {
				cp, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), &sqlite.Options{Synchronous: sync})
				if err != nil {
					b.Fatal(err)
				}
				defer cp.Close()
				b.ResetTimer()
				if err := runAll(b.Context(), cp, b.N, inflight); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
			})
		}
	}
}

// runAll runs n lifecycles on the given number of goroutines.
func runAll(ctx context.Context, cp sortie.ControlPlane, n, goroutines int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := lifecycle(ctx, cp, i); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkAppendEvents measures events stored per second with every
// commit durable (synchronous FULL), in batches of 100 (the worker's
// batch limit) by one attempt, and by 8 attempts of different runs at once.
// b.N is the number of events.
func BenchmarkAppendEvents(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			ctx := b.Context()
			cp, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cp.Close()
			appends := make([]sortie.Append, writers)
			for w := range appends {
				appends[w] = claimed(b, cp, int64(w))
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range writers {
				wg.Go(func() {
					a := appends[w]
					for n := next.Add(sortie.MaxEventsPerAppend); n-sortie.MaxEventsPerAppend < int64(b.N); n = next.Add(sortie.MaxEventsPerAppend) {
						a.Events = a.Events[:0]
						for i := n - sortie.MaxEventsPerAppend; i < min(n, int64(b.N)); i++ {
							a.Events = append(a.Events, sortie.Event{Kind: "progress", Text: fmt.Sprintf("event %d", i), TimeMs: controlplanetest.T0})
						}
						if _, err := cp.AppendEvents(ctx, a); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// claimed reserves, launches and claims a run and returns an Append of
// its attempt 1.
func claimed(b *testing.B, cp sortie.ControlPlane, i int64) sortie.Append {
	ctx := b.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(controlplanetest.T0 + i), NowMs: controlplanetest.T0})
	if err != nil {
		b.Fatal(err)
	}
	lid := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: controlplanetest.T0}); err != nil {
		b.Fatal(err)
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "bench", NowMs: controlplanetest.T0}); err != nil {
		b.Fatal(err)
	}
	return sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: controlplanetest.T0}
}
