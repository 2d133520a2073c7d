package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/remote"
)

// Options configures a [Transport]. A nil *Options means the defaults.
type Options struct {
	// HTTPClient carries every request (card, calls, streams); it must
	// enforce the destination policy of the process (a handler passes its
	// functions.Call.HTTPClient()). Optional; defaults to the client of
	// Destinations, without an overall timeout (calls are bounded by
	// their ctx and [remote.CallRequest.Timeout]).
	HTTPClient *http.Client
	// Destinations is the destination policy of the default client: the
	// agents' hosts it may reach (destination.PublicHTTPS for any public
	// HTTPS host). Ignored when HTTPClient is set. Optional; nil is the
	// zero policy, which allows no host: every call is refused with an
	// error matching destination.ErrRefused.
	Destinations *destination.Policy
	// Interceptors run around every A2A call (authentication headers, for
	// example a2aclient.AuthInterceptor). Optional.
	Interceptors []a2aclient.CallInterceptor
	// PollInterval is how often a call reads a task whose subscription
	// ended before the task finished. Optional; defaults to 500 ms.
	PollInterval time.Duration
}

// Transport calls A2A agents. It implements [remote.Transport] and
// [remote.TaskTransport], keeps one a2a-go client per agent URL and is
// safe for concurrent use. Close it when done.
type Transport struct {
	opts    Options
	optsErr error // an invalid Destinations, returned by every call

	mu      sync.Mutex
	clients map[string]*a2aclient.Client
}

var (
	_ remote.Transport     = (*Transport)(nil)
	_ remote.TaskTransport = (*Transport)(nil)
)

// New returns a transport. opts may be nil.
func New(opts *Options) *Transport {
	t := &Transport{clients: map[string]*a2aclient.Client{}}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.HTTPClient == nil {
		t.opts.HTTPClient, t.optsErr = t.opts.Destinations.Client()
	}
	if t.opts.PollInterval <= 0 {
		t.opts.PollInterval = 500 * time.Millisecond
	}
	return t
}

// Close releases the clients of every agent.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for u, c := range t.clients {
		errs = append(errs, c.Destroy())
		delete(t.clients, u)
	}
	return errors.Join(errs...)
}

