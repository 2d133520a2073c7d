package sortie_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
)

// BenchmarkSubmitToResult measures submit → result of a no-op run (the probe
// agent with no events) on the embedded engine: SQLite control plane with
// every state change durable, the local launcher in its in-process (warm)
// mode, 32 runs in flight, each client waiting for its run's result. It
// reports runs/s and the p50/p99 submit→result latency in ms.
func BenchmarkSubmitToResult(b *testing.B) {
	client := embedded(b)
	lat := runAll(b, client, b.N, 32, 0)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	b.ReportMetric(float64(lat[b.N/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[b.N*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkEvents measures events stored per second on the same embedded
// engine: runs of 1,000 probe events each, 32 in flight, every commit
// durable. b.N is the number of runs.
func BenchmarkEvents(b *testing.B) {
	const events = 1000
	client := embedded(b)
	runAll(b, client, b.N, 32, events)
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// embedded returns a client of an engine on a fresh SQLite control plane
// whose local launcher runs probe attempts in process.
func embedded(b *testing.B) *sortie.Client {
	cp, err := sqlite.Open(filepath.Join(b.TempDir(), "sortie.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cp.Close() })
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg}
	launcher, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "bench"))
		return err
	}})
	if err != nil {
		b.Fatal(err)
	}
	engine := sortie.NewEngine(cp, launcher, sortie.Agents{"probe": {Name: "probe", Runtime: "go:probe"}}, nil)
	b.Cleanup(func() { engine.Close() })
	return sortie.NewClient(engine, nil)
}

// runAll submits n probe runs of the given events, inFlight at a time,
// each waiting for its result, timing from here; it returns the sorted
// submit→result latencies.
func runAll(b *testing.B, client *sortie.Client, n, inFlight, events int) []time.Duration {
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	b.ResetTimer()
	for range inFlight {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				t0 := time.Now()
				if err := submitAndWait(client, fmt.Sprintf("bench-%d-%d", n, i), events); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	return lat
}

func submitAndWait(c *sortie.Client, key string, events int) error {
	ctx := context.Background()
	run, err := c.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", IdempotencyKey: key,
		Variables: json.RawMessage(fmt.Sprintf(`{"events":%d}`, events))})
	if err != nil {
		return err
	}
	run, err = c.Wait(ctx, run.ID)
	if err != nil {
		return err
	}
	if run.State != sortie.StateCompleted {
		return fmt.Errorf("run %s ended %s: %v", run.ID, run.State, run.Error)
	}
	return nil
}
