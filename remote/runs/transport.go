package runs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// Dialer returns the engine serving agentURL. Its errors are returned as
// they are; an unknown URL should be a [*sortie.ValidationError] for
// field "agent_url".
type Dialer func(ctx context.Context, agentURL string) (sortie.ExecutionEngine, error)

// Single returns a Dialer that serves e under agentURL and refuses every
// other URL with a [*sortie.ValidationError] for field "agent_url".
func Single(agentURL string, e sortie.ExecutionEngine) Dialer {
	return func(_ context.Context, u string) (sortie.ExecutionEngine, error) {
		if u != agentURL {
			return nil, sortie.Invalidf("agent_url", "%.80q is not a Sortie host this transport knows (want %q)", sortie.SafeURL(u), sortie.SafeURL(agentURL))
		}
		return e, nil
	}
}

// Options configures a [Transport]. A nil *Options means the defaults.
type Options struct {
	// PollInterval is how often a call reads the run when the engine
	// neither notifies changes nor streams them. Optional; defaults to
	// 100 ms.
	PollInterval time.Duration
	// CancelReason is the reason recorded on runs this transport cancels.
	// Optional; defaults to "cancelled by the remote caller".
	CancelReason string
}

// Transport calls runs of Sortie hosts as remote tasks. It implements
// [remote.Transport] and [remote.TaskTransport] and is safe for
// concurrent use.
type Transport struct {
	dial Dialer
	opts Options
}

var (
	_ remote.Transport     = (*Transport)(nil)
	_ remote.TaskTransport = (*Transport)(nil)
)

// New returns a transport that reaches hosts through dial. opts may be nil.
func New(dial Dialer, opts *Options) *Transport {
	t := &Transport{dial: dial}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.CancelReason == "" {
		t.opts.CancelReason = "cancelled by the remote caller"
	}
	return t
}

func (t *Transport) engine(ctx context.Context, agentURL string) (sortie.ExecutionEngine, *sortie.Client, error) {
	if err := remote.CheckAgentURL(agentURL); err != nil {
		return nil, nil, err
	}
	e, err := t.dial(ctx, agentURL)
	if err != nil {
		return nil, nil, err
	}
	return e, sortie.NewClient(e, &sortie.ClientOptions{PollInterval: t.opts.PollInterval}), nil
}

// started is a run a call submitted or resumed, and the cursor its new
// events follow.
type started struct {
	client *sortie.Client
	run    *sortie.Run
	after  sortie.Cursor
}

// start submits the call's run, or resumes req.TaskID, and binds the call.
func (t *Transport) start(ctx context.Context, req *remote.CallRequest) (*started, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	e, c, err := t.engine(ctx, req.AgentURL)
	if err != nil {
		return nil, err
	}
	vars, err := variables(req.Message)
	if err != nil {
		return nil, err
	}
	var s *started
	if req.TaskID != "" {
		s, err = resume(ctx, e, req, vars)
	} else {
		s, err = submit(ctx, e, req, vars)
	}
	if err != nil {
		return nil, err
	}
	s.client = c
	if req.Bind != nil {
		req.Bind(remote.Binding{AgentURL: req.AgentURL, TaskID: s.run.ID.String(), ContextID: s.run.ContextID})
	}
	return s, nil
}

func submit(ctx context.Context, e sortie.ExecutionEngine, req *remote.CallRequest, vars []byte) (*started, error) {
	key := req.Message.ID
	if key == "" {
		key = sortie.NewLaunchID()
	}
	l, err := labels(req.Metadata)
	if err != nil {
		return nil, err
	}
	refs, err := sortie.ConfigRefsFromMetadata("metadata", req.Metadata)
	if err != nil {
		return nil, err
	}
	run, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: req.Skill, Variables: vars,
		ContextID: req.ContextID, Labels: l, ConfigRefs: refs, IdempotencyKey: key})
	if err != nil {
		return nil, fmt.Errorf("runs: submit a run of %s: %w", req.Skill, err)
	}
	return &started{run: run}, nil
}

