package main

import (
	"strings"
	"testing"
)

// A --after cursor past the run's attempt is refused the same way by the
// embedded engine and over --host: exit 2, an error naming --after (not
// the Last-Event-ID the HTTP client sends on a reconnect).
func TestFollowAfterPastTheRun(t *testing.T) {
	c := newCLI(t)
	url, _ := startServe(t, c, nil)
	r := c.run("run", "probe", "--var", "events=1")
	if r.code != 0 {
		t.Fatalf("sortie run probe: exit %d: %s", r.code, r.stderr)
	}
	m := submittedRE.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("sortie run stderr %q names no run ID", r.stderr)
	}
	want := "--after: cursor 99.99 is past the run's attempt 1"
	remote := &cli{t: t, state: t.TempDir()}
	for name, r := range map[string]result{
		"embedded": c.run("follow", m[1], "--after", "99.99"),
		"--host":   runCmd(t, remote.cmd("--host", url, "follow", m[1], "--after", "99.99")),
	} {
		if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "Last-Event-ID") {
			t.Errorf("%s: sortie follow --after 99.99: exit %d, stderr %q; want exit 2 saying %q", name, r.code, r.stderr, want)
		}
	}
	// The run's last cursor is not past it: the final run, exit 0.
	if r := runCmd(t, remote.cmd("--host", url, "follow", m[1], "--after", "1.99")); r.code != 0 || !strings.Contains(r.stdout, "completed") {
		t.Errorf("sortie --host follow --after 1.99: exit %d, stdout %q; want the completed run", r.code, r.stdout)
	}
}
