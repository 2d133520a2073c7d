package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// ControlPlane is an in-memory [sortie.ControlPlane] and [sortie.Notifier].
// The zero value is not usable; call [New].
type ControlPlane struct {
	mu     sync.Mutex
	closed bool
	runs   map[sortie.RunID]*sortie.Run
	// events holds each run's events by attempt: events[id][a-1][s-1] is
	// event (a, s).
	events map[sortie.RunID][][]sortie.Event
	idem   map[idemKey]idemRecord
	// steps holds each run's recorded steps in recording order.
	steps map[sortie.RunID][]sortie.Step
	// push holds each run's push configurations by ID.
	push map[sortie.RunID]map[string]sortie.PushConfig
	// leases holds the push configurations' delivery leases.
	leases map[pushKey]pushLease
	// active counts the runs holding slots by concurrency key.
	active map[string]int
	// spend sums the cost of the runs that ended, by agent budget window.
	spend map[sortie.SpendWindow]int64
	hub   controlplane.Hub
	now   func() time.Time
	// tokens signs List page tokens with a key of this store's own.
	tokens *controlplane.PageTokens

	// Changes gives the state-changing methods (RecordLaunch, SetRef,
	// Claim, Heartbeat, Finish, RequestCancel, Resume) over c.change.
	controlplane.Changes
}

type idemKey struct{ scope, key string }

type idemRecord struct {
	runID       sortie.RunID
	requestHash string
	expiresMs   int64
}

var (
	_ sortie.ControlPlane = (*ControlPlane)(nil)
	_ sortie.Notifier     = (*ControlPlane)(nil)
	_ sortie.SlotNotifier = (*ControlPlane)(nil)
)

// New returns an empty control plane. Changes that carry no time of their
// own (RequestCancel, Resume, SetRef) are stamped with time.Now.
func New() *ControlPlane {
	c := &ControlPlane{
		runs:   make(map[sortie.RunID]*sortie.Run),
		events: make(map[sortie.RunID][][]sortie.Event),
		idem:   make(map[idemKey]idemRecord),
		steps:  make(map[sortie.RunID][]sortie.Step),
		push:   make(map[sortie.RunID]map[string]sortie.PushConfig),
		active: make(map[string]int),
		spend:  make(map[sortie.SpendWindow]int64),
		now:    time.Now,
	}
	c.tokens, _ = controlplane.NewPageTokens(nil) // a random key cannot be refused
	c.Changes = controlplane.NewChanges(c.change, c.nowMs)
	return c
}

func (c *ControlPlane) nowMs() int64 { return c.now().UnixMilli() }

// lock takes the mutex unless the control plane is closed (ErrClosed).
func (c *ControlPlane) lock(op string) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("memory: %s: %w", op, sortie.ErrClosed)
	}
	return nil
}

// Reserve implements [sortie.ControlPlane.Reserve]. It returns a
// [*sortie.ValidationError] for a malformed reservation,
// sortie.ErrIdempotencyConflict for a live key with another request hash,
// and sortie.ErrConflict when the run ID is taken.
func (c *ControlPlane) Reserve(_ context.Context, res *sortie.Reservation) (*sortie.Run, bool, error) {
	res, err := controlplane.PrepareReservation(res)
	if err != nil {
		return nil, false, err
	}
	if err := c.lock("reserve"); err != nil {
		return nil, false, err
	}
	defer c.mu.Unlock()
	k := idemKey{res.Scope, res.Run.IdempotencyKey}
	if rec, ok := c.idem[k]; ok && k.key != "" && rec.expiresMs > res.NowMs {
		if rec.requestHash != res.Run.RequestHash {
			return nil, false, fmt.Errorf("memory: reserve key %q in scope %q: %w", k.key, k.scope, sortie.ErrIdempotencyConflict)
		}
		return c.runs[rec.runID].Clone(), false, nil
	}
	if l := res.SpendLimit; l != nil {
		if err := controlplane.CheckSpend(l, c.spend[l.Window]); err != nil {
			return nil, false, fmt.Errorf("memory: reserve run %s: %w", res.Run.ID, err)
		}
	}
	if _, taken := c.runs[res.Run.ID]; taken {
		return nil, false, fmt.Errorf("memory: reserve run %s: run ID taken: %w", res.Run.ID, sortie.ErrConflict)
	}
	run := res.Run.Clone()
	controlplane.NewRun(run, res)
	c.runs[run.ID] = run
	if k.key != "" {
		c.idem[k] = idemRecord{runID: run.ID, requestHash: run.RequestHash, expiresMs: res.NowMs + res.TTLMs}
	}
	c.hub.Notify(run.ID)
	return run.Clone(), true, nil
}

// Get implements [sortie.ControlPlane.Get]: sortie.ErrNotFound for an
// unknown run, a [*sortie.ValidationError] for a malformed ID.
func (c *ControlPlane) Get(_ context.Context, id sortie.RunID) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := c.lock("get"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	r, ok := c.runs[id]
	if !ok {
		return nil, fmt.Errorf("memory: get run %s: %w", id, sortie.ErrNotFound)
	}
	return r.Clone(), nil
}

// List implements [sortie.ControlPlane.List]: newest first (created time,
// then ID, descending). A malformed query or page token gives a
// [*sortie.ValidationError].
func (c *ControlPlane) List(_ context.Context, q sortie.ListQuery) (*sortie.RunPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	tok, err := c.tokens.ListPosition(q)
	if err != nil {
		return nil, err
	}
	if err := c.lock("list"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	var match []*sortie.Run
	for _, r := range c.runs {
		if matches(r, q, tok) {
			match = append(match, r)
		}
	}
	slices.SortFunc(match, func(a, b *sortie.Run) int {
		return cmp.Or(cmp.Compare(b.CreatedMs, a.CreatedMs), cmp.Compare(b.ID, a.ID))
	})
	page := &sortie.RunPage{}
	size := controlplane.PageSize(q)
	for i, r := range match {
		if i == size {
			page.NextPageToken = c.tokens.ListToken(q, match[i-1])
			break
		}
		page.Runs = append(page.Runs, r.Clone())
	}
	return page, nil
}

func matches(r *sortie.Run, q sortie.ListQuery, tok *controlplane.PageToken) bool {
	return (q.ContextID == "" || r.ContextID == q.ContextID) &&
		(q.State == "" || r.State == q.State) &&
		(q.Agent == "" || r.Agent.Name == q.Agent) &&
		(tok == nil || tok.Follows(r.CreatedMs, r.ID))
}

// Subscribe implements [sortie.Notifier]: the channel gets a value after
// every change of the run made through c, before the changing call returns.
func (c *ControlPlane) Subscribe(id sortie.RunID) (<-chan struct{}, func()) {
	return c.hub.Subscribe(id)
}

// Close implements [sortie.ControlPlane.Close]. Later calls return
// sortie.ErrClosed; closing again is a no-op.
func (c *ControlPlane) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}
