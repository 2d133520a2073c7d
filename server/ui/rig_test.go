package ui_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/pricing"
	"github.com/sortie-run/sortie/server"
)

// rig is a real host on a loopback port: the HTTP API with the UI over an
// SQLite control plane and the in-process local launcher running the
// probe agent.
type rig struct {
	cp     *sqlite.ControlPlane
	engine *sortie.Engine
	http   *httptest.Server
	// ui is the UI's URL, http://127.0.0.1:PORT/ui/.
	ui string
}

var probeAgent = sortie.Manifest{Name: "probe", Version: "1", Runtime: "go:probe",
	Policy: sortie.Policy{HeartbeatMs: 200, LeaseMs: 2000, BackoffMs: 1, StartTimeoutMs: 5000}}

// newRig starts a host; with tokens its API (and so the UI) needs one.
func newRig(t testing.TB, tokens ...string) *rig {
	t.Helper()
	cp, err := sqlite.Open(filepath.Join(t.TempDir(), "sortie.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg, Logger: slog.New(slog.DiscardHandler)}
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatalf("local.New = %v", err)
	}
	prices, err := pricing.Default().Set("local.second", "1") // $1 a second: runs cost something to show
	if err != nil {
		t.Fatal(err)
	}
	limited := probeAgent // one run at a time: a second waits queued
	limited.Name, limited.Concurrency = "limited", &sortie.Concurrency{Limit: 1}
	agents := sortie.Agents{"probe": probeAgent, "limited": limited}
	r := &rig{cp: cp, engine: sortie.NewEngine(cp, l, agents, &sortie.EngineOptions{Pricer: prices})}
	srv, err := server.New(server.Options{Engine: r.engine, APITokens: tokens, UI: true,
		FollowPoll: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("server.New = %v", err)
	}
	r.http = httptest.NewServer(srv)
	r.ui = r.http.URL + "/ui/"
	t.Cleanup(func() { r.http.Close(); r.engine.Close(); l.Close(); cp.Close() })
	return r
}

// submit starts a probe run with vars, as another client of the host.
func (r *rig) submit(t testing.TB, vars string) *sortie.Run {
	t.Helper()
	run, err := r.engine.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(vars)})
	if err != nil {
		t.Fatalf("Submit(probe %s) = %v", vars, err)
	}
	return run
}

func (r *rig) get(t testing.TB, id sortie.RunID) *sortie.Run {
	t.Helper()
	run, err := r.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s) = %v", id, err)
	}
	return run
}

// waitState waits until run id is in state.
func (r *rig) waitState(t testing.TB, id sortie.RunID, state sortie.State) *sortie.Run {
	t.Helper()
	var run *sortie.Run
	testwait.UntilReport(t, "run "+string(id)+" "+string(state), 20*time.Second, func() (bool, string) {
		run = r.get(t, id)
		return run.State == state, string(run.State)
	})
	return run
}

// cancelAtEnd cancels run id when the test ends, so no attempt outlives it.
func (r *rig) cancelAtEnd(t testing.TB, id sortie.RunID) {
	t.Cleanup(func() { _, _ = r.engine.Cancel(context.Background(), id, "test over") })
}

// client is an HTTP client of the rig with a cookie jar.
func (r *rig) client(t testing.TB) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
