package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// applySlot applies a run write's change of its key's slot count; the
// caller holds the lock.
func (c *ControlPlane) applySlot(s controlplane.SlotChange) error {
	switch {
	case s.Acquire && c.active[s.Key] >= s.Limit:
		return fmt.Errorf("key %q has %d of %d slots taken: %w", s.Key, c.active[s.Key], s.Limit, sortie.ErrConcurrencyLimit)
	case s.Acquire:
		c.active[s.Key]++
	case s.Release:
		c.active[s.Key]--
	}
	return nil
}

// queuedLocked returns the runs queued under key in run ID order.
func (c *ControlPlane) queuedLocked(key string) []*sortie.Run {
	var out []*sortie.Run
	for _, r := range c.runs {
		if r.Queued() && r.Concurrency.Key == key {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *sortie.Run) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// Queued implements [sortie.ControlPlane.Queued].
func (c *ControlPlane) Queued(_ context.Context, key string, limit int) ([]*sortie.Run, error) {
	if err := c.lock("queued"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	q := c.queuedLocked(key)
	q = q[:min(len(q), max(limit, 0))]
	for i, r := range q {
		q[i] = r.Clone()
	}
	return q, nil
}

// QueuePosition implements [sortie.ControlPlane.QueuePosition].
func (c *ControlPlane) QueuePosition(_ context.Context, key string, id sortie.RunID) (int, error) {
	if err := c.lock("queue position"); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	n := 1
	for _, r := range c.runs {
		if r.Queued() && r.Concurrency.Key == key && r.ID < id {
			n++
		}
	}
	return n, nil
}

// Queues implements [sortie.ControlPlane.Queues].
func (c *ControlPlane) Queues(context.Context) ([]sortie.QueueState, error) {
	if err := c.lock("queues"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	waiting := map[string]int{}
	for _, r := range c.runs {
		if r.Queued() {
			waiting[r.Concurrency.Key]++
		}
	}
	out := make([]sortie.QueueState, 0, len(waiting))
	for k, n := range waiting {
		out = append(out, sortie.QueueState{Key: k, Active: c.active[k], Waiting: n})
	}
	slices.SortFunc(out, func(a, b sortie.QueueState) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// SubscribeSlots implements [sortie.SlotNotifier].
func (c *ControlPlane) SubscribeSlots() (<-chan struct{}, func()) { return c.hub.SubscribeSlots() }
