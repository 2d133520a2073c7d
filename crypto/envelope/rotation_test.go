package envelope_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/gcpkms"
	"github.com/sortie-run/sortie/testrig/cloudkms"
	"github.com/sortie-run/sortie/testrig/localkms"
)

// kid returns the key ID an envelope names.
func kid(t *testing.T, sealed []byte) string {
	t.Helper()
	return fields(t, sealed)["kid"].(string)
}

// gcpKEK is a Cloud KMS key of an in-process Cloud KMS.
func gcpKEK(t *testing.T, id string) envelope.KEK {
	t.Helper()
	srv := cloudkms.Start(t, cloudkms.Key(id))
	k, err := gcpkms.New(srv.Client(t), cloudkms.Key(id))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRotation walks the rotation procedure of [envelope.Keyring] with
// local keys and with AWS KMS keys of local-kms.
func TestRotation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new func(t *testing.T) envelope.KEK
	}{
		{"local keys",
			func(t *testing.T) envelope.KEK { return localKEK(t, 1) },
			func(t *testing.T) envelope.KEK { return localKEK(t, 2) }},
		{"aws kms keys",
			func(t *testing.T) envelope.KEK { return awsKEK(t, localkms.ARN(localkms.KeyA)) },
			func(t *testing.T) envelope.KEK { return awsKEK(t, localkms.ARN(localkms.KeyB)) }},
		{"google cloud kms keys",
			func(t *testing.T) envelope.KEK { return gcpKEK(t, "old") },
			func(t *testing.T) envelope.KEK { return gcpKEK(t, "new") }},
	} {
		t.Run(tc.name, func(t *testing.T) { testRotation(t, tc.old(t), tc.new(t)) })
	}
}

func testRotation(t *testing.T, oldKEK, newKEK envelope.KEK) {
	r := ring(t, "key-2025", oldKEK)
	host := envelope.New(r, nil)
	before := seal(t, host, secret, binding)

	// 1. Add the new key: seals still use the old primary.
	if err := r.Add("key-2026", newKEK); err != nil {
		t.Fatalf("Add(key-2026) = %v", err)
	}
	if got := kid(t, seal(t, host, secret, binding)); got != "key-2025" {
		t.Fatalf("after Add, a new envelope names %q, want the primary key-2025", got)
	}
	// 2. Make it primary: new envelopes name it, old ones still open.
	if err := r.SetPrimary("key-2026"); err != nil {
		t.Fatalf("SetPrimary(key-2026) = %v", err)
	}
	after := seal(t, host, secret, binding)
	if got := kid(t, after); got != "key-2026" {
		t.Fatalf("after SetPrimary, a new envelope names %q, want key-2026", got)
	}
	// A worker whose ring lacks the new key cannot open it, and says which
	// key it lacks: workers get the key before any host makes it primary.
	lagging := envelope.New(ring(t, "key-2025", oldKEK), nil)
	if _, err := lagging.Open(bg, after, binding); !errors.Is(err, envelope.ErrUnknownKey) || !strings.Contains(err.Error(), `"key-2026"`) {
		t.Errorf("Open of a key-2026 envelope by a ring without it = %v, want ErrUnknownKey naming key-2026", err)
	}
	// 3. Keep the old key while its envelopes live: both open.
	for name, s := range map[string][]byte{"before": before, "after": after} {
		if got := open(t, host, s, binding); got != secret {
			t.Errorf("Open(%s rotation) = %q, want %q", name, got, secret)
		}
	}
	// 4. Remove the old key: its envelopes fail, naming it; new ones open.
	if err := r.Remove("key-2026"); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("Remove(primary) = %v, want sortie.ErrInvalidArgument", err)
	}
	if err := r.Remove("key-2025"); err != nil {
		t.Fatalf("Remove(key-2025) = %v", err)
	}
	if _, err := host.Open(bg, before, binding); !errors.Is(err, envelope.ErrUnknownKey) || !strings.Contains(err.Error(), `"key-2025"`) {
		t.Errorf("Open of a key-2025 envelope after Remove = %v, want ErrUnknownKey naming key-2025", err)
	}
	if got := open(t, host, after, binding); got != secret {
		t.Errorf("Open(after rotation) = %q after Remove, want %q", got, secret)
	}
}

