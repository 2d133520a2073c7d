package main

// Rough edges a first hour with the CLI meets: hints, --version, push
// configuration IDs.

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// The commands printed as hints (follow on after Ctrl-C, resume, the next
// page) reach the same runs: they keep a non-default --state-dir, quoted
// for the shell, and the host or table.
func TestHintsKeepWhereTheRunsAre(t *testing.T) {
	for _, tc := range []struct {
		g    globals
		want string
	}{
		{globals{stateDir: defaultStateDir}, ""},
		{globals{stateDir: "/tmp/runs"}, " --state-dir /tmp/runs"},
		{globals{stateDir: "/tmp/my runs/it's"}, ` --state-dir '/tmp/my runs/it'\''s'`},
		{globals{stateDir: "/tmp/runs", hostURL: "http://127.0.0.1:7780", tokenFile: "tok"}, " --host http://127.0.0.1:7780 --token-file tok"},
	} {
		if got := tc.g.hostArgs(); got != tc.want {
			t.Errorf("hostArgs(state %q, host %q) = %q, want %q", tc.g.stateDir, tc.g.hostURL, got, tc.want)
		}
	}
}

// --version says more than "devel": the link-time version when set, else
// the Go version (and the commit when the build stamped one).
func TestVersion(t *testing.T) {
	if v := version(); !strings.Contains(v, runtime.Version()) {
		t.Errorf("version() = %q, want it to name %s", v, runtime.Version())
	}
	buildVersion = "v1.2.3"
	defer func() { buildVersion = "" }()
	if v := version(); v != "v1.2.3" {
		t.Errorf("version() with buildVersion set = %q, want v1.2.3", v)
	}
}

// push get and delete take the configuration ID as set does (--id,
// default "default") or as an argument; push set without --host says
// where it stored the configuration and who delivers it.
func TestPushConfigIDs(t *testing.T) {
	c := newCLI(t)
	id := string(c.submit("probe", "--var", "events=0"))
	allow := []string{"--allow-destination", "hooks.example.com"}
	set := c.run(append([]string{"push", "set", id, "--id", "a", "--url", "https://hooks.example.com/a"}, allow...)...)
	if set.code != 0 || !strings.Contains(set.stderr, "stored in "+c.state) {
		t.Fatalf("push set: exit %d, stderr %q; want 0 saying where it is stored", set.code, set.stderr)
	}
	for _, args := range [][]string{{"--id", "a"}, {"a"}, {"a", "--id", "a"}} {
		if r := c.run(append([]string{"push", "get", id}, args...)...); r.code != 0 || !strings.Contains(r.stdout, "https://hooks.example.com/a") {
			t.Errorf("push get %s %v: exit %d, %q", id, args, r.code, r.stdout+r.stderr)
		}
	}
	if r := c.run("push", "get", id, "a", "--id", "b"); r.code != 2 {
		t.Errorf("push get with two different IDs: exit %d, want 2", r.code)
	}
	if r := c.run("push", "delete", id, "--id", "a"); r.code != 0 {
		t.Errorf("push delete --id a: exit %d: %s", r.code, r.stderr)
	}
	if r := c.run("push", "get", id, "a"); r.code == 0 {
		t.Errorf("push get after delete: exit 0, want an error")
	}
}

// The files the README's usage lines name exist and work as it says.
func TestQuickstartFiles(t *testing.T) {
	c := newCLI(t)
	w := c.cmd("worker", "--report", "stdout")
	in, err := os.Open("../../examples/quickstart/invocation.json")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	w.Stdin = in
	out, err := w.Output()
	if err != nil || !strings.Contains(string(out), `{"result":{"output":{"hello":"worker"}}}`) {
		t.Errorf("sortie worker --report stdout < invocation.json: %v\n%s", err, out)
	}
	id := c.submit("probe", "--vars-file", "examples/quickstart/vars.json")
	waitFor(t, "the run of vars.json", waitLong, func() bool { return c.get(id).State.Terminal() })
	if run := c.get(id); run.State != sortie.StateCompleted || !strings.Contains(string(run.Result), "from vars.json") {
		t.Errorf("run of vars.json: %s %s, want completed with its output", run.State, run.Result)
	}
	r := c.run("run", "probe", "--config-env", "API_TOKEN", "--config-file", "examples/quickstart/secrets.json")
	if r.code != 0 {
		t.Errorf("run with secrets.json: exit %d: %s", r.code, r.stderr)
	}
}

// --policy fields given as 0 (which mean "the default") and flags that
// disagree with --policy are usage errors naming the fields, not silently
// resolved.
func TestPolicyFlagsDisagreeLoudly(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", `{"max_attempts":0}`}, "max_attempts is 0"},
		{[]string{"--policy", `{"heartbeat_ms":0,"lease_ms":3000}`}, "heartbeat_ms is 0"},
		{[]string{"--policy", `{"max_attempts":5}`, "--max-attempts", "2"}, "--max-attempts 2 and --policy max_attempts 5 disagree"},
		{[]string{"--policy", `{"max_cost_nano_usd":1000}`, "--max-cost", "0.05"}, "disagree"},
	} {
		r := c.run(append([]string{"submit", "probe"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("submit probe %v: exit %d, %q; want 2 saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if r := c.run("submit", "probe", "--var", "events=0", "--policy", `{"max_attempts":2}`, "--max-attempts", "2"); r.code != 0 {
		t.Errorf("submit with agreeing --policy and --max-attempts: exit %d: %s", r.code, r.stderr)
	}
}

// An error that is an outcome of the contract (an unknown run, a reused
// idempotency key) reads the same on every backend: no "sqlite:" prefix.
func TestContractErrorsNameNoBackend(t *testing.T) {
	c := newCLI(t)
	c.submit("probe", "--idempotency-key", "k1", "--var", "events=0")
	for _, args := range [][]string{
		{"get", string(sortie.NewRunID(time.Now()))},
		{"submit", "probe", "--idempotency-key", "k1", "--var", "events=1"},
	} {
		r := c.run(args...)
		if r.code != 2 || strings.Contains(r.stderr, "sqlite") {
			t.Errorf("sortie %v: exit %d, %q; want 2 without the backend's name", args, r.code, r.stderr)
		}
	}
}
