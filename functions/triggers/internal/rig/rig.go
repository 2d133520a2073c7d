// Package rig is the test rig of package triggers and its sub-packages:
// a real engine (memory control plane, in-process local launcher, worker
// with the probe agent) whose runs tests wait on and list.
package rig

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
)

// Agents are the agents the rig's engine knows: "probe".
var Agents = sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe",
	Policy: sortie.Policy{HeartbeatMs: 100, LeaseMs: 400, BackoffMs: 1, StartTimeoutMs: 5000}}}

// T is the part of testing.TB the rig uses, so examples can pass their own.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Rig is an engine whose attempts run in this process.
type Rig struct {
	Engine *sortie.Engine
	Client *sortie.Client
	// Log holds what loggers made by [Rig.Logger] wrote.
	Log *Buffer
}

// New starts a rig closed when t ends.
func New(t T) *Rig {
	t.Helper()
	reg := functions.NewRegistry()
	probe.Register(reg)
	cp := memory.New()
	w := &functions.Worker{Registry: reg, Logger: slog.New(slog.DiscardHandler)}
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatalf("local.New = %v", err)
	}
	e := sortie.NewEngine(cp, l, Agents, nil)
	r := &Rig{Engine: e, Client: sortie.NewClient(e, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond}), Log: &Buffer{}}
	t.Cleanup(func() { e.Close(); l.Close(); cp.Close() })
	return r
}

// Logger returns a logger writing text at info and above to r.Log.
func (r *Rig) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(r.Log, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Wait waits until run id is terminal or interrupted.
func (r *Rig) Wait(t T, id sortie.RunID) *sortie.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := r.Client.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", id, err)
	}
	return run
}

// Runs lists every run, newest first.
func (r *Rig) Runs(t T) []*sortie.Run {
	t.Helper()
	page, err := r.Client.List(context.Background(), sortie.ListQuery{PageSize: 1000})
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	return page.Runs
}

// Buffer is a bytes.Buffer safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
