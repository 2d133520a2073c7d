package sortie_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

// An agent with a budget of $0.01 a day whose first run took 30 ms of
// compute at $1 a second ($0.03): the engine refuses its next run with
// an AgentBudgetError naming the agent, the budget and the spend, and
// stores no run; the first run is still there for its idempotency key.
func TestAgentBudgetRefusesTheNextRun(t *testing.T) {
	r := newRig(t, nil)
	r.cp.SetPricer(dollarPerSecond(t))
	m := probeAgent["probe"]
	m.Budget = &sortie.AgentBudget{MaxCostNanoUSD: 10_000_000}
	e := sortie.NewEngine(r.cp, r.launcher, sortie.Agents{"probe": m}, nil)
	defer e.Close()
	c := sortie.NewClient(e, nil)
	ctx := context.Background()
	first := &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"sleep_ms":30}`), IdempotencyKey: "first"}
	run, err := c.Submit(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if run, err = c.Wait(ctx, run.ID); err != nil || run.State != sortie.StateCompleted {
		t.Fatalf("Wait(first run) = %v, %v; want completed", run, err)
	}
	_, err = c.Submit(ctx, &sortie.SubmitRequest{Agent: "probe"})
	var abe *sortie.AgentBudgetError
	if !errors.As(err, &abe) || !errors.Is(err, sortie.ErrBudgetExhausted) {
		t.Fatalf("Submit(next run) = %v, want an AgentBudgetError", err)
	}
	if msg := err.Error(); abe.SpentNanoUSD < 30_000_000 || !strings.Contains(msg, `agent "probe"`) || !strings.Contains(msg, "$0.01") {
		t.Errorf("refusal %q (spent %d n$): want agent probe, the budget $0.01 and a spend of at least $0.03", msg, abe.SpentNanoUSD)
	}
	page, err := r.cp.List(ctx, sortie.ListQuery{Agent: "probe"})
	if err != nil || len(page.Runs) != 1 {
		t.Errorf("List after the refusal = %d runs, %v; want only the first", len(page.Runs), err)
	}
	if again, err := c.Submit(ctx, first); err != nil || again.ID != run.ID {
		t.Errorf("Submit(first again, same key) = %v, %v; want the first run", again, err)
	}
}
