package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// opMeter takes the capacity a handle consumed around each operation.
type opMeter struct {
	units map[string]dynamo.Capacity
	order []string
}

func (m *opMeter) do(name string, cp *dynamo.ControlPlane, fn func() error) error {
	before := cp.Consumed()
	err := fn()
	after := cp.Consumed()
	if m.units == nil {
		m.units = map[string]dynamo.Capacity{}
	}
	if _, ok := m.units[name]; !ok {
		m.order = append(m.order, name)
	}
	c := m.units[name]
	c.ReadUnits += after.ReadUnits - before.ReadUnits
	c.WriteUnits += after.WriteUnits - before.WriteUnits
	m.units[name] = c
	return err
}

// meteredOp is one control-plane call of a benchmark run, metered under
// name on the handle cp.
type meteredOp struct {
	name string
	cp   *dynamo.ControlPlane
	fn   func() error
}

// doAll meters ops in order; the first error names its operation.
func (m *opMeter) doAll(ops []meteredOp) error {
	for _, op := range ops {
		if err := m.do(op.name, op.cp, op.fn); err != nil {
			return fmt.Errorf("%s: %w", op.name, err)
		}
	}
	return nil
}

// hostWorkerRun takes one run through what the engine's host does (Reserve
// with attempt 1's launch, SetRef) on host and what a worker does (Claim,
// events in one AppendEvents or one call each, Finish) on worker, metering
// each; the events go in calls AppendEvents calls.
func hostWorkerRun(ctx context.Context, m *opMeter, host, worker *dynamo.ControlPlane, nowMs int64, events, calls int) error {
	run := controlplanetest.NewRun(nowMs)
	run.IdempotencyKey, run.RequestHash = "key-"+string(run.ID), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	lid := sortie.NewLaunchID()
	steps := []meteredOp{
		{"Reserve", host, func() error {
			_, _, err := host.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: nowMs, LaunchID: lid})
			return err
		}},
		{"SetRef", host, func() error {
			_, err := host.SetRef(ctx, run.ID, 1, lid, sortie.Ref{Provider: "lambda", Resource: "probe", ID: "req-1", RunID: run.ID, Attempt: 1, LaunchID: lid})
			return err
		}},
		{"Claim", worker, func() error {
			_, err := worker.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "bench", NowMs: nowMs})
			return err
		}},
	}
	if err := m.doAll(steps); err != nil {
		return err
	}
	evs := make([]sortie.Event, events)
	for i := range evs {
		evs[i] = sortie.Event{Kind: "progress", Text: fmt.Sprintf("step %d of %d", i+1, events), TimeMs: nowMs}
	}
	for len(evs) > 0 {
		n := (events + calls - 1) / calls
		n = min(n, len(evs))
		batch := evs[:n]
		err := m.do("AppendEvents", worker, func() error {
			_, err := worker.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: batch, NowMs: nowMs})
			return err
		})
		if err != nil {
			return fmt.Errorf("AppendEvents: %w", err)
		}
		evs = evs[n:]
	}
	return m.do("Finish", worker, func() error {
		_, err := worker.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
			Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`), Usage: &sortie.Usage{DurationMs: 12}}, NowMs: nowMs})
		return err
	})
}

// BenchmarkRunCostPerOperation reports, per run, the read and write units
// DynamoDB reported (ReturnConsumedCapacity) for each operation of a
// 10-event run with an idempotency key, the host's calls on one handle,
// the worker's on another (as two processes make them) and the
// reconciler's share (Expired passing each ended run's lease entry once)
// on a third: metrics
// "<Operation>-WRU" and "<Operation>-RRU", and the totals. The events go in
// one AppendEvents call (appends=1, the worker's batching), two, or one
// call each (appends=10).
func BenchmarkRunCostPerOperation(b *testing.B) {
	for _, calls := range []int{1, 2, 10} {
		b.Run(fmt.Sprintf("appends=%d", calls), func(b *testing.B) {
			db, table := newTable(b)
			host := open(b, db, table, nil)
			worker := open(b, newClient(), table, nil)
			reconciler := open(b, newClient(), table, nil)
			m := &opMeter{}
			i := int64(0)
			for b.Loop() {
				i++
				if err := hostWorkerRun(b.Context(), m, host, worker, T0+i, 10, calls); err != nil {
					b.Fatal(err)
				}
			}
			// The reconciler's share: passing every run's lease entry once.
			err := m.do("Expired", reconciler, func() error {
				runs, err := reconciler.Expired(b.Context(), T0+i+dynamo.LeaseMarginMs+3_600_000, 0)
				if err == nil && len(runs) > 0 {
					err = fmt.Errorf("%d runs expired, want none (every run ended)", len(runs))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			var total dynamo.Capacity
			for _, name := range m.order {
				c := m.units[name]
				b.ReportMetric(c.WriteUnits/float64(i), name+"-WRU")
				b.ReportMetric(c.ReadUnits/float64(i), name+"-RRU")
				total.WriteUnits += c.WriteUnits
				total.ReadUnits += c.ReadUnits
			}
			b.ReportMetric(total.WriteUnits/float64(i), "WRU/run")
			b.ReportMetric(total.ReadUnits/float64(i), "RRU/run")
		})
	}
}
