package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// shutdownGrace bounds the wait for requests in flight at SIGTERM; Cloud
// Run gives an instance 10 s after SIGTERM.
const shutdownGrace = 5 * time.Second

// serve is service mode: the invocations handler on PORT until ctx ends
// (SIGTERM), then the attempts still running are ended and their outcomes
// stored.
func serve(ctx context.Context, env *fncloudrun.Env, w *functions.Worker, cp sortie.ControlPlane, log *slog.Logger) int {
	verifier := &fncloudrun.IDTokenVerifier{Audience: env.Audience}
	h := &fncloudrun.Handler{Worker: w, ControlPlane: cp, Logger: log, Verifier: verifier}
	mux := http.NewServeMux()
	mux.Handle(fncloudrun.InvocationsPath, h)
	events, closeEvents, err := eventsHandler(ctx, env, cp, verifier, log)
	if err != nil {
		log.Error("sortie-cloudrun: triggers", "err", err)
		return 2
	}
	defer closeEvents()
	if events != nil {
		mux.Handle(fncloudrun.EventsPath, events)
	}
	srv := &http.Server{Addr: net.JoinHostPort("", env.Port), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		log.Error("sortie-cloudrun: serve", "err", err)
		h.Close()
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("sortie-cloudrun: shutdown", "err", err)
	}
	h.Close()
	return 0
}
