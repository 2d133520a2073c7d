package callback_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/server/callback"
)

func newKey(t *testing.T, id string) callback.Key {
	t.Helper()
	k, err := callback.NewKey(id)
	if err != nil {
		t.Fatalf("NewKey(%q) = %v", id, err)
	}
	return k
}

func TestKeyTextRoundTripAndRedaction(t *testing.T) {
	k := newKey(t, "k-2026_01")
	text := k.Encode()
	got, err := callback.ParseKey(text)
	if err != nil || got.Encode() != text {
		t.Fatalf("ParseKey(Encode()) = %v, %v; want the same key", got, err)
	}
	secret := strings.TrimPrefix(text, "k-2026_01:"+sign.SecretPrefix)
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(f, k); strings.Contains(s, secret) || !strings.Contains(s, "k-2026_01") {
			t.Errorf("Sprintf(%q, key) = %q, want the ID and no secret", f, s)
		}
	}
}

func TestParseKeyRefusesBadKeys(t *testing.T) {
	short := sign.SecretPrefix + base64.StdEncoding.EncodeToString(make([]byte, 24))
	for _, s := range []string{"", "k1", "k1:", "k 1:" + short, "k1:whsec_!!!", "k1:" + short, strings.Repeat("k", 65) + ":" + short} {
		_, err := callback.ParseKey(s)
		if !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("ParseKey(%.40q) = %v, want ErrInvalidArgument", s, err)
		} else if i := strings.IndexByte(s, ':'); i >= 0 && len(s) > i+8 && strings.Contains(err.Error(), s[i+1:]) {
			t.Errorf("ParseKey error %q shows the secret", err)
		}
	}
	if _, err := callback.NewKey("bad id"); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf(`NewKey("bad id") = %v, want ErrInvalidArgument`, err)
	}
}

func TestKeyringRotationRules(t *testing.T) {
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	ring, err := callback.ParseKeyring(k2.Encode() + ", " + k1.Encode())
	if err != nil {
		t.Fatalf("ParseKeyring = %v", err)
	}
	if ring.Primary() != "k2" || cmp.Diff([]string{"k1", "k2"}, ring.IDs()) != "" {
		t.Errorf("ParseKeyring(k2, k1): primary %q, IDs %v; want k2 and [k1 k2]", ring.Primary(), ring.IDs())
	}
	if err := ring.Add(k1); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("Add(k1 again) = %v, want ErrInvalidArgument", err)
	}
	if err := ring.Add(callback.Key{ID: "empty"}); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("Add(key without a secret) = %v, want ErrInvalidArgument", err)
	}
	// The rest of the rotation rules are crypto/keyring's, tested there.
	if err := ring.Remove("k2"); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("Remove(primary) = %v, want ErrInvalidArgument", err)
	}
	if err := ring.SetPrimary("k9"); !errors.Is(err, keyring.ErrUnknownKey) {
		t.Errorf("SetPrimary(k9 not held) = %v, want keyring.ErrUnknownKey", err)
	}
	for i := 3; i <= 16; i++ {
		if err := ring.Add(newKey(t, fmt.Sprint("k", i))); err != nil {
			t.Fatalf("Add(key %d) = %v", i, err)
		}
	}
	if err := ring.Add(newKey(t, "k17")); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("Add(17th key) = %v, want ErrInvalidArgument naming the limit", err)
	}
	if _, err := callback.ParseKeyring(" , "); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("ParseKeyring(no keys) = %v, want ErrInvalidArgument", err)
	}
}

// A callback-keys file as `sortie serve` writes it (one ID:whsec_BASE64 a
// line, the primary first) still loads.
func TestParseKeyringReadsTheKeysFile(t *testing.T) {
	const file = "c2:whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n" +
		"c1:whsec_ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\n"
	ring, err := callback.ParseKeyring(file)
	if err != nil || ring.Primary() != "c2" || cmp.Diff([]string{"c1", "c2"}, ring.IDs()) != "" {
		t.Fatalf("ParseKeyring(keys file) = %v; want primary c2 of [c1 c2]", err)
	}
}

