package cloudrun_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/sortie-run/sortie/functions/cloudrun"
)

// googleKeys stands for Google's signing keys: one RSA key, served as the
// JWK set idtoken fetches, which signs the tests' ID tokens.
type googleKeys struct{ key *rsa.PrivateKey }

func newGoogleKeys(t *testing.T) *googleKeys {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &googleKeys{key: key}
}

// RoundTrip answers idtoken's request for Google's certificates.
func (g *googleKeys) RoundTrip(*http.Request) (*http.Response, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	set, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kid": "k1", "kty": "RSA", "alg": "RS256", "use": "sig",
		"n": b64(g.key.N.Bytes()), "e": b64(big.NewInt(int64(g.key.E)).Bytes())}}})
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(set))}, nil
}

// token signs an ID token for aud with the claims (RS256, key k1).
func (g *googleKeys) token(t *testing.T, aud string, claims map[string]any) string {
	t.Helper()
	b64 := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	payload := map[string]any{"iss": "https://accounts.google.com", "aud": aud, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		payload[k] = v
	}
	signed := b64(map[string]string{"alg": "RS256", "kid": "k1", "typ": "JWT"}) + "." + b64(payload)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, g.key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// The service's ID-token check accepts a token of an allowed caller for
// either of the service's URLs (the configured one, and the run.app URL
// the request came in on), and refuses other audiences, other callers and
// unverified emails.
func TestIDTokenVerifier(t *testing.T) {
	g := newGoogleKeys(t)
	val, err := idtoken.NewValidator(context.Background(), option.WithHTTPClient(&http.Client{Transport: g}))
	if err != nil {
		t.Fatal(err)
	}
	const launcher = "sortie-launcher@p.iam.gserviceaccount.com"
	v := &cloudrun.IDTokenVerifier{Audiences: []string{"https://sortie-worker-123.europe-west1.run.app"}, OwnRunAppHost: true,
		Callers: []string{launcher}, Validator: val}
	caller := map[string]any{"email": launcher, "email_verified": true}
	for _, c := range []struct {
		name, host, aud string
		claims          map[string]any
		ok              bool
	}{
		{"the deterministic URL", "sortie-worker-123.europe-west1.run.app", "https://sortie-worker-123.europe-west1.run.app", caller, true},
		{"the other run.app URL, the request's own", "sortie-worker-abc123-ew.a.run.app", "https://sortie-worker-abc123-ew.a.run.app", caller, true},
		{"another service's URL", "sortie-worker-abc123-ew.a.run.app", "https://other-abc123-ew.a.run.app", caller, false},
		{"a host that is not run.app", "evil.example", "https://evil.example", caller, false},
		{"another caller", "sortie-worker-123.europe-west1.run.app", "https://sortie-worker-123.europe-west1.run.app",
			map[string]any{"email": "someone@p.iam.gserviceaccount.com", "email_verified": true}, false},
		{"an unverified email", "sortie-worker-123.europe-west1.run.app", "https://sortie-worker-123.europe-west1.run.app",
			map[string]any{"email": launcher, "email_verified": false}, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "https://"+c.host+cloudrun.InvocationsPath, nil)
		r.Header.Set("Authorization", "Bearer "+g.token(t, c.aud, c.claims))
		if err := v.Verify(context.Background(), r); (err == nil) != c.ok {
			t.Errorf("Verify(%s) = %v, want accepted %v", c.name, err, c.ok)
		}
	}
	forged := newGoogleKeys(t).token(t, "https://sortie-worker-123.europe-west1.run.app", caller)
	r := httptest.NewRequest(http.MethodPost, "https://sortie-worker-123.europe-west1.run.app"+cloudrun.InvocationsPath, nil)
	r.Header.Set("Authorization", "Bearer "+forged)
	if err := v.Verify(context.Background(), r); err == nil {
		t.Errorf("Verify(a token signed by another key) = nil, want refused")
	}
}
