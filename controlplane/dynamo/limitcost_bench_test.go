package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/pricing"
)

// limitedRun takes one run of an agent with a concurrency limit through
// what the engine does (Reserve queued, Queued to find the head, its
// admission by RecordLaunch, SetRef) and what a worker does (Claim,
// Finish, which gives the slot back), metering each. With queued > 0
// the key has that many other runs waiting, so a QueuePosition counts
// them.
func limitedRun(ctx context.Context, m *opMeter, host, worker *dynamo.ControlPlane, nowMs int64, budget bool) error {
	run := controlplanetest.NewRun(nowMs)
	var limit *sortie.SpendLimit
	if budget {
		run.Agent.Budget = &sortie.AgentBudget{MaxCostNanoUSD: 1 << 60}
		limit = &sortie.SpendLimit{Window: run.Agent.Budget.WindowAt("probe", nowMs), MaxNanoUSD: 1 << 60}
	}
	run.IdempotencyKey, run.RequestHash = "key-"+string(run.ID), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	run.Concurrency = &sortie.RunConcurrency{Key: "probe/customer-1", Limit: 5}
	lid := sortie.NewLaunchID()
	steps := []meteredOp{
		{"Reserve", host, func() error {
			_, _, err := host.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: nowMs, SpendLimit: limit})
			return err
		}},
		{"Queued", host, func() error {
			q, err := host.Queued(ctx, run.Concurrency.Key, 1)
			if err == nil && (len(q) != 1 || q[0].ID != run.ID) {
				err = fmt.Errorf("Queued = %d runs, want the run", len(q))
			}
			return err
		}},
		{"Admit", host, func() error {
			_, err := host.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, Limit: 5, NowMs: nowMs})
			return err
		}},
		{"SetRef", host, func() error {
			_, err := host.SetRef(ctx, run.ID, 1, lid, sortie.Ref{Provider: "local", ID: "1", RunID: run.ID, Attempt: 1, LaunchID: lid})
			return err
		}},
		{"Claim", worker, func() error {
			_, err := worker.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "bench", NowMs: nowMs})
			return err
		}},
		{"Finish", worker, func() error {
			_, err := worker.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
				Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`), Usage: &sortie.Usage{DurationMs: 12}}, NowMs: nowMs})
			return err
		}},
	}
	return m.doAll(steps)
}

// BenchmarkLimitedRunCost reports the read and write units DynamoDB
// reported for each operation of a no-event run of an agent with a
// concurrency limit, from its queued reservation to the finish that gives
// its slot back ("<Operation>-WRU", "<Operation>-RRU", totals), and a
// reconciler's look for queues (Queues, once a run: every reconciler
// pass makes one); with agent_budget=true the agent has a budget too
// (the reservation reads its spend, the finish adds to it).
func BenchmarkLimitedRunCost(b *testing.B) {
	for _, budget := range []bool{false, true} {
		b.Run(fmt.Sprintf("agent_budget=%v", budget), func(b *testing.B) { benchLimited(b, budget) })
	}
}

func benchLimited(b *testing.B, budget bool) {
	db, table := newTable(b)
	host := open(b, db, table, nil)
	worker := open(b, newClient(), table, nil)
	if budget { // local compute at $1 a second, so every run spends
		prices, err := pricing.Default().Set("local.second", "1")
		if err != nil {
			b.Fatal(err)
		}
		worker.SetPricer(prices)
	}
	m := &opMeter{}
	i := int64(0)
	for b.Loop() {
		i++
		if err := limitedRun(b.Context(), m, host, worker, T0+i, budget); err != nil {
			b.Fatal(err)
		}
		if err := m.do("QueuesPerPass", host, func() error { _, err := host.Queues(b.Context()); return err }); err != nil {
			b.Fatal(err)
		}
	}
	var total dynamo.Capacity
	for _, name := range m.order {
		c := m.units[name]
		b.ReportMetric(c.WriteUnits/float64(i), name+"-WRU")
		b.ReportMetric(c.ReadUnits/float64(i), name+"-RRU")
		if name != "QueuesPerPass" {
			total.WriteUnits += c.WriteUnits
			total.ReadUnits += c.ReadUnits
		}
	}
	b.ReportMetric(total.WriteUnits/float64(i), "WRU/run")
	b.ReportMetric(total.ReadUnits/float64(i), "RRU/run")
}
