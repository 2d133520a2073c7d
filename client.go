package sortie

import (
	"context"
	"encoding/json"
	"iter"
	"time"
)

// Client is the execution client: Submit, Follow, Get, List, Cancel, Resume,
// Delete and Wait on any [ExecutionEngine], local or remote.
type Client struct {
	engine ExecutionEngine
	poll   time.Duration
}

// ClientOptions configures a [Client]. A nil *ClientOptions means the defaults.
type ClientOptions struct {
	// PollInterval is how often Follow and Wait read the run when the
	// engine cannot notify changes (another process writes it). Optional;
	// defaults to 100 ms.
	PollInterval time.Duration
}

// NewClient returns a client of e. opts may be nil.
func NewClient(e ExecutionEngine, opts *ClientOptions) *Client {
	c := &Client{engine: e, poll: 100 * time.Millisecond}
	if opts != nil && opts.PollInterval > 0 {
		c.poll = opts.PollInterval
	}
	return c
}

// Submit starts a run; see [Engine.Submit].
func (c *Client) Submit(ctx context.Context, req *SubmitRequest) (*Run, error) {
	return c.engine.Submit(ctx, req)
}

// Get returns a run; ErrNotFound for an unknown ID.
func (c *Client) Get(ctx context.Context, id RunID) (*Run, error) { return c.engine.Get(ctx, id) }

