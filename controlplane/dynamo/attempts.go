package dynamo

import (
	"context"
	"encoding/json"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// changes adapts a transition that always changes the run when it succeeds.
func changes(err error) (bool, error) { return err == nil, err }

// RecordLaunch implements [sortie.ControlPlane.RecordLaunch].
func (c *ControlPlane) RecordLaunch(ctx context.Context, l sortie.Launch) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(l.RunID, l.Attempt, l.LaunchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "record launch", l.RunID, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.RecordLaunch(r, l))
	})
}

// SetRef implements [sortie.ControlPlane.SetRef].
func (c *ControlPlane) SetRef(ctx context.Context, id sortie.RunID, attempt int, launchID string, ref sortie.Ref) error {
	if err := controlplane.CheckAttempt(id, attempt, launchID); err != nil {
		return err
	}
	_, err := c.change(ctx, "set ref", id, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.SetRef(r, attempt, launchID, ref, c.nowMs()))
	})
	return err
}

// Claim implements [sortie.ControlPlane.Claim].
func (c *ControlPlane) Claim(ctx context.Context, cl sortie.Claim) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(cl.RunID, cl.Attempt, cl.LaunchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "claim", cl.RunID, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.Claim(r, cl))
	})
}

// Heartbeat implements [sortie.ControlPlane.Heartbeat].
func (c *ControlPlane) Heartbeat(ctx context.Context, cl sortie.Claim) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(cl.RunID, cl.Attempt, cl.LaunchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "heartbeat", cl.RunID, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.Heartbeat(r, cl))
	})
}

// Finish implements [sortie.ControlPlane.Finish]: a finish of an attempt
// that already ended returns the stored run and no error.
func (c *ControlPlane) Finish(ctx context.Context, f sortie.Finish) (*sortie.Run, error) {
	if err := controlplane.CheckAttempt(f.RunID, f.Attempt, f.LaunchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "finish", f.RunID, func(r *sortie.Run) (bool, error) {
		return controlplane.Finish(r, f)
	})
}

// RequestCancel implements [sortie.ControlPlane.RequestCancel]. reason is
// at most [sortie.MaxEventTextBytes] bytes.
func (c *ControlPlane) RequestCancel(ctx context.Context, id sortie.RunID, reason string) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if len(reason) > sortie.MaxEventTextBytes {
		return nil, sortie.Invalidf("reason", "%d bytes, limit %d", len(reason), sortie.MaxEventTextBytes)
	}
	return c.change(ctx, "request cancel", id, func(r *sortie.Run) (bool, error) {
		return controlplane.RequestCancel(r, reason, c.nowMs()), nil
	})
}

// Resume implements [sortie.ControlPlane.Resume].
func (c *ControlPlane) Resume(ctx context.Context, id sortie.RunID, input json.RawMessage) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	return c.change(ctx, "resume", id, func(r *sortie.Run) (bool, error) {
		return changes(controlplane.Resume(r, input, c.nowMs()))
	})
}
