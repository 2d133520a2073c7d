package memory

import (
	"context"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// change is the driver's [controlplane.ChangeFunc]: it applies fn to a
// copy of run id under the lock and stores the copy when fn reports a
// change. It returns the run as stored afterwards.
func (c *ControlPlane) change(_ context.Context, op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	stored, ok := c.runs[id]
	if !ok {
		return nil, fmt.Errorf("memory: %s run %s: %w", op, id, sortie.ErrNotFound)
	}
	r := stored.Clone()
	before, wasTerminal := controlplane.SlotStateOf(r), r.State.Terminal()
	changed, err := fn(r)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if !changed {
		return stored.Clone(), nil
	}
	slot := controlplane.SlotChangeOf(before, r)
	if err := c.applySlot(slot); err != nil {
		return nil, fmt.Errorf("memory: %s run %s: %w", op, id, err)
	}
	if sc := controlplane.SpendChangeOf(wasTerminal, r, c.Pricer()); sc.NanoUSD != 0 {
		c.spend[sc.Window] += sc.NanoUSD
	}
	c.runs[id] = r
	c.hub.Notify(id)
	if slot.Dequeue || slot.Release {
		c.hub.NotifySlots()
	}
	return r.Clone(), nil
}

// Expired implements [sortie.ControlPlane.Expired]; limit ≤ 0 means
// [controlplane.DefaultExpiredLimit].
func (c *ControlPlane) Expired(_ context.Context, nowMs int64, limit int) ([]*sortie.Run, error) {
	if err := c.lock("expired"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	var due []*sortie.Run
	for _, r := range c.runs {
		if controlplane.Expired(r, nowMs) {
			due = append(due, r)
		}
	}
	sortByLease(due)
	due = due[:min(len(due), controlplane.ExpiredLimit(limit))]
	for i, r := range due {
		due[i] = r.Clone()
	}
	return due, nil
}
