package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie/remote"
	ra2a "github.com/sortie-run/sortie/remote/a2a"
)

// TestServeSpeaksA2A: `sortie serve` publishes its agents as skills in the
// agent card and runs an A2A message as a run; another serve process over
// the same state (a restarted host) still answers GetTask for it.
func TestServeSpeaksA2A(t *testing.T) {
	c := newCLI(t)
	url, _ := startServe(t, c, nil)
	resp, err := http.Get(url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	card, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, skill := range []string{`"textstats"`, `"probe"`} {
		if !strings.Contains(string(card), skill) {
			t.Fatalf("agent card %s lacks skill %s", card, skill)
		}
	}
	tr := ra2a.New(nil)
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := tr.Send(ctx, &remote.CallRequest{AgentURL: url, Skill: "probe",
		Message: remote.Message{Data: json.RawMessage(`{"events": 2, "output": {"answer": 42}}`)}})
	if err != nil || string(res.Result) != `{"answer":42}` || res.TaskID == "" {
		t.Fatalf("A2A Send to skill probe = %+v, %v; want result {\"answer\":42} and a task ID", res, err)
	}
	other, _ := startServe(t, c, nil) // a second host process over the same state
	snap, err := tr.GetTask(ctx, other, res.TaskID, 10)
	if err != nil || snap.Status.State != remote.StateCompleted {
		t.Fatalf("GetTask(%s) from another host process = %+v, %v; want completed", res.TaskID, snap, err)
	}
}
