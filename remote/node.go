package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
)

// ObservationKind names what an [Observation] reports.
type ObservationKind string

// The observation kinds a [Node] emits.
const (
	// RemoteCallStart: the call is about to be sent.
	RemoteCallStart ObservationKind = "remote_call_start"
	// RemoteCallSuccess: the call returned a result.
	RemoteCallSuccess ObservationKind = "remote_call_success"
	// RemoteCallError: the call failed; Err says why.
	RemoteCallError ObservationKind = "remote_call_error"
	// RemoteStreamEvent: a streaming call yielded Event.
	RemoteStreamEvent ObservationKind = "remote_stream_event"
)

// Observation is one report of a [Node] to its [Observer].
type Observation struct {
	Kind     ObservationKind
	Node     string
	Skill    string
	AgentURL string
	// TaskID and ContextID name the remote task once the transport
	// reported it.
	TaskID    string
	ContextID string
	// Event is the stream event (RemoteStreamEvent only).
	Event *StreamEvent
	// Err is why the call failed (RemoteCallError only).
	Err error
	// CancelSent reports that the node asked the remote to cancel the task
	// because the caller gave up (RemoteCallError only); CancelErr is that
	// request's error, if any.
	CancelSent bool
	CancelErr  error
	// ElapsedMs is the time since the call started, in ms.
	ElapsedMs int64
}

// Observer receives a [Node]'s observations. Observe must not block for
// long: it runs on the call's goroutine.
type Observer interface {
	Observe(ctx context.Context, o Observation)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(ctx context.Context, o Observation)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, o Observation) { f(ctx, o) }

// Node forwards messages to one skill of a remote agent through a
// [Transport]. When the caller's ctx ends while the call is in flight and
// the transport reported the remote task, the node asks the remote to
// cancel that task, so abandoned work does not run on. A Node is safe for
// concurrent calls.
type Node struct {
	// Name names the node in observations.
	Name string
	// Transport carries the calls. Required.
	Transport Transport
	// Skill is the remote skill. Required.
	Skill string
	// AgentURL is the remote agent's base URL. Required.
	AgentURL string
	// AgentCard is the remote's agent card, sent with each request.
	// Optional.
	AgentCard json.RawMessage
	// Streaming makes calls use [Transport.Stream] and hand each event to
	// Emit; otherwise [Transport.Send]. Optional; defaults to false.
	Streaming bool
	// Emit receives each stream event of a streaming call, in order; an
	// error stops the call with it. Optional.
	Emit func(ctx context.Context, ev StreamEvent) error
	// Observer receives the node's observations. Optional.
	Observer Observer
	// CancelTimeout bounds the mirrored Cancel. Optional; defaults to
	// 10 s.
	CancelTimeout time.Duration
}

// CallOptions are the per-call fields of [Node.Call]. A nil *CallOptions
// means none.
type CallOptions struct {
	// ContextID continues a remote context. Optional.
	ContextID string
	// TaskID continues a paused remote task. Optional.
	TaskID string
	// Metadata is sent alongside the message. Optional.
	Metadata map[string]any
	// Timeout bounds the call. Optional; 0 means only ctx bounds it.
	Timeout time.Duration
}

// Call forwards msg to the node's skill and returns the result. Errors are
// the transport's (see [Transport]); a [*sortie.ValidationError] names a
// missing node field (transport, skill, agent_url) or bad call input.
func (n *Node) Call(ctx context.Context, msg Message, opts *CallOptions) (*CallResult, error) {
	if n.Transport == nil {
		return nil, sortie.Invalidf("transport", "required")
	}
	req := n.request(msg, opts)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	b := &binder{}
	req.Bind = b.bind
	start := time.Now()
	n.observe(ctx, Observation{Kind: RemoteCallStart}, b, start)
	var res *CallResult
	var err error
	if n.Streaming {
		res, err = n.stream(ctx, req, b, start)
	} else {
		res, err = n.Transport.Send(ctx, req)
	}
	if err != nil {
		o := Observation{Kind: RemoteCallError, Err: err}
		o.CancelSent, o.CancelErr = n.mirrorCancel(ctx, err, b)
		n.observe(ctx, o, b, start)
		return nil, err
	}
	b.bind(Binding{TaskID: res.TaskID, ContextID: res.ContextID})
	n.observe(ctx, Observation{Kind: RemoteCallSuccess}, b, start)
	return res, nil
}

func (n *Node) request(msg Message, opts *CallOptions) *CallRequest {
	req := &CallRequest{Message: msg, Skill: n.Skill, AgentURL: n.AgentURL, AgentCard: n.AgentCard}
	if opts != nil {
		req.ContextID, req.TaskID = opts.ContextID, opts.TaskID
		req.Metadata, req.Timeout = opts.Metadata, opts.Timeout
	}
	return req
}

// stream runs a streaming call: it observes and emits each event and
// returns the result of the Done event.
func (n *Node) stream(ctx context.Context, req *CallRequest, b *binder, start time.Time) (*CallResult, error) {
	for ev, err := range n.Transport.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		b.bind(Binding{TaskID: ev.TaskID, ContextID: ev.ContextID})
		n.observe(ctx, Observation{Kind: RemoteStreamEvent, Event: &ev}, b, start)
		if n.Emit != nil {
			if err := n.Emit(ctx, ev); err != nil {
				return nil, fmt.Errorf("remote: emit stream event: %w", err)
			}
		}
		if ev.Done {
			b.finish()
			return &CallResult{Result: ev.Result, ContextID: ev.ContextID, TaskID: ev.TaskID,
				AgentURL: ev.AgentURL, Meta: ev.Meta}, nil
		}
	}
	return nil, fmt.Errorf("remote: stream from %s ended without a done event", req.AgentURL)
}

// mirrorCancel asks the remote to cancel the bound task when the call was
// abandoned (ctx ended, or the call timed out) before the task finished.
func (n *Node) mirrorCancel(ctx context.Context, err error, b *binder) (sent bool, cancelErr error) {
	abandoned := ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	taskID, done := b.task()
	if !abandoned || taskID == "" || done {
		return false, nil
	}
	timeout := n.CancelTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return true, n.Transport.Cancel(cctx, n.AgentURL, taskID)
}

func (n *Node) observe(ctx context.Context, o Observation, b *binder, start time.Time) {
	if n.Observer == nil {
		return
	}
	o.Node, o.Skill, o.AgentURL = n.Name, n.Skill, n.AgentURL
	o.TaskID, o.ContextID = b.ids()
	o.ElapsedMs = time.Since(start).Milliseconds()
	n.Observer.Observe(ctx, o)
}

// binder records the remote task a call is bound to.
type binder struct {
	mu        sync.Mutex
	taskID    string
	contextID string
	done      bool
}

func (b *binder) bind(x Binding) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if x.TaskID != "" {
		b.taskID = x.TaskID
	}
	if x.ContextID != "" {
		b.contextID = x.ContextID
	}
}

func (b *binder) finish() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

func (b *binder) task() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.taskID, b.done
}

func (b *binder) ids() (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.taskID, b.contextID
}
