package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

const (
	envCanary  = "cli-env-canary-41c9"
	fileCanary = "cli-file-canary-b07e"
)

// refsAgent writes an exec agent that reports whether its environment
// holds the two canaries (booleans, never the values), the runtimes
// allowlist naming it, and the configuration references allowlist.
func refsAgent(t *testing.T) (agentDir, runtimes, refs string) {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`cat >/dev/null
env=false; file=false
[ "$OPENAI_API_KEY" = %q ] && env=true
[ "$DATABASE_URL" = %q ] && file=true
printf '{"result":{"output":{"env":%%s,"file":%%s}}}\n' "$env" "$file"
`, envCanary, fileCanary)
	files := map[string]string{
		"check.sh":         script,
		"db-url":           fileCanary + "\n",
		"agent/agent.json": `{"name": "refs-sh", "version": "1", "runtime": "exec:refs-sh"}`,
		"runtimes.json":    `{"version": "sortie.runtimes/v1", "runtimes": {"refs-sh": {"command": ["/bin/sh", "./check.sh"]}}}`,
		"config-refs.json": `{"version": "sortie.configrefs/v1", "refs": {
			"openai": {"var": "OPENAI_API_KEY", "env": "HOST_OPENAI_KEY"},
			"db":     {"var": "DATABASE_URL", "file": "db-url"}}}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agent"), filepath.Join(dir, "runtimes.json"), filepath.Join(dir, "config-refs.json")
}

// `sortie run --config-ref` names references of the --config-refs
// allowlist; the worker subprocess resolves them (from the host's
// environment variable it was handed, and from the host-pinned file) and
// its exec command sees them, while the state directory never holds them.
// An unknown reference is refused before anything is stored (exit 2).
func TestRunWithConfigRefs(t *testing.T) {
	t.Setenv("HOST_OPENAI_KEY", envCanary)
	c := newCLI(t)
	agent, runtimes, refs := refsAgent(t)
	global := []string{"--runtimes", runtimes, "--config-refs", refs}
	r := c.run(append(global, "run", agent, "--json", "--config-ref", "openai", "--config-ref", "db")...)
	_, final := jsonLines(t, r.stdout)
	if r.code != 0 || final == nil || string(final.Result) != `{"env":true,"file":true}` {
		t.Fatalf("sortie run --config-ref openai --config-ref db: exit %d, final %+v\nstderr:\n%s", r.code, final, r.stderr)
	}
	if strings.Join(final.ConfigRefs, ",") != "openai,db" {
		t.Errorf("the run's config_refs = %v, want [openai db]", final.ConfigRefs)
	}
	r = c.run(append(global, "run", agent, "--config-ref", "nope")...)
	if r.code != 2 || !strings.Contains(r.stderr, "config_refs") || !strings.Contains(r.stderr, `"nope"`) {
		t.Errorf("sortie run --config-ref nope: exit %d, stderr %q; want exit 2 naming config_refs and nope", r.code, r.stderr)
	}
	if page := c.list(); len(page) != 1 {
		t.Errorf("runs after the refused submission = %d, want 1", len(page))
	}
	_ = filepath.WalkDir(c.state, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, v := range []string{envCanary, fileCanary} {
			if strings.Contains(string(b), v) {
				t.Errorf("%s holds a referenced value", p)
			}
		}
		return nil
	})
}

// list returns the runs of the CLI's state directory.
func (c *cli) list() []*sortie.Run {
	c.t.Helper()
	r := c.run("list", "--json")
	if r.code != 0 {
		c.t.Fatalf("sortie list --json: exit %d: %s", r.code, r.stderr)
	}
	var page sortie.RunPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		c.t.Fatalf("sortie list --json printed %q: %v", r.stdout, err)
	}
	return page.Runs
}
