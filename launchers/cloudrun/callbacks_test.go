package cloudrun_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/launchers/cloudrun"
	"github.com/sortie-run/sortie/testrig/cloudkms"
)

// The keyless path: a host (package host, as sortie serve builds it) on
// its embedded SQLite state launches on the Cloud Run Job and seals with
// its Cloud KMS keyring; the job's containers have no control plane and no
// AWS access at all: they open the configuration with the keyring of
// their environment and report over the host's signed callbacks. The
// plaintext is in no stored item, event, result, log or RunJob request.
func TestJobReportsOverCallbacksWithoutControlPlane(t *testing.T) {
	srv := cloudkms.Start(t, key1)
	fake := startFakeEnv(t, []string{fncloudrun.EnvLogLevel + "=debug", fncloudrun.EnvKMSKeys + "=k1=" + key1,
		fncloudrun.EnvKMSEndpoint + "=" + srv.Endpoint, fncloudrun.EnvConfigEnv + "=API_TOKEN"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := host.Config{StateDir: dir, Agents: probeAgents, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		GCP: gcphost.Config{Job: testJob, RunEndpoint: fake.addr, KMSKeys: [][2]string{{"k1", key1}}, KMSEndpoint: srv.Endpoint},
		API: &host.API{WorkerCallbacks: true, CallbackURL: "http://" + ln.Addr().String()}}
	h, err := host.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("host.New(GCP Job with callbacks) = %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln) }()
	t.Cleanup(func() { stop(); <-served; h.Close() })

	run := wantOpened(t, h.Engine(), submitConfig(t, h.Engine()))
	wantKMS(t, run)
	reqs := fake.requests()
	if len(reqs) != 1 {
		t.Fatalf("RunJob called %d times, want 1", len(reqs))
	}
	texts := map[string]string{"the RunJob request": reqs[0].String()}
	for _, v := range reqs[0].GetOverrides().GetContainerOverrides()[0].GetEnv() {
		if v.GetName() != fncloudrun.EnvInvocation {
			continue
		}
		inv, err := sortie.DecodeInvocation([]byte(v.GetValue()))
		if err != nil || inv.Report.Mode != sortie.ReportCallback || !strings.HasPrefix(inv.Report.CallbackURL, cfg.API.CallbackURL+"/") {
			t.Errorf("launched invocation reports %+v (%v), want callbacks to %s", inv.Report, err, cfg.API.CallbackURL)
		}
	}
	waitEnded(t, jobsLauncher(t, fake), *run.Attempts[0].Ref)
	b, _ := json.Marshal(run)
	evs, _ := h.Engine().Events(context.Background(), run.ID, sortie.Cursor{}, 100)
	eb, _ := json.Marshal(evs)
	texts["the run"], texts["its events"], texts["the container's log"] = string(b), string(eb), fake.outputs()
	noCanary(t, dir, texts)
}

// Service mode takes callback-mode invocations too: a host (package host)
// launching on the service with worker callbacks gets the attempt's
// outcome over the callbacks from a service handler that has no control
// plane at all.
func TestServiceReportsOverCallbacksWithoutControlPlane(t *testing.T) {
	reg := functions.NewRegistry()
	probe.Register(reg)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := &fncloudrun.Handler{Worker: &functions.Worker{Registry: reg, Logger: log}, Verifier: tokenVerifier{}, Logger: log}
	var posts atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		svc.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { web.Close(); svc.Close() })
	l, err := cloudrun.NewService(cloudrun.ServiceOptions{URL: web.URL, Client: &http.Client{Transport: bearer{testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), host.Config{StateDir: t.TempDir(), Agents: probeAgents, Launcher: l, Logger: log,
		API: &host.API{WorkerCallbacks: true, CallbackURL: "http://" + ln.Addr().String()}})
	if err != nil {
		t.Fatalf("host.New(service launcher with callbacks) = %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln) }()
	t.Cleanup(func() { stop(); <-served; h.Close() })

	run := submit(t, h.Engine(), map[string]any{"events": 2, "output": map[string]int{"n": 7}}, sortie.Policy{})
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, err := sortie.NewClient(h.Engine(), nil).Wait(wctx, run.ID)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", run.ID, err)
	}
	if done.State != sortie.StateCompleted || string(done.Result) != `{"n":7}` {
		t.Fatalf("run over the service with callbacks = %s %s (%+v), want completed {\"n\":7}", done.State, done.Result, done.Error)
	}
	if owner := done.Attempts[0].Owner; owner != "callback" || posts.Load() != 1 {
		t.Errorf("attempt 1 claimed by %q after %d POSTs to the service, want one POST and the claim over callbacks", owner, posts.Load())
	}
	evs, err := h.Engine().Events(context.Background(), run.ID, sortie.Cursor{}, 10)
	if err != nil || len(evs) != 2 {
		t.Errorf("events reported over callbacks = %d (%v), want 2", len(evs), err)
	}
}
