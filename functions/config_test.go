package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
)

const testToken = "tok-5e1f-test"

// sealedFor seals config for inv's attempt with a real envelope keeper
// over kek, as the engine does, and returns the keeper's Config.
func sealedFor(t *testing.T, inv *sortie.Invocation, config string, kek envelope.KEK) *envelope.Config {
	t.Helper()
	ring, err := envelope.NewKeyring("local", kek)
	if err != nil {
		t.Fatal(err)
	}
	cfg := envelope.NewConfig(envelope.New(ring, nil))
	run := &sortie.Run{ID: inv.RunID, Agent: inv.Agent}
	if inv.SealedConfig, err = cfg.SealConfig(context.Background(), run, json.RawMessage(config)); err != nil {
		t.Fatalf("SealConfig = %v", err)
	}
	if err := cfg.Seal(context.Background(), inv); err != nil {
		t.Fatalf("Seal = %v", err)
	}
	return cfg
}

func localTestKEK(t *testing.T) *localkey.KEK {
	t.Helper()
	k, err := localkey.New(bytes.Repeat([]byte{7}, localkey.KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// configHandler returns what the handler saw through Call.Config.
func configHandler(seen *map[string]string) *Registry {
	return register(func(_ context.Context, c *Call) (any, error) {
		*seen = c.Config()
		return map[string]int{"variables": len(*seen)}, nil
	})
}

func TestInlineConfigReachesTheHandler(t *testing.T) {
	var seen map[string]string
	w, logs := newWorker(configHandler(&seen))
	inv := testInvocation("go:h", "")
	opener := sealedFor(t, inv, fmt.Sprintf(`{"API_TOKEN":%q,"REGION":"eu-west-3"}`, testToken), localTestKEK(t))
	w.InlineConfig = &InlineConfig{Opener: opener, Allow: []string{"API_TOKEN", "REGION", "UNUSED"}}
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	o := rep.finished()
	if o.Error != nil {
		t.Fatalf("Execute finished with %+v, want a result", o.Error)
	}
	if diff := cmp.Diff(map[string]string{"API_TOKEN": testToken, "REGION": "eu-west-3"}, seen); diff != "" {
		t.Errorf("Call.Config() (-want +got):\n%s", diff)
	}
	if o.Usage == nil || o.Usage.KMSRequests != 1 {
		t.Errorf("Usage = %+v, want KMSRequests 1 (one unwrap, no cache)", o.Usage)
	}
	if strings.Contains(logs.String(), testToken) {
		t.Errorf("worker logs contain the token: %s", logs)
	}
}

func TestInlineConfigIsOffByDefault(t *testing.T) {
	called := false
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) { called = true; return nil, nil }))
	inv := testInvocation("go:h", "")
	sealedFor(t, inv, `{"API_TOKEN":"x"}`, localTestKEK(t))
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	if e := rep.finished().Error; e == nil || e.Type != sortie.ErrorTypeRejected || !strings.Contains(e.Message, "off") {
		t.Errorf("Execute without InlineConfig finished with %+v, want rejected: inline configuration is off", e)
	}
	if called {
		t.Error("the handler ran although inline configuration is off")
	}
}

// The allowlist is the complete set: one variable outside it rejects the
// attempt, naming the variable and never its value.
func TestInlineConfigAllowlist(t *testing.T) {
	var seen map[string]string
	w, _ := newWorker(configHandler(&seen))
	inv := testInvocation("go:h", "")
	opener := sealedFor(t, inv, fmt.Sprintf(`{"API_TOKEN":"aaaa-bbbb","AWS_SECRET_ACCESS_KEY":%q}`, testToken), localTestKEK(t))
	w.InlineConfig = &InlineConfig{Opener: opener, Allow: []string{"API_TOKEN"}}
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	e := rep.finished().Error
	if e == nil || e.Type != sortie.ErrorTypeRejected || !strings.Contains(e.Message, "AWS_SECRET_ACCESS_KEY") || e.Retryable {
		t.Fatalf("Execute finished with %+v, want rejected naming AWS_SECRET_ACCESS_KEY, not retryable", e)
	}
	if strings.Contains(e.Message, testToken) || seen != nil {
		t.Errorf("the refusal %q shows the value, or the handler ran (saw %v)", e.Message, seen)
	}
}

