package cloudrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/crypto/envelope"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/launchers/cloudrun"
	"github.com/sortie-run/sortie/testrig/cloudkms"
)

// canary is the secret in the runs' inline configuration: it must never
// leave the worker's handler.
const canary = "cloudrun-canary-7e21-never-stored"

var (
	key1 = cloudkms.Key("config-1")
	key2 = cloudkms.Key("config-2")
)

// configVars make the probe return the names its configuration sets.
var configVars = map[string]any{"events": 1, "config_names": true}

// hostKeyring opens the launching host's keyring of pairs on srv.
func hostKeyring(t *testing.T, srv *cloudkms.Server, pairs ...[2]string) *envelope.Config {
	t.Helper()
	k, err := gcphost.OpenKeyring(context.Background(), pairs, srv.Endpoint)
	if err != nil {
		t.Fatalf("OpenKeyring(%v) = %v", pairs, err)
	}
	t.Cleanup(func() { k.Close() })
	return k.Config
}

// submitConfig submits a probe run with configVars and the canary as
// API_TOKEN.
func submitConfig(t *testing.T, e *sortie.Engine) *sortie.Run {
	t.Helper()
	b, _ := json.Marshal(configVars)
	run, err := e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: b,
		Config: json.RawMessage(`{"API_TOKEN":"` + canary + `"}`)})
	if err != nil {
		t.Fatalf("Submit(probe with configuration) = %v", err)
	}
	return run
}

// wantOpened checks run completed with the configuration's names: the
// worker opened it.
func wantOpened(t *testing.T, e *sortie.Engine, run *sortie.Run) *sortie.Run {
	t.Helper()
	run = waitRun(t, e, run.ID, "run "+string(run.ID)+" to settle", false, settled)
	if run.State != sortie.StateCompleted || string(run.Result) != `{"config_names":["API_TOKEN"]}` {
		t.Fatalf("run %s = %s %q result %s, want completed with config_names [API_TOKEN]", run.ID, run.State, run.Reason, run.Result)
	}
	return run
}

// wantKMS checks the worker of run's first attempt unwrapped the data key
// through Cloud KMS (a cold worker: no cached data key).
func wantKMS(t *testing.T, run *sortie.Run) {
	t.Helper()
	if u := run.Attempts[0].Usage; u == nil || u.KMSRequests < 1 {
		t.Errorf("run %s attempt 1 usage %+v, want at least one KMS request (the worker opened the envelope)", run.ID, u)
	}
}

// noCanary fails when the canary is in any file under dir (the SQLite
// control plane with its WAL) or in the texts named.
func noCanary(t *testing.T, dir string, texts map[string]string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the configuration's plaintext", path)
		}
		return nil
	})
	for what, s := range texts {
		if strings.Contains(s, canary) {
			t.Errorf("%s holds the configuration's plaintext", what)
		}
	}
}

// kidOf returns the key ID of the envelope in a RunJobRequest's invocation.
func kidOf(t *testing.T, raw string) string {
	t.Helper()
	inv, err := sortie.DecodeInvocation([]byte(raw))
	if err != nil {
		t.Fatalf("RunJobRequest invocation: %v", err)
	}
	var e struct{ KID string }
	if err := json.Unmarshal(inv.SealedConfig, &e); err != nil {
		t.Fatalf("invocation's sealed configuration %s: %v", inv.SealedConfig, err)
	}
	return e.KID
}

