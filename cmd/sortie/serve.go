package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/internal/loopback"
	"github.com/sortie-run/sortie/server"
)

// serveFlags are the flags of sortie serve.
type serveFlags struct {
	listen     string
	tokensFile string
	insecure   bool
	grace      time.Duration
	followPoll time.Duration
	callbacks  bool
	insecureCB bool
	ui         bool
	publicURL  string
	agentDirs  []string
	rulesFile  string
	rules      *triggers.Rules
}

func newServeCmd(g *globals) *cobra.Command {
	s := &serveFlags{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (submit, follow over SSE, cancel, resume, push webhooks) and A2A",
		Long: `serve runs the host: the HTTP API of package server over the engine (the
embedded one: SQLite control plane in --state-dir and local launcher; or, with
--dynamodb-table and --lambda-function, DynamoDB and AWS Lambda; with --cloudrun-job or
--cloudrun-service, attempts run on Cloud Run, sealed with --gcp-kms-keys, and with
--worker-callbacks they report back here, needing no access to the control plane), the A2A binding (agent card
at /.well-known/agent-card.json, JSON-RPC and REST under /a2a), its reconciler, and
push webhook delivery, and the web UI at /ui/ (--ui=false turns it off). Clients use it with "sortie --host URL <command>" or the Go
client's HTTP transport. API tokens come from SORTIE_API_TOKENS (comma-separated)
or --api-tokens-file (one a line); without any, serve listens on loopback only.
With --trigger-rules, CloudEvents POSTed to /v1/events (binary or structured mode,
one event per request, with the API's authentication) start the runs the rules
name, deduplicated on the event's (source, id); the answer lists each outcome.
GET /metrics (the API's authentication) serves the host's OpenTelemetry metrics in the
Prometheus text format. SIGINT, SIGTERM or SIGHUP shuts down gracefully: requests in flight finish, event streams
end (clients resume after their last event); requests still in flight after --shutdown-grace are
cut off with a warning, and serve exits 0.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return s.run(cmd.Context(), g) },
	}
	f := c.Flags()
	f.StringVar(&s.listen, "listen", envOr("SORTIE_LISTEN", "127.0.0.1:7780"), "address to listen on (env SORTIE_LISTEN)")
	f.StringVar(&s.tokensFile, "api-tokens-file", "", "file of API bearer tokens, one a line (else env SORTIE_API_TOKENS)")
	f.BoolVar(&s.insecure, "insecure-no-auth", false, "allow listening on a non-loopback address without API tokens")
	f.DurationVar(&s.grace, "shutdown-grace", 30*time.Second, "how long a shutdown waits for requests in flight")
	f.DurationVar(&s.followPoll, "follow-poll", 0, "how often followed runs are read for changes made by other processes (default 200ms; 5s on a DynamoDB table with a stream, which wakes followers)")
	f.StringArrayVar(&s.agentDirs, "agent", nil, "also host the agent of this directory (holding agent.json); repeatable")
	f.BoolVar(&s.ui, "ui", true, "serve the web UI at /ui/ (a client of this API: the same tokens, or loopback only without them)")
	f.BoolVar(&g.localWorkers, "local-workers", false, "with --dynamodb-table: run attempts on this host's local worker processes (warm ones report through this host; with --process-per-attempt they report over --worker-callbacks, required); each host of a fleet on one table runs its own")
	f.BoolVar(&s.callbacks, "worker-callbacks", false, "workers report over HTTPS callbacks to this host (signed per run and attempt) instead of writing the control plane")
	f.StringVar(&s.publicURL, "public-url", os.Getenv("SORTIE_PUBLIC_URL"), "the URL workers reach this host at, for --worker-callbacks: https, or http on loopback (default http://LISTEN-ADDRESS; env SORTIE_PUBLIC_URL)")
	f.BoolVar(&s.insecureCB, "insecure-http-callbacks", false, "allow a plain-http --public-url off loopback for --worker-callbacks (signed, but events and results cross the network unencrypted)")
	f.StringVar(&s.rulesFile, "trigger-rules", os.Getenv("SORTIE_TRIGGER_RULES"), "take CloudEvents at POST "+server.EventsPath+" (API auth) and start the runs this rules file names (env SORTIE_TRIGGER_RULES; see examples/triggers)")
	return c
}

// run checks the flags, listens, opens the host and serves until ctx ends.
func (s *serveFlags) run(ctx context.Context, g *globals) error {
	api, err := s.api(ctx, g)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		return usagef("--listen %s: %v", s.listen, err)
	}
	defer ln.Close()
	if s.callbacks && s.publicURL == "" {
		api.CallbackURL = "http://" + ln.Addr().String()
	}
	extra, err := s.agents()
	if err != nil {
		return err
	}
	g.api, g.agentDirs = api, s.agentDirs
	t, err := g.openHost(extra...)
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintf(os.Stderr, "sortie serve: listening on http://%s (%s)\n", ln.Addr(), g.backend())
	if s.ui {
		fmt.Fprintf(os.Stderr, "sortie serve: web UI at http://%s/ui/\n", ln.Addr())
	}
	s.announce(t.h, api.Tokens)
	defer fmt.Fprintln(os.Stderr, "sortie serve: stopped")
	return stopped(t.h.Serve(ctx, ln))
}

// stopped is serve's result for the error Serve returned: a stop whose
// grace ran out is a stop (nil) after a warning saying what it cut off.
func stopped(err error) error {
	var ge *server.GraceExceededError
	if !errors.As(err, &ge) { // the host joins it with other close errors
		return err
	}
	what := fmt.Sprintf("%d connection(s) with a request in flight closed", ge.Requests)
	if ge.Launches {
		what += "; launches not yet handed to the launcher are left to the reconciler"
	}
	fmt.Fprintf(os.Stderr, "sortie serve: warning: the shutdown grace (--shutdown-grace %v) ran out: %s\n", ge.Grace, what)
	return nil
}

// api checks the flags before anything listens and returns the host's
// API configuration.
func (s *serveFlags) api(ctx context.Context, g *globals) (*host.API, error) {
	switch {
	case s.grace < 0:
		return nil, usagef("--shutdown-grace %v: must not be negative (0 stops without waiting for requests in flight)", s.grace)
	case s.followPoll < 0:
		return nil, usagef("--follow-poll %v: must not be negative (0: the default)", s.followPoll)
	}
	tokens, err := s.tokens()
	if err != nil {
		return nil, err
	}
	api := &host.API{Tokens: tokens, AnyClient: s.insecure, PublicURL: s.publicURL, WorkerCallbacks: s.callbacks,
		InsecureHTTPCallbacks: s.insecureCB, FollowPoll: s.followPoll, ShutdownGrace: s.grace, UI: s.ui,
		Metrics: metricsHandler(ctx)}
	if _, _, err := net.SplitHostPort(s.listen); err != nil || strings.ContainsAny(s.listen, "@/?#") {
		// Not quoted: a URL given here may carry user info.
		return nil, usagef("--listen: the listen address must be HOST:PORT, such as 127.0.0.1:7780 (not a URL)")
	}
	if api.CheckListen(s.listen) != nil {
		return nil, usagef("--listen %s is not a loopback address: set API tokens (SORTIE_API_TOKENS or --api-tokens-file) or pass --insecure-no-auth", s.listen)
	}
	if g.hostURL != "" {
		return nil, usagef("serve: --host names a remote host; serve runs the embedded one")
	}
	if s.rulesFile != "" {
		if s.rules, err = loadTriggerRules(s.rulesFile); err != nil {
			return nil, err
		}
		api.TriggerRules = s.rules
	}
	return api, nil
}

// tokens reads the API tokens from the file (one a line; blank lines and
// lines starting with # skipped) or SORTIE_API_TOKENS (comma-separated).
// A file or variable that is given but holds no token is an error, not
// an open API: an unpopulated secret mount must not turn auth off.
func (s *serveFlags) tokens() ([]string, error) {
	raw, set := os.LookupEnv("SORTIE_API_TOKENS")
	sep, source := ",", "SORTIE_API_TOKENS"
	if s.tokensFile != "" {
		b, err := readLimited(s.tokensFile, 64<<10)
		if err != nil {
			return nil, usagef("--api-tokens-file: %v", err)
		}
		raw, set, sep, source = string(b), true, "\n", "--api-tokens-file "+s.tokensFile
	}
	var out []string
	for t := range strings.SplitSeq(raw, sep) {
		if t = strings.TrimSpace(t); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(t) < 16 {
			return nil, usagef("%s: API token %d is %d bytes; at least 16 are required", source, len(out)+1, len(t))
		}
		if strings.Contains(t, ",") {
			return nil, usagef("%s: API token %d holds a comma; tokens are one a line (commas separate them only in SORTIE_API_TOKENS)", source, len(out)+1)
		}
		out = append(out, t)
	}
	if set && len(out) == 0 {
		return nil, usagef("%s holds no API token: fill it, or unset it to serve without tokens on loopback", source)
	}
	return out, nil
}

// announce says how the host authenticates and where workers call back,
// warning about plain HTTP off loopback.
func (s *serveFlags) announce(h *host.Host, tokens []string) {
	auth := "none (loopback only)"
	switch {
	case len(tokens) > 0:
		auth = fmt.Sprintf("%d API token(s) from %s", len(tokens), s.tokenSource())
	case s.insecure:
		auth = "NONE on a non-loopback address (--insecure-no-auth)"
	}
	fmt.Fprintf(os.Stderr, "sortie serve: client API auth: %s; serve is plain HTTP: put TLS in front of it off loopback\n", auth)
	if s.rules != nil {
		fmt.Fprintf(os.Stderr, "sortie serve: CloudEvents at POST %s start runs by %d rule(s) of %s\n", server.EventsPath, s.rules.Len(), s.rulesFile)
	}
	base := h.CallbackURL()
	if base == "" {
		return
	}
	if u, _ := url.Parse(base); u != nil && u.Scheme == "http" && !loopback.URL(base) {
		fmt.Fprintf(os.Stderr, "sortie serve: warning: callbacks to %s are plain HTTP off loopback (--insecure-http-callbacks): signed, but their bodies cross the network unencrypted\n", base)
	}
	fmt.Fprintf(os.Stderr, "sortie serve: workers report over callbacks to %s\n", base)
}

func (s *serveFlags) tokenSource() string {
	if s.tokensFile != "" {
		return s.tokensFile
	}
	return "SORTIE_API_TOKENS"
}

// backend names where runs are kept and attempts run, for the start line.
func (g *globals) backend() string {
	cp, launcher := "SQLite state in "+g.stateDir, "local launcher"
	if g.aws.table != "" {
		cp, launcher = fmt.Sprintf("DynamoDB table %s, keys in %s", g.aws.table, g.stateDir), "Lambda function "+g.aws.function
	}
	switch {
	case g.gcp.job != "":
		launcher = "Cloud Run Job " + g.gcp.job
	case g.gcp.service != "":
		launcher = "Cloud Run service " + g.gcp.service
	}
	return cp + ", " + launcher
}

// agents loads the --agent directories' manifests (the host refuses an
// exec agent the --runtimes allowlist does not name).
func (s *serveFlags) agents() ([]sortie.Manifest, error) {
	var out []sortie.Manifest
	for _, dir := range s.agentDirs {
		m, err := loadManifest(filepath.Join(dir, "agent.json"))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// metricsKey is the context key of the /metrics handler that execute
// makes for serve (the Prometheus reader must be registered when the
// meter provider is made, before the command runs).
type metricsKey struct{}

func withMetricsHandler(ctx context.Context, h http.Handler) context.Context {
	return context.WithValue(ctx, metricsKey{}, h)
}

// metricsHandler returns the /metrics handler of ctx, or nil.
func metricsHandler(ctx context.Context) http.Handler {
	h, _ := ctx.Value(metricsKey{}).(http.Handler)
	return h
}
