package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/loopback"
	"github.com/sortie-run/sortie/server/ui"
	"github.com/sortie-run/sortie/wire"
)

// Options configures a [Server]. Engine is required; the rest is optional.
type Options struct {
	// Engine runs the submissions. Required.
	Engine *sortie.Engine
	// APITokens are the bearer tokens the client API accepts
	// ("Authorization: Bearer <token>"), each at least 16 bytes. Optional;
	// without any the client API is open, which `sortie serve` allows on
	// loopback addresses only. Worker callbacks authenticate on their own.
	APITokens []string
	// AnyClient turns off the loopback-only checks of a server without API
	// tokens (`sortie serve --insecure-no-auth`): any Host and Origin are
	// served. Optional; defaults to false.
	AnyClient bool
	// Callbacks serves the worker callback routes under /v1/worker/.
	// Optional; without it those routes answer 404.
	Callbacks http.Handler
	// A2A serves the A2A binding: the agent card at
	// /.well-known/agent-card.json and the JSON-RPC endpoint at /a2a (REST
	// under /a2a/). When it is a [Drainer], Drain is called at shutdown.
	// Optional.
	A2A http.Handler
	// Events takes CloudEvents POSTed to /v1/events, behind the client
	// API's authentication (bearer tokens, or loopback-only without them):
	// `sortie serve --trigger-rules` mounts functions/triggers/cehttp's
	// handler, which routes each event through the host's trigger rules.
	// Optional; without it the route answers 404.
	Events http.Handler
	// Metrics serves GET /metrics (the Prometheus text format of
	// host.NewPrometheus) behind the client API's authentication.
	// Optional; without it the route answers 404.
	Metrics http.Handler
	// UI serves the web UI (package server/ui) at /ui/, calling this API
	// as a client would: a session cookie exchanged for an API token, CSRF
	// tokens on every change, the loopback rule of a host without tokens.
	// Optional; defaults to false.
	UI bool
	// Pushes is told about each change of a run's push configurations and
	// of runs, so it delivers webhooks. When it is also [PushKeys], a push
	// configuration naming a key it does not sign with is refused.
	// Optional.
	Pushes Notifiable
	// CheckPushURL refuses push configuration URLs the destination policy
	// would refuse, so the client learns it when setting one. Optional.
	CheckPushURL func(rawURL string) error
	// FollowPoll is how often a followed run is read when no in-process
	// notification arrives (changes written by workers in other processes
	// or on Lambda). Optional; defaults to 200 ms.
	FollowPoll time.Duration
	// KeepAlive is the interval of SSE comment lines that keep idle
	// streams open through proxies. Optional; defaults to 15 s.
	KeepAlive time.Duration
	// MaxWait caps a long poll's wait_ms. Optional; defaults to 30 s.
	MaxWait time.Duration
	// MaxSubmits bounds the submissions in flight at once; one more is
	// answered 429 throttled with Retry-After at once, so a burst beyond
	// what the control plane takes is shed instead of queued. Optional;
	// defaults to 256.
	MaxSubmits int
	// Logger receives request and error logs. Optional; defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Drainer is an optional interface of [Options.A2A]: Drain ends its live
// streams and long polls at shutdown, as the server ends its own. The A2A
// handler (server/a2a) implements it.
type Drainer interface {
	Drain()
}

// EventsPath is where a host takes CloudEvents ([Options.Events]).
const EventsPath = "/v1/events"

// Notifiable is told when a run or its push configurations change; the
// push dispatcher implements it.
type Notifiable interface {
	Notify(id sortie.RunID)
}

// Server is the host's HTTP API over one [sortie.Engine]. It is an
// http.Handler; [Server.Serve] adds graceful shutdown.
type Server struct {
	eng     *sortie.Engine
	opts    Options
	log     *slog.Logger
	schemas schemas
	tokens  [][sha256.Size]byte
	hub     *hub
	handler http.Handler
	submits chan struct{} // one token per submission in flight

	drainOnce sync.Once
	draining  chan struct{}
}

// New returns a server; it fails for a missing engine or a short API token.
func New(opts Options) (*Server, error) {
	if opts.Engine == nil {
		return nil, errors.New("server: Options.Engine is required")
	}
	sch, err := compileSchemas()
	if err != nil {
		return nil, err
	}
	s := &Server{eng: opts.Engine, opts: opts, log: opts.Logger, schemas: sch, draining: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	for i, t := range opts.APITokens {
		if len(t) < 16 {
			return nil, fmt.Errorf("server: API token %d is %d bytes, at least 16 required", i+1, len(t))
		}
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	s.opts.FollowPoll = orDefault(opts.FollowPoll, 200*time.Millisecond)
	s.opts.KeepAlive = orDefault(opts.KeepAlive, 15*time.Second)
	s.opts.MaxWait = orDefault(opts.MaxWait, 30*time.Second)
	if s.opts.MaxSubmits <= 0 {
		s.opts.MaxSubmits = 256
	}
	s.submits = make(chan struct{}, s.opts.MaxSubmits)
	s.hub = newHub(opts.Engine, s.opts.FollowPoll, s.log)
	s.handler = otelhttp.NewHandler(s.logRequests(s.routes()), "sortie.http",
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(spanName))
	return s, nil
}

// spanName names a request's server span by its route pattern
// ("POST /v1/runs"), never by its path (which holds IDs).
func spanName(_ string, r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return r.Method
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// api registers a client route taking only the query parameters named.
	api := func(pattern string, h http.HandlerFunc, params ...string) {
		mux.Handle(pattern, s.authenticate(func(w http.ResponseWriter, r *http.Request) {
			if err := checkQuery(r, params...); err != nil {
				s.writeError(w, r, err)
				return
			}
			h(w, r)
		}))
	}
	api("POST /v1/runs", s.submit)
	api("GET /v1/runs", s.list, "agent", "state", "context_id", "page_size", "page_token")
	api("GET /v1/runs/{id}", s.get, "wait_ms")
	api("GET /v1/runs/{id}/events", s.events, "after", "limit", "wait_ms")
	api("POST /v1/runs/{id}/cancel", s.cancel)
	api("DELETE /v1/runs/{id}", s.deleteRun)
	api("POST /v1/runs/{id}/resume", s.resume)
	api("GET /v1/runs/{id}/push-configs", s.listPush)
	api("PUT /v1/runs/{id}/push-configs/{cid}", s.putPush)
	api("GET /v1/runs/{id}/push-configs/{cid}", s.getPush)
	api("DELETE /v1/runs/{id}/push-configs/{cid}", s.deletePush)
	api("GET /v1/agents", s.listAgents)
	api("GET /v1/agents/{name}", s.describeAgent)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	if s.opts.Events != nil {
		api("POST "+EventsPath, s.opts.Events.ServeHTTP)
	}
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", s.authenticate(s.opts.Metrics.ServeHTTP))
	}
	if s.opts.Callbacks != nil {
		mux.Handle("/v1/worker/", s.opts.Callbacks)
	}
	if s.opts.A2A != nil {
		mux.Handle("GET /.well-known/agent-card.json", s.opts.A2A)
		mux.Handle("/a2a", s.authenticate(s.opts.A2A.ServeHTTP))
		mux.Handle("/a2a/", s.authenticate(s.opts.A2A.ServeHTTP))
	}
	if s.opts.UI {
		s.mountUI(mux)
	}
	mux.HandleFunc("/", noRoute(mux, "/"))
	return s.onceHeaders(canonicalPaths(mux))
}

// mountUI serves the web UI at /ui/ over mux's API routes. /ui redirects
// relatively, so the UI also works under a prefix (http.StripPrefix).
func (s *Server) mountUI(mux *http.ServeMux) {
	h := ui.New(mux, &ui.Options{LoopbackOnly: len(s.tokens) == 0 && !s.opts.AnyClient, Logger: s.log})
	mux.Handle("/ui/", http.StripPrefix("/ui", h))
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", "ui/")
		w.WriteHeader(http.StatusMovedPermanently)
	})
}

