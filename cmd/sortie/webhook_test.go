package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/internal/hooktest"
)

// TestWebhookStep: `sortie run` with the probe's webhook step, its worker
// a separate process. Without --webhook-steps, and to a destination the
// policy refuses, the step fails before any connection (the listener
// accepts none); allowed, its request is signed with the secret file's
// secret, and its answer is the run's result.
func TestWebhookStep(t *testing.T) {
	secret, err := sign.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	hook := hooktest.Start(t, secret)
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	run := []string{"run", "probe", "--var", "events=0", "--var", "webhook=" + hook.URL}
	loopback := []string{"--allow-destination", "127.0.0.1", "--allow-destination-addrs", "127.0.0.0/8", "--allow-http-destinations"}
	for name, args := range map[string][]string{
		"off by default":       loopback,
		"refused destination":  {"--webhook-steps"},
		"outside the loopback": {"--webhook-steps", "--allow-destination", "127.0.0.1", "--allow-http-destinations"},
	} {
		r := c.run(append(run, args...)...)
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "refused") {
			t.Errorf("%s: exit %d, %q; want exit 1 naming the refusal", name, r.code, r.stdout+r.stderr)
		}
	}
	if n := hook.Accepts.Load(); n != 0 {
		t.Fatalf("refused webhook steps made %d connections, want none", n)
	}
	out, _ := policyResult(t, c.run(append(append(run, "--json", "--webhook-steps", "--webhook-step-secret-file", secretFile), loopback...)...))
	if out.Webhook == nil || out.Webhook.Status != 200 || out.Webhook.Body != hooktest.Body || hook.Verified.Load() != 1 {
		t.Errorf("allowed webhook step: %+v with %d signed requests, want the answer of one signed request", out.Webhook, hook.Verified.Load())
	}
}
