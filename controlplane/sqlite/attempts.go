package sqlite

import (
	"context"
	"encoding/json"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// ops is the shared implementation of the state-changing methods.
func (c *ControlPlane) ops() controlplane.Changes {
	return controlplane.Changes{Change: c.change, NowMs: c.nowMs}
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
