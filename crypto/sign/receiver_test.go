package sign_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie/crypto/sign"
)

// post sends one signed message to url and returns the status.
func post(t *testing.T, url string, h http.Header, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// A sender's redelivery of an accepted message (same webhook-id, as
// Standard Webhooks senders retry) is acknowledged 2xx without processing
// it again; a failed processing forgets the ID so the redelivery is
// processed; a forged or stale message is refused 401.
func TestMiddlewareAcknowledgesRedeliveries(t *testing.T) {
	clk := &fakeClock{t: time.Unix(specTS, 0)}
	v := verifier(t, clk.Now, specSecret)
	var bodies []string
	fail := true
	srv := httptest.NewServer(v.Middleware(1<<10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if fail {
			fail = false
			http.Error(w, "database down", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	defer srv.Close()

	steps := []struct {
		name  string
		h     http.Header
		want  int
		calls int
	}{
		{"first delivery, processing fails", specHeader(specSig), http.StatusInternalServerError, 1},
		{"redelivery after the failure", specHeader(specSig), http.StatusNoContent, 2},
		{"redelivery after success", specHeader(specSig), http.StatusOK, 2},
		{"forged", specHeader(strings.Replace(specSig, "g0h", "g0i", 1)), http.StatusUnauthorized, 2},
	}
	for _, s := range steps {
		if got := post(t, srv.URL, s.h, specBody); got != s.want || len(bodies) != s.calls {
			t.Errorf("%s: status %d, handler called %d times; want %d, %d", s.name, got, len(bodies), s.want, s.calls)
		}
	}
	if bodies[1] != specBody {
		t.Errorf("the handler read body %q, want %q", bodies[1], specBody)
	}
	clk.t = time.Unix(specTS, 0).Add(sign.DefaultTolerance)
	if got := post(t, srv.URL, specHeader(specSig), specBody); got != http.StatusUnauthorized {
		t.Errorf("redelivery at timestamp + tolerance: status %d, want 401 (stale)", got)
	}
}

func TestStatusOf(t *testing.T) {
	v, err := sign.NewVerifier([]string{specSecret}, &sign.VerifierOptions{Now: at(specTS), Replay: failingStore{sign.NewMemoryReplayCache(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	cacheErr := v.Verify(specHeader(specSig), []byte(specBody))
	long := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 20)))
	_, tooLarge := v.VerifyRequest(long, 10)
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{sign.ErrReplay, http.StatusOK},
		{cacheErr, http.StatusServiceUnavailable},
		{tooLarge, http.StatusRequestEntityTooLarge},
		{sign.ErrStale, http.StatusUnauthorized},
		{sign.ErrSignature, http.StatusUnauthorized},
	} {
		if got := sign.StatusOf(tc.err); got != tc.want {
			t.Errorf("StatusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
