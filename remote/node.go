package remote

import (
	"cmp"
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
	// RemoteCallRetry: attempt Attempt failed with Err, a transport
	// failure; the node sends the call again after its backoff.
	RemoteCallRetry ObservationKind = "remote_call_retry"
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
	// Attempt is the attempt the observation is about, from 1.
	Attempt int
	// Resumed reports that the call waits for a task a previous call
	// recorded under its key, instead of sending the message.
	Resumed bool
	// BindingErr is why the node could not remove the call's binding
	// record once the task ended (RemoteCallSuccess, RemoteCallError);
	// the record then stays until [Node.CancelBound] or a later call with
	// the key removes it.
	BindingErr error
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
// [Transport], under a [Policy] (retries, timeout, result validation).
// When the caller's ctx ends while the call is in flight and the transport
// reported the remote task, the node asks the remote to cancel that task,
// so abandoned work does not run on. With [Node.Bindings] it records the
// task of each keyed call, so a caller that restarted can resume
// ([Node.Resume]) or cancel ([Node.CancelBound]) the task it started. A
// Node is safe for concurrent calls; its fields must not change once it
// made one.
type Node struct {
	// Name names the node in observations and binding records. Required
	// with Bindings.
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
	// Policy is the node's call policy. Optional; the zero Policy sends
	// each call once.
	Policy Policy
	// Bindings records the remote task of every call with a
	// [CallOptions.Key] from the moment the transport reports it until
	// the task is terminal (or cancelled after the caller gave up).
	// Optional.
	Bindings BindingStore

	mu  sync.Mutex
	pol *compiledPolicy
}

// CallOptions are the per-call fields of [Node.Call]. A nil *CallOptions
// means none.
type CallOptions struct {
	// ContextID continues a remote context. Optional.
	ContextID string
	// TaskID continues a paused remote task. Optional.
	TaskID string
	// Metadata is sent alongside the message (on a Sortie host it becomes
	// the run's labels). Optional.
	Metadata map[string]any
	// Timeout bounds each attempt of the call, overriding
	// [Policy.Timeout]. Optional; 0 means the policy's.
	Timeout time.Duration
	// Key is the caller's stable name for this call (for example its own
	// run ID and step), 1-256 bytes, under which [Node.Bindings] records
	// the remote task. A Call with a Key whose task is still recorded does
	// not send the message again: it waits for that task, as
	// [Node.Resume] does. Optional; without Bindings it is ignored.
	Key string
}

// Call forwards msg to the node's skill and returns the result. Errors are
// the transport's (see [Transport]) after the policy's last attempt,
// [ErrInvalidResult] for a result the policy's schema refuses, and a
// [*sortie.ValidationError] naming a missing node field (transport, skill,
// agent_url, name), a bad policy field or bad call input.
func (n *Node) Call(ctx context.Context, msg Message, opts *CallOptions) (*CallResult, error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	pol, err := n.check(o.Key)
	if err != nil {
		return nil, err
	}
	if n.Bindings != nil && o.Key != "" && o.TaskID == "" {
		rec, err := n.Bindings.GetBinding(ctx, n.Name, o.Key)
		if err == nil {
			return n.resume(ctx, rec, pol)
		} else if !errors.Is(err, ErrBindingNotFound) {
			return nil, fmt.Errorf("remote: read the binding of key %.80q: %w", o.Key, err)
		}
	}
	req := n.request(msg, &o)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c := &call{n: n, pol: pol, req: req, timeout: cmp.Or(o.Timeout, pol.Timeout)}
	if n.Bindings != nil {
		c.key = o.Key
	}
	return c.run(ctx, c.send)
}

// check returns the node's compiled policy after checking the node's
// fields and the call's key.
func (n *Node) check(key string) (*compiledPolicy, error) {
	if n.Transport == nil {
		return nil, sortie.Invalidf("transport", "required")
	}
	if n.Bindings != nil {
		if err := CheckBindingKey(n.Name, cmp.Or(key, "-")); err != nil {
			return nil, err
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pol != nil {
		return n.pol, nil
	}
	pol, err := n.Policy.compile()
	if err != nil {
		return nil, err
	}
	n.pol = pol
	return pol, nil
}

// request is the call's request. Every call gets a message ID, so the
// policy's retries are idempotent on remotes that dedupe by it.
func (n *Node) request(msg Message, o *CallOptions) *CallRequest {
	if msg.ID == "" {
		msg.ID = sortie.NewLaunchID()
	}
	return &CallRequest{Message: msg, Skill: n.Skill, AgentURL: n.AgentURL, AgentCard: n.AgentCard,
		ContextID: o.ContextID, TaskID: o.TaskID, Metadata: o.Metadata, Timeout: o.Timeout}
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
