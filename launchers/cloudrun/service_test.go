package cloudrun_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/cloudrun"
	"github.com/sortie-run/sortie/launchers/launchertest"
)

// testToken stands in for a Google-signed ID token: the service's
// verifier accepts only it.
const testToken = "test-id-token"

// tokenVerifier is the tests' Verifier (production: IDTokenVerifier).
type tokenVerifier struct{}

func (tokenVerifier) Verify(_ context.Context, r *http.Request) error {
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		return errors.New("wrong or missing bearer token")
	}
	return nil
}

// bearer adds the test token, as idtoken.NewClient adds an ID token.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// serviceRig is the real service handler on a loopback HTTP server, on
// a SQLite control plane, and a service launcher of it.
type serviceRig struct {
	cp       *sqlite.ControlPlane
	url      string
	launcher *cloudrun.ServiceLauncher
	gate     *requestGate
}

// requestGate holds the service's requests, while held, before the
// handler sees them: a POST in flight.
type requestGate struct {
	next http.Handler
	mu   sync.Mutex
	open chan struct{} // nil: not held
}

func (g *requestGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open != nil {
		select {
		case <-open:
		case <-r.Context().Done():
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

func (g *requestGate) hold() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	open := make(chan struct{})
	g.open = open
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.open = nil
			g.mu.Unlock()
			close(open)
		})
	}
}

func newServiceRig(tb testing.TB, token string) *serviceRig {
	tb.Helper()
	cp, err := sqlite.Open(filepath.Join(tb.TempDir(), "sortie.db"), nil)
	if err != nil {
		tb.Fatalf("sqlite.Open = %v, want nil", err)
	}
	reg := functions.NewRegistry()
	probe.Register(reg)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &fncloudrun.Handler{Worker: &functions.Worker{Registry: reg, Logger: log}, ControlPlane: cp, Verifier: tokenVerifier{}, Logger: log}
	gate := &requestGate{next: h}
	srv := httptest.NewServer(gate)
	tb.Cleanup(func() { srv.Close(); h.Close(); cp.Close() })
	l, err := cloudrun.NewService(cloudrun.ServiceOptions{URL: srv.URL, Client: &http.Client{Transport: bearer{token}}})
	if err != nil {
		tb.Fatalf("NewService(%s) = %v, want nil", srv.URL, err)
	}
	return &serviceRig{cp: cp, url: srv.URL, launcher: l, gate: gate}
}

// TestServiceConformance runs the conformance suite on the service
// launcher against the real service handler on loopback.
func TestServiceConformance(t *testing.T) {
	launchertest.RunConformanceTests(t, func(t *testing.T) launchertest.Harness { return &serviceHarness{} })
}

type serviceHarness struct{ rig *serviceRig }

func (h *serviceHarness) MakeLauncher(_ context.Context, t *testing.T) (sortie.Launcher, sortie.ControlPlane) {
	h.rig = newServiceRig(t, testToken)
	return h.rig.launcher, h.rig.cp
}

// HoldStarts holds the POSTs before the service's handler.
func (h *serviceHarness) HoldStarts(*testing.T) func() { return h.rig.gate.hold() }

// CanHoldClaims is false: Start returns only once the service claimed.
func (h *serviceHarness) CanHoldClaims() bool                    { return false }
func (h *serviceHarness) HoldClaims(*testing.T) (release func()) { return func() {} }

// CanCancelRunning is false: a service has no provider-side stop; the
// worker stops on its heartbeat.
func (h *serviceHarness) CanCancelRunning() bool { return false }

// CanDescribe is false: a request has no status to read afterwards.
func (h *serviceHarness) CanDescribe() bool  { return false }
func (h *serviceHarness) CancelCalls() int   { return 0 }
func (h *serviceHarness) ReportsExits() bool { return false }

// CanFreeze is false: the handler runs in the test process here.
func (h *serviceHarness) CanFreeze() bool               { return false }
func (h *serviceHarness) Freeze(*testing.T, sortie.Ref) {}

// WorkerCanCrash is false: the handler runs in the test process here.
func (h *serviceHarness) WorkerCanCrash() bool { return false }

func (h *serviceHarness) Close() {}

// A caller without the right ID token is refused (401): Start fails and
// nothing is claimed.
func TestServiceRefusesUnverifiedCaller(t *testing.T) {
	r := newServiceRig(t, "forged-token")
	e := sortie.NewEngine(r.cp, r.launcher, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = e.Close() })
	run := submit(t, e, map[string]any{"events": 1}, sortie.Policy{})
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: 1, LaunchID: "forged-launch",
		Agent: probeAgents["probe"], DeadlineMs: run.CreatedMs + 60000, HeartbeatMs: 200, LeaseMs: 1000,
		Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	_, err := r.launcher.Start(context.Background(), inv)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Start with a forged token = %v, want an error naming status 401", err)
	}
	got, _ := e.Get(context.Background(), run.ID)
	for _, a := range got.Attempts {
		if a.Claimed() {
			t.Errorf("attempt %d of run %s was claimed after refused requests, want none", a.Number, run.ID)
		}
	}
}

// Methods other than POST are refused with 405.
func TestServiceMethodNotAllowed(t *testing.T) {
	r := newServiceRig(t, testToken)
	resp, err := http.Get(r.url + fncloudrun.InvocationsPath)
	if err != nil {
		t.Fatalf("GET %s = %v", fncloudrun.InvocationsPath, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s = %d, want 405", fncloudrun.InvocationsPath, resp.StatusCode)
	}
}

// CanCancelOutside is false: a service request has no cancel of its own.
func (h *serviceHarness) CanCancelOutside() bool               { return false }
func (h *serviceHarness) CancelOutside(*testing.T, sortie.Ref) {}

// QueuesLaunches is false: the POST is answered once claimed.
func (h *serviceHarness) QueuesLaunches() bool { return false }

// LimitsInvocations is false: the POST body takes any invocation a worker
// takes.
func (h *serviceHarness) LimitsInvocations() bool { return false }
