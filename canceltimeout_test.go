package sortie_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/logbuf"
	"github.com/sortie-run/sortie/internal/testwait"
)

// heldLauncher starts nothing: it hands each invocation to the test,
// which claims and finishes the attempt itself.
type heldLauncher struct{ invs chan *sortie.Invocation }

func (l heldLauncher) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	l.invs <- inv
	return sortie.Ref{Provider: "test", ID: "held", RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// A run cancelled while claimed, which then stops and is deleted before
// its cancel timeout, leaves nothing for the timeout to do: it logs no
// warning when it finds the run gone.
func TestCancelTimeoutOfADeletedRun(t *testing.T) {
	ctx := t.Context()
	logs := &logbuf.Buffer{}
	cp := memory.New()
	l := heldLauncher{invs: make(chan *sortie.Invocation, 1)}
	e := sortie.NewEngine(cp, l, probeAgent, &sortie.EngineOptions{
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(func() { e.Close(); cp.Close() })
	// The timeout must not pass before the test has finished and deleted
	// the run (a few in-memory writes): 5 s leaves a loaded machine room.
	run, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Policy: sortie.Policy{HeartbeatMs: 1000, LeaseMs: 60_000, CancelTimeoutMs: 5000}})
	if err != nil {
		t.Fatal(err)
	}
	var inv *sortie.Invocation
	select {
	case inv = <-l.invs:
	case <-time.After(20 * time.Second):
		t.Fatal("the attempt was not launched")
	}
	now := time.Now().UnixMilli()
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: inv.Attempt, LaunchID: inv.LaunchID, NowMs: now}); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if _, err := e.Cancel(ctx, run.ID, "test"); err != nil {
		t.Fatalf("Cancel = %v", err)
	}
	if _, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: inv.Attempt, LaunchID: inv.LaunchID,
		Outcome: sortie.Outcome{Result: json.RawMessage(`1`)}, NowMs: time.Now().UnixMilli()}); err != nil {
		t.Fatalf("Finish = %v", err)
	}
	if err := e.Delete(ctx, run.ID); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	testwait.UntilReport(t, "the cancel timeout to find the run deleted", 30*time.Second, func() (bool, string) {
		return strings.Contains(logs.String(), "cancel timeout: the run was deleted"), logs.String()
	})
	if got := logs.String(); strings.Contains(got, "level=WARN") {
		t.Errorf("the engine warned about a deleted run:\n%s", got)
	}
}
