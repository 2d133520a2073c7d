package callback_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/server/callback"
)

// BenchmarkVerifiedEventsCall measures one POST /v1/worker/events through
// the handler: claims parsing, key lookup, attempt secret derivation,
// signature and timestamp check, replay cache, JSON Schema and type
// validation, and the append to the memory control plane. Each iteration
// also signs its request (one HMAC-SHA256), as a worker would.
func BenchmarkVerifiedEventsCall(b *testing.B) {
	h := newHost(b, nil)
	inv := h.launch(b)
	claims, secret := split(b, inv.Report.Token)
	signer, err := sign.NewSigner(sign.SecretPrefix + base64.StdEncoding.EncodeToString(secret))
	if err != nil {
		b.Fatal(err)
	}
	post := func(path, body string) int {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set(callback.HeaderAttempt, claims)
		if err := signer.Header(req.Header, freshID(), time.Now(), []byte(body)); err != nil {
			b.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post(callback.PathClaim, `{}`); code != http.StatusOK {
		b.Fatalf("claim = %d, want 200", code)
	}
	const body = `{"events":[{"kind":"progress","text":"counted 1000 words","data":{"words":1000,"lines":42},"time_ms":1700000000000}]}`
	b.ReportAllocs()
	for b.Loop() {
		if code := post(callback.PathEvents, body); code != http.StatusOK {
			b.Fatalf("events = %d, want 200", code)
		}
	}
}
