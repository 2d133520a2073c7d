package cloudrun_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/host/gcphost"
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
