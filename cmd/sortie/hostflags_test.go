package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client of --host refuses every host setting given as a flag (exit 2
// naming it), and a host URL with a query or fragment naming --host
// without echoing the URL; it takes its own flags (--json, --log-level).
func TestHostRefusesHostSettings(t *testing.T) {
	c := newCLI(t)
	url, _ := startServe(t, c, nil)
	host := func(args ...string) []string { return append([]string{"--host", url}, args...) }
	var cases []usageCase
	for _, flag := range [][]string{{"--workers", "3"}, {"--worker-recycle", "2"}, {"--in-process"}, {"--state-dir", "/tmp/x"},
		{"--process-per-attempt"}, {"--reconcile-interval", "2s"}, {"--runtimes", "examples/runtimes.json"},
		{"--config-env", "API_TOKEN"}, {"--config-refs", "refs.json"}, {"--allow-destination", "api.example.com"},
		{"--allowed-models", "openai/*"}, {"--allow-tool", "search"}, {"--prices", "prices.json"}, {"--price", "local.second=1"},
		{"--cloudrun-job", "projects/p/locations/l/jobs/j"}} {
		cases = append(cases, usageCase{host(append(flag, "list")...), []string{flag[0] + " is a setting of the host", "--host"}})
	}
	cases = append(cases,
		usageCase{host("--workers", "3", "--in-process", "list"), []string{"--in-process, --workers are settings of the host"}},
		usageCase{host("--retention", "720h", "list"), []string{"--retention"}},
		usageCase{[]string{"--host", "http://127.0.0.1:1?token=s3cret", "list"}, []string{"--host", "no query"}},
		usageCase{[]string{"--host", "http://127.0.0.1:1/#frag", "list"}, []string{"--host", "no query (?...) or fragment"}},
	)
	wantUsage(t, c, cases)
	if r := runCmd(t, c.cmd("--host", "http://127.0.0.1:1?token=s3cret", "list")); strings.Contains(r.stderr, "s3cret") {
		t.Errorf("a --host URL with a query: stderr %q shows the query", r.stderr)
	}
	if r := runCmd(t, c.cmd(host("--json", "--log-level", "info", "list")...)); r.code != 0 {
		t.Errorf("sortie --host URL --json --log-level info list: exit %d, stderr %q; want the client's own flags taken", r.code, r.stderr)
	}
}

// A host URL with user info (--host or SORTIE_HOST) is a usage error
// saying to use --token-file, never echoing the password (it would go out
// as Basic auth and into resume hints); a port out of range is one too,
// and so is --host on a command that talks to no host (dynamo, worker).
func TestHostRefusesUserInfoAndBadPort(t *testing.T) {
	c := newCLI(t)
	wantUsage(t, c, []usageCase{
		{[]string{"--host", "http://alice:s3cretPW@127.0.0.1:1", "list"}, []string{"--host", "user info", "--token-file"}},
		{[]string{"--host", "http://127.0.0.1:99999", "list"}, []string{"--host", "1-65535"}},
		{[]string{"--host", "http://127.0.0.1:1", "dynamo", "create-table", "--table", "t"}, []string{"--host", "DynamoDB table", "leave --host out"}},
		{[]string{"--host", "http://127.0.0.1:1", "worker", "--report", "stdout"}, []string{"--host", "sortie worker", "leave --host out"}},
	})
	r := runCmd(t, c.cmd("--host", "http://alice:s3cretPW@127.0.0.1:1", "get", "r-x"))
	cmd := c.cmd("--host", "", "list")
	cmd.Args = []string{sortieBin, "list"}
	cmd.Env = append(cmd.Env, "SORTIE_HOST=http://alice:s3cretPW@127.0.0.1:1")
	env := runCmd(t, cmd)
	for name, r := range map[string]result{"--host": r, "SORTIE_HOST": env} {
		if r.code != 2 || !strings.Contains(r.stderr, "--token-file") || strings.Contains(r.stderr+r.stdout, "s3cretPW") {
			t.Errorf("%s with user info: exit %d, stderr %q; want exit 2 saying --token-file, without the password", name, r.code, r.stderr)
		}
	}
}

// A token file that is empty or holds two lines, or a SORTIE_TOKEN with a
// newline or control character, is refused before any request: exit 2
// naming the file or variable and what is wrong, never the token.
func TestTokenRefusedAtStart(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	host := "http://127.0.0.1:1"
	for _, tc := range []struct {
		file, env string
		want      []string
	}{
		{file: write("two", "tokSECRETone\ntokSECRETtwo\n"), want: []string{"--token-file", "more than one line"}},
		{file: write("empty", "\n"), want: []string{"--token-file", "empty"}},
		{env: "tokSECRET\ntwo", want: []string{"SORTIE_TOKEN", "more than one line"}},
		{env: "tokSECRET\x01x", want: []string{"SORTIE_TOKEN", "not allowed in an HTTP header"}},
	} {
		args := []string{"--host", host, "list"}
		if tc.file != "" {
			args = []string{"--host", host, "--token-file", tc.file, "list"}
		}
		cmd := c.cmd(args...)
		cmd.Env = append(cmd.Env, "SORTIE_TOKEN="+tc.env)
		r := runCmd(t, cmd)
		named := true
		for _, w := range tc.want {
			named = named && strings.Contains(r.stderr, w)
		}
		if r.code != 2 || !named || strings.Contains(r.stderr, "tokSECRET") {
			t.Errorf("%v (SORTIE_TOKEN %q): exit %d, stderr %q; want exit 2 naming %v, without the token", args, tc.env, r.code, r.stderr, tc.want)
		}
	}
}