// GetWithSteps is [Client.Get] with the run's durable steps
// ([Run.Steps]) when the engine is a [StepReader], at the cost of one more
// read of the control plane; a remote host's GET of a run carries them
// already.
func (c *Client) GetWithSteps(ctx context.Context, id RunID) (*Run, error) {
	run, err := c.engine.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if sr, ok := c.engine.(StepReader); ok {
		if run.Steps, err = sr.Steps(ctx, id); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// List returns a page of runs, newest first.
func (c *Client) List(ctx context.Context, q ListQuery) (*RunPage, error) {
	return c.engine.List(ctx, q)
}

// Cancel requests cancellation of a run; see [Engine.Cancel].
func (c *Client) Cancel(ctx context.Context, id RunID, reason string) (*Run, error) {
	return c.engine.Cancel(ctx, id, reason)
}

// Delete deletes a terminal run with everything stored under it; see
// [Engine.Delete].
func (c *Client) Delete(ctx context.Context, id RunID) error { return c.engine.Delete(ctx, id) }

// Resume continues an input-required or auth-required run with input.
func (c *Client) Resume(ctx context.Context, id RunID, input json.RawMessage) (*Run, error) {
	return c.engine.Resume(ctx, id, input)
}

// Streamer is an optional [ExecutionEngine] capability: a live stream of a
// run's updates with the semantics of [Client.Follow] (events after the
// cursor across attempts, then the terminal or interrupted run), used
// instead of reading and polling. A remote host's transport implements it
// over Server-Sent Events.
type Streamer interface {
	Follow(ctx context.Context, id RunID, after Cursor) iter.Seq2[Update, error]
}

// Update is one item of a Follow: an event, or (last) the run once it is
// terminal or interrupted.
type Update struct {
	Event *Event
	Run   *Run
}

// Follow yields the run's events after the cursor in (attempt, seq) order,
// across attempts, and ends with an Update carrying the run once it is
// terminal or interrupted (input-required, auth-required). An error ends the
// sequence; a cursor past the run's attempt is one ([CheckCursor]).
// When the engine is a [Streamer] (a remote host), Follow is its stream.
func (c *Client) Follow(ctx context.Context, id RunID, after Cursor) iter.Seq2[Update, error] {
	if s, ok := c.engine.(Streamer); ok {
		return s.Follow(ctx, id, after)
	}
	return func(yield func(Update, error) bool) {
		wake, stop := c.watch(id)
		defer stop()
		read, stored := c.pollRead()
		for first := true; ; first = false {
			// Read the run before its events: events are stored before the
			// attempt ends, so a final run read first has all its events below.
			run, err := read(ctx, id)
			if err == nil && first {
				err = CheckCursor(after, run)
			}
			if err != nil {
				yield(Update{}, err)
				return
			}
			more, ok := c.drain(ctx, id, &after, yield)
			if !ok {
				return
			}
			if more {
				continue
			}
			if run.State.Terminal() || run.State.Interrupted() {
				yield(c.final(ctx, run, stored))
				return
			}
			if err := c.sleep(ctx, wake); err != nil {
				yield(Update{}, err)
				return
			}
		}
	}
}

const followPage = 500

// CheckCursor refuses a cursor after past run's attempt, which run never
// gave out (following from it would skip the events of the attempts up
// to it): a [*ValidationError] for field "after".
func CheckCursor(after Cursor, run *Run) error {
	if after.Attempt > run.Attempt {
		return invalidf("after", "cursor %s is past the run's attempt %d", after, run.Attempt)
	}
	return nil
}

// drain yields one page of events after *after; more reports a full page.
func (c *Client) drain(ctx context.Context, id RunID, after *Cursor, yield func(Update, error) bool) (more, ok bool) {
	evs, err := c.engine.Events(ctx, id, *after, followPage)
	if err != nil {
		yield(Update{}, err)
		return false, false
	}
	for i := range evs {
		if !yield(Update{Event: &evs[i]}, nil) {
			return false, false
		}
		*after = evs[i].Cursor()
	}
	return len(evs) == followPage, true
}

// Waiter is an optional [ExecutionEngine] capability: a wait for a run to
// become terminal or interrupted that the engine wakes (a remote host
// answers a long poll when the run settles), used by [Client.Wait]
// instead of reading and polling.
type Waiter interface {
	Wait(ctx context.Context, id RunID) (*Run, error)
}

// Wait blocks until the run is terminal or interrupted and returns it.
// When the engine is a [Waiter] (a remote host), Wait is its wait; an
// engine that notifies changes ([Watcher]) wakes it at each change.
func (c *Client) Wait(ctx context.Context, id RunID) (*Run, error) {
	if w, ok := c.engine.(Waiter); ok {
		return w.Wait(ctx, id)
	}
	wake, stop := c.watch(id)
	defer stop()
	read, stored := c.pollRead()
	for {
		run, err := read(ctx, id)
		if err != nil {
			return nil, err
		}
		if run.State.Terminal() || run.State.Interrupted() {
			u, err := c.final(ctx, run, stored)
			return u.Run, err
		}
		if err := c.sleep(ctx, wake); err != nil {
			return nil, err
		}
	}
}

// pollRead returns how a follower reads a run until it settles: as
// stored ([StoredReader]: payloads kept by reference are not read, so a
// payload that cannot be read does not hide the run's events), else Get;
// stored reports the first.
func (c *Client) pollRead() (read func(context.Context, RunID) (*Run, error), stored bool) {
	if s, ok := c.engine.(StoredReader); ok {
		return s.GetStored, true
	}
	return c.engine.Get, false
}

// final returns the update of a settled run as Get shows it: read again
// with its payloads when it was read as stored and keeps some by
// reference (an error of that read, e.g. [ErrPayloadIntegrity], instead).
func (c *Client) final(ctx context.Context, run *Run, stored bool) (Update, error) {
	if !stored || !run.HasPayloadRefs() {
		return Update{Run: run}, nil
	}
	full, err := c.engine.Get(ctx, run.ID)
	return Update{Run: full}, err
}

func (c *Client) watch(id RunID) (<-chan struct{}, func()) {
	if w, ok := c.engine.(Watcher); ok {
		return w.Watch(id)
	}
	return nil, func() {}
}

// sleep waits for a change notification, the poll interval or ctx. The
// poll still runs with notifications, for writes by other processes.
func (c *Client) sleep(ctx context.Context, wake <-chan struct{}) error {
	t := time.NewTimer(c.poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-t.C:
	}
	return nil
}
