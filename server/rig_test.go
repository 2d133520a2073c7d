package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/inputschema"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/pricing"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/httpengine"
)

var probeAgents = sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe",
	Policy: sortie.Policy{HeartbeatMs: 200, LeaseMs: 1000, BackoffMs: 1, StartTimeoutMs: 1000}}}

// rigPrices prices the rig's runs: the default table with local compute
// at $1 a second, so a run's cost is its duration in ms × 10⁶ n$.
var rigPrices = func() *pricing.Table {
	t, err := pricing.Default().Set("local.second", "1")
	if err != nil {
		panic(err)
	}
	return t
}()

// rig is a real server on a loopback port over an SQLite control plane and
// the in-process local launcher running the probe agent, and an HTTP
// client of it.
type rig struct {
	cp     sortie.ControlPlane
	engine *sortie.Engine
	srv    *server.Server
	http   *httptest.Server
	remote *httpengine.Engine
	client *sortie.Client
}

// extraHandlers are added to the rig's worker registry, as agents of the
// same name with runtime go:NAME.
type extraHandlers map[string]functions.Handler

func newRig(t testing.TB, opts *server.Options, extra ...extraHandlers) *rig {
	t.Helper()
	cp, err := sqlite.Open(filepath.Join(t.TempDir(), "sortie.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	reg := functions.NewRegistry()
	probe.Register(reg)
	typed := probeAgents["probe"]
	typed.Name, typed.InputSchema = "typed", probe.InputSchema
	agents := sortie.Agents{"probe": probeAgents["probe"], "typed": typed}
	for _, hs := range extra {
		for name, h := range hs {
			reg.Register(name, h)
			agents[name] = sortie.Manifest{Name: name, Version: "1", Runtime: "go:" + name, Policy: probeAgents["probe"].Policy}
		}
	}
	w := &functions.Worker{Registry: reg}
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatalf("local.New = %v", err)
	}
	r := &rig{cp: cp, engine: sortie.NewEngine(cp, l, agents, &sortie.EngineOptions{Pricer: rigPrices, Inputs: inputschema.Default})}
	o := server.Options{}
	if opts != nil {
		o = *opts
	}
	o.Engine = r.engine
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if r.srv, err = server.New(o); err != nil {
		t.Fatalf("server.New = %v", err)
	}
	r.http = httptest.NewServer(r.srv)
	token := ""
	if len(o.APITokens) > 0 {
		token = o.APITokens[0]
	}
	if r.remote, err = httpengine.New(r.http.URL, &httpengine.Options{Token: token}); err != nil {
		t.Fatalf("httpengine.New = %v", err)
	}
	r.client = sortie.NewClient(r.remote, nil)
	t.Cleanup(func() { r.http.Close(); r.engine.Close(); l.Close(); cp.Close() })
	return r
}

func (r *rig) submit(t *testing.T, vars string) *sortie.Run {
	t.Helper()
	run, err := r.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(vars)})
	if err != nil {
		t.Fatalf("Submit(%s) over HTTP = %v", vars, err)
	}
	return run
}

// final waits for the run to be terminal or interrupted, reading the
// control plane directly.
func (r *rig) final(t *testing.T, id sortie.RunID) *sortie.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := sortie.NewClient(r.engine, nil).Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", id, err)
	}
	return run
}

// allEvents reads every event of the run from the control plane.
func (r *rig) allEvents(t *testing.T, id sortie.RunID) []sortie.Event {
	t.Helper()
	evs, err := r.cp.Events(context.Background(), id, sortie.Cursor{}, 10000)
	if err != nil {
		t.Fatalf("Events(%s) = %v", id, err)
	}
	return evs
}