// Jobs: the host seals each attempt's configuration with its Cloud KMS
// keyring and the job's container opens it with the keyring of its
// environment, through Cloud KMS on loopback. Across a rotation: run A is
// sealed under key k1 (the host's primary then), then Cloud KMS rotates
// k1's version and the host makes k2 primary; run B is sealed under k2,
// and the container, holding k2 and k1, opens both. The plaintext is in
// no stored item, event, result, log or RunJob request.
func TestJobOpensSealedConfigAcrossRotation(t *testing.T) {
	srv := cloudkms.Start(t, key1, key2)
	dir := t.TempDir()
	path := filepath.Join(dir, "sortie.db")
	cp, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	fake := startFakeEnv(t, []string{fncloudrun.EnvSQLitePath + "=" + path, fncloudrun.EnvLogLevel + "=debug",
		fncloudrun.EnvKMSKeys + "=k2=" + key2 + ",k1=" + key1, fncloudrun.EnvKMSEndpoint + "=" + srv.Endpoint,
		fncloudrun.EnvConfigEnv + "=API_TOKEN"})
	l := jobsLauncher(t, fake)
	before := sortie.NewEngine(cp, l, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy,
		Sealer: hostKeyring(t, srv, [2]string{"k1", key1}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { before.Close() })
	runA := wantOpened(t, before, submitConfig(t, before))
	wantKMS(t, runA)

	srv.Rotate(t, key1)
	after := sortie.NewEngine(cp, l, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy,
		Sealer: hostKeyring(t, srv, [2]string{"k2", key2}, [2]string{"k1", key1}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { after.Close() })
	runB := wantOpened(t, after, submitConfig(t, after))
	wantKMS(t, runB)

	reqs := fake.requests()
	var kids, texts = []string{}, map[string]string{}
	for i, r := range reqs {
		for _, v := range r.GetOverrides().GetContainerOverrides()[0].GetEnv() {
			if v.GetName() == fncloudrun.EnvInvocation {
				kids = append(kids, kidOf(t, v.GetValue()))
			}
		}
		texts[fmt.Sprintf("RunJobRequest %d", i+1)] = r.String()
	}
	if strings.Join(kids, ",") != "k1,k2" {
		t.Errorf("key IDs of the launched envelopes = %v, want [k1 k2] (run A before the rotation, run B after)", kids)
	}
	for _, run := range []*sortie.Run{runA, runB} {
		waitEnded(t, l, *run.Attempts[0].Ref)
		b, _ := json.Marshal(run)
		texts["run "+string(run.ID)] = string(b)
		evs, _ := cp.Events(context.Background(), run.ID, sortie.Cursor{}, 100)
		b, _ = json.Marshal(evs)
		texts["events of "+string(run.ID)] = string(b)
	}
	texts["the containers' logs"] = fake.outputs()
	noCanary(t, dir, texts)
	opened := 0
	for _, c := range srv.Calls() {
		if c.Method == "Decrypt" && bytes.Contains(c.AAD, []byte(envelope.PurposeInvocation)) {
			opened++
		}
	}
	if opened < 2 {
		t.Errorf("Cloud KMS Decrypt calls for %s = %d, want one per run (the containers opened the envelopes)", envelope.PurposeInvocation, opened)
	}
}

// Service: the same container code in service mode (its worker built by
// gcphost.OpenContainer from the environment) opens the configuration the
// host sealed; the plaintext is in no stored item, event, result or log
// (the handler's and the engine's, written under dir).
func TestServiceOpensSealedConfig(t *testing.T) {
	srv := cloudkms.Start(t, key1)
	dir := t.TempDir()
	vars := map[string]string{fncloudrun.EnvMode: fncloudrun.ModeService, fncloudrun.EnvAudience: "https://worker.example", fncloudrun.EnvCallers: "launcher@p.iam.gserviceaccount.com",
		fncloudrun.EnvSQLitePath: filepath.Join(dir, "sortie.db"), fncloudrun.EnvKMSKeys: "k1=" + key1,
		fncloudrun.EnvKMSEndpoint: srv.Endpoint, fncloudrun.EnvConfigEnv: "API_TOKEN"}
	env, err := fncloudrun.LoadEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("LoadEnv(%v) = %v", vars, err)
	}
	logs, err := os.Create(filepath.Join(dir, "service.log")) // read by noCanary
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := gcphost.OpenContainer(context.Background(), env, builtin.Registry(), log)
	if err != nil {
		t.Fatalf("OpenContainer = %v", err)
	}
	h := &fncloudrun.Handler{Worker: c.Worker, ControlPlane: c.ControlPlane, Verifier: tokenVerifier{}, Logger: log}
	web := httptest.NewServer(h)
	t.Cleanup(func() { web.Close(); h.Close(); c.Close() })
	l, err := cloudrun.NewService(cloudrun.ServiceOptions{URL: web.URL, Client: &http.Client{Transport: bearer{testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	e := sortie.NewEngine(c.ControlPlane, l, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy,
		Sealer: hostKeyring(t, srv, [2]string{"k1", key1}), Logger: log})
	t.Cleanup(func() { e.Close() })
	run := wantOpened(t, e, submitConfig(t, e))
	wantKMS(t, run)
	// A warm instance and host open and seal later runs of the agent with
	// cached data keys: at most one Cloud KMS request per run in all.
	const runs = 5
	for range runs - 1 {
		wantOpened(t, e, submitConfig(t, e))
	}
	if n := len(srv.Calls()); n > runs {
		t.Errorf("Cloud KMS requests for %d runs (host and worker) = %d, want at most one per run", runs, n)
	}
	b, _ := json.Marshal(run)
	evs, _ := e.Events(context.Background(), run.ID, sortie.Cursor{}, 100)
	eb, _ := json.Marshal(evs)
	noCanary(t, dir, map[string]string{"the run": string(b), "its events": string(eb)})
}
