package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/launchers/local"
)

// workersCloseGrace bounds how long Close waits for the attempts still on
// warm workers to stop and for the workers to exit.
const workersCloseGrace = 30 * time.Second

// warmLauncher runs attempts on warm worker processes, the default: an
// in-process launcher whose attempts are claimed, heartbeated and reported
// by this host, their go handlers running on a pool of
// `WorkerCommand --session` processes (functions.SessionVersion) reused
// attempt after attempt, and exec runtimes of the session protocol on
// pools of their own. An attempt's logs go to StateDir/logs/RUN-ATTEMPT.log.
// The workers are this host's children: they stop when it closes.
func (h *Host) warmLauncher() (sortie.Launcher, error) {
	w, err := NewWorker(h.cfg)
	if err != nil {
		return nil, err
	}
	h.worker = w
	command, env, err := h.workerProcess()
	if err != nil {
		return nil, err
	}
	spec := functions.ExecSpec{Command: append(command[:len(command):len(command)], "--session"), Env: env}
	pool, err := functions.NewPool(spec, &functions.PoolOptions{Size: h.cfg.WorkerPoolSize,
		RecycleAfter: h.cfg.WorkerRecycleAfter, Logger: h.log})
	if err != nil {
		return nil, err
	}
	if w.Warm == nil {
		w.Warm = map[string]*functions.Pool{}
	}
	w.Warm["go"] = pool
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		return h.runWarm(ctx, w, inv)
	}})
	h.local = l
	return l, err
}

// runWarm executes one attempt with w, logging to the attempt's log file
// (created on the first line): the worker's logs at Config.WorkerLogLevel
// and the warm process's stderr. Its messages are in the control plane.
func (h *Host) runWarm(ctx context.Context, w *functions.Worker, inv *sortie.Invocation) error {
	rep, err := NewReporter(inv, h.cp)
	if err != nil {
		return err
	}
	f := &lazyFile{path: attemptLogPath(h.dir, inv), log: h.log}
	defer f.Close()
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(h.cfg.WorkerLogLevel)) // validated
	wc := *w
	wc.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: lvl}))
	_, err = wc.Execute(ctx, inv, rep)
	return err
}

// attemptLogPath is StateDir/logs/RUN-ATTEMPT.log. The name derives only
// from the validated run ID and attempt.
func attemptLogPath(dir string, inv *sortie.Invocation) string {
	return filepath.Join(dir, LogDir, fmt.Sprintf("%s-%d.log", inv.RunID, inv.Attempt))
}

// lazyFile is an attempt's log file, opened for appending (mode 0600) at
// the first write: an attempt with nothing to log costs no file (creating
// one costs more than the rest of a short attempt's work on the host).
type lazyFile struct {
	path string
	log  *slog.Logger
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		if l.f, l.err = os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); l.err != nil {
			l.log.Warn("open an attempt's log", "err", l.err)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// Close closes the file, if it was opened.
func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// stopWorkers stops the attempts still running on this host's warm
// workers (they end as terminated, retryable) and closes the worker
// pools, within workersCloseGrace.
func (h *Host) stopWorkers() error {
	ctx, cancel := context.WithTimeout(context.Background(), workersCloseGrace)
	defer cancel()
	var err error
	if h.local != nil {
		err = h.local.Shutdown(ctx)
	}
	if h.worker != nil {
		err = errors.Join(err, CloseWorker(ctx, h.worker))
	}
	return err
}

// CloseWorker closes the pools of a worker of [NewWorker] and waits for
// their processes to exit, or ctx to end.
func CloseWorker(ctx context.Context, w *functions.Worker) error {
	var errs []error
	for _, p := range w.Warm {
		errs = append(errs, p.Close(ctx))
	}
	return errors.Join(errs...)
}
