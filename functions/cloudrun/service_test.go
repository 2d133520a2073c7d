package cloudrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/cloudrun"
)

type allowAll struct{}

func (allowAll) Verify(context.Context, *http.Request) error { return nil }

// Requests the handler must refuse before claiming anything, with the
// status that says why.
func TestHandlerRefuses(t *testing.T) {
	cp, err := sqlite.Open(filepath.Join(t.TempDir(), "sortie.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v, want nil", err)
	}
	defer cp.Close()
	h := &cloudrun.Handler{Worker: &functions.Worker{}, ControlPlane: cp, Verifier: allowAll{}}
	defer h.Close()
	cases := []struct {
		name, method, path, body string
		want                     int
	}{
		{"other path", http.MethodPost, "/other", "{}", http.StatusNotFound},
		{"GET", http.MethodGet, cloudrun.InvocationsPath, "", http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, cloudrun.InvocationsPath, "not json", http.StatusBadRequest},
		{"wrong version", http.MethodPost, cloudrun.InvocationsPath, `{"version":"v0"}`, http.StatusBadRequest},
		{"oversize", http.MethodPost, cloudrun.InvocationsPath, strings.Repeat(" ", sortie.MaxInvocationBytes+1), http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
		if rec.Code != c.want {
			t.Errorf("%s %s (%s) = %d %s, want %d", c.method, c.path, c.name, rec.Code, rec.Body, c.want)
		}
	}
	runs, err := cp.List(context.Background(), sortie.ListQuery{})
	if err != nil || len(runs.Runs) != 0 {
		t.Errorf("control plane after refused requests: %+v, %v; want no runs", runs, err)
	}
}

// LoadEnv names the variable that is wrong.
func TestLoadEnv(t *testing.T) {
	cases := []struct {
		env       map[string]string
		wantField string
	}{
		{map[string]string{cloudrun.EnvSQLitePath: "/x"}, cloudrun.EnvInvocation},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvMode: "batch"}, cloudrun.EnvMode},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvMode: "service"}, cloudrun.EnvAudience},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvMode: "service", cloudrun.EnvAudience: "https://w.run.app"}, cloudrun.EnvCallers},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvInvocation: strings.Repeat("x", cloudrun.MaxEnvValueBytes+1)}, cloudrun.EnvInvocation},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvInvocation: "{}", cloudrun.EnvLogLevel: "loud"}, cloudrun.EnvLogLevel},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvDynamoTable: "t", cloudrun.EnvInvocation: "{}"}, cloudrun.EnvSQLitePath},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvInvocation: "{}", cloudrun.EnvAWSRoleARN: "arn:aws:iam::1:role/r"}, cloudrun.EnvAWSRoleARN},
		{map[string]string{cloudrun.EnvDynamoTable: "t", cloudrun.EnvInvocation: "{}", cloudrun.EnvAWSRoleARN: "role/r"}, cloudrun.EnvAWSRoleARN},
		{map[string]string{cloudrun.EnvInvocation: "{}", cloudrun.EnvKMSKeys: "no-equals"}, cloudrun.EnvKMSKeys},
		{map[string]string{cloudrun.EnvMode: "service", cloudrun.EnvAudience: "https://x", cloudrun.EnvCallers: "l@p.iam.gserviceaccount.com", cloudrun.EnvTriggerRules: "/r.json",
			cloudrun.EnvJob: "projects/p/locations/l/jobs/j"}, cloudrun.EnvTriggerRules},
		{map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvInvocation: "{}", destination.EnvAllowHTTP: "yes"}, destination.EnvAllowHTTP},
	}
	for _, c := range cases {
		_, err := cloudrun.LoadEnv(func(k string) string { return c.env[k] })
		ve, ok := err.(*sortie.ValidationError)
		if !ok || ve.Field != c.wantField {
			t.Errorf("LoadEnv(%.80v) = %v, want a ValidationError on %s", c.env, err, c.wantField)
		}
	}
	env := map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvMode: "service", cloudrun.EnvAudience: "https://w.run.app", cloudrun.EnvCallers: "l@p.iam.gserviceaccount.com"}
	e, err := cloudrun.LoadEnv(func(k string) string { return env[k] })
	if err != nil || e.Port != "8080" || e.Destinations.Check("https://api.example.com/") == nil {
		t.Errorf("LoadEnv(service defaults) = %+v, %v; want port 8080 and a destination policy that allows nothing", e, err)
	}
	env[cloudrun.EnvAudience], env[cloudrun.EnvCallers] = "https://w-1.r.run.app, https://aud.example ,", "a@p.iam.gserviceaccount.com,b@p.iam.gserviceaccount.com"
	if e, err = cloudrun.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Errorf("LoadEnv(two audiences, two callers) = %v", err)
	} else if len(e.Audiences) != 2 || e.Audiences[1] != "https://aud.example" || len(e.Callers) != 2 {
		t.Errorf("LoadEnv(two audiences, two callers) = audiences %q callers %q; want both lists of two", e.Audiences, e.Callers)
	}
	env = map[string]string{cloudrun.EnvDynamoTable: "t", cloudrun.EnvInvocation: "{}", cloudrun.EnvAWSRoleARN: "arn:aws:iam::1:role/r"}
	e, err = cloudrun.LoadEnv(func(k string) string { return env[k] })
	if err != nil || e.AWSTokenAudience != cloudrun.DefaultAWSTokenAudience || e.AWSRoleARN != env[cloudrun.EnvAWSRoleARN] {
		t.Errorf("LoadEnv(federation) = %+v, %v; want the role and the default audience %s", e, err, cloudrun.DefaultAWSTokenAudience)
	}
}

// Without a control plane, the service takes only invocations that report
// over callbacks: one that reports to the control plane is refused (400)
// before anything runs.
func TestHandlerWithoutControlPlane(t *testing.T) {
	h := &cloudrun.Handler{Worker: &functions.Worker{}, Verifier: allowAll{}}
	defer h.Close()
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: 1,
		LaunchID: sortie.NewLaunchID(), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli(), HeartbeatMs: 1000, LeaseMs: 3000,
		Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	b, _ := json.Marshal(inv)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, cloudrun.InvocationsPath, bytes.NewReader(b)))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "report.mode") {
		t.Errorf("POST a control-plane invocation to a service without one = %d %s, want 400 naming report.mode", rec.Code, rec.Body)
	}
}
