package push_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/server/push"
)

func TestNewRefusesBadArgumentsNamingTheField(t *testing.T) {
	e := newEnv(t)
	signer, err := sign.NewSigner(e.secrets["primary"]...)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{}
	for _, tc := range []struct {
		name  string
		store sortie.PushStore
		runs  push.Runs
		cl    *http.Client
		keys  push.Keys
		opts  *push.Options
		field string
	}{
		{"no store", nil, e.cp, client, e.keys, nil, "store"},
		{"no runs", e.cp, nil, client, e.keys, nil, "runs"},
		{"no client", e.cp, e.cp, nil, e.keys, nil, "client"},
		{"no keys", e.cp, e.cp, client, push.Keys{}, nil, "keys.signers"},
		{"nil signer", e.cp, e.cp, client, push.Keys{Primary: "a", Signers: map[string]*sign.Signer{"a": nil}}, nil, "keys.signers"},
		{"bad key ID", e.cp, e.cp, client, push.Keys{Primary: "A B", Signers: map[string]*sign.Signer{"A B": signer}}, nil, "keys.signers"},
		{"unknown primary", e.cp, e.cp, client, push.Keys{Primary: "b", Signers: map[string]*sign.Signer{"a": signer}}, nil, "keys.primary"},
		{"negative max failures", e.cp, e.cp, client, e.keys, &push.Options{MaxFailures: -1}, "max_failures"},
		{"sweep limit over 1000", e.cp, e.cp, client, e.keys, &push.Options{SweepLimit: 1001}, "sweep_limit"},
		{"negative sweep max", e.cp, e.cp, client, e.keys, &push.Options{SweepMax: -1}, "sweep_max"},
		{"backoff max below base", e.cp, e.cp, client, e.keys, &push.Options{BackoffBase: time.Minute, BackoffMax: time.Second}, "backoff_max"},
		{"a renderer of the run payload", e.cp, e.cp, client, e.keys, &push.Options{Formats: map[string]func(*sortie.Run) (any, error){"sortie": renderTask}}, "formats"},
		{"a renderer of the empty format", e.cp, e.cp, client, e.keys, &push.Options{Formats: map[string]func(*sortie.Run) (any, error){"": renderTask}}, "formats"},
		{"a nil renderer", e.cp, e.cp, client, e.keys, &push.Options{Formats: map[string]func(*sortie.Run) (any, error){"a2a": nil}}, "formats"},
	} {
		_, err := push.New(tc.store, tc.runs, tc.cl, tc.keys, tc.opts)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("New(%s) = %v, want a ValidationError of field %q", tc.name, err, tc.field)
		}
	}
}

func TestSecretKeysNeverShowASecret(t *testing.T) {
	bad := "whsec_" + strings.Repeat("QUJD", 3) // 9 bytes: too short
	_, err := push.SecretKeys("k", map[string][]string{"k": {bad}})
	if !errors.Is(err, sortie.ErrInvalidArgument) || strings.Contains(err.Error(), "QUJD") {
		t.Errorf("SecretKeys(short secret) = %v, want ErrInvalidArgument without the secret", err)
	}
	_, err = push.SecretKeys("other", map[string][]string{"k": {newSecret(t)}})
	if !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("SecretKeys(primary not among the keys) = %v, want ErrInvalidArgument", err)
	}
}

// Webhook IDs are deterministic per (run, configuration, version) and
// valid Standard Webhooks IDs (printable ASCII, no space or '.').
func TestMessageIDIsDeterministicAndValid(t *testing.T) {
	run := sortie.NewRunID(time.Now())
	id := push.MessageID(run, "a.b", 7)
	if id != push.MessageID(run, "a.b", 7) {
		t.Fatalf("MessageID differs between two calls with the same arguments")
	}
	for _, other := range []string{push.MessageID(run, "a.b", 8), push.MessageID(run, "a.c", 7), push.MessageID(sortie.NewRunID(time.Now()), "a.b", 7)} {
		if other == id {
			t.Errorf("MessageID collides: %q for different arguments", id)
		}
	}
	s, err := sign.NewSigner(newSecret(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign(id, time.Now(), nil); err != nil || strings.ContainsAny(id, ". ") {
		t.Errorf("Sign(MessageID %q) = %v, want a valid webhook ID", id, err)
	}
}
