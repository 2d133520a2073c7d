package main

// Rough edges a first hour with the CLI meets: hints, --version, push
// configuration IDs.

import (
	"runtime"
	"strings"
	"testing"
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
