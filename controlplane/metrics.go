package controlplane

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/instrument"
)

// MetricRunsTransitions counts runs entering a state (the attribute
// sortie.state: working, input-required, auth-required, completed,
// failed, cancelled or rejected; with sortie.agent), counted by the
// process whose control-plane handle wrote the change. Runs entering
// submitted are sortie.runs.submitted. A Lambda or Cloud Run worker
// writing the control plane itself exports no metrics, so on such
// deployments the runs it ends are not counted; warm, local and
// callback workers' changes are written by the host and counted there.
const MetricRunsTransitions = "sortie.runs.transitions"

// MeterName is the instrumentation scope of the control plane's metrics.
const MeterName = "github.com/sortie-run/sortie/controlplane"

var transitions = instrument.Counter(MeterName, MetricRunsTransitions, "{run}", "Runs entering a state")

// counted wraps a driver's write primitive so that a change that moved
// its run to another state is counted once, after it is stored (a retried
// conditional write counts the state of the write that landed).
func counted(change ChangeFunc) ChangeFunc {
	return func(ctx context.Context, op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error) {
		var before sortie.State
		run, err := change(ctx, op, id, func(r *sortie.Run) (bool, error) {
			before = r.State
			return fn(r)
		})
		if err == nil && run != nil && before != "" && run.State != before {
			transitions.Add(ctx, 1, metric.WithAttributes(attribute.String("sortie.state", string(run.State)),
				attribute.String("sortie.agent", run.Agent.Name)))
		}
		return run, err
	}
}