// failingKEK is a key-management service that is down.
type failingKEK struct{ *localkey.KEK }

func (failingKEK) Decrypt(context.Context, []byte, map[string]string) ([]byte, error) {
	return nil, fmt.Errorf("kms is throttling: %w", sortie.ErrUnavailable)
}

func TestInlineConfigOpenFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tamper    bool
		down      bool
		retryable bool
	}{
		{"tampered", true, false, false},
		{"kms down", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return nil, nil }))
			inv := testInvocation("go:h", "")
			var opener Opener = sealedFor(t, inv, fmt.Sprintf(`{"API_TOKEN":%q}`, testToken), localTestKEK(t))
			if tc.tamper {
				inv.SealedConfig = bytes.Replace(inv.SealedConfig, []byte(`"ct":"`), []byte(`"ct":"AAAA`), 1)
			}
			if tc.down {
				ring, err := envelope.NewKeyring("local", failingKEK{localTestKEK(t)})
				if err != nil {
					t.Fatal(err)
				}
				opener = envelope.NewConfig(envelope.New(ring, nil))
			}
			w.InlineConfig = &InlineConfig{Opener: opener, Allow: []string{"API_TOKEN"}}
			rep := newRecorder(t)
			if _, err := w.Execute(context.Background(), inv, rep); err != nil {
				t.Fatal(err)
			}
			e := rep.finished().Error
			if e == nil || e.Type != errTypeConfig || e.Retryable != tc.retryable {
				t.Fatalf("Execute finished with %+v, want error type %q, retryable %v", e, errTypeConfig, tc.retryable)
			}
			if strings.Contains(e.Message, testToken) {
				t.Errorf("the error %q shows the configuration", e.Message)
			}
		})
	}
}

// An exec command gets the configuration in its environment, with its
// own ExecSpec.Env, and never the sealed configuration on its stdin. The
// values it echoes in an event are masked before the event leaves the
// worker.
func TestInlineConfigReachesExecEnvironment(t *testing.T) {
	w, _ := scriptWorker(t, "cfg", "config-env.sh", 0)
	inv := testInvocation("exec:cfg", "")
	opener := sealedFor(t, inv, fmt.Sprintf(`{"API_TOKEN":%q,"REGION":"eu-west-3"}`, testToken), localTestKEK(t))
	w.InlineConfig = &InlineConfig{Opener: opener, Allow: []string{"API_TOKEN", "REGION"}}
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	o := rep.finished()
	events, _, _ := rep.snapshot()
	want := "API_TOKEN=[REDACTED:API_TOKEN] REGION=[REDACTED:REGION] FOO=bar OTHER=unset"
	if len(events) != 1 || events[0].Text != want {
		t.Fatalf("the command reported %+v, want one event %q", events, want)
	}
	var got sortie.Invocation
	if err := json.Unmarshal(o.Result, &got); err != nil {
		t.Fatalf("result %s is not the invocation: %v", o.Result, err)
	}
	if len(got.SealedConfig) != 0 || got.RunID != inv.RunID {
		t.Errorf("the command read an invocation with sealed_config %s (run %s), want none", got.SealedConfig, got.RunID)
	}
}

func TestWithConfig(t *testing.T) {
	got := withConfig([]string{"PATH=/bin", "REGION=us", "FOO=bar"}, map[string]string{"REGION": "eu", "API_TOKEN": "t"})
	want := []string{"PATH=/bin", "FOO=bar", "API_TOKEN=t", "REGION=eu"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withConfig (-want +got):\n%s", diff)
	}
	if got := withConfig([]string{"A=1"}, nil); !cmp.Equal(got, []string{"A=1"}) {
		t.Errorf("withConfig(env, nil) = %v, want env unchanged", got)
	}
}
