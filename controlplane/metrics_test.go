package controlplane_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/metrictest"
)

// A run that is claimed, interrupted, resumed, claimed again and completed
// is counted once per state it entered; a repeated finish, a heartbeat and
// a cancel of the finished run count nothing.
func TestTransitionsAreCountedOncePerStateEntered(t *testing.T) {
	r := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)))
	ctx := context.Background()
	cp := memory.New()
	defer cp.Close()
	t0 := controlplanetest.T0
	run := controlplanetest.NewRun(t0)
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: t0}); err != nil {
		t.Fatal(err)
	}
	attempt := func(n int, nowMs int64, o sortie.Outcome) {
		t.Helper()
		lid := sortie.NewLaunchID()
		steps := []func() error{
			func() error {
				_, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: n, LaunchID: lid, NowMs: nowMs})
				return err
			},
			func() error {
				_, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: n, LaunchID: lid, NowMs: nowMs + 1})
				return err
			},
			func() error {
				_, err := cp.Heartbeat(ctx, sortie.Claim{RunID: run.ID, Attempt: n, LaunchID: lid, NowMs: nowMs + 2})
				return err
			},
			func() error {
				_, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: n, LaunchID: lid, Outcome: o, NowMs: nowMs + 3})
				return err
			},
			func() error {
				_, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: n, LaunchID: lid, Outcome: o, NowMs: nowMs + 4})
				return err
			},
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("attempt %d step %d: %v", n, i, err)
			}
		}
	}
	attempt(1, t0+10, sortie.Outcome{Interrupt: &sortie.Interrupt{State: sortie.StateInputRequired, Prompt: "more?"}})
	if _, err := cp.Resume(ctx, run.ID, []byte(`{"more":true}`)); err != nil {
		t.Fatal(err)
	}
	attempt(2, t0+20, sortie.Outcome{Result: []byte(`{"ok":true}`)})
	_, _ = cp.RequestCancel(ctx, run.ID, "too late") // changes nothing: the run completed
	got := metrictest.Sums(t, r, "sortie.state")
	want := map[string]int64{
		controlplane.MetricRunsTransitions + " working":        2, // the first claim and the resume
		controlplane.MetricRunsTransitions + " input-required": 1,
		controlplane.MetricRunsTransitions + " completed":      1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("transition counts (-want +got):\n%s", d)
	}
}
