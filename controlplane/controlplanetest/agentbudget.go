package controlplanetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

// testAgentBudgetRefusesNextRun: once the runs of an agent with a budget
// of $0.05 a day that ended today cost that much (one run of 100 ms at
// $1 a second), Reserve refuses its next run with an AgentBudgetError
// naming the agent, the budget and the spend, on this handle and a peer,
// and stores nothing; a duplicate of the first run's idempotency key
// still gets its run, and a run of the next day is accepted.
func testAgentBudgetRefusesNextRun(t *testing.T, f *fixture) {
	perSecond(t, f)
	const budget = 50_000_000 // $0.05
	newRun := func(nowMs int64) *sortie.Run {
		run := NewRun(nowMs)
		run.Agent.Budget = &sortie.AgentBudget{MaxCostNanoUSD: budget}
		return run
	}
	limit := func(nowMs int64) *sortie.SpendLimit {
		return &sortie.SpendLimit{Window: (&sortie.AgentBudget{}).WindowAt("probe", nowMs), MaxNanoUSD: budget}
	}
	first := newRun(T0)
	first.IdempotencyKey, first.RequestHash = "first", "h1"
	_, _, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: first, NowMs: T0, SpendLimit: limit(T0)})
	must(t, "Reserve(first run, nothing spent)", err)
	_, lid := f.launch(first.ID, 1, T0+1)
	_, err = f.cp.SetRef(f.ctx, first.ID, 1, lid, sortie.Ref{Provider: "local", ID: "1", RunID: first.ID, Attempt: 1, LaunchID: lid})
	must(t, "SetRef(local)", err)
	f.claim(first.ID, 1, lid, T0+2)
	f.finish(first.ID, 1, lid, sortie.Outcome{Result: []byte(`1`), Usage: &sortie.Usage{DurationMs: 100}}, T0+102)

	cps := []sortie.ControlPlane{f.cp}
	if f.h.SharedAcrossProcesses() {
		cps = append(cps, f.h.MakePeer(f.ctx, t, f.cp))
	}
	for i, cp := range cps {
		next := newRun(T0 + 200)
		_, _, err := cp.Reserve(f.ctx, &sortie.Reservation{Run: next, NowMs: T0 + 200, SpendLimit: limit(T0 + 200)})
		var abe *sortie.AgentBudgetError
		if !errors.As(err, &abe) || !errors.Is(err, sortie.ErrBudgetExhausted) {
			t.Fatalf("handle %d: Reserve(next run after $0.10 of a $0.05 budget) = %v, want an AgentBudgetError", i, err)
		}
		msg := err.Error()
		if abe.SpentNanoUSD < 100_000_000 || abe.BudgetNanoUSD != budget || !strings.Contains(msg, `"probe"`) || !strings.Contains(msg, "0.05") {
			t.Errorf("handle %d: refusal = %+v %q; want agent probe, budget $0.05 and a spend of at least $0.10", i, abe, msg)
		}
		if _, err := f.cp.Get(f.ctx, next.ID); !errors.Is(err, sortie.ErrNotFound) {
			t.Errorf("handle %d: Get(refused run) = %v, want ErrNotFound (nothing stored)", i, err)
		}
	}
	dup := newRun(T0 + 300)
	dup.IdempotencyKey, dup.RequestHash = "first", "h1"
	got, created, err := f.cp.Reserve(f.ctx, &sortie.Reservation{Run: dup, NowMs: T0 + 300, SpendLimit: limit(T0 + 300)})
	if err != nil || created || got.ID != first.ID {
		t.Errorf("Reserve(duplicate of the first key) = %v, created %v, %v; want the first run", got, created, err)
	}
	tomorrow := T0 + sortie.DefaultBudgetPeriodMs
	_, _, err = f.cp.Reserve(f.ctx, &sortie.Reservation{Run: newRun(tomorrow), NowMs: tomorrow, SpendLimit: limit(tomorrow)})
	must(t, "Reserve(a run the next day)", err)
}
