package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
	"github.com/sortie-run/sortie/server"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
	"github.com/sortie-run/sortie/server/callback"
	"github.com/sortie-run/sortie/server/push"
)

// api is a host's server: the HTTP API with A2A and worker callbacks, and
// the push dispatcher.
type api struct {
	server *server.Server
	pushes *push.Dispatcher
}

// openAPI reads the control plane once, then builds the push dispatcher
// and the server.
func (h *Host) openAPI(ctx context.Context) error {
	if err := h.checkControlPlane(ctx); err != nil {
		return err
	}
	tokens, err := h.pushTokenSealer()
	if err != nil {
		return err
	}
	pushes, err := h.pushDispatcher(tokens)
	if err != nil {
		return err
	}
	cfg := h.cfg.API
	poll := defaultFollowPoll
	if h.aws != nil {
		if h.watcher, err = h.streamWatcher(ctx); err != nil {
			return err
		}
		if h.watcher != nil {
			poll = streamFollowPoll
		}
	}
	opts := server.Options{Engine: h.engine, APITokens: cfg.Tokens, AnyClient: cfg.AnyClient, Logger: h.log,
		FollowPoll: cmpOr(cfg.FollowPoll, poll), Pushes: pushes, CheckPushURL: h.cfg.Destinations.Check, UI: cfg.UI,
		Metrics: cfg.Metrics}
	agents := slices.SortedFunc(maps.Values(h.cfg.Agents), func(a, b sortie.Manifest) int { return strings.Compare(a.Name, b.Name) })
	if opts.A2A, err = a2aserver.New(h.engine, agents, &a2aserver.Options{PublicURL: cfg.PublicURL, PushChanged: pushes.Notify,
		CheckPushURL: h.cfg.Destinations.Check, TokenSealer: tokens, BearerAuth: len(cfg.Tokens) > 0, Logger: h.log}); err != nil {
		return err
	}
	if h.keys != nil {
		cbOpts := &callback.HandlerOptions{Logger: h.log}
		if h.aws != nil { // replicas on one table share the replay cache
			cbOpts.Replay = h.aws.ControlPlane.ReplayCache("callback")
		}
		if opts.Callbacks, err = callback.NewHandler(h.cp, h.keys, cbOpts); err != nil {
			return err
		}
	}
	if cfg.TriggerRules != nil {
		router := triggers.NewRouter(cfg.TriggerRules, h.engine, &triggers.Options{Logger: h.log})
		opts.Events = cehttp.NewHandler(router, &cehttp.Options{Logger: h.log})
	}
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	h.api = &api{server: srv, pushes: pushes}
	return nil
}

// checkControlPlane reads the control plane once, so a host that cannot
// reach it (a wrong table, endpoint or credentials) fails at start
// instead of looking healthy.
func (h *Host) checkControlPlane(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := h.engine.List(ctx, sortie.ListQuery{PageSize: 1}); err != nil {
		return fmt.Errorf("host: the control plane cannot be read: %w", err)
	}
	return nil
}

// pushDispatcher delivers push webhooks through the destination policy,
// signed with StateDir's webhook keys.
func (h *Host) pushDispatcher(tokens a2aserver.TokenSealer) (*push.Dispatcher, error) {
	client, err := h.cfg.Destinations.Client()
	if err != nil {
		return nil, sortie.Invalidf("Destinations", "%v", err)
	}
	keys, err := loadWebhookKeys(filepath.Join(h.dir, WebhookKeysFile))
	if err != nil {
		return nil, err
	}
	return push.New(h.cp, h.engine, client, keys, &push.Options{Logger: h.log,
		Formats: a2aserver.PushFormats(), OpenToken: openTokenHint(a2aserver.TokenOpener(tokens))})
}

// openTokenHint names the likely cause when a push token does not open.
func openTokenHint(open func(context.Context, *sortie.PushConfig) (string, error)) func(context.Context, *sortie.PushConfig) (string, error) {
	return func(ctx context.Context, cfg *sortie.PushConfig) (string, error) {
		tok, err := open(ctx, cfg)
		if err != nil {
			return "", fmt.Errorf("%w (push tokens are sealed with the state directory's %s: every host serving this control plane needs the same one)", err, LocalKeyFile)
		}
		return tok, nil
	}
}

// errNoAPI is returned by Serve and Handler of a host without Config.API.
var errNoAPI = errors.New("host: Config.API is not set: this host does not serve")

// Handler returns the host's HTTP API (routes in package server), for
// serving it on a server of one's own; [Host.Serve] serves it with the
// reconciler and webhook delivery. It returns nil without Config.API.
func (h *Host) Handler() http.Handler {
	if h.api == nil {
		return nil
	}
	return h.api.server
}

// Serve serves the API on ln, runs the reconciler and delivers push
// webhooks until ctx ends, then shuts down gracefully: it stops accepting
// connections, ends event streams (clients resume with Last-Event-ID) and
// waits up to API.ShutdownGrace for requests in flight and for the
// deliveries under way. It refuses a listener [API.CheckListen] refuses.
// It returns nil after a clean shutdown, and the server's
// [*server.GraceExceededError] (unwrapped) when the grace ran out with
// requests in flight. It does not close the host.
func (h *Host) Serve(ctx context.Context, ln net.Listener) error {
	if h.api == nil {
		return errNoAPI
	}
	if err := h.cfg.API.CheckListen(ln.Addr().String()); err != nil {
		return err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go h.RunReconciler(rctx)
	go h.api.pushes.Run(rctx)
	if h.watcher != nil {
		go h.watcher.Run(rctx)
	}
	grace := h.cfg.API.ShutdownGrace
	err := h.api.server.Serve(ctx, ln, grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if perr := h.api.pushes.Shutdown(sctx); perr != nil {
		return errors.Join(err, perr)
	}
	return err // a *server.GraceExceededError as the server returned it
}
