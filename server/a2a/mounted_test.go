package a2a_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/server"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// The handler is a [server.Drainer], so the host's shutdown ends its streams.
var _ server.Drainer = (*a2aserver.Handler)(nil)

// TestMountedInTheHostServer serves the handler the way `sortie serve`
// does: as server.Options.A2A of the host's API, behind its bearer tokens,
// logging and tracing middleware.
func TestMountedInTheHostServer(t *testing.T) {
	const token = "a2a-test-token-0123456789"
	h := remotetest.New(t, nil)
	handler, err := a2aserver.New(h.Engine, manifests(h.Agents), &a2aserver.Options{DefaultAgent: "probe"})
	if err != nil {
		t.Fatalf("a2a.New = %v", err)
	}
	api, err := server.New(server.Options{Engine: h.Engine, A2A: handler, APITokens: []string{token}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("server.New = %v", err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	c := newClient(t, srv.URL, a2aclient.WithJSONRPCTransport(&http.Client{Transport: bearer{token}}))
	var got []string
	for ev, err := range c.SendStreamingMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":2}`, "")}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage through the host server = %v", err)
		}
		got = append(got, describe(ev))
	}
	if len(got) != 5 || got[len(got)-1] != "status TASK_STATE_COMPLETED <nil>" {
		t.Errorf("stream through the host server = %v, want 5 events ending completed", got)
	}
	// The card answers without a token: clients read it to learn how to
	// authenticate. The calls it describes need one.
	resp, err := http.Get(srv.URL + a2aserver.CardPath)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s without a token = %v %v, want 200", a2aserver.CardPath, resp, err)
	}
	resp.Body.Close()
	anon := newClient(t, srv.URL)
	_, err = anon.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":0}`, "")})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("SendMessage without the bearer token = %v, want 401", err)
	}
}
