package host_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/server/httpengine"
)

// A host built from a Config alone serves a run end to end over HTTP on
// loopback: submitted with the API token, its events followed live, its
// result read back; the agent card lists the agents; a request without
// the token is refused; and another host over the same state directory
// (a restart) has the run.
func TestServeRunsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	s := serve(t, host.Config{StateDir: dir, InProcess: true}, nil)
	run := probe(t, s.client, `{"events": 3, "output": {"answer": 42}}`)
	var events int
	for u, err := range s.client.Follow(t.Context(), run.ID, sortie.Cursor{}) {
		if err != nil {
			t.Fatalf("Follow(%s) = %v", run.ID, err)
		}
		if u.Event != nil && u.Event.Kind == "progress" {
			events++
		}
		if u.Run != nil {
			run = u.Run
		}
	}
	if run.State != sortie.StateCompleted || string(run.Result) != `{"answer":42}` || events != 3 {
		t.Fatalf("followed run = %s %s after %d progress events; want completed with {\"answer\":42} after 3", run.State, run.Result, events)
	}
	resp, err := http.Get(s.url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	card, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"probe"`, `"textstats"`, `"scheme":"Bearer"`} {
		if !strings.Contains(string(card), want) {
			t.Errorf("agent card %s lacks %s", card, want)
		}
	}
	anon, err := httpengine.New(s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Get(t.Context(), run.ID); !errors.Is(err, httpengine.ErrUnauthenticated) {
		t.Errorf("Get without the API token = %v, want ErrUnauthenticated", err)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("Serve = %v, want nil after a clean shutdown", err)
	}
	s.h.Close()
	again := newHost(t, host.Config{StateDir: dir, InProcess: true})
	if got, err := again.Client().Get(t.Context(), run.ID); err != nil || got.State != sortie.StateCompleted {
		t.Fatalf("Get(%s) on a host restarted over %s = %v, %v; want the completed run", run.ID, dir, got, err)
	}
}

// Serve ends live event streams and returns nil once its context ends,
// well within the shutdown grace, while a run is still live.
func TestServeDrainsOnCancel(t *testing.T) {
	s := serve(t, host.Config{StateDir: t.TempDir(), InProcess: true,
		API: &host.API{Tokens: []string{testToken}, ShutdownGrace: time.Minute}}, nil)
	run := probe(t, s.client, `{"events": 1, "sleep_ms": 60000}`)
	defer s.h.Client().Cancel(context.Background(), run.ID, "test over")
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/runs/"+string(run.ID)+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET events as SSE = %v, %v; want 200", resp, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "progress") {
	}
	ended := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(ended)
	}()
	if err := s.stop(); err != nil {
		t.Fatalf("Serve = %v after its context ended, want nil", err)
	}
	select {
	case <-ended:
	case <-time.After(waitLong):
		t.Fatal("the event stream of a live run did not end when the host drained")
	}
	if got, err := s.h.Client().Get(t.Context(), run.ID); err != nil || got.State.Terminal() {
		t.Errorf("Get(%s) after the drain = %v, %v; want it live: draining the API ends no run", run.ID, got, err)
	}
}

// Without Config.API the host has no server.
func TestServeNeedsAPI(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true})
	if err := h.Serve(t.Context(), listen(t)); err == nil || h.Handler() != nil {
		t.Errorf("Serve, Handler of a host without Config.API = %v, %v; want an error and nil", err, h.Handler())
	}
	for _, name := range []string{host.WebhookKeysFile, host.CallbackKeysFile, host.LocalKeyFile} {
		if _, err := os.Stat(filepath.Join(h.StateDir(), name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Stat(%s) = %v, want no key file on a host that does not serve", name, err)
		}
	}
}

// API.UI serves the web UI at /ui/ with its policy; without it /ui/ is
// not a route.
func TestServeUI(t *testing.T) {
	for _, on := range []bool{true, false} {
		s := serve(t, host.Config{StateDir: t.TempDir(), InProcess: true, API: &host.API{Tokens: []string{testToken}, UI: on}}, nil)
		resp, err := http.Get(s.url + "/ui/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if got := resp.StatusCode == http.StatusOK && strings.Contains(csp, "script-src 'self'"); got != on {
			t.Errorf("API.UI %v: GET /ui/ = %d, CSP %q; want the UI served: %v", on, resp.StatusCode, csp, on)
		}
	}
}
