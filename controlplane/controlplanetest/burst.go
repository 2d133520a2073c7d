package controlplanetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
)

// burstLauncher is a launcher whose workers claim their attempt on the
// control plane, hold it until hold is closed, and complete it; it counts
// the attempts claimed and not yet finished.
type burstLauncher struct {
	cp            sortie.ControlPlane
	hold          chan struct{}
	live, maxLive atomic.Int32
	mu            sync.Mutex
	started       map[sortie.RunID]int
	errs          []error
}

func (l *burstLauncher) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	l.mu.Lock()
	l.started[inv.RunID]++
	l.mu.Unlock()
	go l.work(*inv)
	return sortie.Ref{Provider: "local", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

func (l *burstLauncher) work(inv sortie.Invocation) {
	ctx := context.Background()
	c := sortie.Claim{RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID, Owner: "burst", NowMs: time.Now().UnixMilli()}
	if _, err := l.cp.Claim(ctx, c); err != nil {
		l.fail(fmt.Errorf("Claim(%s) = %w", inv.RunID, err))
		return
	}
	n := l.live.Add(1)
	for m := l.maxLive.Load(); n > m && !l.maxLive.CompareAndSwap(m, n); m = l.maxLive.Load() {
	}
	<-l.hold
	l.live.Add(-1) // before the finish gives the slot back
	_, err := l.cp.Finish(ctx, sortie.Finish{RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID,
		Outcome: result(`1`), NowMs: time.Now().UnixMilli()})
	if err != nil {
		l.fail(fmt.Errorf("Finish(%s) = %w", inv.RunID, err))
	}
}

func (l *burstLauncher) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

// testBurstThroughEngine: an engine (two engines on two handles, taking
// turns, when the store is shared: two hosts) submits 200 runs of an
// agent with a concurrency limit of 5 in a burst; workers hold their attempts until
// the burst is in. At no time do more than 5 workers hold claimed
// attempts (counted by the workers) or the control plane count more than
// 5 slots taken (sampled); the last run waits at position 194 (one of the
// 200 is cancelled while queued and never launched); once released, every
// run completes, admitted in submission order.
func testBurstThroughEngine(t *testing.T, f *fixture) {
	const n, limit = 200, 5
	l := &burstLauncher{cp: f.cp, hold: make(chan struct{}), started: map[sortie.RunID]int{}}
	agents := sortie.Agents{}
	// Workers hold their attempts without heartbeats while the burst goes
	// in: leases long enough for a loaded machine.
	policy := sortie.Policy{HeartbeatMs: 100_000, LeaseMs: 600_000, StartTimeoutMs: 600_000}
	must(t, "Agents.Add", agents.Add(sortie.Manifest{Name: "burst", Runtime: "go:probe", Policy: policy,
		Concurrency: &sortie.Concurrency{Limit: limit}}))
	engines := []*sortie.Engine{sortie.NewEngine(f.cp, l, agents, nil)}
	if f.h.SharedAcrossProcesses() { // a second host on its own handle
		engines = append(engines, sortie.NewEngine(f.h.MakePeer(f.ctx, t, f.cp), l, agents, nil))
	}
	e := engines[0]
	ctx, stop := context.WithCancel(f.ctx)
	defer stop()
	for _, e := range engines {
		defer e.Close()
		go e.RunReconciler(ctx, 200*time.Millisecond)
	}
	sampled := f.sampleSlots(ctx, "burst")

	began := time.Now()
	ids := make([]sortie.RunID, n)
	for i := range n {
		run, err := engines[i%len(engines)].Submit(f.ctx, &sortie.SubmitRequest{Agent: "burst"})
		must(t, fmt.Sprintf("Submit #%d", i), err)
		ids[i] = run.ID
	}
	cancelled := ids[n/2]
	if run, err := e.Cancel(f.ctx, cancelled, "not needed"); err != nil || run.State != sortie.StateCancelled {
		t.Fatalf("Cancel(queued run #%d) = %v, %v; want cancelled at once", n/2, run, err)
	}
	last, err := e.Get(f.ctx, ids[n-1])
	must(t, "Get(last)", err)
	if last.Queue == nil || last.Queue.Position != n-limit-1 || last.Queue.Key != "burst" {
		t.Errorf("Get(last run) queue = %+v, want key burst position %d", last.Queue, n-limit-1)
	}
	// The limit's first runs are launched as the burst goes in; wait for
	// their workers to hold their claims (a loaded machine may not have
	// run them yet) before releasing them.
	testwait.Until(t, "the limit's workers holding their claims", 2*time.Minute, func() bool { return l.live.Load() >= limit })
	close(l.hold)
	testwait.Until(t, "every run ended", 2*time.Minute, func() bool {
		q, err := f.cp.Queued(f.ctx, "burst", 1)
		return err == nil && len(q) == 0 && l.live.Load() == 0 && f.ended(ids)
	})
	stop()
	if m := l.maxLive.Load(); m > limit || m < limit {
		t.Errorf("workers holding claimed attempts at once: at most %d, want exactly the limit %d", m, limit)
	}
	m := <-sampled
	if m > limit {
		t.Errorf("Queues() sampled %d slots taken, over the limit %d", m, limit)
	}
	t.Logf("%d runs through %d engines in %s: at most %d attempts claimed at once, %d slots taken sampled (limit %d)",
		n, len(engines), time.Since(began).Round(time.Millisecond), l.maxLive.Load(), m, limit)
	f.checkBurst(l, ids, cancelled)
}

// sampleSlots reads the key's slot count until ctx ends and sends the
// most it saw.
func (f *fixture) sampleSlots(ctx context.Context, key string) <-chan int {
	out := make(chan int, 1)
	go func() {
		most := 0
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				out <- most
				return
			case <-tick.C:
			}
			qs, err := f.cp.Queues(ctx)
			for _, q := range qs {
				if err == nil && q.Key == key {
					most = max(most, q.Active)
				}
			}
		}
	}()
	return out
}

// ended reports whether every run is terminal.
func (f *fixture) ended(ids []sortie.RunID) bool {
	page, err := f.cp.List(f.ctx, sortie.ListQuery{Agent: "burst", PageSize: 1000})
	if err != nil || len(page.Runs) != len(ids) {
		return false
	}
	return !slices.ContainsFunc(page.Runs, func(r *sortie.Run) bool { return !r.State.Terminal() })
}

// checkBurst checks each run's end, that the cancelled run never started
// and that runs were admitted in submission order (their launch times
// never decrease in run ID order).
func (f *fixture) checkBurst(l *burstLauncher, ids []sortie.RunID, cancelled sortie.RunID) {
	t := f.t
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, err := range l.errs {
		t.Error(err)
	}
	var lastLaunch int64
	for i, id := range ids {
		run := f.get(id)
		if id == cancelled {
			if run.State != sortie.StateCancelled || l.started[id] != 0 || run.Attempt != 0 {
				t.Errorf("cancelled queued run: state %s, %d attempts, started %d times; want cancelled, never launched", run.State, run.Attempt, l.started[id])
			}
			continue
		}
		if run.State != sortie.StateCompleted || l.started[id] != 1 {
			t.Errorf("run #%d: state %s, started %d times; want completed, started once", i, run.State, l.started[id])
			continue
		}
		if at := run.Attempts[0].LaunchedMs; at < lastLaunch {
			t.Errorf("run #%d was launched at %d, before an earlier submission (%d): not in submission order", i, at, lastLaunch)
		} else {
			lastLaunch = at
		}
	}
}
