package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
)

// An exec session worker asks for a tool call with the authorize message;
// the host's hook decides (seeing the run and the arguments), answers
// with an authorize frame, and records the decision as an event with the
// tool's name and the decision only.
func TestExecSessionWorkerAsksForATool(t *testing.T) {
	dir, _ := filepath.Abs("testdata")
	spec := functions.ExecSpec{Command: []string{"/bin/sh", filepath.Join(dir, "session-authorize.sh")}, Protocol: functions.SessionVersion}
	pool, err := functions.NewPool(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close(context.Background())
	for _, allow := range []bool{false, true} {
		var seen []functions.ToolCall
		w := stdioWorker()
		w.Exec = map[string]functions.ExecSpec{"authz": spec}
		w.Warm = map[string]*functions.Pool{"exec:authz": pool}
		w.AuthorizeTool = func(_ context.Context, c functions.ToolCall) error {
			seen = append(seen, c)
			if !allow {
				return errors.New("not for this tenant")
			}
			return nil
		}
		cp := memory.New()
		inv := launched(t, cp, `{}`)
		inv.Agent.Runtime = "exec:authz"
		o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "authz-test"))
		want, kind := `"refused"`, functions.EventToolRefused
		if allow {
			want, kind = `"allowed"`, functions.EventToolAuthorized
		}
		if err != nil || string(o.Result) != want {
			t.Fatalf("allow=%v: Execute = %+v, %v; want result %s", allow, o, err, want)
		}
		if len(seen) != 1 || seen[0].Name != "delete_all" || seen[0].Run != inv.RunID || seen[0].Attempt != 1 || !strings.Contains(string(seen[0].Args), "arg-secret-5f1e") {
			t.Errorf("allow=%v: the hook saw %+v, want one call of delete_all of the run with its arguments", allow, seen)
		}
		evs, _ := cp.Events(t.Context(), inv.RunID, sortie.Cursor{}, 0)
		if len(evs) != 1 || evs[0].Kind != kind {
			t.Fatalf("allow=%v: events = %+v, want one %s", allow, evs, kind)
		}
		var data map[string]string
		if err := json.Unmarshal(evs[0].Data, &data); err != nil || len(data) != 2 || data["name"] != "delete_all" {
			t.Errorf("allow=%v: event data %s, want the name and the decision only", allow, evs[0].Data)
		}
		cp.Close()
	}
}

// A one-shot exec worker cannot be answered (its stdin is closed): its
// authorize message fails the attempt with a protocol error saying so.
func TestOneShotExecWorkerCannotAsk(t *testing.T) {
	dir, _ := filepath.Abs("testdata")
	w := stdioWorker()
	w.Exec = map[string]functions.ExecSpec{"ask": {Command: []string{"/bin/sh", filepath.Join(dir, "authorize-oneshot.sh")}, Env: []string{"PATH=/usr/bin:/bin"}}}
	w.AuthorizeTool = functions.AllowTools("search")
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{}`)
	inv.Agent.Runtime = "exec:ask"
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "authz-test"))
	if err != nil || o.Error == nil || o.Error.Type != "protocol" || o.Error.Retryable || !strings.Contains(o.Error.Message, functions.SessionVersion) {
		t.Fatalf("Execute = %+v, %v; want a permanent protocol error naming %s", o, err, functions.SessionVersion)
	}
}

// Without hooks (worker mode's default) every tool call and connection
// is refused; the handler gets sortie.ErrRefused and goes on.
func TestNoHooksRefuseEverything(t *testing.T) {
	reg := functions.NewRegistry()
	reg.Register("asker", func(ctx context.Context, c *functions.Call) (any, error) {
		tool := c.AuthorizeTool(ctx, "search", nil)
		conn := c.Connect(ctx, functions.Binding{Kind: "mcp", Ref: "crm"})
		return []bool{errors.Is(tool, sortie.ErrRefused), errors.Is(conn, sortie.ErrRefused)}, nil
	})
	w := stdioWorker()
	w.Registry = reg
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{}`)
	inv.Agent.Runtime = "go:asker"
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "authz-test"))
	if err != nil || string(o.Result) != `[true,true]` {
		t.Fatalf("Execute = %+v, %v; want both refused ([true,true])", o, err)
	}
	evs, _ := cp.Events(t.Context(), inv.RunID, sortie.Cursor{}, 0)
	if len(evs) != 2 || evs[0].Kind != functions.EventToolRefused || evs[1].Kind != functions.EventConnectionRefused {
		t.Errorf("events = %+v, want tool.refused then connection.refused", evs)
	}
}
