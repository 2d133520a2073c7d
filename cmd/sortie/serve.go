package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
	"github.com/sortie-run/sortie/internal/loopback"
	"github.com/sortie-run/sortie/server"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
	"github.com/sortie-run/sortie/server/callback"
	"github.com/sortie-run/sortie/server/push"
)

// serveFlags are the flags of sortie serve.
type serveFlags struct {
	listen     string
	tokensFile string
	insecure   bool
	grace      time.Duration
	followPoll time.Duration
	callbacks  bool
	publicURL  string
	agentDirs  []string
	rulesFile  string
	rules      *triggers.Rules
	keyring    *callback.Keyring
	tokenList  []string
}

func newServeCmd(g *globals) *cobra.Command {
	s := &serveFlags{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (submit, follow over SSE, cancel, resume, push webhooks) and A2A",
		Long: `serve runs the host: the HTTP API of package server over the engine (the
embedded one: SQLite control plane in --state-dir and local launcher; or, with
--dynamodb-table and --lambda-function, DynamoDB and AWS Lambda), the A2A binding (agent card
at /.well-known/agent-card.json, JSON-RPC and REST under /a2a), its reconciler, and
push webhook delivery. Clients use it with "sortie --host URL <command>" or the Go
client's HTTP transport. API tokens come from SORTIE_API_TOKENS (comma-separated)
or --api-tokens-file (one a line); without any, serve listens on loopback only.
With --trigger-rules, CloudEvents POSTed to /v1/events (binary or structured mode,
one event per request, with the API's authentication) start the runs the rules
name, deduplicated on the event's (source, id); the answer lists each outcome.
SIGINT, SIGTERM or SIGHUP shuts down gracefully: requests in flight finish, event streams
end (clients resume with Last-Event-ID).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return s.run(cmd.Context(), g) },
	}
	f := c.Flags()
	f.StringVar(&s.listen, "listen", envOr("SORTIE_LISTEN", "127.0.0.1:7780"), "address to listen on (env SORTIE_LISTEN)")
	f.StringVar(&s.tokensFile, "api-tokens-file", "", "file of API bearer tokens, one a line (else env SORTIE_API_TOKENS)")
	f.BoolVar(&s.insecure, "insecure-no-auth", false, "allow listening on a non-loopback address without API tokens")
	f.DurationVar(&s.grace, "shutdown-grace", 30*time.Second, "how long a shutdown waits for requests in flight")
	f.DurationVar(&s.followPoll, "follow-poll", 200*time.Millisecond, "how often followed runs are read for changes made by other processes")
	f.StringArrayVar(&s.agentDirs, "agent", nil, "also host the agent of this directory (holding agent.json); repeatable")
	f.BoolVar(&s.callbacks, "worker-callbacks", false, "workers report over HTTPS callbacks to this host (signed per run and attempt) instead of writing the control plane")
	f.StringVar(&s.publicURL, "public-url", os.Getenv("SORTIE_PUBLIC_URL"), "the URL workers reach this host at, for --worker-callbacks (default http://LISTEN-ADDRESS; env SORTIE_PUBLIC_URL)")
	f.StringVar(&s.rulesFile, "trigger-rules", os.Getenv("SORTIE_TRIGGER_RULES"), "take CloudEvents at POST "+server.EventsPath+" (API auth) and start the runs this rules file names (env SORTIE_TRIGGER_RULES; see examples/triggers)")
	return c
}

// run checks the flags, listens, opens the host and serves until ctx ends.
func (s *serveFlags) run(ctx context.Context, g *globals) error {
	tokens, err := s.tokens()
	if err != nil {
		return err
	}
	s.tokenList = tokens
	if err := s.checkListen(tokens); err != nil {
		return err
	}
	if g.hostURL != "" {
		return usagef("serve: --host names a remote host; serve runs the embedded one")
	}
	if s.rulesFile != "" {
		if s.rules, err = loadTriggerRules(s.rulesFile); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		return usagef("--listen %s: %v", s.listen, err)
	}
	defer ln.Close()
	if err := s.setupCallbacks(g, ln); err != nil {
		return err
	}
	extra, err := s.agents(g)
	if err != nil {
		return err
	}
	h, err := g.openHost(extra...)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := checkControlPlane(ctx, h); err != nil {
		return err
	}
	return serve(ctx, g, s, h, tokens, ln)
}

// checkControlPlane reads the control plane once before serving, so a
// host that cannot reach it (a wrong table, endpoint or credentials)
// fails at start instead of looking healthy.
func checkControlPlane(ctx context.Context, h *host) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := h.engine.List(ctx, sortie.ListQuery{PageSize: 1}); err != nil {
		return fmt.Errorf("serve: the control plane cannot be read: %w", err)
	}
	return nil
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
		out = append(out, t)
	}
	if set && len(out) == 0 {
		return nil, usagef("%s holds no API token: fill it, or unset it to serve without tokens on loopback", source)
	}
	return out, nil
}

// checkListen refuses an open API on a non-loopback address.
func (s *serveFlags) checkListen(tokens []string) error {
	host, _, err := net.SplitHostPort(s.listen)
	if err != nil {
		return usagef("--listen %q: %v", s.listen, err)
	}
	if len(tokens) > 0 || s.insecure || loopback.Host(host) {
		return nil
	}
	return usagef("--listen %s is not a loopback address: set API tokens (SORTIE_API_TOKENS or --api-tokens-file) or pass --insecure-no-auth", s.listen)
}

// serve runs the server, the reconciler and the push dispatcher until ctx
// ends.
func serve(ctx context.Context, g *globals, s *serveFlags, h *host, tokens []string, ln net.Listener) error {
	sealer, err := g.pushTokenSealer()
	if err != nil {
		return err
	}
	pushes, policy, err := g.pushDispatcher(h, sealer)
	if err != nil {
		return err
	}
	opts := server.Options{Engine: h.engine, APITokens: tokens, AnyClient: s.insecure, Logger: h.log, FollowPoll: s.followPoll,
		Pushes: pushes, CheckPushURL: policy.Check, Events: s.events(h)}
	agents := slices.SortedFunc(maps.Values(h.agents), func(a, b sortie.Manifest) int { return strings.Compare(a.Name, b.Name) })
	if opts.A2A, err = a2aserver.New(h.engine, agents, &a2aserver.Options{
		PublicURL: s.publicURL, PushChanged: pushes.Notify, CheckPushURL: policy.Check, TokenSealer: sealer, BearerAuth: len(tokens) > 0, Logger: h.log}); err != nil {
		return err
	}
	if s.keyring != nil {
		if opts.Callbacks, err = callback.NewHandler(h.cp, s.keyring, &callback.HandlerOptions{Logger: h.log}); err != nil {
			return err
		}
	}
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go h.engine.RunReconciler(rctx, g.reconcile)
	go pushes.Run(rctx)
	fmt.Fprintf(os.Stderr, "sortie serve: listening on http://%s (%s)\n", ln.Addr(), g.backend())
	s.announce(g)
	err = srv.Serve(ctx, ln, s.grace)
	defer fmt.Fprintln(os.Stderr, "sortie serve: stopped")
	sctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	return errors.Join(err, pushes.Shutdown(sctx))
}

// announce says how the host authenticates and where workers call back,
// warning about plain HTTP off loopback.
func (s *serveFlags) announce(g *globals) {
	auth := "none (loopback only)"
	switch {
	case len(s.tokenList) > 0:
		auth = fmt.Sprintf("%d API token(s) from %s", len(s.tokenList), s.tokenSource())
	case s.insecure:
		auth = "NONE on a non-loopback address (--insecure-no-auth)"
	}
	fmt.Fprintf(os.Stderr, "sortie serve: client API auth: %s; serve is plain HTTP: put TLS in front of it off loopback\n", auth)
	if s.rules != nil {
		fmt.Fprintf(os.Stderr, "sortie serve: CloudEvents at POST %s start runs by %d rule(s) of %s\n", server.EventsPath, s.rules.Len(), s.rulesFile)
	}
	if g.issuer != nil {
		fmt.Fprintf(os.Stderr, "sortie serve: workers report over callbacks to %s\n", callbackBase(s, g))
	}
}

// events is the CloudEvents handler of --trigger-rules, or nil.
func (s *serveFlags) events(h *host) http.Handler {
	if s.rules == nil {
		return nil
	}
	router := triggers.NewRouter(s.rules, h.engine, &triggers.Options{Logger: h.log})
	return cehttp.NewHandler(router, &cehttp.Options{Logger: h.log})
}

func (s *serveFlags) tokenSource() string {
	if s.tokensFile != "" {
		return s.tokensFile
	}
	return "SORTIE_API_TOKENS"
}

func callbackBase(s *serveFlags, g *globals) string {
	if i, ok := g.issuer.(*callback.Issuer); ok {
		return i.URL()
	}
	return s.publicURL
}

// backend names where runs are kept and attempts run, for the start line.
func (g *globals) backend() string {
	if g.aws.table != "" {
		return fmt.Sprintf("DynamoDB table %s, Lambda function %s, keys in %s", g.aws.table, g.aws.function, g.stateDir)
	}
	return "SQLite state in " + g.stateDir + ", local launcher"
}

// agents loads the --agent directories' manifests, refusing an exec
// agent the --runtimes allowlist does not name.
func (s *serveFlags) agents(g *globals) ([]sortie.Manifest, error) {
	var out []sortie.Manifest
	for _, dir := range s.agentDirs {
		m, err := loadManifest(filepath.Join(dir, "agent.json"))
		if err != nil {
			return nil, err
		}
		if err := g.checkRuntime(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// setupCallbacks loads (or creates, mode 0600) the state directory's
// callback keys and has the engine issue callback reports to the public URL.
func (s *serveFlags) setupCallbacks(g *globals, ln net.Listener) error {
	if !s.callbacks {
		return nil
	}
	dir, err := g.absStateDir()
	if err != nil {
		return err
	}
	if s.keyring, err = callbackKeys(filepath.Join(dir, "callback-keys")); err != nil {
		return err
	}
	base := s.publicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	if g.aws.function != "" && loopback.URL(base) {
		return usagef("--worker-callbacks with --lambda-function: workers on Lambda cannot reach %s; set --public-url (or SORTIE_PUBLIC_URL) to this host's address as the function sees it", base)
	}
	iss, err := callback.NewIssuer(s.keyring, base, nil)
	if err != nil {
		return usagef("--public-url %q: must be an absolute http(s) URL without query", base)
	}
	if u, _ := url.Parse(base); u != nil && u.Scheme == "http" && !loopback.URL(base) {
		fmt.Fprintf(os.Stderr, "sortie serve: warning: --public-url %s is plain HTTP off loopback; callbacks are signed but their bodies cross the network unencrypted: use https\n", base)
	}
	g.issuer = iss
	return nil
}

// callbackKeys loads the keyring file, creating it with one fresh key.
func callbackKeys(path string) (*callback.Keyring, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, kerr := callback.NewKey("c1")
		if kerr != nil {
			return nil, kerr
		}
		b = []byte(k.Encode() + "\n")
		if err = os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("create callback keys %s: %w", path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("read callback keys: %w", err)
	}
	kr, err := callback.ParseKeyring(string(b))
	if err != nil {
		return nil, usagef("callback keys %s: %v", filepath.Base(path), err)
	}
	return kr, nil
}

// pushDispatcher delivers push webhooks through the destination policy,
// signed with the state directory's webhook keys.
func (g *globals) pushDispatcher(h *host, tokens a2aserver.TokenSealer) (*push.Dispatcher, *destination.Policy, error) {
	policy, err := g.dest.policy()
	if err != nil {
		return nil, nil, err
	}
	client, err := policy.Client()
	if err != nil {
		return nil, nil, err
	}
	dir, err := g.absStateDir()
	if err != nil {
		return nil, nil, err
	}
	keys, err := webhookKeys(filepath.Join(dir, "webhook-keys.json"))
	if err != nil {
		return nil, nil, err
	}
	d, err := push.New(h.cp, h.cp, client, keys, &push.Options{Logger: h.log,
		Formats: a2aserver.PushFormats(), OpenToken: openTokenHint(a2aserver.TokenOpener(tokens))})
	return d, policy, err
}

// openTokenHint names the likely cause when a push token does not open.
func openTokenHint(open func(context.Context, *sortie.PushConfig) (string, error)) func(context.Context, *sortie.PushConfig) (string, error) {
	return func(ctx context.Context, cfg *sortie.PushConfig) (string, error) {
		tok, err := open(ctx, cfg)
		if err != nil {
			return "", fmt.Errorf("%w (push tokens are sealed with the state directory's local.key: every host serving this control plane needs the same one)", err)
		}
		return tok, nil
	}
}

// pushTokenSealer seals A2A push tokens with the state directory's local
// key (local.key, 0600; a mounted secret shared by every replica in
// production), bound to the run and configuration.
func (g *globals) pushTokenSealer() (a2aserver.TokenSealer, error) {
	dir, err := g.absStateDir()
	if err != nil {
		return nil, err
	}
	kek, _, err := localkey.LoadOrCreate(filepath.Join(dir, localKeyFile))
	if err != nil {
		return nil, fmt.Errorf("push tokens: %w", err)
	}
	ring, err := envelope.NewKeyring(localKeyID, kek)
	if err != nil {
		return nil, fmt.Errorf("push tokens: %w", err)
	}
	return a2aserver.EnvelopeSealer(envelope.New(ring, nil)), nil
}
