package envelope_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
)

const secret = `{"API_TOKEN":"s3cr3t-canary-7f1c"}`

func TestSealOpenRoundTrip(t *testing.T) {
	k := envelope.New(ring(t, "local-1", localKEK(t, 1)), nil)
	sealed := seal(t, k, secret, binding)
	if bytes.Contains(sealed, []byte("s3cr3t")) {
		t.Fatalf("envelope %s contains the plaintext", sealed)
	}
	if got := open(t, k, sealed, binding); got != secret {
		t.Fatalf("Open = %q, want %q", got, secret)
	}
	// Without the cache run ID and attempt are in the KMS context too.
	want := map[string]any{"purpose": envelope.PurposeInvocation, "agent": "probe",
		"run_id": binding.RunID, "attempt": "1"}
	if diff := cmp.Diff(want, fields(t, sealed)["ctx"]); diff != "" {
		t.Errorf("envelope context without the cache (-want +got):\n%s", diff)
	}
	if got := fields(t, sealed)["kid"]; got != "local-1" {
		t.Errorf("envelope kid = %v, want local-1", got)
	}
}

// Every change of the binding fails Open: the context fields with
// ErrBinding, the others (bound in the associated data) with ErrAuth.
func TestOpenRefusesAnotherBinding(t *testing.T) {
	for _, cached := range []bool{false, true} {
		opts := &envelope.Options{}
		if cached {
			opts.Cache = &envelope.CacheOptions{}
		}
		k := envelope.New(ring(t, "local-1", localKEK(t, 1)), opts)
		sealed := seal(t, k, secret, binding)
		for name, mutate := range map[string]func(*envelope.Binding){
			"run":     func(b *envelope.Binding) { b.RunID = "01JRUN0000000000000000000B" },
			"attempt": func(b *envelope.Binding) { b.Attempt = 2 },
			"version": func(b *envelope.Binding) { b.InvocationVersion = "sortie.invocation/v2" },
			"purpose": func(b *envelope.Binding) { b.Purpose = envelope.PurposeAtRest },
			"agent":   func(b *envelope.Binding) { b.Agent = "textstats" },
		} {
			b := binding
			mutate(&b)
			_, err := k.Open(bg, sealed, b)
			if !errors.Is(err, envelope.ErrBinding) && !errors.Is(err, envelope.ErrAuth) {
				t.Errorf("cache %v: Open with another %s = %v, want ErrBinding or ErrAuth", cached, name, err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("Open error %q contains the plaintext", err)
			}
		}
	}
}

// Tampering with any field of the envelope fails Open with a clear error.
func TestOpenRefusesTampering(t *testing.T) {
	r := ring(t, "local-1", localKEK(t, 1))
	// local-2 has the same key: only the key ID bound in the associated
	// data tells the envelopes apart.
	if err := r.Add("local-2", localKEK(t, 1)); err != nil {
		t.Fatal(err)
	}
	k := envelope.New(r, nil)
	sealed := seal(t, k, secret, binding)
	flip := func(field string) func(map[string]any) {
		return func(m map[string]any) {
			b, _ := base64.StdEncoding.DecodeString(m[field].(string))
			b[len(b)/2] ^= 0x40
			m[field] = base64.StdEncoding.EncodeToString(b)
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(map[string]any)
		want   error
	}{
		{"ciphertext bit", flip("ct"), envelope.ErrAuth},
		{"wrapped key bit", flip("dk"), envelope.ErrAuth},
		{"format version", func(m map[string]any) { m["v"] = 2 }, envelope.ErrMalformed},
		{"unknown field", func(m map[string]any) { m["x"] = 1 }, envelope.ErrMalformed},
		{"missing ciphertext", func(m map[string]any) { delete(m, "ct") }, envelope.ErrMalformed},
		{"short ciphertext", func(m map[string]any) { m["ct"] = "AAAA" }, envelope.ErrMalformed},
		{"bad base64", func(m map[string]any) { m["dk"] = "!!" }, envelope.ErrMalformed},
		{"context purpose", func(m map[string]any) { m["ctx"].(map[string]any)["purpose"] = "x" }, envelope.ErrBinding},
		{"context entry dropped", func(m map[string]any) { delete(m["ctx"].(map[string]any), "run_id") }, envelope.ErrBinding},
		{"key ID in the ring", func(m map[string]any) { m["kid"] = "local-2" }, envelope.ErrAuth},
		{"key ID not in the ring", func(m map[string]any) { m["kid"] = "gone" }, envelope.ErrUnknownKey},
		{"key ID malformed", func(m map[string]any) { m["kid"] = "../x" }, envelope.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fields(t, sealed)
			tc.mutate(m)
			_, err := k.Open(bg, encode(t, m), binding)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open(envelope with %s) = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

// A refusal by the key-management service and a binding mismatch both
// name the key ID and the context keys (never their values' secrets), so
// an operator can match them to the key policy's conditions.
func TestRefusalsNameKeyAndContextKeys(t *testing.T) {
	k := envelope.New(ring(t, "local-1", localKEK(t, 1)), nil)
	sealed := seal(t, k, secret, binding)
	for name, mutate := range map[string]func(map[string]any){
		"refused by the key": func(m map[string]any) {
			b, _ := base64.StdEncoding.DecodeString(m["dk"].(string))
			b[len(b)/2] ^= 0x40
			m["dk"] = base64.StdEncoding.EncodeToString(b)
		},
		"bound to another context": func(m map[string]any) { m["ctx"].(map[string]any)["purpose"] = "x" },
	} {
		m := fields(t, sealed)
		mutate(m)
		_, err := k.Open(bg, encode(t, m), binding)
		for _, want := range []string{`key "local-1"`, "context keys [agent attempt purpose run_id]"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Open(envelope %s) = %v, want an error naming %s", name, err, want)
			}
		}
	}
}

func TestOpenRefusesTruncatedAndOversize(t *testing.T) {
	k := envelope.New(ring(t, "local-1", localKEK(t, 1)), nil)
	sealed := seal(t, k, secret, binding)
	for n := 0; n < len(sealed); n++ {
		if _, err := k.Open(bg, sealed[:n], binding); err == nil {
			t.Fatalf("Open(first %d of %d bytes) = nil error, want an error", n, len(sealed))
		}
	}
	big := make([]byte, envelope.MaxSealedBytes+1)
	if _, err := k.Open(bg, big, binding); !errors.Is(err, envelope.ErrMalformed) {
		t.Errorf("Open(%d bytes) = %v, want ErrMalformed", len(big), err)
	}
	if _, err := k.Seal(bg, make([]byte, envelope.MaxPlaintextBytes+1), binding); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("Seal(%d bytes) = %v, want sortie.ErrInvalidArgument", envelope.MaxPlaintextBytes+1, err)
	}
	maxSealed := seal(t, k, strings.Repeat("x", envelope.MaxPlaintextBytes), binding)
	if len(maxSealed) > envelope.MaxSealedBytes {
		t.Errorf("a %d-byte plaintext sealed into %d bytes, over MaxSealedBytes %d", envelope.MaxPlaintextBytes, len(maxSealed), envelope.MaxSealedBytes)
	}
}

func TestUnknownKeyErrorNamesIt(t *testing.T) {
	a := envelope.New(ring(t, "old-key", localKEK(t, 1)), nil)
	sealed := seal(t, a, secret, binding)
	b := envelope.New(ring(t, "new-key", localKEK(t, 2)), nil)
	_, err := b.Open(bg, sealed, binding)
	if !errors.Is(err, envelope.ErrUnknownKey) || !strings.Contains(err.Error(), `"old-key"`) || !strings.Contains(err.Error(), `"new-key"`) {
		t.Fatalf("Open of an old-key envelope with a ring of new-key = %v, want ErrUnknownKey naming old-key and the ring's keys", err)
	}
	if st := b.Stats(); st.KMSRequests() != 0 {
		t.Errorf("Stats() = %+v after a refused key ID, want no KMS requests (no trial decryption)", st)
	}
}

func TestBadBindingIsRefused(t *testing.T) {
	k := envelope.New(ring(t, "local-1", localKEK(t, 1)), nil)
	for _, b := range []envelope.Binding{
		{Attempt: 1, InvocationVersion: "v", Purpose: "p", Agent: "a"},
		{RunID: "r", Attempt: -1, InvocationVersion: "v", Purpose: "p", Agent: "a"},
		{RunID: "r", InvocationVersion: "v", Purpose: "", Agent: "a"},
		{RunID: "r", InvocationVersion: "v", Purpose: "p", Agent: strings.Repeat("a", 300)},
	} {
		var ve *sortie.ValidationError
		if _, err := k.Seal(bg, []byte("{}"), b); !errors.As(err, &ve) {
			t.Errorf("Seal with binding %+v = %v, want a *sortie.ValidationError", b, err)
		}
	}
}
