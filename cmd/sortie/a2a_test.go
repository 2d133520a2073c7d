package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie/destination"
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
	tr := ra2a.New(&ra2a.Options{Destinations: destination.LoopbackHTTP()})
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

// TestServeDeliversA2APushWithToken: an A2A client's push configuration
// with a token gets A2A task notifications carrying the token, while the
// host's API never shows the token's ciphertext.
func TestServeDeliversA2APushWithToken(t *testing.T) {
	c := newCLI(t)
	url, _ := startServe(t, c, nil, "--allow-destination", "127.0.0.1", "--allow-destination-addrs", "127.0.0.1/32", "--allow-http-destinations")
	got := make(chan string, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"task"`) {
			got <- r.Header.Get("A2A-Notification-Token")
		}
	}))
	defer recv.Close()
	tr := ra2a.New(&ra2a.Options{Destinations: destination.LoopbackHTTP()})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := tr.SendTask(ctx, &remote.CallRequest{AgentURL: url, Skill: "probe",
		Message: remote.Message{Data: json.RawMessage(`{"events": 0, "sleep_ms": 300}`)}}, false)
	if err != nil {
		t.Fatalf("SendTask = %v", err)
	}
	if _, err := tr.SetPushConfig(ctx, url, snap.TaskID, "hook", remote.PushConfig{URL: recv.URL, Token: "receiver-secret-123"}); err != nil {
		t.Fatalf("SetPushConfig with a token = %v", err)
	}
	select {
	case tok := <-got:
		if tok != "receiver-secret-123" {
			t.Fatalf("A2A-Notification-Token %q, want the client's token", tok)
		}
	case <-ctx.Done():
		t.Fatal("no A2A task notification within 30 s")
	}
	r := runCmd(t, c.cmd("push", "list", snap.TaskID, "--json"))
	if r.code != 0 || strings.Contains(r.stdout, "sealed_token") || strings.Contains(r.stdout, "receiver-secret") {
		t.Fatalf("push list: exit %d, %q; want the configuration without its token", r.code, r.stdout)
	}
}
