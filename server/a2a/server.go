package a2a

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/sortie-run/sortie"
)

// Routes of a [Handler], relative to the host's root.
const (
	// CardPath serves the agent card (GET).
	CardPath = "/.well-known/agent-card.json"
	// JSONRPCPath serves the A2A JSON-RPC binding (POST).
	JSONRPCPath = "/a2a"
	// RESTPath prefixes the A2A HTTP+JSON binding (for example
	// POST /a2a/rest/message:send).
	RESTPath = "/a2a/rest"
)

// Names this binding adds to A2A messages and requests.
const (
	// SkillKey is the message metadata key that names the agent (a skill
	// of the card) a new task runs.
	SkillKey = "skill"
	// ResumeAfterParam is the service parameter (HTTP header) that resumes
	// SubscribeToTask after a cursor: every event after it is delivered,
	// none twice.
	ResumeAfterParam = "Sortie-Resume-After"
	// ResumeExtensionURI names the resume extension in the agent card.
	ResumeExtensionURI = "https://sortie.run/a2a/extensions/resume/v1"
	// MetaCursor is the event metadata key holding an event's cursor
	// ("ATTEMPT.SEQ"), the value ResumeAfterParam takes.
	MetaCursor = "sortie/cursor"
	// MetaEventKind is the event metadata key holding the run event's kind.
	MetaEventKind = "sortie/event_kind"
	// MetaAgent and MetaAttempt are task metadata keys: the agent a task
	// runs and its current attempt.
	MetaAgent   = "sortie/agent"
	MetaAttempt = "sortie/attempt"
	// MetaConfigRefs is the message metadata key naming the configuration
	// references of the run a message starts: a list of IDs of the
	// host's allowlist (sortie.MetaConfigRefs).
	MetaConfigRefs = sortie.MetaConfigRefs
	// MetaLabels is the task metadata key holding the run's labels: the
	// metadata of the message that started it (see the package
	// documentation), absent when it had none.
	MetaLabels = "sortie/labels"
	// MetaCost is the task (and final status) metadata key holding what
	// the run cost so far, when the host prices runs: an object with
	// "total_nano_usd" (integer nano-dollars), "price_version" and
	// "components" (nano-dollars by component), as the HTTP API's
	// run.cost shows them without the per-attempt items.
	MetaCost = "sortie/cost"
)

// keyPrefix namespaces the idempotency keys of A2A messages.
const keyPrefix = "a2a/"

// Options configures a [Handler]. A nil *Options means the defaults.
type Options struct {
	// DefaultAgent runs messages that name no skill. Optional; defaults
	// to the only agent when there is one (with several, a new task must
	// name its skill).
	DefaultAgent string
	// PublicURL is the base URL clients reach this host at, used in the
	// agent card. Optional; defaults to the scheme and Host of each card
	// request.
	PublicURL string
	// BearerAuth declares in the agent card that every call needs
	// "Authorization: Bearer <token>" (the host's API tokens), so A2A
	// clients can discover it. Optional; defaults to false (no scheme).
	BearerAuth bool
	// Name, Description and Version describe the host in the agent card.
	// Optional; default to "Sortie", a sentence, and "1".
	Name, Description, Version string
	// PushStore keeps push configurations. Optional; defaults to the
	// engine's control plane when the engine is a [sortie.LocalEngine];
	// without one push notifications are not supported.
	PushStore sortie.PushStore
	// TokenSealer seals the tokens of push configurations for the
	// control plane and opens them for the push dispatcher (give it
	// [TokenOpener] of the same sealer, and [PushFormats]). Optional;
	// without one a configuration with a token is refused (invalid params
	// naming token).
	TokenSealer TokenSealer
	// CheckPushURL refuses push URLs the host's destination policy would
	// refuse. Optional.
	CheckPushURL func(rawURL string) error
	// PushChanged is told after a task's push configurations changed, so
	// the push dispatcher looks at it. Optional.
	PushChanged func(id sortie.RunID)
	// MaxBodyBytes caps a request body, in bytes. Optional; defaults to
	// 1 MiB.
	MaxBodyBytes int64
	// MaxBlock caps how long a blocking SendMessage waits for the task to
	// finish or pause before it returns the task as it is. Optional;
	// defaults to 60 s.
	MaxBlock time.Duration
	// CancelWait is how long CancelTask waits for the task to stop before
	// it returns it. Optional; defaults to 5 s.
	CancelWait time.Duration
	// PollInterval is how often a waiting or streaming request reads the
	// run when no in-process notification comes (workers in other
	// processes). Optional; defaults to 200 ms.
	PollInterval time.Duration
	// KeepAlive is the interval of SSE comment lines that keep idle streams
	// open through proxies. Optional; defaults to 15 s.
	KeepAlive time.Duration
	// Interceptors run around every A2A call (authentication, auditing).
	// Optional.
	Interceptors []a2asrv.CallInterceptor
	// Logger receives errors that are not the client's. Optional;
	// defaults to slog.Default().
	Logger *slog.Logger
}

// Handler serves Sortie runs as A2A tasks: the agent card at [CardPath],
// the JSON-RPC binding at [JSONRPCPath] and the HTTP+JSON binding under
// [RESTPath]. It is an http.Handler; mount it at the host's root for those
// paths.
type Handler struct {
	card    *cardSource
	jsonrpc http.Handler
	rest    http.Handler
	maxBody int64
	drain   context.CancelFunc
}

