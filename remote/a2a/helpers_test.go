package a2a_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/remote"
	ra2a "github.com/sortie-run/sortie/remote/a2a"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// newAgent serves a Sortie host over A2A (server/a2a, on a2a-go's server
// side) on loopback and returns its URL and a transport.
func newAgent(t *testing.T) (string, *ra2a.Transport, *remotetest.Host) {
	t.Helper()
	return newAgentWith(t, nil)
}

// newAgentWith is newAgent with the host's options.
func newAgentWith(t *testing.T, opts *remotetest.Options) (string, *ra2a.Transport, *remotetest.Host) {
	t.Helper()
	h := remotetest.New(t, opts)
	handler, err := a2aserver.New(h.Engine, slices.Collect(maps.Values(h.Agents)), &a2aserver.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("a2aserver.New = %v", err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	tr := ra2a.New(&ra2a.Options{PollInterval: 10 * time.Millisecond, Destinations: destination.LoopbackHTTP()})
	t.Cleanup(func() { _ = tr.Close() })
	return srv.URL, tr, h
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func call(url, data string) *remote.CallRequest {
	return &remote.CallRequest{AgentURL: url, Skill: "probe", Message: remote.Message{Data: json.RawMessage(data)}}
}

func jsonEq(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s = %s, not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s", want)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}
