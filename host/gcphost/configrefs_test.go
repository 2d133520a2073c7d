package gcphost_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/testrig/secretstores"
)

const (
	githubSecret = "projects/test/secrets/github"
	githubCanary = "cloudrun-gcp-canary-3b9d"
	refsDoc      = `{"version": "sortie.configrefs/v1", "refs": {"github": {"var": "GITHUB_TOKEN", "gcp_secret": "` + githubSecret + `"}}}`
)

// capture is a launcher that keeps the invocations it is handed.
type capture chan *sortie.Invocation

func (c capture) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	c <- inv
	return sortie.Ref{Provider: "test", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// launched submits a run naming the "github" reference to an engine on
// the SQLite file db and returns the invocation it launched.
func launched(t *testing.T, db string) (*sortie.Invocation, sortie.ControlPlane) {
	t.Helper()
	cp, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	allow, err := functions.LoadConfigRefs(refsDoc)
	if err != nil {
		t.Fatal(err)
	}
	c := make(capture, 1)
	e := sortie.NewEngine(cp, c, sortie.Agents{"refcheck": {Name: "refcheck", Version: "1", Runtime: "go:refcheck"}},
		&sortie.EngineOptions{ConfigRefs: allow})
	t.Cleanup(func() { e.Close() })
	if _, err := e.Submit(t.Context(), &sortie.SubmitRequest{Agent: "refcheck", ConfigRefs: []string{"github"}}); err != nil {
		t.Fatalf("Submit(config_refs [github]) = %v", err)
	}
	select {
	case inv := <-c:
		return inv, cp
	case <-time.After(30 * time.Second):
		t.Fatal("no launch within 30 s")
		return nil, nil
	}
}

// A Cloud Run job resolves a "gcp_secret" reference with Secret Manager
// (a gRPC server on loopback) when its attempt executes: the handler sees
// the value, the stored run does not hold it.
func TestJobResolvesSecretManagerReferences(t *testing.T) {
	store := secretstores.StartGCP(t, map[string]string{githubSecret: githubCanary})
	db := filepath.Join(t.TempDir(), "sortie.db")
	inv, cp := launched(t, db)
	b, _ := json.Marshal(inv)
	vars := map[string]string{fncloudrun.EnvSQLitePath: db, fncloudrun.EnvInvocation: string(b),
		fncloudrun.EnvConfigRefs: refsDoc, fncloudrun.EnvSecretManagerEndpoint: store.Endpoint}
	env, err := fncloudrun.LoadEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("LoadEnv = %v", err)
	}
	reg := functions.NewRegistry()
	reg.Register("refcheck", func(_ context.Context, c *functions.Call) (any, error) {
		return map[string]bool{"GITHUB_TOKEN": c.Config()["GITHUB_TOKEN"] == githubCanary}, nil
	})
	c, err := gcphost.OpenContainer(t.Context(), env, reg, nil)
	if err != nil {
		t.Fatalf("OpenContainer = %v", err)
	}
	defer c.Close()
	if _, err := env.RunJob(t.Context(), c.Worker, c.ControlPlane); err != nil {
		t.Fatalf("RunJob = %v", err)
	}
	run, err := cp.Get(t.Context(), inv.RunID)
	if err != nil || run.State != sortie.StateCompleted || string(run.Result) != `{"GITHUB_TOKEN":true}` {
		t.Fatalf("run after the job = %+v, %v; want completed with the handler having seen the value", run, err)
	}
	if asked := store.Asked(); len(asked) != 1 || asked[0] != githubSecret+"/versions/latest" {
		t.Errorf("Secret Manager asked %v, want the latest version once", asked)
	}
	if b, _ := json.Marshal(run); strings.Contains(string(b), githubCanary) {
		t.Errorf("the stored run holds the referenced value")
	}
}