// resume continues a paused run; its new events follow every event of the
// interrupted attempt.
func resume(ctx context.Context, e sortie.ExecutionEngine, req *remote.CallRequest, input []byte) (*started, error) {
	prev, err := get(ctx, e, req.TaskID)
	if err != nil {
		return nil, err
	}
	if req.Skill != "" && req.Skill != prev.Agent.Name {
		return nil, sortie.Invalidf("skill", "task %s runs agent %q, not %q", prev.ID, prev.Agent.Name, req.Skill)
	}
	if err := sameLabels(prev, req.Metadata); err != nil {
		return nil, err
	}
	run, err := e.Resume(ctx, prev.ID, input)
	if err != nil {
		return nil, fmt.Errorf("runs: resume task %s (%s): %w", prev.ID, prev.State, err)
	}
	return &started{run: run, after: sortie.Cursor{Attempt: prev.Attempt, Seq: math.MaxInt64}}, nil
}

// get reads a run by task ID, wrapping [remote.ErrTaskNotFound] for an
// unknown one.
func get(ctx context.Context, e sortie.ExecutionEngine, taskID string) (*sortie.Run, error) {
	id := sortie.RunID(taskID)
	if err := id.Validate(); err != nil {
		return nil, sortie.Invalidf("task_id", "%.80q is not a Sortie run ID", taskID)
	}
	run, err := e.Get(ctx, id)
	return run, taskErr("get", taskID, err)
}

// taskErr wraps err with the operation, adding [remote.ErrTaskNotFound]
// for an unknown run.
func taskErr(op, taskID string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sortie.ErrNotFound):
		return fmt.Errorf("runs: %s task %s: %w: %w", op, taskID, remote.ErrTaskNotFound, err)
	}
	return fmt.Errorf("runs: %s task %s: %w", op, taskID, err)
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// Send submits (or resumes) a run and waits until it is terminal or
// interrupted; see [remote.Transport.Send].
func (t *Transport) Send(ctx context.Context, req *remote.CallRequest) (*remote.CallResult, error) {
	ctx, cancel := withTimeout(ctx, req.Timeout)
	defer cancel()
	s, err := t.start(ctx, req)
	if err != nil {
		return nil, err
	}
	run, err := s.client.Wait(ctx, s.run.ID)
	if err != nil {
		return nil, fmt.Errorf("runs: wait for task %s: %w", s.run.ID, err)
	}
	if err := remote.OutcomeError(snapshot(run, req.AgentURL, 0)); err != nil {
		return nil, err
	}
	return &remote.CallResult{Result: run.Result, ContextID: run.ContextID, TaskID: run.ID.String(),
		AgentURL: req.AgentURL, Meta: runMeta(run)}, nil
}

// Stream submits (or resumes) a run and yields its events, then a Done
// event with the result; see [remote.Transport.Stream].
func (t *Transport) Stream(ctx context.Context, req *remote.CallRequest) iter.Seq2[remote.StreamEvent, error] {
	return func(yield func(remote.StreamEvent, error) bool) {
		ctx, cancel := withTimeout(ctx, req.Timeout)
		defer cancel()
		s, err := t.start(ctx, req)
		if err != nil {
			yield(remote.StreamEvent{}, err)
			return
		}
		for u, err := range s.client.Follow(ctx, s.run.ID, s.after) {
			switch {
			case err != nil:
				yield(remote.StreamEvent{}, fmt.Errorf("runs: follow task %s: %w", s.run.ID, err))
				return
			case u.Event != nil:
				if !yield(streamEvent(u.Event, s.run, req.AgentURL), nil) {
					return
				}
				continue
			}
			if err := remote.OutcomeError(snapshot(u.Run, req.AgentURL, 0)); err != nil {
				yield(remote.StreamEvent{}, err)
				return
			}
			yield(remote.StreamEvent{Done: true, Result: u.Run.Result, ContextID: u.Run.ContextID,
				TaskID: u.Run.ID.String(), AgentURL: req.AgentURL}, nil)
			return
		}
	}
}

// Cancel requests cancellation of the run taskID; a finished run is left
// as it is. See [remote.Transport.Cancel].
func (t *Transport) Cancel(ctx context.Context, agentURL, taskID string) error {
	if err := remote.CheckTaskRef(agentURL, taskID); err != nil {
		return err
	}
	e, _, err := t.engine(ctx, agentURL)
	if err != nil {
		return err
	}
	id := sortie.RunID(taskID)
	if err := id.Validate(); err != nil {
		return sortie.Invalidf("task_id", "%.80q is not a Sortie run ID", taskID)
	}
	_, err = e.Cancel(ctx, id, t.opts.CancelReason)
	return taskErr("cancel", taskID, err)
}
