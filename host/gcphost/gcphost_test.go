package gcphost_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/gcphost"
)

// serviceEnv is service mode on an SQLite file in a test directory.
func serviceEnv(t *testing.T, extra map[string]string) *fncloudrun.Env {
	t.Helper()
	vars := map[string]string{fncloudrun.EnvMode: fncloudrun.ModeService, fncloudrun.EnvAudience: "https://sortie.example", fncloudrun.EnvCallers: "launcher@p.iam.gserviceaccount.com",
		fncloudrun.EnvSQLitePath: filepath.Join(t.TempDir(), "sortie.db")}
	for k, v := range extra {
		vars[k] = v
	}
	env, err := fncloudrun.LoadEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("LoadEnv(%v) = %v", vars, err)
	}
	return env
}

// Service mode on a real listener: the invocations route refuses a caller
// without an ID token, the events route is absent without trigger rules,
// and Serve returns nil once its context ends.
func TestServiceServesUntilCancelled(t *testing.T) {
	env := serviceEnv(t, nil)
	c, err := gcphost.OpenContainer(t.Context(), env, builtin.Registry(), nil)
	if err != nil {
		t.Fatalf("OpenContainer(SQLite) = %v", err)
	}
	defer c.Close()
	cp := c.ControlPlane
	svc, err := gcphost.NewService(t.Context(), env, c, builtin.Agents(), nil)
	if err != nil {
		t.Fatalf("NewService = %v", err)
	}
	defer svc.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	for path, want := range map[string]int{fncloudrun.InvocationsPath: http.StatusUnauthorized, fncloudrun.EventsPath: http.StatusNotFound} {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatalf("POST %s = %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST %s without an ID token = %d, want %d", path, resp.StatusCode, want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after its context ended = %v, want nil", err)
		}
	case <-time.After(gcphost.ShutdownGrace + 10*time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := cp.Get(t.Context(), sortie.NewRunID(time.Now())); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(unknown run) on the opened control plane = %v, want ErrNotFound", err)
	}
}

// Trigger rules that do not load are refused, naming their variable.
func TestServiceRefusesBadTriggerRules(t *testing.T) {
	env := serviceEnv(t, map[string]string{fncloudrun.EnvTriggerRules: filepath.Join(t.TempDir(), "missing.json"),
		fncloudrun.EnvJob: "projects/p/locations/r/jobs/j"})
	_, err := gcphost.NewService(t.Context(), env, &gcphost.Container{Worker: &functions.Worker{}}, builtin.Agents(), nil)
	if err == nil || !strings.Contains(err.Error(), fncloudrun.EnvTriggerRules) {
		t.Errorf("NewService with a missing rules file = %v, want an error naming %s", err, fncloudrun.EnvTriggerRules)
	}
}
