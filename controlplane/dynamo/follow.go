package dynamo

import (
	"context"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Events implements [sortie.ControlPlane.Events]: a strongly consistent
// read of the run (sortie.ErrNotFound for an unknown run), then a Query of
// its batches from the one holding the event after the cursor. limit ≤ 0
// means [controlplane.DefaultEventsLimit]; at most
// [controlplane.MaxEventsLimit] events are returned. Batches a stale
// worker stored after its attempt ended are left out.
func (c *ControlPlane) Events(ctx context.Context, id sortie.RunID, after sortie.Cursor, limit int) ([]sortie.Event, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := controlplane.CheckCursor(after); err != nil {
		return nil, err
	}
	if err := c.ready("events"); err != nil {
		return nil, err
	}
	_, rec, err := c.getRun(ctx, id, false)
	if err != nil {
		return nil, wrap("events", err)
	}
	limit = controlplane.EventsLimit(limit)
	out := []sortie.Event{}
	lo := eventSK(after.Attempt, max(0, after.Seq-sortie.MaxEventsPerAppend))
	err = c.queryEvents(ctx, id, false, lo, "EVT#~", false, limit+1, func(b *batch) bool {
		for _, e := range b.events {
			end := rec.end(e.Attempt)
			if after.Before(e.Cursor()) && (end < 0 || e.Seq <= end) {
				out = append(out, e)
			}
		}
		return len(out) < limit
	})
	if err != nil {
		return nil, wrap("events", err)
	}
	return out[:min(len(out), limit)], nil
}
