package sortie_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/pricing"
)

// dollarPerSecond prices local compute at $1 a second: 10⁶ n$ a ms.
func dollarPerSecond(t *testing.T) *pricing.Table {
	t.Helper()
	p, err := pricing.Default().Set("local.second", "1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A probe that would run until cancelled is stopped by its budget of 2 s
// of compute within one heartbeat (200 ms) of crossing it, the run fails
// with budget_exceeded naming the budget and the spend, and no attempt
// is launched after it.
func TestBudgetStopsALongRunningProbe(t *testing.T) {
	r := newRig(t, nil)
	prices := dollarPerSecond(t)
	r.cp.SetPricer(prices)
	const maxMs, heartbeatMs = 2000, 200
	run, err := r.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"until_cancelled":true,"interval_ms":20}`),
		// A lease of 15 heartbeats: a loaded machine must not fence the
		// attempt (claim_lost) before its budget stops it.
		Policy: sortie.Policy{MaxCostNanoUSD: maxMs * 1_000_000, HeartbeatMs: heartbeatMs, LeaseMs: 15 * heartbeatMs, MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	final := r.reconcileUntil(t, run.ID, "a terminal state", func(run *sortie.Run) bool { return run.State.Terminal() })
	if final.State != sortie.StateFailed || final.Error == nil || final.Error.Type != sortie.ErrorTypeBudgetExceeded {
		t.Fatalf("run = %s error %+v, want failed with budget_exceeded", final.State, final.Error)
	}
	a := final.Attempts[0]
	// The stop comes with the first heartbeat whose projection reaches the
	// budget; how late that heartbeat lands depends on the machine's load,
	// so the bound only says the probe, which runs until cancelled, was
	// stopped by its budget and did not run on (the time is logged below).
	if a.Usage == nil || a.Usage.DurationMs > 5*maxMs {
		t.Errorf("the attempt ran %+v, want it stopped near the budget's %d ms", a.Usage, maxMs)
	}
	for range 3 {
		if _, err := r.engine.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := r.cp.Get(context.Background(), run.ID); len(got.Attempts) != 1 {
		t.Errorf("attempts after the budget stop = %d, want 1: nothing launched past the budget", len(got.Attempts))
	}
	t.Logf("stopped after %d ms of a %d ms budget: %s", a.Usage.DurationMs, maxMs, final.Error.Message)
}

// stubLauncher accepts every launch and runs nothing; it counts cancels.
type stubLauncher struct {
	mu      sync.Mutex
	cancels []sortie.Ref
}

func (l *stubLauncher) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	return sortie.Ref{Provider: "local", ID: "stub", RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

func (l *stubLauncher) Cancel(_ context.Context, ref sortie.Ref) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancels = append(l.cancels, ref)
	return nil
}

func (l *stubLauncher) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cancels)
}

// A budget stop decided in a worker's heartbeat (no engine involved)
// reaches compute through the reconciler: the launcher's Cancel is
// called once and the attempt gets its cancel timeout to stop.
func TestBudgetStopReachesCompute(t *testing.T) {
	cp := memory.New()
	cp.SetPricer(dollarPerSecond(t))
	l := &stubLauncher{}
	e := sortie.NewEngine(cp, l, probeAgent, nil)
	t.Cleanup(func() { e.Close(); cp.Close() })
	ctx := context.Background()
	run, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: "probe",
		Policy: sortie.Policy{MaxCostNanoUSD: 1_000_000_000, HeartbeatMs: 100, LeaseMs: 300, CancelTimeoutMs: 60_000}})
	if err != nil {
		t.Fatal(err)
	}
	var cur *sortie.Attempt
	testwait.Until(t, "the launch's Ref stored", 10*time.Second, func() bool {
		got, _ := cp.Get(ctx, run.ID)
		cur = got.Current()
		return cur != nil && cur.Ref != nil
	})
	now := time.Now().UnixMilli()
	claim := sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: cur.LaunchID, Owner: "test", NowMs: now - 950}
	if _, err := cp.Claim(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.NowMs = now // 950 ms run + 100 ms to the next heartbeat passes $1
	hb, err := cp.Heartbeat(ctx, claim)
	if err != nil || !hb.CancelRequested {
		t.Fatalf("Heartbeat over budget = cancel %v, %v; want the run's cancel requested", hb.CancelRequested, err)
	}
	if n, err := e.Reconcile(ctx); err != nil || n != 1 {
		t.Fatalf("Reconcile = %d, %v; want 1 run acted on", n, err)
	}
	testwait.Until(t, "the launcher's Cancel", 10*time.Second, func() bool { return l.calls() == 1 })
	got, _ := cp.Get(ctx, run.ID)
	if want := got.CancelRequestedMs + 60_000; got.State.Terminal() || got.LeaseExpiresMs != want {
		t.Errorf("after Reconcile the run is %s with lease %d, want live with its cancel deadline %d", got.State, got.LeaseExpiresMs, want)
	}
	if n, _ := e.Reconcile(ctx); n != 0 || l.calls() != 1 {
		t.Errorf("a second Reconcile acted on %d runs and Cancel was called %d times, want 0 and 1", n, l.calls())
	}
}
