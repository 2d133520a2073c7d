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
	cp, err := sqlite.Open(filepath.Join(b.TempDir(), "sortie.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close()
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
	defer engine.Close()
	client := sortie.NewClient(engine, nil)

	const inFlight = 32
	var next atomic.Int64
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				t0 := time.Now()
				if err := submitAndWait(client, fmt.Sprintf("bench-%d-%d", b.N, i)); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(lat[b.N/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[b.N*99/100].Microseconds())/1000, "p99-ms")
}

func submitAndWait(c *sortie.Client, key string) error {
	ctx := context.Background()
	run, err := c.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", IdempotencyKey: key,
		Variables: json.RawMessage(`{"events":0}`)})
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
