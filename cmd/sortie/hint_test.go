package main

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
