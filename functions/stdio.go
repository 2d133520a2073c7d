package functions

import (
	"context"
	"fmt"
	"io"

	"github.com/sortie-run/sortie"
)

// ServeStdio is the CLI worker (`sortie worker`): it reads one invocation
// from stdin (see [ReadInvocation]), executes it with [Worker.Execute] and
// writes its messages to stdout as NDJSON ([NewStreamReporter]). When mk is
// not nil, mk(inv) is the primary reporter (the host's control plane): it
// decides the claim and the heartbeats, and stdout mirrors what it took
// ([Tee]). An invalid invocation is a [*sortie.ValidationError] and nothing
// is written; a failing mk is returned as its error.
func (w *Worker) ServeStdio(ctx context.Context, stdin io.Reader, stdout io.Writer, mk func(*sortie.Invocation) (Reporter, error)) (sortie.Outcome, error) {
	inv, err := ReadInvocation(stdin)
	if err != nil {
		return sortie.Outcome{}, err
	}
	var rep Reporter = NewStreamReporter(stdout)
	if mk != nil {
		primary, err := mk(inv)
		if err != nil {
			return sortie.Outcome{}, fmt.Errorf("worker: reporter for run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
		}
		rep = Tee(primary, rep)
	}
	return w.Execute(ctx, inv, rep)
}
