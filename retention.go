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
// objects (with [EngineOptions.ObjectDeleter], the objects it names go
// before the record: see deleteObjectsFirst). A failure to delete the
// objects is logged, not returned: the payload sweep removes the objects
// of runs the control plane no longer holds. It returns ErrNotFound for an unknown run, an error wrapping
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
	if err := e.deleteObjectsFirst(ctx, id); err != nil {
		return err
	}
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

// RunObjectDeleter deletes the payload objects a run names without
// listing its store (see [EngineOptions.ObjectDeleter]).
type RunObjectDeleter interface {
	// DeleteRunObjects deletes the objects of run, a terminal run read
	// with its steps just before its record is deleted: those the run
	// and steps reference and those its attempts may have written. A
	// missing object is success. The error (never holding a URL) is
	// logged; the run is deleted all the same.
	DeleteRunObjects(ctx context.Context, run *Run, steps []Step) error
}

// deleteObjectsFirst deletes the objects of terminal run id with
// [EngineOptions.ObjectDeleter], if set, before the run's record goes.
// Objects first: the deleter names them from the record and cannot list
// the store, so once the record is gone nothing would name them again;
// if the process dies in between, the run is still there, still expired,
// and the next pass deletes its objects again (a missing one is
// success) and then the record. A run that is not terminal keeps its
// objects (the control plane's Delete refuses it). A failed object
// delete is logged and left to the bucket's lifecycle rule; errors are
// the control plane's reading the run (ErrNotFound for a run gone) or
// its steps.
func (e *Engine) deleteObjectsFirst(ctx context.Context, id RunID) error {
	if e.opts.ObjectDeleter == nil {
		return nil
	}
	run, err := e.cp.Get(ctx, id)
	if err != nil || !run.State.Terminal() {
		return err
	}
	steps, err := e.cp.Steps(ctx, id)
	if err != nil {
		return fmt.Errorf("read the steps of run %s before deleting its objects: %w", id, err)
	}
	if err := e.opts.ObjectDeleter.DeleteRunObjects(ctx, run, steps); err != nil {
		e.log.Warn("payload objects of a deleted run not deleted; the bucket's lifecycle rule removes them", "run", id, "err", err)
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
