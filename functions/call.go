package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
)

// Call is the handler's view of the attempt: its invocation, variables,
// resume data, events, logger and HTTP client. Its methods are safe for
// concurrent use.
type Call struct {
	inv    *sortie.Invocation
	cfg    map[string]string
	log    *slog.Logger
	client *http.Client
	out    *sender
	mask   *masker  // the attempt's configuration values; nil for none
	steps  *journal // the run's durable steps
	models *sortie.ModelPolicy
	hooks  authHooks
	// webhooks runs webhook steps; nil when the worker has none.
	webhooks *webhookRunner
	// authIDs numbers the attempt's authorize questions.
	authIDs atomic.Int64
	// abandoned is set when the worker reported the attempt without the
	// handler, which did not return after its context ended.
	abandoned atomic.Bool
	// exit is set by a warm worker's runner when the process running the
	// handler died: the attempt ends without a finish.
	exit *sortie.Status
}

// RunID returns the run's ID.
func (c *Call) RunID() sortie.RunID { return c.inv.RunID }

// Attempt returns the attempt number, from 1.
func (c *Call) Attempt() int { return c.inv.Attempt }

// Invocation returns a copy of the invocation.
func (c *Call) Invocation() *sortie.Invocation { return cloneInvocation(c.inv) }

// Variables decodes the run's variables (a JSON object; {} when absent)
// into v. A decode error is a [*sortie.ValidationError] for field
// "variables".
func (c *Call) Variables(v any) error {
	b := c.inv.Variables
	if len(bytes.TrimSpace(b)) == 0 {
		b = json.RawMessage("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return sortie.Invalidf("variables", "%v", err)
	}
	return nil
}

// Emit reports an event of kind with text and data (marshalled to JSON;
// nil for none). Events are numbered 1, 2, ... in the attempt and reach the
// reporter in that order, in batches: an event waits at most the worker's
// [Worker.EventWindow] (5 ms by default) and is always sent before the
// attempt's next heartbeat and its finish, so a handler that returns has
// had all its events reported; a worker that crashes loses at most the
// last window's. An invalid event (see [sortie.Event.Validate]; kind 1-64
// bytes, text at most [sortie.MaxEventTextBytes], data at most
// [sortie.MaxEventDataBytes]) is a [*sortie.ValidationError] and is not
// sent. Once sending a batch failed (after the reporter's retries), Emit
// returns that error and sends nothing more; it also returns an error
// after the attempt ended.
func (c *Call) Emit(kind, text string, data any) error {
	e := sortie.Event{Kind: kind, Text: text, TimeMs: time.Now().UnixMilli()}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return sortie.Invalidf("event.data", "marshal: %v", err)
		}
		e.Data = b
	}
	if err := e.Validate(); err != nil {
		return err
	}
	return c.out.event(e)
}

// Flush sends the attempt's unsent events now and returns once the
// reporter has them, or with the error of a failed send (see [Call.Emit]).
// A handler calls it before a step that might end its process, so what it
// emitted is stored.
func (c *Call) Flush() error { return c.out.flush(true) }

// Resume returns the resume data (the interrupt's checkpoint and the
// client's input) of an attempt that continues an interrupted run, or nil.
func (c *Call) Resume() *sortie.Resume {
	if c.inv.Resume == nil {
		return nil
	}
	return &sortie.Resume{
		Checkpoint: bytes.Clone(c.inv.Resume.Checkpoint),
		Input:      bytes.Clone(c.inv.Resume.Input),
	}
}

// Config returns a copy of the attempt's configuration: the variables its
// opened inline configuration sets, all named in the worker's environment
// allowlist ([InlineConfig.Allow]), and those its configuration
// references set, resolved by the host's allowlist ([Worker.ConfigRefs])
// for this attempt. It is nil when the run has neither. The values may be
// secrets: never log, emit or return them.
func (c *Call) Config() map[string]string { return maps.Clone(c.cfg) }

// Logger returns the attempt's logger (the worker's, with run and attempt
// attributes). Logs go to stderr, never to stdout.
func (c *Call) Logger() *slog.Logger { return c.log }

// HTTPClient returns the HTTP client the handler must use for outbound
// calls made on the run's behalf. It enforces the worker's destination
// policy ([Worker.Destinations]; by default no destination at all)
// on every request, redirect and connection: a refused destination fails
// with an error matching destination.ErrRefused, before any connection to
// it. It is shared by the worker's attempts: bound each request with the
// handler's context.
func (c *Call) HTTPClient() *http.Client { return c.client }

// httpClients holds the [Call.HTTPClient] of each destination policy in
// use, keyed weakly by the policy: workers (and copies of one) with the
// same policy share one client and its connection pool, and an entry goes
// when its policy is collected.
var httpClients sync.Map // weak.Pointer[destination.Policy] -> func() (*http.Client, error)

// defaultDestinations is the policy of a worker without Destinations: the
// zero policy, which allows no destination.
var defaultDestinations = &destination.Policy{}

// httpClientFor returns the client of p (nil: the zero policy), building
// it on first use. An invalid p is a [*sortie.ValidationError] naming a
// "destinations." field.
func httpClientFor(p *destination.Policy) (*http.Client, error) {
	if p == nil {
		p = defaultDestinations
	}
	key := weak.Make(p)
	policy := *p // the entry must not keep p reachable
	v, loaded := httpClients.LoadOrStore(key, sync.OnceValues(func() (*http.Client, error) {
		c, err := policy.Client()
		var ve *sortie.ValidationError
		if errors.As(err, &ve) {
			return nil, sortie.Invalidf("destinations."+ve.Field, "%s", ve.Reason)
		}
		return c, err
	}))
	if !loaded {
		runtime.AddCleanup(p, func(k weak.Pointer[destination.Policy]) { httpClients.Delete(k) }, key)
	}
	return v.(func() (*http.Client, error))()
}

func cloneInvocation(inv *sortie.Invocation) *sortie.Invocation {
	c := *inv
	c.Variables = bytes.Clone(inv.Variables)
	c.ConfigRefs = slices.Clone(inv.ConfigRefs)
	c.SealedConfig = bytes.Clone(inv.SealedConfig)
	c.SealedPayloadURLs = nil // the worker's, never a handler's
	if inv.Resume != nil {
		r := *inv.Resume
		r.Checkpoint, r.Input = bytes.Clone(r.Checkpoint), bytes.Clone(r.Input)
		c.Resume = &r
	}
	return &c
}
