package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Delete implements [sortie.ControlPlane.Delete]: sortie.ErrNotFound for
// an unknown run, sortie.ErrConflict for a run that is not terminal.
func (c *ControlPlane) Delete(_ context.Context, id sortie.RunID) error {
	if err := id.Validate(); err != nil {
		return err
	}
	if err := c.lock("delete"); err != nil {
		return err
	}
	defer c.mu.Unlock()
	r, ok := c.runs[id]
	if !ok {
		return fmt.Errorf("memory: delete run %s: %w", id, sortie.ErrNotFound)
	}
	if err := controlplane.Deletable(r); err != nil {
		return fmt.Errorf("memory: delete: %w", err)
	}
	delete(c.runs, id)
	delete(c.events, id)
	delete(c.steps, id)
	delete(c.push, id)
	maps.DeleteFunc(c.leases, func(k pushKey, _ pushLease) bool { return k.run == id })
	maps.DeleteFunc(c.idem, func(_ idemKey, rec idemRecord) bool { return rec.runID == id })
	c.hub.Notify(id)
	return nil
}

// Ended implements [sortie.ControlPlane.Ended].
func (c *ControlPlane) Ended(_ context.Context, beforeMs int64, limit int) ([]sortie.RunID, error) {
	if err := c.lock("ended"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	var ended []*sortie.Run
	for _, r := range c.runs {
		if r.State.Terminal() && r.UpdatedMs < beforeMs {
			ended = append(ended, r)
		}
	}
	slices.SortFunc(ended, func(a, b *sortie.Run) int {
		return cmp.Or(cmp.Compare(a.UpdatedMs, b.UpdatedMs), cmp.Compare(a.ID, b.ID))
	})
	ids := make([]sortie.RunID, 0, len(ended))
	for _, r := range ended[:min(len(ended), controlplane.ExpiredLimit(limit))] {
		ids = append(ids, r.ID)
	}
	return ids, nil
}
