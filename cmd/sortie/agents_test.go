package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

// writeAgent writes an agent directory holding agent.json with body.
func writeAgent(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// greetAgent is a probe declaring a required string variable.
const greetAgent = `{"name": "greet", "runtime": "go:probe", "description": "greets by name",
  "input_schema": {"type": "object", "description": "who to greet", "required": ["name"],
    "properties": {"name": {"type": "string", "maxLength": 40, "description": "the name to greet"},
      "events": {"type": "integer", "minimum": 0, "maximum": 10}}}}`

// sortie agents lists the built-in agents; describe shows one's policy
// defaults and what its variables do; a variable of the wrong type is
// refused at submit naming the field (exit 2) with nothing stored; a bad
// schema in agent.json is refused naming agent.input_schema.
func TestAgentsDescribeAndInputSchema(t *testing.T) {
	c := newCLI(t)
	r := c.run("agents")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "NAME") || !strings.Contains(r.stdout, "textstats  go:textstats  Word and sentence") || !strings.Contains(r.stdout, "probe ") {
		t.Fatalf("sortie agents: exit %d\n%s%s; want a table of probe and textstats", r.code, r.stdout, r.stderr)
	}
	r = c.run("agents", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var first sortie.Manifest
	if r.code != 0 || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Name != "probe" || len(first.InputSchema) == 0 {
		t.Fatalf("sortie agents --json: exit %d\n%s; want probe then textstats, with input schemas", r.code, r.stdout)
	}
	r = c.run("describe", "textstats")
	for _, want := range []string{"runtime      go:textstats", `"max_attempts":3`, "top       integer  1..100; default 10", "(other variables are refused)"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("sortie describe textstats: exit %d, stdout\n%s\nwant %q", r.code, r.stdout, want)
		}
	}
	dir := writeAgent(t, greetAgent)
	r = c.run("describe", dir, "--json")
	var m sortie.Manifest
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m.Name != "greet" || m.Policy.LeaseMs != 15000 || !strings.Contains(string(m.InputSchema), "who to greet") {
		t.Fatalf("sortie describe DIR --json: exit %d %q; want greet with its policy defaults and schema", r.code, r.stdout)
	}
	if r = c.run("describe", "nope"); r.code != 2 || !strings.Contains(r.stderr, `"nope"`) {
		t.Errorf("sortie describe nope: exit %d %q; want exit 2 naming it", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"submit", "textstats", "--var", `top="many"`},
		{"submit", dir, "--var", "events=1"},
		{"run", dir, "--in-process", "--var", "name=7"},
	} {
		r = c.run(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "invalid variables.") {
			t.Errorf("sortie %v: exit %d %q; want exit 2 naming the variable", args, r.code, r.stderr)
		}
	}
	if n := c.runCount(); n != 0 {
		t.Fatalf("refused submissions stored %d runs", n)
	}
	if r = c.run("run", dir, "--in-process", "--var", "name=Newton", "--var", "events=1"); r.code != 0 {
		t.Fatalf("sortie run greet with valid variables: exit %d %q", r.code, r.stderr)
	}
	bad := writeAgent(t, `{"name": "bad", "runtime": "go:probe", "input_schema": {"type": "integr"}}`)
	for _, args := range [][]string{{"describe", bad}, {"submit", bad}, {"serve", "--listen", "127.0.0.1:0", "--agent", bad}} {
		if r = c.run(args...); r.code != 2 || !strings.Contains(r.stderr, "agent.input_schema") {
			t.Errorf("sortie %v with a bad input schema: exit %d %q; want exit 2 naming agent.input_schema", args, r.code, r.stderr)
		}
	}
}

// Against a serve with an --agent directory, agents and describe read the
// host's API, and a wrong variable is refused there (HTTP 400, exit 2).
func TestAgentsOverHost(t *testing.T) {
	c := newCLI(t)
	token := "test-token-agents-0123456789"
	dir := writeAgent(t, greetAgent)
	url := startServeCmd(t, c, []string{"SORTIE_API_TOKENS=" + token}, "--in-process", "--agent", dir)
	remote := &cli{t: t, state: t.TempDir()}
	withToken := func(args ...string) result {
		cmd := remote.cmd(append([]string{"--host", url}, args...)...)
		cmd.Env = append(cmd.Env, "SORTIE_TOKEN="+token)
		return runCmd(t, cmd)
	}
	r := withToken("agents")
	if r.code != 0 || !strings.Contains(r.stdout, "greet      go:probe      greets by name") || !strings.Contains(r.stdout, "textstats") {
		t.Fatalf("sortie --host agents: exit %d\n%s%s; want greet, probe and textstats", r.code, r.stdout, r.stderr)
	}
	r = withToken("describe", "greet")
	if r.code != 0 || !strings.Contains(r.stdout, "variables    who to greet") || !strings.Contains(r.stdout, "name    string   required; at most 40 characters  the name to greet") {
		t.Fatalf("sortie --host describe greet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = withToken("describe", "nope"); r.code != 2 {
		t.Errorf("sortie --host describe nope: exit %d %q, want 2", r.code, r.stderr)
	}
	r = withToken("submit", "greet", "--var", "name=[1]")
	if r.code != 2 || !strings.Contains(r.stderr, "variables.name") {
		t.Fatalf("sortie --host submit greet name=[1]: exit %d %q; want exit 2 naming variables.name", r.code, r.stderr)
	}
	if r = withToken("list", "--json"); r.code != 0 || strings.Contains(r.stdout, `"greet"`) {
		t.Fatalf("sortie --host list after the refusal: exit %d %q; want no run", r.code, r.stdout)
	}
	// The A2A card's skill says what the variables do.
	resp, err := http.Get(url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	card, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(card), "greets by name Variables (message data): who to greet") {
		t.Errorf("agent card %s: want greet's skill to describe its variables", card)
	}
}
