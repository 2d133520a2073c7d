package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
)

// launched reserves a run of the probe with vars in cp, records its first
// launch and returns the invocation a launcher would send.
func launched(t testing.TB, cp sortie.ControlPlane, vars string) *sortie.Invocation {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	run := &sortie.Run{ID: sortie.NewRunID(now), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		Variables: json.RawMessage(vars), Policy: sortie.Policy{HeartbeatMs: 20, LeaseMs: 5000}}
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: 1, LaunchID: sortie.NewLaunchID(),
		Agent: run.Agent, Variables: run.Variables, DeadlineMs: now.Add(time.Minute).UnixMilli(),
		HeartbeatMs: 20, LeaseMs: 5000, Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: inv.LaunchID, NowMs: now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	return inv
}

func stdioWorker() *functions.Worker {
	reg := functions.NewRegistry()
	probe.Register(reg)
	return &functions.Worker{Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestServeStdioWithControlPlane(t *testing.T) {
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{"events":2}`)
	line, _ := json.Marshal(inv)
	mk := func(inv *sortie.Invocation) (functions.Reporter, error) {
		return functions.NewControlPlaneReporter(cp, inv, ""), nil
	}
	var stdout bytes.Buffer
	o, err := stdioWorker().ServeStdio(context.Background(), bytes.NewReader(append(line, '\n')), &stdout, mk)
	if err != nil || string(o.Result) != `{"attempt":1,"events":2}` {
		t.Fatalf("ServeStdio = %+v, %v; want the probe's result", o, err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"seq":1`) || lines[2] != `{"result":{"output":{"attempt":1,"events":2}}}` {
		t.Errorf("stdout = %q, want two events and the result", stdout.String())
	}
	run, _ := cp.Get(context.Background(), inv.RunID)
	if run.State != sortie.StateCompleted || run.Attempts[0].Owner == "" {
		t.Errorf("control plane run %s owner %q, want completed with the default owner", run.State, run.Attempts[0].Owner)
	}

	stdout.Reset()
	_, err = stdioWorker().ServeStdio(context.Background(), bytes.NewReader(line), &stdout, mk)
	if !errors.Is(err, sortie.ErrTerminal) && !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("ServeStdio of a delivered invocation again = %v, want a refused claim", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("ServeStdio of a duplicate wrote %q, want nothing", stdout.String())
	}
}

func TestServeStdioRefusesBadInput(t *testing.T) {
	called := false
	mk := func(*sortie.Invocation) (functions.Reporter, error) { called = true; return nil, errors.New("unused") }
	var stdout bytes.Buffer
	_, err := stdioWorker().ServeStdio(context.Background(), strings.NewReader(`{"version":"sortie.invocation/v0"}`), &stdout, mk)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "version" || called || stdout.Len() != 0 {
		t.Errorf("ServeStdio(version v0) = %v (reporter made: %v, stdout %q), want a ValidationError for version and nothing else", err, called, stdout.String())
	}

	cp := memory.New()
	defer cp.Close()
	line, _ := json.Marshal(launched(t, cp, `{}`))
	boom := errors.New("no credentials for the control plane")
	_, err = stdioWorker().ServeStdio(context.Background(), bytes.NewReader(line), &stdout, func(*sortie.Invocation) (functions.Reporter, error) { return nil, boom })
	if !errors.Is(err, boom) || stdout.Len() != 0 {
		t.Errorf("ServeStdio with a failing reporter factory = %v (stdout %q), want its error and nothing written", err, stdout.String())
	}
}

func TestServeStdioStreamOnly(t *testing.T) {
	cp := memory.New()
	defer cp.Close()
	line, _ := json.Marshal(launched(t, cp, `{"events":0,"fail":"nope"}`))
	var stdout bytes.Buffer
	if _, err := stdioWorker().ServeStdio(context.Background(), bytes.NewReader(line), &stdout, nil); err != nil {
		t.Fatal(err)
	}
	if want := `{"error":{"type":"error","message":"nope"}}` + "\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want %q", stdout.String(), want)
	}
}
