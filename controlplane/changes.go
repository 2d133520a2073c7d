package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
)

// ChangeFunc is a driver's one write primitive: it loads run id, calls fn
// on a copy, stores the copy atomically (a transaction, or a write
// conditional on the version) when fn reports a change, and returns the run
// as stored afterwards. op names the operation in errors. It returns
// sortie.ErrNotFound for an unknown run.
type ChangeFunc func(ctx context.Context, op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error)

// Changes implements the state-changing methods of [sortie.ControlPlane]
// (RecordLaunch, SetRef, Claim, Heartbeat, Defer, Finish, RequestCancel,
// Resume)
// once for every driver, on the driver's [ChangeFunc]: each method checks
// its input and applies its transition. A driver embeds one, made by
// [NewChanges], so these methods are its own. The zero value is not
// usable.
type Changes struct {
	change ChangeFunc
	nowMs  func() int64
	pricer sortie.Pricer
}

// NewChanges returns the state-changing methods over change, the driver's
// write primitive. nowMs stamps changes that carry no time of their own
// (SetRef, RequestCancel, Resume), in Unix ms. Both are required. A
// change that moves a run to another state is counted
// ([MetricRunsTransitions]). Runs'
// budgets are priced with pricing.Default() until [Changes.SetPricer].
func NewChanges(change ChangeFunc, nowMs func() int64) Changes {
	return Changes{change: counted(change), nowMs: nowMs, pricer: pricing.Default()}
}

// SetPricer sets the price table the control plane enforces runs'
// budgets with (see [StopOverBudget]); nil enforces none. Call it before
// the control plane is used. Every handle of a store should have the
// same table (a deployment's overrides too), or budgets are enforced
// with whichever table the handle making a write has.
func (c *Changes) SetPricer(p sortie.Pricer) { c.pricer = p }

// changes adapts a transition that always changes the run when it succeeds.
func changes(err error) (bool, error) { return err == nil, err }

// RecordLaunch implements [sortie.ControlPlane.RecordLaunch].
func (c Changes) RecordLaunch(ctx context.Context, l sortie.Launch) (*sortie.Run, error) {
	if err := CheckAttempt(l.RunID, l.Attempt, l.LaunchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "record launch", l.RunID, func(r *sortie.Run) (bool, error) {
		return changes(RecordLaunch(r, l))
	})
}

// SetRef implements [sortie.ControlPlane.SetRef].
func (c Changes) SetRef(ctx context.Context, id sortie.RunID, attempt int, launchID string, ref sortie.Ref) (*sortie.Run, error) {
	if err := CheckAttempt(id, attempt, launchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "set ref", id, func(r *sortie.Run) (bool, error) {
		return changes(SetRef(r, attempt, launchID, ref, c.nowMs()))
	})
}

// Claim implements [sortie.ControlPlane.Claim]: an invalid compute shape
// is refused before anything is read or written.
func (c Changes) Claim(ctx context.Context, cl sortie.Claim) (*sortie.Run, error) {
	if err := CheckAttempt(cl.RunID, cl.Attempt, cl.LaunchID); err != nil {
		return nil, err
	}
	if err := cl.Usage.ValidateShape(); err != nil {
		return nil, err
	}
	return c.change(ctx, "claim", cl.RunID, func(r *sortie.Run) (bool, error) {
		return changes(Claim(r, cl))
	})
}

// Heartbeat implements [sortie.ControlPlane.Heartbeat].
func (c Changes) Heartbeat(ctx context.Context, cl sortie.Claim) (*sortie.Run, error) {
	if err := CheckAttempt(cl.RunID, cl.Attempt, cl.LaunchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "heartbeat", cl.RunID, func(r *sortie.Run) (bool, error) {
		err := Heartbeat(r, cl)
		if err == nil {
			StopOverBudget(r, c.pricer, cl.NowMs)
		}
		return changes(err)
	})
}

// Defer implements [sortie.ControlPlane.Defer].
func (c Changes) Defer(ctx context.Context, d sortie.Deferral) (*sortie.Run, error) {
	if err := CheckAttempt(d.RunID, d.Attempt, d.LaunchID); err != nil {
		return nil, err
	}
	return c.change(ctx, "defer", d.RunID, func(r *sortie.Run) (bool, error) {
		return changes(Defer(r, d))
	})
}

// Finish implements [sortie.ControlPlane.Finish]: a finish of an attempt
// that already ended returns the stored run and no error. An outcome the
// driver cannot store (its change returns a [*TooLargeError]) ends the
// attempt once with a permanent [sortie.ErrorTypeOutputTooLarge] error
// naming the size and the limit, never a retry.
func (c Changes) Finish(ctx context.Context, f sortie.Finish) (*sortie.Run, error) {
	if err := CheckAttempt(f.RunID, f.Attempt, f.LaunchID); err != nil {
		return nil, err
	}
	fn := func(r *sortie.Run) (bool, error) {
		changed, err := Finish(r, f)
		if changed {
			FailOverBudget(r, c.pricer)
		}
		return changed, err
	}
	run, err := c.change(ctx, "finish", f.RunID, fn)
	var big *TooLargeError
	if !errors.As(err, &big) {
		return run, err
	}
	f.Outcome = *outputTooLarge(f.Outcome, fmt.Sprintf("the outcome would make run %s %d bytes, over %s of %d bytes (variables, result, checkpoint and resume input share it)",
		big.Run, big.Size, big.What, big.Limit))
	return c.change(ctx, "finish", f.RunID, fn)
}

// RequestCancel implements [sortie.ControlPlane.RequestCancel]. reason is
// at most [sortie.MaxEventTextBytes] bytes.
func (c Changes) RequestCancel(ctx context.Context, id sortie.RunID, reason string) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if len(reason) > sortie.MaxEventTextBytes {
		return nil, sortie.Invalidf("reason", "%d bytes, limit %d", len(reason), sortie.MaxEventTextBytes)
	}
	return c.change(ctx, "request cancel", id, func(r *sortie.Run) (bool, error) {
		return RequestCancel(r, reason, c.nowMs()), nil
	})
}

// Resume implements [sortie.ControlPlane.Resume].
func (c Changes) Resume(ctx context.Context, id sortie.RunID, input json.RawMessage) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	return c.resume(ctx, id, func(r *sortie.Run) error { return Resume(r, input, c.nowMs()) })
}

// ResumeRef implements [sortie.ControlPlane.ResumeRef].
func (c Changes) ResumeRef(ctx context.Context, id sortie.RunID, ref *sortie.PayloadRef) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if ref == nil {
		return nil, sortie.Invalidf("input_ref", "required")
	}
	if err := ref.Validate("input_ref"); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(ref.Key, "runs/"+string(id)+"/") {
		return nil, sortie.Invalidf("input_ref.key", "%.80q is not an object of run %s", ref.Key, id)
	}
	return c.resume(ctx, id, func(r *sortie.Run) error { return ResumeRef(r, ref, c.nowMs()) })
}

func (c Changes) resume(ctx context.Context, id sortie.RunID, apply func(*sortie.Run) error) (*sortie.Run, error) {
	return c.change(ctx, "resume", id, func(r *sortie.Run) (bool, error) {
		err := apply(r)
		if err == nil {
			FailOverBudget(r, c.pricer)
		}
		return changes(err)
	})
}
