package main

import (
	"strings"
	"testing"
)

// Text the host would store altered (invalid UTF-8, which encoding/json
// turns into U+FFFD) or that net/http cannot send (a control character in
// the Idempotency-Key header) is refused by a --host client before it
// sends anything, exit 2 naming the field, as the embedded engine refuses
// it; nothing reaches the host.
func TestHostClientRefusesTextItWouldAlter(t *testing.T) {
	c := newCLI(t)
	url, _ := startServe(t, c, nil)
	remote := &cli{t: t, state: t.TempDir()}
	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"submit", "probe", "--label", "t=\xff"}, "labels"},
		{[]string{"submit", "probe", "--label", "\xfe=x"}, "labels"},
		{[]string{"submit", "probe", "--idempotency-key", "k\x01"}, "idempotency_key"},
		{[]string{"submit", "probe", "--idempotency-key", "k\xff"}, "idempotency_key"},
		{[]string{"submit", "probe", "--context", "a\xffb"}, "context_id"},
	} {
		for name, r := range map[string]result{
			"embedded": c.run(tc.args...),
			"--host":   runCmd(t, remote.cmd(append([]string{"--host", url}, tc.args...)...)),
		} {
			if r.code != 2 || !strings.Contains(r.stderr, "invalid "+tc.field) {
				t.Errorf("%s: sortie %q: exit %d, stderr %q; want exit 2 naming %s", name, tc.args, r.code, r.stderr, tc.field)
			}
		}
	}
	if r := runCmd(t, remote.cmd("--host", url, "list", "--json")); r.code != 0 || strings.Contains(r.stdout, `"id"`) {
		t.Errorf("sortie --host list after the refusals: exit %d, stdout %q; want no run", r.code, r.stdout)
	}
}
