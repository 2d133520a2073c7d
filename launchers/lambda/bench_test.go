package lambda_test

import (
	"slices"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/lambda"
)

// BenchmarkSubmitToClaim measures the engine's added latency per run:
// from the submission (the run's CreatedMs) to the worker's claim
// (ClaimedMs), runs one after another, after a warm-up run so the
// emulator's and the bootstrap's process start are excluded. It reports
// p50 and p99 in ms; run it with -benchtime=60x for 60 runs.
func BenchmarkSubmitToClaim(b *testing.B) {
	table, cp := newTable(b)
	r := startRIE(b, 60, fnEnv(table))
	e := newEngine(b, cp, &serial{l: newLauncher(b, r, lambda.Options{})})
	vars := map[string]any{"events": 1, "output": "ok"}
	warm := submit(b, e, vars, sortie.Policy{}, nil)
	waitRun(b, cp, warm.ID, "the warm-up run", settled)
	var lat []float64
	b.ResetTimer()
	for b.Loop() {
		run := submit(b, e, vars, sortie.Policy{}, nil)
		run = waitRun(b, cp, run.ID, "the run to complete", settled)
		if run.State != sortie.StateCompleted {
			b.Fatalf("run %s = %s reason %q, want completed", run.ID, run.State, run.Reason)
		}
		lat = append(lat, float64(run.Attempts[0].ClaimedMs-run.CreatedMs))
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-submit-to-claim-ms")
	b.ReportMetric(lat[(len(lat)*99)/100], "p99-submit-to-claim-ms")
}
