package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/push"
)

// serveFlags are the flags of sortie serve.
type serveFlags struct {
	listen     string
	tokensFile string
	insecure   bool
	grace      time.Duration
	followPoll time.Duration
}

func newServeCmd(g *globals) *cobra.Command {
	s := &serveFlags{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (submit, follow over SSE, cancel, resume, push webhooks) on the embedded engine",
		Long: `serve runs the host: the HTTP API of package server over the embedded engine
(SQLite control plane in --state-dir, local launcher), its reconciler, and push
webhook delivery. Clients use it with "sortie --host URL <command>" or the Go
client's HTTP transport. API tokens come from SORTIE_API_TOKENS (comma-separated)
or --api-tokens-file (one a line); without any, serve listens on loopback only.
SIGINT or SIGTERM shuts down gracefully: requests in flight finish, event streams
end (clients resume with Last-Event-ID).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tokens, err := s.tokens()
			if err != nil {
				return err
			}
			if err := s.checkListen(tokens); err != nil {
				return err
			}
			return g.withHost(func(h *host) error { return serve(cmd.Context(), g, s, h, tokens) })
		},
	}
	f := c.Flags()
	f.StringVar(&s.listen, "listen", envOr("SORTIE_LISTEN", "127.0.0.1:7780"), "address to listen on (env SORTIE_LISTEN)")
	f.StringVar(&s.tokensFile, "api-tokens-file", "", "file of API bearer tokens, one a line (else env SORTIE_API_TOKENS)")
	f.BoolVar(&s.insecure, "insecure-no-auth", false, "allow listening on a non-loopback address without API tokens")
	f.DurationVar(&s.grace, "shutdown-grace", 30*time.Second, "how long a shutdown waits for requests in flight")
	f.DurationVar(&s.followPoll, "follow-poll", 200*time.Millisecond, "how often followed runs are read for changes made by other processes")
	return c
}

// tokens reads the API tokens from the file or SORTIE_API_TOKENS.
func (s *serveFlags) tokens() ([]string, error) {
	raw := os.Getenv("SORTIE_API_TOKENS")
	sep := ","
	if s.tokensFile != "" {
		b, err := readLimited(s.tokensFile, 64<<10)
		if err != nil {
			return nil, usagef("--api-tokens-file: %v", err)
		}
		raw, sep = string(b), "\n"
	}
	var out []string
	for t := range strings.SplitSeq(raw, sep) {
		if t = strings.TrimSpace(t); t != "" {
			if len(t) < 16 {
				return nil, usagef("API token %d is %d bytes; at least 16 are required", len(out)+1, len(t))
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// checkListen refuses an open API on a non-loopback address.
func (s *serveFlags) checkListen(tokens []string) error {
	host, _, err := net.SplitHostPort(s.listen)
	if err != nil {
		return usagef("--listen %q: %v", s.listen, err)
	}
	if len(tokens) > 0 || s.insecure || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return usagef("--listen %s is not a loopback address: set API tokens (SORTIE_API_TOKENS or --api-tokens-file) or pass --insecure-no-auth", s.listen)
}

// serve runs the server, the reconciler and the push dispatcher until ctx
// ends.
func serve(ctx context.Context, g *globals, s *serveFlags, h *host, tokens []string) error {
	if h.engine == nil {
		return usagef("serve: --host names a remote host; serve runs the embedded one")
	}
	pushes, policy, err := g.pushDispatcher(h)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{Engine: h.engine, APITokens: tokens, Logger: h.log, FollowPoll: s.followPoll,
		Pushes: pushes, CheckPushURL: policy.Check})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		return usagef("--listen %s: %v", s.listen, err)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go h.engine.RunReconciler(rctx, g.reconcile)
	go pushes.Run(rctx)
	fmt.Fprintf(os.Stderr, "sortie serve: listening on http://%s (state %s)\n", ln.Addr(), g.stateDir)
	err = srv.Serve(ctx, ln, s.grace)
	sctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	return errors.Join(err, pushes.Shutdown(sctx))
}

// pushDispatcher delivers push webhooks through the destination policy,
// signed with the state directory's webhook keys.
func (g *globals) pushDispatcher(h *host) (*push.Dispatcher, *destination.Policy, error) {
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
	d, err := push.New(h.cp, h.cp, client, keys, &push.Options{Logger: h.log})
	return d, policy, err
}
