package functions

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/metrictest"
)

// A claim the control plane refuses is counted by reason: a duplicate
// delivery or superseded launch (stale), a cancelled run, a terminal run.
// The global meter provider binds its instruments to the first provider
// set, so this is the package's only test that sets one.
func TestRefusedClaimsAreCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	before := metrictest.Sums(t, reader, "reason")
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return "ran", nil }))
	for _, sentinel := range []error{sortie.ErrConflict, sortie.ErrConflict, sortie.ErrCancelRequested, sortie.ErrTerminal} {
		rep := newRecorder(t)
		rep.claimErr = fmt.Errorf("claim: %w", sentinel)
		_, _ = w.Execute(context.Background(), testInvocation("go:h", ""), rep)
	}
	_, _ = w.Execute(context.Background(), testInvocation("go:h", ""), newRecorder(t)) // claimed: not counted
	got := metrictest.Sums(t, reader, "reason")
	want := map[string]int64{MetricClaimsRefused + " stale": 2, MetricClaimsRefused + " cancelled": 1, MetricClaimsRefused + " terminal": 1}
	for k, n := range want {
		if got[k]-before[k] != n {
			t.Errorf("%s counted %d, want %d (all: %v)", k, got[k]-before[k], n, got)
		}
	}
}
