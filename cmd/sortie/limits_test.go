package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// An agent whose agent.json gives it a budget of 1 n$ a day: its first
// run (20 ms or more of local compute at $1 a second, however long a
// loaded machine makes it) spends it, and the next
// sortie submit is refused with exit 2, naming the agent, the budget and
// the spend.
func TestAgentBudgetRefusesSubmit(t *testing.T) {
	c := newCLI(t)
	dir := agentDir(t, `{"name":"budgeted","runtime":"go:probe","budget":{"max_cost_nano_usd":1}}`)
	id := c.submit(dir, "--var", "sleep_ms=20", "--price", "local.second=1")
	waitFor(t, "the first run completed", waitLong, func() bool { return c.get(id).State == sortie.StateCompleted })
	r := c.run("submit", dir, "--price", "local.second=1")
	if r.code != 2 || !strings.Contains(r.stderr, `agent "budgeted" spent $`) || !strings.Contains(r.stderr, "budget of $0.000000001") {
		t.Errorf("sortie submit after the budget was spent: exit %d, stdout %q, stderr %q; want exit 2 naming the agent, the spend and the budget", r.code, r.stdout, r.stderr)
	}
}

// serve's catalog reads an --agent directory's agent.json again when it
// changes: a raised concurrency limit applies without a restart, and a
// file that stops validating keeps the last good manifest.
func TestLiveAgentsReload(t *testing.T) {
	dir := agentDir(t, `{"name":"report","runtime":"go:probe","concurrency":{"limit":1}}`)
	m, err := loadManifest(filepath.Join(dir, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	l := newLiveAgents(sortie.Agents{"report": m}, []string{dir}, []sortie.Manifest{m}, nil)
	limit := func() int {
		t.Helper()
		got, err := l.Agent(context.Background(), "report")
		if err != nil || got.Concurrency == nil {
			t.Fatalf("Agent(report) = %+v, %v", got, err)
		}
		return got.Concurrency.Limit
	}
	rewrite := func(body string, mod time.Time) {
		t.Helper()
		path := filepath.Join(dir, "agent.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	if n := limit(); n != 1 {
		t.Fatalf("limit before the change = %d, want 1", n)
	}
	rewrite(`{"name":"report","runtime":"go:probe","concurrency":{"limit":4}}`, time.Now().Add(time.Hour))
	if n := limit(); n != 4 {
		t.Errorf("limit after agent.json changed to 4 = %d, want 4", n)
	}
	rewrite(`{"name":"report","runtime":"go:probe","concurrency":{"limit":0}}`, time.Now().Add(2*time.Hour))
	if n := limit(); n != 4 {
		t.Errorf("limit after agent.json became invalid = %d, want the last good 4", n)
	}
	if _, err := l.Agent(context.Background(), "no-such"); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Agent(no-such) = %v, want ErrNotFound", err)
	}
}

// A short-lived command (run, follow) launches no run but its own on the
// warm workers that end with it: a queued run of another command stays
// queued through an unrelated sortie run, and sortie follow of it admits
// it and sees it complete on its first attempt.
func TestShortLivedCommandsLaunchOnlyTheirOwnRun(t *testing.T) {
	c := newCLI(t)
	dir := agentDir(t, `{"name":"limited","runtime":"go:probe","concurrency":{"limit":1,"key":"{{.customer}}"}}`)
	first := c.submit(dir, "--var", `customer="acme"`, "--var", "sleep_ms=1500")
	queued := c.submit(dir, "--var", `customer="acme"`, "--var", "events=1")
	waitFor(t, "the first run to end", waitLong, func() bool { return c.get(first).State.Terminal() })
	if r := c.run("run", "probe", "--var", "events=1"); r.code != 0 {
		t.Fatalf("sortie run probe: exit %d, %s", r.code, r.stderr)
	}
	if run := c.get(queued); !run.Queued() {
		t.Fatalf("queued run after an unrelated sortie run = %s on attempt %d (%+v), want still queued: that command's workers end with it", run.State, run.Attempt, run.Error)
	}
	r := c.run("follow", string(queued))
	if run := c.get(queued); r.code != 0 || run.State != sortie.StateCompleted || run.Attempt != 1 {
		t.Errorf("sortie follow of the queued run: exit %d, run %s on attempt %d (%+v); want completed by attempt 1\n%s", r.code, run.State, run.Attempt, run.Error, r.stderr)
	}
}
