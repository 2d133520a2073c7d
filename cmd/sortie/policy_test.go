package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
)

// modeledAgent is an agent directory whose manifest names the profile
// "primary" (openai/gpt-4o).
func modeledAgent(t *testing.T) string {
	return agentDir(t, `{"name": "modeled", "runtime": "go:probe",
		"models": {"primary": {"provider": "openai", "model": "gpt-4o"}}}`)
}

// policyResult decodes a completed run's probe.PolicyResult.
func policyResult(t *testing.T, r result) (*probe.PolicyResult, []sortie.Event) {
	t.Helper()
	events, final := jsonLines(t, r.stdout)
	if r.code != 0 || final == nil || final.State != sortie.StateCompleted {
		t.Fatalf("run: exit %d, final %+v, stderr %s; want completed", r.code, final, r.stderr)
	}
	var out probe.PolicyResult
	if err := json.Unmarshal(final.Result, &out); err != nil {
		t.Fatalf("result %s: %v", final.Result, err)
	}
	return &out, events
}

// TestModelOutsideAllowlistRefusedAtSubmit: a run whose manifest names a
// model outside --allowed-models is refused at submit (exit 2, naming the
// field and the rule, nothing stored); inside it, the worker process
// resolves the profile, and refuses a bare model when profiles are
// required.
func TestModelOutsideAllowlistRefusedAtSubmit(t *testing.T) {
	c := newCLI(t)
	dir := modeledAgent(t)
	r := c.run("run", dir, "--allowed-models", "openai/gpt-5.6")
	if r.code != 2 || !strings.Contains(r.stderr, "agent.models.primary.model") || !strings.Contains(r.stderr, "allowed_models") {
		t.Fatalf("run outside the allowlist: exit %d, stderr %q; want exit 2 naming agent.models.primary.model and allowed_models", r.code, r.stderr)
	}
	if runs := c.list(); len(runs) != 0 {
		t.Fatalf("a refused submission stored %d runs", len(runs))
	}
	out, _ := policyResult(t, c.run("run", dir, "--allowed-models", "openai/gpt-4o", "--var", "model=primary", "--json"))
	if out.Model == nil || out.Model.ID() != "openai/gpt-4o" {
		t.Errorf("Call.Model(primary) = %+v, want openai/gpt-4o", out.Model)
	}
	r = c.run("run", dir, "--allowed-models", "openai/*", "--require-model-profiles", "--var", "model=openai/gpt-4o")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "require_profiles") {
		t.Errorf("bare model with --require-model-profiles: exit %d, %q; want exit 1 naming require_profiles", r.code, r.stdout+r.stderr)
	}
}

// TestServeRefusesModelAtSubmit: over HTTP, a submission whose model
// profile is outside the host's allowlist is answered 400 naming the
// field; nothing is stored.
func TestServeRefusesModelAtSubmit(t *testing.T) {
	c := newCLI(t)
	url, _ := startServe(t, c, nil, "--allowed-models", "openai/gpt-5.6")
	body := `{"agent": "probe", "models": {"fast": {"provider": "anthropic", "model": "claude-x"}}}`
	resp, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "models.fast.model") {
		t.Fatalf("POST /v1/runs with a refused model: %d %s; want 400 naming models.fast.model", resp.StatusCode, b)
	}
	list, err := http.Get(url + "/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer list.Body.Close()
	var page sortie.RunPage
	if err := json.NewDecoder(list.Body).Decode(&page); err != nil || len(page.Runs) != 0 {
		t.Fatalf("GET /v1/runs after a refused submission: %d runs (%v), want none", len(page.Runs), err)
	}
}

// TestRefusedToolCall: a tool outside --allow-tool is refused, the
// handler gets the refusal as an error it handles, and the decision is an
// event naming the tool, never its arguments; an allowed tool is
// authorized. On warm worker processes (the session protocol asks the
// host) and on a worker process per attempt (its own hooks, from the
// environment).
func TestRefusedToolCall(t *testing.T) {
	const secretArg = "arg-secret-0b5e1c7d"
	for _, mode := range [][]string{nil, {"--process-per-attempt"}} {
		c := newCLI(t)
		args := append([]string{"run", "probe", "--json", "--allow-tool", "search", "--var", "events=0",
			"--var", `tool_args={"token":"` + secretArg + `"}`}, mode...)
		out, events := policyResult(t, c.run(append(args, "--var", "tool=delete_all")...))
		if out.Tool != "refused" || !strings.Contains(out.ToolError, `tool "delete_all" refused`) {
			t.Errorf("%v: refused tool: result %+v, want refused with the tool named", mode, out)
		}
		checkDecision(t, events, functions.EventToolRefused, "delete_all", "refused")
		for _, e := range events {
			if strings.Contains(string(e.Data)+e.Text, secretArg) {
				t.Errorf("%v: event %s carries the tool's arguments: %s", mode, e.Kind, e.Data)
			}
		}
		out, events = policyResult(t, c.run(append(args, "--var", "tool=search")...))
		if out.Tool != "allowed" {
			t.Errorf("%v: allowed tool: result %+v, want allowed", mode, out)
		}
		checkDecision(t, events, functions.EventToolAuthorized, "search", "allowed")
	}
}

// checkDecision fails unless exactly one event of kind names the tool
// and the decision, and nothing else.
func checkDecision(t *testing.T, events []sortie.Event, kind, name, decision string) {
	t.Helper()
	var got []map[string]string
	for _, e := range events {
		if e.Kind == kind {
			var d map[string]string
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("event %s data %s: %v", kind, e.Data, err)
			}
			got = append(got, d)
		}
	}
	want := map[string]string{"name": name, "decision": decision}
	if len(got) != 1 || len(got[0]) != 2 || got[0]["name"] != name || got[0]["decision"] != decision {
		t.Errorf("%s events = %v, want one %v", kind, got, want)
	}
}
