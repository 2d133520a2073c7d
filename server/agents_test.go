package server_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/wire"
)

// get sends a GET of path with the token (when not empty) and decodes
// the answer into out.
func get(t *testing.T, r *rig, path, token string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.http.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: decode %q: %v", path, b, err)
	}
	return resp.StatusCode
}

// A variable of the wrong type is answered 400 naming the field, before
// anything is stored; valid variables run.
func TestSubmitInputSchemaOverHTTP(t *testing.T) {
	r := newRig(t, nil)
	var eb wire.ErrorBody
	if got := post(t, r, "/v1/runs", `{"agent":"typed","variables":{"events":"3"}}`, map[string]string{"Idempotency-Key": "k1"}, &eb); got != http.StatusBadRequest ||
		eb.Error.Code != wire.CodeInvalidArgument || eb.Error.Field != "variables.events" || !strings.Contains(eb.Error.Message, "want integer") {
		t.Fatalf("POST /v1/runs {events:\"3\"} = %d %+v; want 400 invalid_argument naming variables.events", got, eb)
	}
	_, err := r.remote.Submit(t.Context(), &sortie.SubmitRequest{Agent: "typed", Variables: json.RawMessage(`{"steps":101}`)})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "variables.steps" {
		t.Errorf("httpengine Submit {steps:101} = %v; want a ValidationError naming variables.steps", err)
	}
	if n := r.countRuns(t); n != 0 {
		t.Fatalf("refused submissions stored %d runs", n)
	}
	run, err := r.remote.Submit(t.Context(), &sortie.SubmitRequest{Agent: "typed", Variables: json.RawMessage(`{"events":1}`)})
	if err != nil {
		t.Fatalf("Submit(valid variables) = %v", err)
	}
	if final := r.final(t, run.ID); final.State != sortie.StateCompleted {
		t.Fatalf("run with valid variables ended %s (%+v)", final.State, final.Error)
	}
}

// GET /v1/agents lists the host's agents and GET /v1/agents/{name}
// describes one with its policy defaults and input schema, behind the
// API's authentication; the Go client reads the same.
func TestAgentsRoutes(t *testing.T) {
	const token = "agents-route-token-0123456789"
	r := newRig(t, &server.Options{APITokens: []string{token}})
	var eb wire.ErrorBody
	if got := get(t, r, "/v1/agents", "", &eb); got != http.StatusUnauthorized {
		t.Errorf("GET /v1/agents without a token = %d, want 401", got)
	}
	if got := get(t, r, "/v1/agents/typed", "", &eb); got != http.StatusUnauthorized {
		t.Errorf("GET /v1/agents/typed without a token = %d, want 401", got)
	}
	var list wire.AgentList
	if got := get(t, r, "/v1/agents", token, &list); got != http.StatusOK || len(list.Agents) != 2 ||
		list.Agents[0].Name != "probe" || list.Agents[1].Name != "typed" {
		t.Fatalf("GET /v1/agents = %d %+v; want probe and typed", got, list)
	}
	var m sortie.Manifest
	if got := get(t, r, "/v1/agents/typed", token, &m); got != http.StatusOK || m.Policy.MaxAttempts != 3 ||
		m.Policy.AttemptTimeoutMs != 900000 || !jsonEqual(m.InputSchema, probe.InputSchema) {
		t.Fatalf("GET /v1/agents/typed = %d %+v; want the manifest with policy defaults and the probe's schema", got, m)
	}
	if got := get(t, r, "/v1/agents/nope", token, &eb); got != http.StatusNotFound || eb.Error.Code != wire.CodeNotFound || !strings.Contains(eb.Error.Message, "nope") {
		t.Errorf("GET /v1/agents/nope = %d %+v; want 404 not_found naming it", got, eb)
	}
	if got := get(t, r, "/v1/agents/Bad%20Name", token, &eb); got != http.StatusBadRequest || eb.Error.Field != "agent" {
		t.Errorf("GET /v1/agents/Bad%%20Name = %d %+v; want 400 naming agent", got, eb)
	}
	if got := get(t, r, "/v1/agents?x=1", token, &eb); got != http.StatusBadRequest || eb.Error.Field != "x" {
		t.Errorf("GET /v1/agents?x=1 = %d %+v; want 400 naming the unknown parameter", got, eb)
	}
	agents, err := r.remote.ListAgents(t.Context())
	if err != nil || len(agents) != 2 {
		t.Fatalf("httpengine ListAgents = %+v, %v", agents, err)
	}
	got, err := r.remote.DescribeAgent(t.Context(), "typed")
	if err != nil || got.Name != "typed" || !jsonEqual(got.InputSchema, probe.InputSchema) {
		t.Fatalf("httpengine DescribeAgent(typed) = %+v, %v", got, err)
	}
	if _, err := r.remote.DescribeAgent(t.Context(), "nope"); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("httpengine DescribeAgent(nope) = %v, want ErrNotFound", err)
	}
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ab, _ := json.Marshal(x)
	bb, _ := json.Marshal(y)
	return string(ab) == string(bb)
}
