package main

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/server/ui"
)

//go:embed page
var page embed.FS

// example is the page and the two hosts behind it, each with its API and
// web UI under its own prefix of one loopback listener.
type example struct {
	embedded, remote *host.Host
	mux              *http.ServeMux
	stop             context.CancelFunc
}

// start builds the two hosts over state directories under dir:
//
//   - embedded: attempts run inside this process (the in-process local
//     launcher) and report to the control plane directly;
//   - remote: each attempt runs in a separate worker process (worker, the
//     command of the remote path's worker) that reports over HTTP
//     callbacks to /remote/v1/worker/, signed per run and attempt.
//
// Both serve loopback clients only (no API tokens) and run their
// reconcilers until Close.
func start(ctx context.Context, ln net.Listener, dir string, worker []string) (*example, error) {
	base := "http://" + ln.Addr().String()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	api := &host.API{UI: true}
	if err := api.CheckListen(ln.Addr().String()); err != nil {
		return nil, err
	}
	embedded, err := host.New(ctx, host.Config{StateDir: filepath.Join(dir, "embedded"), InProcess: true, API: api, Logger: log})
	if err != nil {
		return nil, err
	}
	remote, err := host.New(ctx, host.Config{StateDir: filepath.Join(dir, "remote"), WorkerCommand: worker, ProcessPerAttempt: true, Logger: log,
		API: &host.API{UI: true, WorkerCallbacks: true, CallbackURL: base + "/remote"}})
	if err != nil {
		embedded.Close()
		return nil, err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go embedded.RunReconciler(rctx)
	go remote.RunReconciler(rctx)
	ex := &example{embedded: embedded, remote: remote, stop: stop, mux: http.NewServeMux()}
	static, _ := fs.Sub(page, "page") // embedded above
	ex.mux.Handle("/embedded/", http.StripPrefix("/embedded", embedded.Handler()))
	ex.mux.Handle("/remote/", http.StripPrefix("/remote", remote.Handler()))
	ex.mux.Handle("GET /{file}", http.FileServerFS(static))
	ex.mux.Handle("GET /{$}", http.FileServerFS(static))
	return ex, nil
}

// ServeHTTP serves the page with the web UI's security headers, and each
// host under its prefix.
func (ex *example) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", ui.ContentSecurityPolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	ex.mux.ServeHTTP(w, r)
}

// Close stops the reconcilers and closes both hosts.
func (ex *example) Close() error {
	ex.stop()
	return errors.Join(ex.remote.Close(), ex.embedded.Close())
}

// runWorker is the remote path's worker process: it reads one invocation
// on stdin, runs it with the built-in agents and reports over the
// callbacks the invocation names (it opens no control plane).
func runWorker(ctx context.Context) error {
	w, err := host.NewWorker(host.Config{StateDir: os.Getenv(host.EnvStateDir)})
	if err != nil {
		return err
	}
	_, err = w.ServeStdio(ctx, os.Stdin, os.Stdout, func(inv *sortie.Invocation) (functions.Reporter, error) {
		return host.NewReporter(inv, nil)
	})
	return err
}