// New returns a handler that serves the runs of engine, offering agents as
// the card's skills. It returns a [*sortie.ValidationError] when agents is
// empty, holds an invalid manifest, or DefaultAgent names none of them.
// opts may be nil.
func New(engine sortie.ExecutionEngine, agents []sortie.Manifest, opts *Options) (*Handler, error) {
	if engine == nil {
		return nil, errors.New("a2a: New: engine is required")
	}
	o, err := withDefaults(engine, agents, opts)
	if err != nil {
		return nil, err
	}
	rh := newRequestHandler(engine, o)
	var drain context.CancelFunc
	rh.live, drain = context.WithCancel(context.Background())
	ih := &a2asrv.InterceptedHandler{Handler: rh, Interceptors: o.Interceptors, Logger: o.Logger}
	keep := a2asrv.WithTransportKeepAlive(o.KeepAlive)
	return &Handler{
		card:    newCardSource(o, rh.agents, rh.push != nil),
		jsonrpc: a2asrv.NewJSONRPCHandler(ih, keep),
		rest:    http.StripPrefix(RESTPath, a2asrv.NewRESTHandler(ih, keep)),
		maxBody: o.MaxBodyBytes,
		drain:   drain,
	}, nil
}

// Drain ends every live stream (without a final event; clients resume
// with [ResumeAfterParam]) and every blocking SendMessage (which returns
// the task as it is), so a server shutting down is not held open by
// them. Requests after Drain are served as before, with streams ending at
// once. Call it when the HTTP server starts shutting down.
func (h *Handler) Drain() { h.drain() }

// settings are the options with defaults applied and the agents sorted.
type settings struct {
	Options
	agents []sortie.Manifest
}

func withDefaults(engine sortie.ExecutionEngine, agents []sortie.Manifest, opts *Options) (*settings, error) {
	o := &settings{agents: slices.Clone(agents)}
	if opts != nil {
		o.Options = *opts
	}
	if len(agents) == 0 {
		return nil, sortie.Invalidf("agents", "at least one agent is required")
	}
	slices.SortFunc(o.agents, func(a, b sortie.Manifest) int { return cmp.Compare(a.Name, b.Name) })
	for i := range o.agents {
		if err := o.agents[i].Validate(); err != nil {
			return nil, fmt.Errorf("a2a: agent %d: %w", i, err)
		}
	}
	if o.DefaultAgent == "" && len(o.agents) == 1 {
		o.DefaultAgent = o.agents[0].Name
	}
	if o.DefaultAgent != "" && !slices.ContainsFunc(o.agents, func(m sortie.Manifest) bool { return m.Name == o.DefaultAgent }) {
		return nil, sortie.Invalidf("default_agent", "%q is not one of the agents", o.DefaultAgent)
	}
	if o.MaxBodyBytes < 0 || o.MaxBlock < 0 || o.CancelWait < 0 || o.PollInterval < 0 || o.KeepAlive < 0 {
		return nil, sortie.Invalidf("options", "max_body_bytes, max_block, cancel_wait, poll_interval and keep_alive must not be negative")
	}
	if l, ok := engine.(sortie.LocalEngine); ok && o.PushStore == nil {
		o.PushStore = l.ControlPlane()
	}
	o.Name = cmp.Or(o.Name, "Sortie")
	o.Description = cmp.Or(o.Description, "Runs of agents on serverless compute behind a durable control plane; each agent is a skill.")
	o.Version = cmp.Or(o.Version, "1")
	o.MaxBodyBytes = cmp.Or(o.MaxBodyBytes, 1<<20)
	o.MaxBlock = cmp.Or(o.MaxBlock, 60*time.Second)
	o.CancelWait = cmp.Or(o.CancelWait, 5*time.Second)
	o.PollInterval = cmp.Or(o.PollInterval, 200*time.Millisecond)
	o.KeepAlive = cmp.Or(o.KeepAlive, 15*time.Second)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// ServeHTTP routes the card, the JSON-RPC endpoint and the REST binding;
// anything else is 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == CardPath:
		h.card.ServeHTTP(w, r)
	case r.ContentLength > h.maxBody && (r.URL.Path == JSONRPCPath || strings.HasPrefix(r.URL.Path, RESTPath+"/")):
		h.tooLarge(w, r)
	case r.URL.Path == JSONRPCPath:
		if checkRPCBody(w, r, h.maxBody) {
			h.jsonrpc.ServeHTTP(flusher{w}, r)
		}
	case strings.HasPrefix(r.URL.Path, RESTPath+"/"):
		if !checkRESTBody(w, r, h.maxBody) {
			return
		}
		if streamsOnREST(r) {
			p := newPreStream(w)
			h.rest.ServeHTTP(p, r)
			p.decide()
			return
		}
		h.rest.ServeHTTP(flusher{w}, r)
	default:
		http.NotFound(w, r)
	}
}

// tooLarge refuses a body whose declared length is over the limit, before
// reading it: a JSON-RPC invalid-request error, or 413 on the REST binding.
// (A body without a declared length is cut at the limit while it is read:
// the same error from checkRPCBody and checkRESTBody.)
func (h *Handler) tooLarge(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("invalid body: %d bytes, limit %d", r.ContentLength, h.maxBody)
	if r.URL.Path != JSONRPCPath {
		writeRESTError(w, http.StatusRequestEntityTooLarge, msg, "body")
		return
	}
	writeRPCError(w, rpcInvalidRequest, msg, nil)
}

// flusher makes a response writer an http.Flusher, which a2a-go's SSE
// writer asserts, also when middleware wrapped it in a type that only
// offers Unwrap (the flush goes through http.ResponseController).
type flusher struct{ http.ResponseWriter }

func (f flusher) Flush() { _ = http.NewResponseController(f.ResponseWriter).Flush() }

func (f flusher) Unwrap() http.ResponseWriter { return f.ResponseWriter }
