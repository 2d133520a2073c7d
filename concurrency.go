package sortie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sortie-run/sortie/internal/strictjson"
)

// Concurrency limits, from the agent's manifest. Limits, keys and queue
// positions are counted by the control plane (conditional writes), so they
// hold across hosts sharing a store.
const (
	// MaxConcurrencyLimit is the largest [Concurrency.Limit].
	MaxConcurrencyLimit = 100_000
	// MaxConcurrencyKeyBytes bounds a rendered concurrency key and its template.
	MaxConcurrencyKeyBytes = 256
)

// ErrConcurrencyLimit is the error of a [ControlPlane.RecordLaunch] that
// would admit a queued run while its concurrency key has Limit runs
// holding slots; the run stays queued. errors.Is(err, ErrConflict) holds
// for it too.
var ErrConcurrencyLimit = fmt.Errorf("concurrency limit reached: %w", ErrConflict)

// Concurrency is an agent's concurrency limit: at most Limit of its runs
// with the same key hold a slot at once (from the launch of their first
// attempt until they end; an interrupted run keeps its slot). A run over
// the limit waits in state submitted, queued, and its first attempt is
// launched in submission order (run ID order) when a slot frees, by
// whichever host's engine admits it first.
type Concurrency struct {
	// Limit is how many runs of one key hold slots at once, 1 to
	// [MaxConcurrencyLimit]. The engine takes it from the agent's manifest
	// as its host has it when it admits a run, so a new limit applies to
	// the next admission without touching stored runs.
	Limit int `json:"limit"`
	// Key is a template over the run's variables (a JSON object) that names
	// the runs sharing a limit: text with references {{.name}} (or
	// {{.a.b}} inside an object) to variables that are strings, numbers or
	// booleans, such as "{{.customer}}" for one limit per customer; a
	// missing variable is refused at submit. (The text/template syntax,
	// restricted to references: text/template itself would link reflection
	// that doubles the Lambda bootstrap.) Optional; empty means one limit
	// for the agent.
	Key string `json:"key,omitempty"`
}

// Validate checks the limit and parses the key template; it returns a
// [*ValidationError] naming agent.concurrency.
func (c *Concurrency) Validate() error {
	if c.Limit < 1 || c.Limit > MaxConcurrencyLimit {
		return invalidf("agent.concurrency.limit", "%d outside 1..%d", c.Limit, MaxConcurrencyLimit)
	}
	if len(c.Key) > MaxConcurrencyKeyBytes {
		return invalidf("agent.concurrency.key", "template of %d bytes, limit %d", len(c.Key), MaxConcurrencyKeyBytes)
	}
	if _, err := c.template(); err != nil {
		return invalidf("agent.concurrency.key", "template %q: %v", c.Key, err)
	}
	return nil
}

// keyPart is one piece of a parsed key: literal text, or the path of a
// variable (ref set).
type keyPart struct {
	text string
	ref  []string
}

// template parses the key into literal text and {{.path}} references.
func (c *Concurrency) template() ([]keyPart, error) {
	var parts []keyPart
	rest := c.Key
	for rest != "" {
		open := strings.Index(rest, "{{")
		if open < 0 {
			if strings.Contains(rest, "}}") {
				return nil, errors.New(`"}}" without "{{"`)
			}
			return append(parts, keyPart{text: rest}), nil
		}
		if open > 0 {
			parts = append(parts, keyPart{text: rest[:open]})
		}
		end := strings.Index(rest[open:], "}}")
		if end < 0 {
			return nil, errors.New(`"{{" without "}}"`)
		}
		action := strings.TrimSpace(rest[open+2 : open+end])
		path := strings.Split(strings.TrimPrefix(action, "."), ".")
		if !strings.HasPrefix(action, ".") || slices.Contains(path, "") || strings.ContainsAny(action, " \t|()$\"") {
			return nil, fmt.Errorf("{{%s}}: only references to variables, like {{.customer}}", action)
		}
		parts = append(parts, keyPart{ref: path})
		rest = rest[open+end+2:]
	}
	return parts, nil
}

// render writes the value of the variable at path in vars.
func render(b *strings.Builder, vars map[string]any, path []string) error {
	var v any = vars
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("{{.%s}}: %q is not inside an object", strings.Join(path, "."), name)
		}
		if v, ok = m[name]; !ok {
			return fmt.Errorf("{{.%s}}: no variable %q", strings.Join(path, "."), name)
		}
	}
	switch v := v.(type) {
	case string:
		b.WriteString(v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		fmt.Fprint(b, v)
	default:
		return fmt.Errorf("{{.%s}}: %s, want a string, number or boolean", strings.Join(path, "."), jsonKind(v))
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "a null"
	case []any:
		return "a list"
	}
	return "an object"
}

