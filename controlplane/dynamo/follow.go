package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// confirm reads the run after batches were stored: they belong to the run
// when the attempt is still live, or ended after them (its recorded end
// covers them). Otherwise the worker was stale: confirm deletes the
// batches and returns ErrConflict, or ErrTerminal for a terminal run.
func (c *ControlPlane) confirm(ctx context.Context, a sortie.Append, keys []string, last int64) error {
	_, rec, err := c.getRun(ctx, a.RunID, true)
	if err != nil {
		return err
	}
	r := rec.Run
	cur := r.Current()
	live := cur != nil && cur.Number == a.Attempt && cur.LaunchID == a.LaunchID && cur.Claimed() && !cur.Ended()
	if live || rec.end(a.Attempt) >= last {
		return nil
	}
	for _, sk := range keys {
		if err := c.deleteBatch(ctx, a.RunID, sk); err != nil {
			return err
		}
	}
	sentinel := sortie.ErrConflict
	if r.State.Terminal() {
		sentinel = sortie.ErrTerminal
	}
	return fmt.Errorf("append events to %s attempt %d: the attempt ended before the events were stored: %w", a.RunID, a.Attempt, sentinel)
}

func (c *ControlPlane) deleteBatch(ctx context.Context, id sortie.RunID, sk string) error {
	out, err := c.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(c.table), Key: keyOf(runPK(id), sk),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return apiErr("delete stale event batch "+sk+" of "+string(id), err)
	}
	c.units.call(id, c.units.wrote(capOf(out.ConsumedCapacity)...))
	return nil
}

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
