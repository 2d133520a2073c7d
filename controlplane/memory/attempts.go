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

// changes adapts a transition that always changes the run when it succeeds.
func changes(err error) (bool, error) { return err == nil, err }

// RecordLaunch implements [sortie.ControlPlane.RecordLaunch].
func (c *ControlPlane) RecordLaunch(_ context.Context, l sortie.Launch) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(l.RunID, l.Attempt, l.LaunchID); err != nil {
		return nil, err
	}
	return c.update("record launch", l.RunID, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.RecordLaunch(r, l))
	})
}

// SetRef implements [sortie.ControlPlane.SetRef].
func (c *ControlPlane) SetRef(_ context.Context, id sortie.RunID, attempt int, launchID string, ref sortie.Ref) error {
	if err := controlplane.CheckAttempt(id, attempt, launchID); err != nil {
		return err
	}
	_, err := c.update("set ref", id, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.SetRef(r, attempt, launchID, ref, c.nowMs()))
	})
	return err
}

// Claim implements [sortie.ControlPlane.Claim].
func (c *ControlPlane) Claim(_ context.Context, cl sortie.Claim) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(cl.RunID, cl.Attempt, cl.LaunchID); err != nil {
		return nil, err
	}
	return c.update("claim", cl.RunID, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.Claim(r, cl))
	})
}

// Heartbeat implements [sortie.ControlPlane.Heartbeat].
func (c *ControlPlane) Heartbeat(_ context.Context, cl sortie.Claim) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(cl.RunID, cl.Attempt, cl.LaunchID); err != nil {
		return nil, err
	}
	return c.update("heartbeat", cl.RunID, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.Heartbeat(r, cl))
	})
}

// Finish implements [sortie.ControlPlane.Finish]: a finish of an attempt
// that already ended returns the stored run and no error.
func (c *ControlPlane) Finish(_ context.Context, f sortie.Finish) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(f.RunID, f.Attempt, f.LaunchID); err != nil {
		return nil, err
	}
	return c.update("finish", f.RunID, func(r *sortie.Run) (bool, error) {
		return controlplane.Finish(r, f)
	})
}

// RequestCancel implements [sortie.ControlPlane.RequestCancel].
func (c *ControlPlane) RequestCancel(_ context.Context, id sortie.RunID, reason string) (*sortie.Run, error) {
	if len(reason) > sortie.MaxEventTextBytes {
		return nil, sortie.Invalidf("reason", "%d bytes, limit %d", len(reason), sortie.MaxEventTextBytes)
	}
	return c.update("request cancel", id, func(r *sortie.Run) (bool, error) {
		return controlplane.RequestCancel(r, reason, c.nowMs()), nil
	})
}

// Resume implements [sortie.ControlPlane.Resume].
func (c *ControlPlane) Resume(_ context.Context, id sortie.RunID, input json.RawMessage) (*sortie.Run, error) {
	return c.update("resume", id, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.Resume(r, input, c.nowMs()))
	})
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