// RunKey renders the key of a run of agent with variables vars (a JSON
// object): "AGENT" for an agent-wide limit, "AGENT/RENDERED" otherwise. A
// key that cannot be rendered, or is over [MaxConcurrencyKeyBytes] or not
// UTF-8, gives a [*ValidationError] naming variables.
func (c *Concurrency) RunKey(agent string, vars json.RawMessage) (string, error) {
	if c.Key == "" {
		return agent, nil
	}
	parts, err := c.template()
	if err != nil {
		return "", invalidf("agent.concurrency.key", "template %q: %v", c.Key, err)
	}
	var data map[string]any
	if len(bytes.TrimSpace(vars)) > 0 {
		if err := strictjson.UnmarshalUseNumber(vars, &data); err != nil {
			return "", invalidf("variables", "not a JSON object: %v", err)
		}
	}
	var b strings.Builder
	for _, p := range parts {
		if p.ref == nil {
			b.WriteString(p.text)
		} else if err := render(&b, data, p.ref); err != nil {
			return "", invalidf("variables", "the agent's concurrency key %q: %v", c.Key, err)
		}
	}
	key := b.String()
	if len(key) > MaxConcurrencyKeyBytes || !utf8.ValidString(key) {
		return "", invalidf("variables", "the agent's concurrency key %q renders %d bytes (UTF-8, limit %d)", c.Key, len(key), MaxConcurrencyKeyBytes)
	}
	return agent + "/" + key, nil
}

// RunConcurrency is a run's concurrency key and the limit it was admitted
// under ([Concurrency]), stored on the run.
type RunConcurrency struct {
	// Key names the runs that share the limit: the agent's name, or
	// "AGENT/KEY" with the rendered key.
	Key string `json:"key"`
	// Limit is the limit of the last admission (or the submission, while
	// queued).
	Limit int `json:"limit"`
}

// QueuePosition is where a queued run waits, shown by [Engine.Get] and
// the API; never stored.
type QueuePosition struct {
	// Key is the run's concurrency key.
	Key string `json:"key"`
	// Position is 1 for the run admitted next, then 2, ...
	Position int `json:"position"`
}

// QueueState is one concurrency key with runs waiting, as
// [ControlPlane.Queues] returns it.
type QueueState struct {
	Key string
	// Active is how many runs of the key hold slots.
	Active int
	// Waiting is how many runs of the key are queued.
	Waiting int
}

// Queued reports whether the run waits for a concurrency slot: it has a
// concurrency key, no attempt yet, and is not terminal.
func (r *Run) Queued() bool {
	return r.Concurrency != nil && r.Attempt == 0 && !r.State.Terminal()
}

// HoldsSlot reports whether the run holds a concurrency slot: it has a
// concurrency key, a launched attempt, and is not terminal.
func (r *Run) HoldsSlot() bool {
	return r.Concurrency != nil && r.Attempt > 0 && !r.State.Terminal()
}

// SlotNotifier is an optional interface of a control plane: it wakes the
// engine when a run of this handle gives up a slot or leaves a queue, so
// queued runs are admitted without waiting for the reconciler.
type SlotNotifier interface {
	// SubscribeSlots returns a channel that receives a value (coalesced)
	// after each such change, and a function that ends the subscription.
	SubscribeSlots() (<-chan struct{}, func())
}

// concurrencyOf sets run's concurrency key from its agent's limit.
func concurrencyOf(run *Run) error {
	c := run.Agent.Concurrency
	if c == nil {
		return nil
	}
	key, err := c.RunKey(run.Agent.Name, run.Variables)
	if err != nil {
		return err
	}
	run.Concurrency = &RunConcurrency{Key: key, Limit: c.Limit}
	return nil
}

// limitOf returns the concurrency limit the engine admits run under now:
// its agent's limit as the catalog has it, or the run's own when the agent
// is gone or has no limit any more.
func (e *Engine) limitOf(ctx context.Context, run *Run) int {
	m, err := e.agents.Agent(ctx, run.Agent.Name)
	if err == nil && m.Concurrency != nil {
		return m.Concurrency.Limit
	}
	return run.Concurrency.Limit
}

// admit launches the queued runs of key, oldest first, while slots are
// free; it stops at the first run the limit holds back. It returns how
// many it launched.
func (e *Engine) admit(ctx context.Context, key string) (int, error) {
	n := 0
	for range 64 { // bounded: lost races are re-read
		queued, err := e.cp.Queued(ctx, key, 1)
		if err != nil || len(queued) == 0 {
			return n, err
		}
		for _, run := range queued {
			err := e.admitOne(ctx, run)
			switch {
			case errors.Is(err, ErrConcurrencyLimit):
				return n, nil
			case errors.Is(err, ErrConflict), errors.Is(err, ErrTerminal), errors.Is(err, ErrCancelRequested):
			case err != nil:
				return n, err
			default:
				n++
				continue
			}
			break // another host moved this run: read the queue again
		}
	}
	return n, nil
}