func TestIssuerMintsScopedExpiringTokens(t *testing.T) {
	ring, _ := callback.NewKeyring(newKey(t, "k1"))
	iss, err := callback.NewIssuer(ring, "https://sortie.example.com/", &callback.IssuerOptions{Grace: time.Minute})
	if err != nil {
		t.Fatalf("NewIssuer = %v", err)
	}
	inv := &sortie.Invocation{RunID: sortie.NewRunID(time.Now()), Attempt: 3, LaunchID: sortie.NewLaunchID(), DeadlineMs: 1_700_000_000_000}
	rep, err := iss.IssueReport(inv)
	if err != nil {
		t.Fatalf("IssueReport = %v", err)
	}
	if rep.Mode != sortie.ReportCallback || rep.CallbackURL != "https://sortie.example.com/v1/worker" {
		t.Errorf("IssueReport = mode %q URL %q, want callback https://sortie.example.com/v1/worker", rep.Mode, rep.CallbackURL)
	}
	claims, secret := split(t, rep.Token)
	c, err := callback.ParseClaims(claims)
	want := callback.Claims{Version: 1, KeyID: "k1", RunID: inv.RunID, Attempt: 3, LaunchID: inv.LaunchID, ExpiresMs: inv.DeadlineMs + 60_000}
	if err != nil || cmp.Diff(want, c) != "" {
		t.Errorf("claims of the token = %+v, %v; want %+v", c, err, want)
	}
	if len(secret) != 32 {
		t.Errorf("attempt secret is %d bytes, want 32", len(secret))
	}
	inv.Attempt = 0
	if _, err := iss.IssueReport(inv); !errors.Is(err, sortie.ErrInvalidArgument) || !strings.Contains(err.Error(), "claims.att") {
		t.Errorf("IssueReport(attempt 0) = %v, want ErrInvalidArgument naming claims.att", err)
	}
	for _, u := range []string{"", "sortie.example.com", "ftp://h", "https://h/?q=1", "https://u:p@h", "https://h/#f"} {
		if _, err := callback.NewIssuer(ring, u, nil); !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("NewIssuer(%q) = %v, want ErrInvalidArgument", u, err)
		}
	}
}

func TestParseClaimsAcceptsOnlyCanonicalClaims(t *testing.T) {
	c := callback.Claims{Version: 1, KeyID: "k1", RunID: sortie.NewRunID(time.Now()), Attempt: 1, LaunchID: "l-1", ExpiresMs: 5}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	plain := fmt.Sprintf(`{"v":1,"kid":"k1","run":%q,"att":1,"lid":"l-1","exp":5}`, c.RunID)
	if got, err := callback.ParseClaims(enc(plain)); err != nil || got != c {
		t.Fatalf("ParseClaims(canonical) = %+v, %v; want %+v", got, err, c)
	}
	for name, s := range map[string]string{
		"padded =":      enc(plain) + "=",
		"padded ==":     enc(plain) + "==",
		"std alphabet":  strings.NewReplacer("-", "+", "_", "/").Replace(enc(plain + " ")),
		"white space":   enc(strings.Replace(plain, ",", ", ", 1)),
		"duplicate key": enc(strings.Replace(plain, `"v":1,`, `"v":1,"v":1,`, 1)),
		"unknown field": enc(strings.Replace(plain, `"v":1,`, `"v":1,"x":1,`, 1)),
		"version 2":     enc(strings.Replace(plain, `"v":1`, `"v":2`, 1)),
		"attempt 0":     enc(strings.Replace(plain, `"att":1`, `"att":0`, 1)),
		"no expiry":     enc(strings.Replace(plain, `"exp":5`, `"exp":0`, 1)),
		"bad run":       enc(strings.Replace(plain, string(c.RunID), "run", 1)),
		"trailing":      enc(plain + "{}"),
		"too long":      strings.Repeat("A", callback.MaxClaimsBytes+1),
	} {
		if _, err := callback.ParseClaims(s); !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("ParseClaims(%s) = %v, want ErrInvalidArgument", name, err)
		}
	}
}
