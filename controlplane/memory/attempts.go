package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// update applies fn to a copy of run id under the lock and stores the copy
// when fn reports a change. It returns the run as stored afterwards.
func (c *ControlPlane) update(op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error) {
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
	changed, err := fn(r)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if !changed {
		return stored.Clone(), nil
	}
	c.runs[id] = r
	c.hub.Notify(id)
	return r.Clone(), nil
}

// ops is the shared implementation of the state-changing methods.
func (c *ControlPlane) ops() controlplane.Changes {
	return controlplane.Changes{Change: c.changeCtx, NowMs: c.nowMs}
}

// RecordLaunch implements [sortie.ControlPlane.RecordLaunch].
func (c *ControlPlane) RecordLaunch(ctx context.Context, l sortie.Launch) (*sortie.Run, error) {
	return c.ops().RecordLaunch(ctx, l)
}

// SetRef implements [sortie.ControlPlane.SetRef].
func (c *ControlPlane) SetRef(ctx context.Context, id sortie.RunID, attempt int, launchID string, ref sortie.Ref) error {
	return c.ops().SetRef(ctx, id, attempt, launchID, ref)
}

// Claim implements [sortie.ControlPlane.Claim].
func (c *ControlPlane) Claim(ctx context.Context, cl sortie.Claim) (*sortie.Run, error) {
	return c.ops().Claim(ctx, cl)
}

// Heartbeat implements [sortie.ControlPlane.Heartbeat].
func (c *ControlPlane) Heartbeat(ctx context.Context, cl sortie.Claim) (*sortie.Run, error) {
	return c.ops().Heartbeat(ctx, cl)
}

// Finish implements [sortie.ControlPlane.Finish]: a finish of an attempt
// that already ended returns the stored run and no error.
func (c *ControlPlane) Finish(ctx context.Context, f sortie.Finish) (*sortie.Run, error) {
	return c.ops().Finish(ctx, f)
}

// RequestCancel implements [sortie.ControlPlane.RequestCancel]. reason is
// at most [sortie.MaxEventTextBytes] bytes.
func (c *ControlPlane) RequestCancel(ctx context.Context, id sortie.RunID, reason string) (*sortie.Run, error) {
	return c.ops().RequestCancel(ctx, id, reason)
}

// Resume implements [sortie.ControlPlane.Resume].
func (c *ControlPlane) Resume(ctx context.Context, id sortie.RunID, input json.RawMessage) (*sortie.Run, error) {
	return c.ops().Resume(ctx, id, input)
}

// changeCtx is update as a [controlplane.ChangeFunc].
func (c *ControlPlane) changeCtx(_ context.Context, op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error) {
	return c.update(op, id, fn)
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
