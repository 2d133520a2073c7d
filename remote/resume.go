package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sortie-run/sortie"
)

// Resume waits for the outcome of the remote task that a call with key
// started (the record in [Node.Bindings]) and returns it as [Node.Call]
// would, under the node's policy: what a caller does after a restart to
// pick up a call it made before. It needs a [TaskTransport]; a streaming
// node hands Emit the task's events from now on. Errors: those of Call,
// an error wrapping [ErrBindingNotFound] when no task is recorded under
// key, [ErrUnsupported] when the transport has no task surface, and a
// [*sortie.ValidationError] for field "bindings" when the node has no
// store.
func (n *Node) Resume(ctx context.Context, key string) (*CallResult, error) {
	rec, pol, err := n.bound(ctx, key)
	if err != nil {
		return nil, err
	}
	return n.resume(ctx, rec, pol)
}

// CancelBound asks the remote to cancel the task that a call with key
// started (the record in [Node.Bindings]), then removes the record: what
// a caller does after a restart to stop work it no longer wants. A task
// that already ended, or that the remote no longer knows, is not an error.
// Errors: an error wrapping [ErrBindingNotFound] when no task is recorded
// under key, the transport's Cancel error (the record stays), and a
// [*sortie.ValidationError] for field "bindings" when the node has no
// store.
func (n *Node) CancelBound(ctx context.Context, key string) error {
	rec, _, err := n.bound(ctx, key)
	if err != nil {
		return err
	}
	if err := n.Transport.Cancel(ctx, rec.AgentURL, rec.TaskID); err != nil && !errors.Is(err, ErrTaskNotFound) {
		return fmt.Errorf("remote: cancel task %s of key %.80q: %w", rec.TaskID, key, err)
	}
	return n.Bindings.DeleteBinding(ctx, n.Name, key, rec.TaskID)
}

// bound returns the record under key and the node's policy.
func (n *Node) bound(ctx context.Context, key string) (*BindingRecord, *compiledPolicy, error) {
	if n.Bindings == nil {
		return nil, nil, sortie.Invalidf("bindings", "required to find a call's task by its key")
	}
	pol, err := n.check(key)
	if err != nil {
		return nil, nil, err
	}
	rec, err := n.Bindings.GetBinding(ctx, n.Name, key)
	if err != nil {
		return nil, nil, fmt.Errorf("remote: find the task of key %.80q: %w", key, err)
	}
	return rec, pol, nil
}

// resume waits for the recorded task under the policy.
func (n *Node) resume(ctx context.Context, rec *BindingRecord, pol *compiledPolicy) (*CallResult, error) {
	tt, ok := n.Transport.(TaskTransport)
	if !ok {
		return nil, fmt.Errorf("remote: resume task %s of key %.80q: the transport has no task surface: %w", rec.TaskID, rec.Key, ErrUnsupported)
	}
	c := &call{n: n, pol: pol, key: rec.Key, timeout: pol.Timeout, resumed: true,
		req: &CallRequest{AgentURL: rec.AgentURL, Skill: rec.Skill, TaskID: rec.TaskID, ContextID: rec.ContextID,
			Message: Message{ID: rec.MessageID}}}
	c.b.resumed(rec)
	return c.run(ctx, func(ctx context.Context) (*CallResult, bool, error) { return c.await(ctx, tt) })
}

// await is one attempt of a resumed call: it reads the task, and while it
// is not final follows it, handing a streaming node's Emit its progress.
func (c *call) await(ctx context.Context, tt TaskTransport) (*CallResult, bool, error) {
	emitted := false
	for {
		res, final, err := c.outcome(ctx, tt)
		if final || err != nil {
			return res, emitted, err
		}
		n, emit, ferr := c.follow(ctx, tt)
		emitted = emitted || emit
		if ferr != nil {
			// The task may have ended between the read and the
			// subscription (an A2A agent refuses to subscribe then).
			if res, final, err := c.outcome(ctx, tt); final || err != nil {
				return res, emitted, err
			}
			return nil, emitted, ferr
		}
		if n == 0 {
			if err := sleep(ctx, followPause); err != nil {
				return nil, emitted, err
			}
		}
	}
}

// followPause is the wait before reading a task again after a
// subscription that ended at once without the task being final.
const followPause = 100 * time.Millisecond

// outcome reads the task; final reports that it is terminal or paused,
// with its result or the error [OutcomeError] gives.
func (c *call) outcome(ctx context.Context, tt TaskTransport) (*CallResult, bool, error) {
	snap, err := tt.GetTask(ctx, c.req.AgentURL, c.req.TaskID, 0)
	if err != nil {
		return nil, false, err
	}
	if !snap.Status.State.Final() {
		return nil, false, nil
	}
	if err := OutcomeError(snap); err != nil {
		return nil, true, err
	}
	return &CallResult{Result: snap.Result, ContextID: snap.ContextID, TaskID: snap.TaskID,
		AgentURL: c.req.AgentURL, Meta: snap.Meta}, true, nil
}

// follow subscribes to the task until the subscription's last event,
// handing a streaming node's Emit each progress event; n counts the events.
func (c *call) follow(ctx context.Context, tt TaskTransport) (n int, emitted bool, err error) {
	for ev, err := range tt.SubscribeTask(ctx, &SubscribeRequest{AgentURL: c.req.AgentURL, TaskID: c.req.TaskID}) {
		if err != nil {
			return n, emitted, err
		}
		n++
		if ev.Done {
			return n, emitted, nil
		}
		if ev.Kind != KindStatus || !c.n.Streaming {
			continue
		}
		se := StreamEvent{Text: ev.Text, Meta: ev.Meta, ContextID: ev.ContextID, TaskID: ev.TaskID,
			AgentURL: ev.AgentURL, Cursor: ev.Cursor}
		c.observe(ctx, Observation{Kind: RemoteStreamEvent, Event: &se})
		if err := c.emit(ctx, se); err != nil {
			return n, true, err
		}
		emitted = emitted || c.n.Emit != nil
	}
	return n, emitted, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