// client returns the client of agentURL, resolving its card (or taking
// card, when given) the first time.
func (t *Transport) client(ctx context.Context, agentURL string, card json.RawMessage) (*a2aclient.Client, error) {
	if err := remote.CheckAgentURL(agentURL); err != nil {
		return nil, err
	}
	if t.optsErr != nil {
		return nil, fmt.Errorf("a2a: destinations: %w", t.optsErr)
	}
	t.mu.Lock()
	c, ok := t.clients[agentURL]
	t.mu.Unlock()
	if ok {
		return c, nil
	}
	ac, err := t.card(ctx, agentURL, card)
	if err != nil {
		return nil, err
	}
	c, err = a2aclient.NewFromCard(ctx, ac, a2aclient.WithJSONRPCTransport(t.opts.HTTPClient),
		a2aclient.WithRESTTransport(t.opts.HTTPClient), a2aclient.WithCallInterceptors(t.opts.Interceptors...))
	if err != nil {
		return nil, fmt.Errorf("a2a: client of %s: %w", sortie.SafeURL(agentURL), sortie.RedactURLError(err))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev, ok := t.clients[agentURL]; ok {
		_ = c.Destroy()
		return prev, nil
	}
	t.clients[agentURL] = c
	return c, nil
}

func (t *Transport) card(ctx context.Context, agentURL string, card json.RawMessage) (*a2a.AgentCard, error) {
	var ac a2a.AgentCard
	if len(card) > 0 {
		if err := json.Unmarshal(card, &ac); err != nil {
			return nil, sortie.Invalidf("agent_card", "not an A2A agent card: %v", err)
		}
		return &ac, nil
	}
	got, err := agentcard.NewResolver(t.opts.HTTPClient).Resolve(ctx, agentURL)
	if err != nil {
		return nil, fmt.Errorf("a2a: resolve the agent card of %s: %w", sortie.SafeURL(agentURL), sortie.RedactURLError(err))
	}
	return got, nil
}

// prepare checks a call and returns its client and message.
func (t *Transport) prepare(ctx context.Context, req *remote.CallRequest) (*a2aclient.Client, *a2a.Message, error) {
	if err := req.Validate(); err != nil {
		return nil, nil, err
	}
	m, err := message(req)
	if err != nil {
		return nil, nil, err
	}
	c, err := t.client(ctx, req.AgentURL, req.AgentCard)
	return c, m, err
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

func bind(req *remote.CallRequest, taskID a2a.TaskID, contextID string) {
	if req.Bind != nil && taskID != "" {
		req.Bind(remote.Binding{AgentURL: req.AgentURL, TaskID: string(taskID), ContextID: contextID})
	}
}

// Send sends the message and waits for the task to finish; see
// [remote.Transport.Send].
func (t *Transport) Send(ctx context.Context, req *remote.CallRequest) (*remote.CallResult, error) {
	ctx, cancel := withTimeout(ctx, req.Timeout)
	defer cancel()
	snap, err := t.sendTask(ctx, req, true)
	if err != nil {
		return nil, err
	}
	if err := remote.OutcomeError(snap); err != nil {
		return nil, err
	}
	return &remote.CallResult{Result: snap.Result, ContextID: snap.ContextID, TaskID: snap.TaskID,
		AgentURL: req.AgentURL, Meta: snap.Meta}, nil
}

// sendTask sends the message and returns the task: once it is final when
// wait is set.
func (t *Transport) sendTask(ctx context.Context, req *remote.CallRequest, wait bool) (*remote.TaskSnapshot, error) {
	c, m, err := t.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: !wait}})
	if err != nil {
		return nil, wrap("send message", err)
	}
	switch r := res.(type) {
	case *a2a.Message:
		return messageSnapshot(r, req.AgentURL), nil
	case *a2a.Task:
		bind(req, r.ID, r.ContextID)
		snap := snapshot(r, req.AgentURL)
		if wait && !snap.Status.State.Final() {
			return t.await(ctx, c, r.ID, req.AgentURL)
		}
		return snap, nil
	}
	return nil, fmt.Errorf("a2a: send message: unexpected answer %T", res)
}

// await follows a task until it is final and returns it.
func (t *Transport) await(ctx context.Context, c *a2aclient.Client, id a2a.TaskID, agentURL string) (*remote.TaskSnapshot, error) {
	for {
		n := 0
		for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				break // the task may have finished meanwhile: read it
			}
			n++
		}
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		if err != nil {
			return nil, wrap("get task "+string(id), err)
		}
		if snap := snapshot(got, agentURL); snap.Status.State.Final() {
			return snap, nil
		}
		if n == 0 {
			if err := sleep(ctx, t.opts.PollInterval); err != nil {
				return nil, err
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// Cancel cancels the task; a task that already finished is not an error.
// See [remote.Transport.Cancel].
func (t *Transport) Cancel(ctx context.Context, agentURL, taskID string) error {
	if err := remote.CheckTaskRef(agentURL, taskID); err != nil {
		return err
	}
	c, err := t.client(ctx, agentURL, nil)
	if err != nil {
		return err
	}
	_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)})
	if errors.Is(err, a2a.ErrTaskNotCancelable) {
		return nil
	}
	return wrap("cancel task "+taskID, err)
}

// Stream sends the message and yields the task's progress, then a Done
// event with the result; see [remote.Transport.Stream].
func (t *Transport) Stream(ctx context.Context, req *remote.CallRequest) iter.Seq2[remote.StreamEvent, error] {
	return func(yield func(remote.StreamEvent, error) bool) {
		ctx, cancel := withTimeout(ctx, req.Timeout)
		defer cancel()
		c, m, err := t.prepare(ctx, req)
		if err != nil {
			yield(remote.StreamEvent{}, err)
			return
		}
		s := &streamer{t: t, c: c, req: req, yield: yield}
		for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
			if err != nil {
				yield(remote.StreamEvent{}, wrap("stream message", err))
				return
			}
			if !s.handle(ctx, ev) {
				return
			}
		}
		s.finish(ctx, nil)
	}
}