// The run's copy at rest names the old key after rotation; the engine's
// re-seal for the next attempt uses the new primary.
func TestRotationReSealsAttemptsWithNewPrimary(t *testing.T) {
	r := ring(t, "key-2025", localKEK(t, 1))
	cfg := envelope.NewConfig(envelope.New(r, nil))
	run := &sortie.Run{ID: sortie.RunID(binding.RunID), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"}}
	atRest, err := cfg.SealConfig(bg, run, []byte(secret))
	if err != nil {
		t.Fatalf("SealConfig = %v", err)
	}
	if err := r.Add("key-2026", localKEK(t, 2)); err != nil {
		t.Fatal(err)
	}
	if err := r.SetPrimary("key-2026"); err != nil {
		t.Fatal(err)
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: 2, Agent: run.Agent, SealedConfig: atRest}
	if err := cfg.Seal(bg, inv); err != nil {
		t.Fatalf("Seal(attempt 2 from a key-2025 copy at rest) = %v", err)
	}
	if got := kid(t, inv.SealedConfig); got != "key-2026" {
		t.Errorf("attempt 2's envelope names %q, want the new primary key-2026", got)
	}
	if got, _, err := cfg.Open(bg, inv); err != nil || string(got) != secret {
		t.Errorf("Open(attempt 2) = %q, %v; want %q", got, err, secret)
	}
}

// The ring's rules are crypto/keyring's (tested there); the envelope adds
// its key ID format and refuses a nil KEK.
func TestKeyringRefusesBadKeys(t *testing.T) {
	r := ring(t, "a", localKEK(t, 1))
	for name, err := range map[string]error{
		"Add(bad ID)":        r.Add("a/b", localKEK(t, 2)),
		"Add(129-char ID)":   r.Add(strings.Repeat("k", 129), localKEK(t, 2)),
		"Add(leading colon)": r.Add(":k", localKEK(t, 2)),
		"Add(nil KEK)":       r.Add("b", nil),
	} {
		if !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("%s = %v, want sortie.ErrInvalidArgument", name, err)
		}
	}
	if err := r.Add("k.2026:v_1-"+strings.Repeat("x", 117), localKEK(t, 2)); err != nil {
		t.Errorf("Add(a 128-character ID of every allowed character) = %v", err)
	}
	if err := r.Remove("k.2026:v_1-" + strings.Repeat("x", 117)); err != nil {
		t.Fatal(err)
	}
	if _, err := envelope.NewKeyring("", localKEK(t, 1)); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf(`NewKeyring("") = %v, want sortie.ErrInvalidArgument`, err)
	}
	if got := r.IDs(); len(got) != 1 || got[0] != "a" || r.Primary() != "a" {
		t.Errorf("after refused changes IDs() = %v, Primary() = %q; want [a] and a", got, r.Primary())
	}
}

// KeyringOf makes the ring of a configured list: the first key primary,
// every key opening; errors name the key ID.
func TestKeyringOf(t *testing.T) {
	keks := map[string]envelope.KEK{"ref-new": localKEK(t, 2), "ref-old": localKEK(t, 1)}
	byRef := func(ref string) (envelope.KEK, error) {
		if k, ok := keks[ref]; ok {
			return k, nil
		}
		return nil, errors.New("no such key")
	}
	r, err := envelope.KeyringOf([][2]string{{"new", "ref-new"}, {"old", "ref-old"}}, byRef)
	if err != nil {
		t.Fatalf("KeyringOf(two keys) = %v", err)
	}
	if id, _ := r.PrimaryKey(); id != "new" {
		t.Errorf("KeyringOf primary = %s, want new (the first)", id)
	}
	old := envelope.New(ring(t, "old", keks["ref-old"]), nil)
	if got := open(t, envelope.New(r, nil), seal(t, old, "x", binding), binding); got != "x" {
		t.Errorf("open an old-key envelope with the ring = %q, want x", got)
	}
	if r, err := envelope.KeyringOf(nil, byRef); r != nil || err != nil {
		t.Errorf("KeyringOf(no keys) = %v, %v; want nil, nil", r, err)
	}
	for _, pairs := range [][][2]string{{{"k1", "ref-missing"}}, {{"bad id!", "ref-old"}}, {{"k1", "ref-old"}, {"k1", "ref-new"}}} {
		if _, err := envelope.KeyringOf(pairs, byRef); err == nil || !strings.Contains(err.Error(), "key "+pairs[len(pairs)-1][0]+":") {
			t.Errorf("KeyringOf(%v) = %v, want an error naming key %s", pairs, err, pairs[len(pairs)-1][0])
		}
	}
}
