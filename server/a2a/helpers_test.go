package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// rig is a Sortie host serving A2A on a loopback HTTP server, and an
// a2a-go client of it.
type rig struct {
	host    *remotetest.Host
	handler *a2aserver.Handler
	srv     *httptest.Server
	client  *a2aclient.Client
}

func manifests(a sortie.Agents) []sortie.Manifest {
	return slices.Collect(maps.Values(a))
}

func newRig(t *testing.T, opts *a2aserver.Options, hostOpts *remotetest.Options) *rig {
	t.Helper()
	h := remotetest.New(t, hostOpts)
	return serve(t, h, h.Engine, opts)
}

// serve serves engine of host h over A2A on loopback, through the
// middleware wrap when not nil.
func serve(t *testing.T, h *remotetest.Host, engine sortie.ExecutionEngine, opts *a2aserver.Options) *rig {
	return serveWrapped(t, h, engine, opts, nil)
}

func serveWrapped(t *testing.T, h *remotetest.Host, engine sortie.ExecutionEngine, opts *a2aserver.Options, wrap func(http.Handler) http.Handler) *rig {
	t.Helper()
	if opts == nil {
		opts = &a2aserver.Options{}
	}
	opts.PollInterval = 10 * time.Millisecond
	handler, err := a2aserver.New(engine, manifests(h.Agents), opts)
	if err != nil {
		t.Fatalf("a2a.New = %v", err)
	}
	var served http.Handler = handler
	if wrap != nil {
		served = wrap(handler)
	}
	srv := httptest.NewServer(served)
	t.Cleanup(srv.Close)
	return &rig{host: h, handler: handler, srv: srv, client: newClient(t, srv.URL)}
}

// newClient resolves the agent card at base and returns a client of it.
func newClient(t *testing.T, base string, opts ...a2aclient.FactoryOption) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(testCtx(t), base)
	if err != nil {
		t.Fatalf("resolve the agent card at %s: %v", base, err)
	}
	c, err := a2aclient.NewFromCard(testCtx(t), card, opts...)
	if err != nil {
		t.Fatalf("a2aclient.NewFromCard = %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// msg is a user message with a data part (a JSON object) for skill ("" for
// none).
func msg(t *testing.T, data, skill string) *a2a.Message {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("bad test data %s: %v", data, err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(v))
	if skill != "" {
		m.Metadata = map[string]any{a2aserver.SkillKey: skill}
	}
	return m
}

func send(t *testing.T, r *rig, m *a2a.Message, immediately bool) *a2a.Task {
	t.Helper()
	req := &a2a.SendMessageRequest{Message: m}
	if immediately {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	res, err := r.client.SendMessage(testCtx(t), req)
	if err != nil {
		t.Fatalf("SendMessage = %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage returned %T, want *a2a.Task", res)
	}
	return task
}

// resultOf returns the JSON of a task's result artifact.
func resultOf(t *testing.T, task *a2a.Task) string {
	t.Helper()
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		t.Fatalf("task %s (%s) artifacts %+v, want one result artifact", task.ID, task.Status.State, task.Artifacts)
	}
	p := task.Artifacts[0].Parts[0]
	var v any = p.Data()
	if p.Text() != "" {
		v = p.Text()
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonEq fails t unless got and want are the same JSON value.
func jsonEq(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s = %s, not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s", want)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// wantInvalid fails t unless err is an A2A invalid-params error naming
// field.
func wantInvalid(t *testing.T, call string, err error, field string) {
	t.Helper()
	if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "invalid "+field+":") {
		t.Errorf("%s = %v, want invalid params naming %s", call, err, field)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
}
