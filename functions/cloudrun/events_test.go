package cloudrun_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
	"github.com/sortie-run/sortie/launchers/local"
)

type refuseAll struct{}

func (refuseAll) Verify(context.Context, *http.Request) error {
	return errors.New("no bearer ID token")
}

// The service's CloudEvents endpoint starts a run from a verified Eventarc
// delivery of a Pub/Sub message, and refuses an unverified caller without
// starting anything.
func TestEventsEndpoint(t *testing.T) {
	cp := memory.New()
	t.Cleanup(func() { cp.Close() })
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg}
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	engine := sortie.NewEngine(cp, l, sortie.Agents{"probe": {Name: "probe", Runtime: "go:probe"}}, nil)
	t.Cleanup(func() { engine.Close() })
	rules, err := triggers.LoadRules(filepath.Join("..", "triggers", "testdata", "rules.json"))
	if err != nil {
		t.Fatal(err)
	}
	ce := cehttp.NewHandler(triggers.NewRouter(rules, engine, nil), nil)
	event, err := os.ReadFile(filepath.Join("..", "triggers", "testdata", "cloudevents", "pubsub-published.json"))
	if err != nil {
		t.Fatal(err)
	}
	post := func(v cloudrun.Verifier) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, cloudrun.EventsPath, strings.NewReader(string(event)))
		req.Header.Set("Content-Type", "application/cloudevents+json")
		cloudrun.Verified(v, ce, nil).ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post(refuseAll{}); code != http.StatusUnauthorized {
		t.Errorf("POST %s from an unverified caller = %d, want 401", cloudrun.EventsPath, code)
	}
	if page, _ := cp.List(context.Background(), sortie.ListQuery{}); len(page.Runs) != 0 {
		t.Fatalf("an unverified delivery started %d runs, want none", len(page.Runs))
	}
	if code := post(allowAll{}); code != http.StatusOK {
		t.Fatalf("POST %s from a verified caller = %d, want 200", cloudrun.EventsPath, code)
	}
	page, _ := cp.List(context.Background(), sortie.ListQuery{})
	if len(page.Runs) != 1 || !strings.HasPrefix(page.Runs[0].IdempotencyKey, "trigger/pubsub-orders/") {
		t.Fatalf("runs after a verified delivery = %+v, want one pubsub-orders run", page.Runs)
	}
}

func TestLoadEnvTriggers(t *testing.T) {
	env := map[string]string{cloudrun.EnvSQLitePath: "/tmp/x.db", cloudrun.EnvInvocation: "{}", cloudrun.EnvTriggerRules: "/rules.json"}
	var ve *sortie.ValidationError
	if _, err := cloudrun.LoadEnv(func(k string) string { return env[k] }); !errors.As(err, &ve) || ve.Field != cloudrun.EnvTriggerRules {
		t.Errorf("LoadEnv(job mode with trigger rules) = %v, want a ValidationError on %s", err, cloudrun.EnvTriggerRules)
	}
	env = map[string]string{cloudrun.EnvSQLitePath: "/tmp/x.db", cloudrun.EnvMode: cloudrun.ModeService, cloudrun.EnvAudience: "https://x", cloudrun.EnvCallers: "launcher@p.iam.gserviceaccount.com",
		cloudrun.EnvTriggerRules: "/rules.json", cloudrun.EnvJob: "projects/p/locations/l/jobs/j"}
	if e, err := cloudrun.LoadEnv(func(k string) string { return env[k] }); err != nil || e.TriggerRules != "/rules.json" || e.Job == "" {
		t.Errorf("LoadEnv(service mode with rules and job) = %+v, %v; want both read", e, err)
	}
}