// submitQueued reserves a run of an agent with a concurrency limit queued
// and admits its key's queued runs while slots are free; it returns the
// run as it is then (launched, or queued with its position).
func (e *Engine) submitQueued(ctx context.Context, res *Reservation) (*Run, bool, error) {
	run, created, err := e.cp.Reserve(ctx, res)
	if err != nil || !run.Queued() {
		return run, created, err
	}
	admit := e.admit
	if e.opts.OwnRunsOnly {
		admit = func(ctx context.Context, _ string) (int, error) { return e.admitOwn(ctx, run) }
	}
	if _, err := admit(ctx, run.Concurrency.Key); err != nil {
		// The run is stored; the reconciler admits it later.
		e.log.Warn("admission deferred", "run", run.ID, "key", run.Concurrency.Key, "err", err)
	}
	if now, err := e.cp.Get(ctx, run.ID); err == nil {
		run = now
	}
	e.queuePosition(ctx, run)
	return run, created, nil
}

// admitOne seals and records attempt 1 of a queued run under the limit its
// agent has now, and starts it.
func (e *Engine) admitOne(ctx context.Context, run *Run) error {
	inv := e.invocation(run, 1, NewLaunchID())
	meter := &Meter{}
	if err := e.seal(WithMeter(ctx, meter), inv); errors.Is(err, ErrUnavailable) {
		return err
	} else if err != nil {
		_, err = e.failLaunch(ctx, inv, err) // a slot taken and given back
		return err
	}
	l := e.launchOf(run, inv)
	l.Usage = meter.Usage()
	l.Limit = e.limitOf(ctx, run)
	rec, err := e.cp.RecordLaunch(ctx, l)
	if err != nil {
		return err
	}
	_, err = e.started(ctx, rec, inv)
	return err
}

// AdmitQueued admits the queued runs of every concurrency key with a free
// slot (see [ControlPlane.Queues]) and returns how many it launched. The
// reconciler calls it on each pass, and when the control plane says a
// slot freed ([SlotNotifier]).
func (e *Engine) AdmitQueued(ctx context.Context) (int, error) {
	if err := e.life.acquire("admit"); err != nil {
		return 0, err
	}
	defer e.life.release()
	queues, err := e.cp.Queues(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, q := range queues {
		k, err := e.admit(ctx, q.Key)
		n += k
		if err != nil {
			errs = append(errs, fmt.Errorf("admit key %q: %w", q.Key, err))
		}
	}
	return n, errors.Join(errs...)
}

// queuePosition sets run.Queue when the run waits for a slot.
func (e *Engine) queuePosition(ctx context.Context, run *Run) {
	if run == nil || !run.Queued() {
		return
	}
	pos, err := e.cp.QueuePosition(ctx, run.Concurrency.Key, run.ID)
	if err != nil {
		e.log.Debug("queue position", "run", run.ID, "err", err)
		return
	}
	run.Queue = &QueuePosition{Key: run.Concurrency.Key, Position: pos}
}

// admitOwn launches run, queued, when it is first in its key's queue and
// a slot is free; it launches nothing else. It returns how many it
// launched (0 or 1).
func (e *Engine) admitOwn(ctx context.Context, run *Run) (int, error) {
	queued, err := e.cp.Queued(ctx, run.Concurrency.Key, 1)
	if err != nil || len(queued) == 0 || queued[0].ID != run.ID {
		return 0, err
	}
	err = e.admitOne(ctx, queued[0])
	switch {
	case err == nil:
		return 1, nil
	case errors.Is(err, ErrConcurrencyLimit), errors.Is(err, ErrConflict), errors.Is(err, ErrTerminal), errors.Is(err, ErrCancelRequested):
		return 0, nil // full, or another engine moved it
	}
	return 0, err
}

// ReconcileOne reconciles run id alone: it retries or ends its attempt
// when its lease expired, and admits it when it is queued and first in
// line. It reports whether it acted. A short-lived process that follows
// one run calls it instead of [Engine.RunReconciler], so it never
// launches other runs on workers that end with it. It returns ErrClosed
// after Close.
func (e *Engine) ReconcileOne(ctx context.Context, id RunID) (bool, error) {
	if err := e.life.acquire("reconcile"); err != nil {
		return false, err
	}
	defer e.life.release()
	run, err := e.cp.Get(ctx, id)
	if err != nil {
		return false, err
	}
	if run.Queued() {
		n, err := e.admitOwn(ctx, run)
		return n > 0, err
	}
	return e.reconcileID(ctx, id)
}
