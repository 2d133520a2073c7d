package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// AppendEvents implements [sortie.ControlPlane.AppendEvents].
func (c *ControlPlane) AppendEvents(_ context.Context, a sortie.Append) ([]sortie.Event, error) {
	if err := controlplane.CheckAttempt(a.RunID, a.Attempt, a.LaunchID); err != nil {
		return nil, err
	}
	if err := c.lock("append events"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	r, ok := c.runs[a.RunID]
	if !ok {
		return nil, fmt.Errorf("memory: append events run %s: %w", a.RunID, sortie.ErrNotFound)
	}
	if err := controlplane.CheckAppend(r, a); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	have := c.attemptEvents(a.RunID, a.Attempt)
	stored := func(seq int64) (*sortie.Event, bool) {
		if seq < 1 || seq > int64(len(*have)) {
			return nil, false
		}
		return &(*have)[seq-1], true
	}
	insert, out, err := controlplane.NumberEvents(a, int64(len(*have)), stored)
	if err != nil {
		return nil, fmt.Errorf("memory: run %s: %w", a.RunID, err)
	}
	for _, e := range insert {
		*have = append(*have, cloneEvent(e))
	}
	if len(insert) > 0 {
		c.hub.Notify(a.RunID)
	}
	for i := range out {
		out[i] = cloneEvent(out[i])
	}
	return out, nil
}

// attemptEvents returns the stored events of one attempt, for appending.
func (c *ControlPlane) attemptEvents(id sortie.RunID, attempt int) *[]sortie.Event {
	for len(c.events[id]) < attempt {
		c.events[id] = append(c.events[id], nil)
	}
	return &c.events[id][attempt-1]
}

// Events implements [sortie.ControlPlane.Events]; limit ≤ 0 means
// [controlplane.DefaultEventsLimit], and at most
// [controlplane.MaxEventsLimit] are returned.
func (c *ControlPlane) Events(_ context.Context, id sortie.RunID, after sortie.Cursor, limit int) ([]sortie.Event, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := controlplane.CheckCursor(after); err != nil {
		return nil, err
	}
	if err := c.lock("events"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if _, ok := c.runs[id]; !ok {
		return nil, fmt.Errorf("memory: events of run %s: %w", id, sortie.ErrNotFound)
	}
	limit = controlplane.EventsLimit(limit)
	out := []sortie.Event{}
	byAttempt := c.events[id]
	for a := max(after.Attempt, 1); a <= len(byAttempt); a++ {
		evs := byAttempt[a-1]
		if a == after.Attempt {
			evs = evs[min(after.Seq, int64(len(evs))):]
		}
		for _, e := range evs {
			if len(out) == limit {
				return out, nil
			}
			out = append(out, cloneEvent(e))
		}
	}
	return out, nil
}

func cloneEvent(e sortie.Event) sortie.Event {
	if e.Data != nil {
		e.Data = append([]byte(nil), e.Data...)
	}
	return e
}

// sortByLease orders runs by lease expiry, oldest first, then by ID.
func sortByLease(runs []*sortie.Run) {
	slices.SortFunc(runs, func(a, b *sortie.Run) int {
		return cmp.Or(cmp.Compare(a.LeaseExpiresMs, b.LeaseExpiresMs), cmp.Compare(a.ID, b.ID))
	})
}
