package sortie

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sortie-run/sortie/internal/instrument"
)

// MetricRunsDeleted counts runs deleted, by the attribute
// sortie.deletion.reason: "request" ([Engine.Delete]) or "retention"
// ([Engine.Expire]).
const MetricRunsDeleted = "sortie.runs.deleted"

var deletedCount = instrument.Counter(MeterName, MetricRunsDeleted, "{run}", "Runs deleted")

// EnvRetention is a host's retention (`sortie serve --retention`, the
// Lambda reconciler): a Go duration such as "720h"; unset keeps runs
// forever.
const EnvRetention = "SORTIE_RETENTION"

// MinRetention is the shortest retention a host takes.
const MinRetention = time.Minute

// ParseRetention parses a retention given as field: "" is 0 (keep runs
// forever); anything else must be a Go duration of at least
// [MinRetention], else a [*ValidationError] naming field.
func ParseRetention(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < MinRetention {
		return 0, invalidf(field, "%q: want a Go duration of at least %v, such as 720h (unset keeps runs forever)", s, MinRetention)
	}
	return d, nil
}

// Delete deletes the terminal run id: its record with its events, steps
// and push configurations first ([ControlPlane.Delete]), then its payload
// objects. A failure to delete the objects is logged, not returned: the
// payload sweep removes the objects of runs the control plane no longer
// holds. It returns ErrNotFound for an unknown run, an error wrapping
// ErrConflict naming the state for a run that is not terminal (cancel it
// first), ErrClosed after Close.
func (e *Engine) Delete(ctx context.Context, id RunID) error {
	if err := id.Validate(); err != nil {
		return err
	}
	if err := e.life.acquire("delete"); err != nil {
		return err
	}
	defer e.life.release()
	return e.delete(ctx, id, "request")
}

func (e *Engine) delete(ctx context.Context, id RunID, reason string) error {
	if err := e.cp.Delete(ctx, id); err != nil {
		return err
	}
	deletedCount.Add(ctx, 1, metric.WithAttributes(attribute.String("sortie.deletion.reason", reason)))
	if e.opts.Payloads == nil {
		return nil
	}
	if err := e.opts.Payloads.DeleteRun(ctx, id); err != nil {
		e.log.Warn("delete the payload objects of a deleted run; the payload sweep removes them later", "run", id, "err", err)
	}
	return nil
}

// expireBatch is how many runs one Expire call of ExpireAll deletes at most.
const expireBatch = 100

// ExpireAll deletes the terminal runs last updated before before with
// [Engine.Expire], 100 at a time, until fewer are left or ctx ends, and
// returns how many it deleted.
func (e *Engine) ExpireAll(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		n, err := e.Expire(ctx, before, expireBatch)
		total += n
		if err != nil || n < expireBatch {
			return total, err
		}
	}
}

// Expire deletes up to limit terminal runs last updated before before,
// oldest first ([ControlPlane.Ended]), each as [Engine.Delete] does, and
// returns how many it deleted. A run another process deleted meanwhile
// is passed over. limit ≤ 0 means 100; it is at most 1000.
func (e *Engine) Expire(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := e.life.acquire("expire"); err != nil {
		return 0, err
	}
	defer e.life.release()
	ids, err := e.cp.Ended(ctx, before.UnixMilli(), limit)
	if err != nil {
		return 0, fmt.Errorf("list the runs ended before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	n := 0
	for _, id := range ids {
		err := e.delete(ctx, id, "retention")
		switch {
		case err == nil:
			n++
		case !errors.Is(err, ErrNotFound):
			return n, fmt.Errorf("expire run %s: %w", id, err)
		}
	}
	return n, nil
}
