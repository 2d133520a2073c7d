package main

import (
	"strings"
	"testing"
)

// A bucket or listen address with a secret in its query or user info is
// a usage error (exit 2) naming the flag, and the secret is never printed:
// the driver's refusal names only the parameter.
func TestFlagURLsNeverEchoSecrets(t *testing.T) {
	c := newCLI(t)
	cases := []usageCase{
		{[]string{"--payload-bucket", "s3://bucket?region=eu-west-1&X-Amz-Signature=SIGSECRET&foo=bar", "run", "probe"},
			[]string{"--payload-bucket", `"X-Amz-Signature"`, "s3://bucket"}},
		{[]string{"--payload-bucket", "gs://bucket?X-Goog-Signature=SIGSECRET", "run", "probe"},
			[]string{"--payload-bucket", `"X-Goog-Signature"`}},
		{[]string{"--payload-bucket", "file:///tmp/x?sig=SIGSECRET", "run", "probe"}, []string{"--payload-bucket", `"file:///tmp/x"`}},
		{[]string{"--payload-bucket", "s3://u:SIGSECRET@bucket?region=eu-west-1", "run", "probe"}, []string{"--payload-bucket", "user info"}},
		{[]string{"serve", "--listen", "http://user:SIGSECRET@127.0.0.1:1"}, []string{"--listen", "HOST:PORT"}},
		{[]string{"serve", "--listen", "SIGSECRET@127.0.0.1:1"}, []string{"--listen", "HOST:PORT"}},
	}
	wantUsage(t, c, cases)
	for _, tc := range cases {
		if r := runCmd(t, c.cmd(tc.args...)); strings.Contains(r.stdout+r.stderr, "SIGSECRET") {
			t.Errorf("sortie %s: output %q shows the secret", strings.Join(tc.args, " "), r.stderr)
		}
	}
}
