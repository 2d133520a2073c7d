package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// PutPushConfig implements [sortie.PushStore.PutPushConfig]. A new
// configuration starts with CreatedMs = nowMs and no delivery progress; a
// replaced one keeps both.
func (c *ControlPlane) PutPushConfig(_ context.Context, cfg *sortie.PushConfig, nowMs int64) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushConfig(cfg, nowMs); err != nil {
		return nil, err
	}
	if err := c.lock("put push config"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if _, ok := c.runs[cfg.RunID]; !ok {
		return nil, fmt.Errorf("memory: put push config %s of run %s: %w", cfg.ID, cfg.RunID, sortie.ErrNotFound)
	}
	byID := c.push[cfg.RunID]
	stored := *cfg
	stored.SealedToken = bytes.Clone(cfg.SealedToken) // the caller keeps its slice
	if old, ok := byID[cfg.ID]; ok {
		stored.CreatedMs, stored.Delivery = old.CreatedMs, old.Delivery
	} else {
		if err := controlplane.CheckPushCount(len(byID) + 1); err != nil {
			return nil, err
		}
		stored.CreatedMs, stored.Delivery = nowMs, sortie.PushDelivery{}
	}
	if byID == nil {
		byID = make(map[string]sortie.PushConfig)
		c.push[cfg.RunID] = byID
	}
	byID[cfg.ID] = stored
	return clonePush(stored), nil
}

// clonePush returns a copy of cfg that shares no memory with the stored
// one.
func clonePush(cfg sortie.PushConfig) *sortie.PushConfig {
	cfg.SealedToken = bytes.Clone(cfg.SealedToken)
	return &cfg
}

// GetPushConfig implements [sortie.PushStore.GetPushConfig].
func (c *ControlPlane) GetPushConfig(_ context.Context, run sortie.RunID, id string) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return nil, err
	}
	if err := c.lock("get push config"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	cfg, ok := c.push[run][id]
	if !ok {
		return nil, fmt.Errorf("memory: get push config %s of run %s: %w", id, run, sortie.ErrNotFound)
	}
	return clonePush(cfg), nil
}

// ListPushConfigs implements [sortie.PushStore.ListPushConfigs].
func (c *ControlPlane) ListPushConfigs(_ context.Context, run sortie.RunID) ([]sortie.PushConfig, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if err := c.lock("list push configs"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if _, ok := c.runs[run]; !ok {
		return nil, fmt.Errorf("memory: list push configs of run %s: %w", run, sortie.ErrNotFound)
	}
	out := []sortie.PushConfig{}
	for _, cfg := range c.push[run] {
		out = append(out, *clonePush(cfg))
	}
	slices.SortFunc(out, func(a, b sortie.PushConfig) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// DeletePushConfig implements [sortie.PushStore.DeletePushConfig].
func (c *ControlPlane) DeletePushConfig(_ context.Context, run sortie.RunID, id string) error {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return err
	}
	if err := c.lock("delete push config"); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if _, ok := c.push[run][id]; !ok {
		return fmt.Errorf("memory: delete push config %s of run %s: %w", id, run, sortie.ErrNotFound)
	}
	delete(c.push[run], id)
	delete(c.leases, pushKey{run, id})
	return nil
}

// UpdatePushDelivery implements [sortie.PushStore.UpdatePushDelivery]: d
// replaces the stored progress except that DeliveredVersion never
// decreases.
func (c *ControlPlane) UpdatePushDelivery(_ context.Context, run sortie.RunID, id string, d sortie.PushDelivery) error {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return err
	}
	if err := controlplane.CheckPushDelivery(d); err != nil {
		return err
	}
	if err := c.lock("update push delivery"); err != nil {
		return err
	}
	defer c.mu.Unlock()
	cfg, ok := c.push[run][id]
	if !ok {
		return fmt.Errorf("memory: update push delivery %s of run %s: %w", id, run, sortie.ErrNotFound)
	}
	d.DeliveredVersion = max(d.DeliveredVersion, cfg.Delivery.DeliveredVersion)
	cfg.Delivery = d
	c.push[run][id] = cfg
	return nil
}

// pushKey names one push configuration.
type pushKey struct {
	run sortie.RunID
	id  string
}

// pushLease is a configuration's delivery lease.
type pushLease struct {
	owner   string
	untilMs int64
}

// LeasePushDelivery implements [sortie.PushStore.LeasePushDelivery].
func (c *ControlPlane) LeasePushDelivery(_ context.Context, run sortie.RunID, id, owner string, nowMs, untilMs int64) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushLease(run, id, owner, nowMs, untilMs); err != nil {
		return nil, err
	}
	if err := c.lock("lease push delivery"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	cfg, ok := c.push[run][id]
	if !ok {
		return nil, fmt.Errorf("memory: lease push config %s of run %s: %w", id, run, sortie.ErrNotFound)
	}
	k := pushKey{run, id}
	held := c.leases[k]
	if cfg.Delivery.Done || !controlplane.PushLeaseFree(owner, held.owner, held.untilMs, nowMs) {
		return nil, fmt.Errorf("memory: %w", controlplane.PushLeaseConflict(run, id, cfg.Delivery.Done, held.owner, held.untilMs))
	}
	if c.leases == nil {
		c.leases = map[pushKey]pushLease{}
	}
	c.leases[k] = pushLease{owner, untilMs}
	return clonePush(cfg), nil
}

// PendingPushConfigs implements [sortie.PushStore.PendingPushConfigs]:
// pages ordered by NextAttemptMs, then run and ID; a page token is the
// position of the previous page's last configuration
// ([controlplane.PushPosition]).
func (c *ControlPlane) PendingPushConfigs(_ context.Context, nowMs int64, limit int, pageToken string) ([]sortie.PushConfig, string, error) {
	if err := controlplane.CheckPendingLimit(limit); err != nil {
		return nil, "", err
	}
	after, err := controlplane.DecodePushPosition(pageToken)
	if err != nil {
		return nil, "", err
	}
	if err := c.lock("pending push configs"); err != nil {
		return nil, "", err
	}
	defer c.mu.Unlock()
	out := []sortie.PushConfig{}
	for _, byID := range c.push {
		for _, cfg := range byID {
			due := !cfg.Delivery.Done && cfg.Delivery.NextAttemptMs <= nowMs
			if due && (after == nil || controlplane.ComparePushPositions(controlplane.PushPositionOf(&cfg), *after) > 0) {
				out = append(out, *clonePush(cfg))
			}
		}
	}
	slices.SortFunc(out, func(a, b sortie.PushConfig) int {
		return controlplane.ComparePushPositions(controlplane.PushPositionOf(&a), controlplane.PushPositionOf(&b))
	})
	if len(out) <= limit {
		return out, "", nil
	}
	return out[:limit], controlplane.PushPositionOf(&out[limit-1]).Encode(), nil
}