// authenticate checks the bearer token when the server has any. Without
// tokens (a loopback development host) it refuses what only a web page
// would send: a Host that is not a loopback name (DNS rebinding) and a
// cross-site Origin, so a browser cannot drive the host.
func (s *Server) authenticate(h http.HandlerFunc) http.Handler {
	if len(s.tokens) == 0 && s.opts.AnyClient {
		return h
	}
	if len(s.tokens) == 0 {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !loopback.Request(r) {
				writeJSON(w, http.StatusForbidden, errorBody(wire.CodeUnauthenticated,
					"a host without API tokens serves loopback clients only (Host and Origin must be loopback)", ""))
				return
			}
			h(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(tok))
		match := 0
		for i := range s.tokens {
			match |= subtle.ConstantTimeCompare(sum[:], s.tokens[i][:])
		}
		if !strings.EqualFold(scheme, "Bearer") || match != 1 { // auth schemes are case-insensitive (RFC 9110)
			w.Header().Set("WWW-Authenticate", `Bearer realm="sortie"`)
			writeJSON(w, http.StatusUnauthorized, errorBody(wire.CodeUnauthenticated, "a valid bearer token is required", ""))
			return
		}
		h(w, r)
	})
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting connections, ends live event streams (clients resume with
// Last-Event-ID), waits up to grace for requests in flight to finish and
// for the launches they began to be handed to the launcher. It returns
// nil after a clean shutdown, and a [*GraceExceededError] (unwrapped)
// when the grace ran out, after closing the connections still busy.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	var conns activeConns
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn), ConnState: conns.track}
	hs.RegisterOnShutdown(s.drain)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	s.drain()
	var cut *GraceExceededError
	if errors.Is(err, context.DeadlineExceeded) {
		cut = &GraceExceededError{Grace: grace, Requests: conns.count()}
		hs.Close() // cuts the connections still busy (the listener is closed)
		err = nil
	}
	if werr := s.eng.WaitLaunches(sctx); errors.Is(werr, context.DeadlineExceeded) {
		cut = cmp.Or(cut, &GraceExceededError{Grace: grace, Requests: conns.count()})
		cut.Launches = true
	} else if err == nil {
		err = werr
	}
	switch {
	case err != nil:
		return fmt.Errorf("server: shutdown: %w", err)
	case cut != nil:
		return cut
	}
	return nil
}

// drain ends live streams and long polls, including the A2A handler's
// when it has a Drain method.
func (s *Server) drain() {
	s.drainOnce.Do(func() {
		close(s.draining)
		if d, ok := s.opts.A2A.(Drainer); ok {
			d.Drain()
		}
	})
}
