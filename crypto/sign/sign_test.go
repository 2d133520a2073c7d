package sign_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
)

// The Standard Webhooks reference vector.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func specHeader(sig string) http.Header {
	h := http.Header{}
	h.Set(sign.HeaderID, specID)
	h.Set(sign.HeaderTimestamp, strconv.Itoa(specTS))
	h.Set(sign.HeaderSignature, sig)
	return h
}

func at(sec int64) func() time.Time { return func() time.Time { return time.Unix(sec, 0) } }

func verifier(t *testing.T, now func() time.Time, secrets ...string) *sign.Verifier {
	t.Helper()
	v, err := sign.NewVerifier(secrets, &sign.VerifierOptions{Now: now})
	if err != nil {
		t.Fatalf("NewVerifier = %v", err)
	}
	return v
}

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := sign.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSpecVector(t *testing.T) {
	s, err := sign.NewSigner(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Sign(specID, time.Unix(specTS, 0), []byte(specBody))
	if err != nil || got != specSig {
		t.Fatalf("Sign(spec vector) = %q, %v; want %q", got, err, specSig)
	}
	if err := verifier(t, at(specTS), specSecret).Verify(specHeader(specSig), []byte(specBody)); err != nil {
		t.Fatalf("Verify(spec vector) = %v, want nil", err)
	}
}

func TestVerifyRefusesChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(h http.Header, body *[]byte)
		want   error
	}{
		{"body", func(_ http.Header, b *[]byte) { *b = []byte(`{"test": 2432232315}`) }, sign.ErrSignature},
		{"id", func(h http.Header, _ *[]byte) { h.Set(sign.HeaderID, "msg_other") }, sign.ErrSignature},
		{"timestamp", func(h http.Header, _ *[]byte) { h.Set(sign.HeaderTimestamp, strconv.Itoa(specTS+1)) }, sign.ErrSignature},
		{"signature", func(h http.Header, _ *[]byte) { h.Set(sign.HeaderSignature, strings.Replace(specSig, "g0h", "g0i", 1)) }, sign.ErrSignature},
		{"other version only", func(h http.Header, _ *[]byte) { h.Set(sign.HeaderSignature, "v1a"+specSig[2:]) }, sign.ErrSignature},
		{"bad base64", func(h http.Header, _ *[]byte) { h.Set(sign.HeaderSignature, "v1,!!!") }, sign.ErrSignature},
		{"no id", func(h http.Header, _ *[]byte) { h.Del(sign.HeaderID) }, sign.ErrMissingHeader},
		{"id with a dot", func(h http.Header, _ *[]byte) { h.Set(sign.HeaderID, "msg.1") }, sign.ErrMissingHeader},
		{"no timestamp", func(h http.Header, _ *[]byte) { h.Del(sign.HeaderTimestamp) }, sign.ErrMissingHeader},
		{"timestamp not seconds", func(h http.Header, _ *[]byte) { h.Set(sign.HeaderTimestamp, "2021-02-25") }, sign.ErrMissingHeader},
		{"no signature", func(h http.Header, _ *[]byte) { h.Del(sign.HeaderSignature) }, sign.ErrMissingHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, body := specHeader(specSig), []byte(specBody)
			tc.mutate(h, &body)
			err := verifier(t, at(specTS), specSecret).Verify(h, body)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify(changed %s) = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

func TestTimestampTolerance(t *testing.T) {
	tol := int64(sign.DefaultTolerance / time.Second)
	for _, tc := range []struct {
		now  int64
		want error
	}{
		{specTS + tol - 1, nil}, {specTS - tol + 1, nil},
		{specTS + tol, sign.ErrStale}, {specTS + tol + 1, sign.ErrStale},
		{specTS - tol, sign.ErrFuture}, {specTS - tol - 1, sign.ErrFuture},
	} {
		err := verifier(t, at(tc.now), specSecret).Verify(specHeader(specSig), []byte(specBody))
		if tc.want == nil && err != nil || tc.want != nil && (!errors.Is(err, tc.want) || !errors.Is(err, sign.ErrTimestamp)) {
			t.Errorf("Verify at %+d s from the timestamp = %v, want %v (and ErrTimestamp)", tc.now-specTS, err, tc.want)
		}
	}
	if errors.Is(sign.ErrStale, sign.ErrFuture) || errors.Is(sign.ErrFuture, sign.ErrStale) {
		t.Error("ErrStale and ErrFuture match each other, want distinct errors")
	}
}

// The replay window and the timestamp window end at the same instant: a
// message accepted at its timestamp is refused when sent again at
// exactly timestamp + tolerance (as stale), never accepted twice.
func TestReplayAtTheWindowsEnd(t *testing.T) {
	clk := &fakeClock{t: time.Unix(specTS, 0)}
	v := verifier(t, clk.Now, specSecret)
	if err := v.Verify(specHeader(specSig), []byte(specBody)); err != nil {
		t.Fatalf("first Verify = %v", err)
	}
	for _, d := range []time.Duration{sign.DefaultTolerance - time.Second, sign.DefaultTolerance} {
		clk.t = time.Unix(specTS, 0).Add(d)
		if err := v.Verify(specHeader(specSig), []byte(specBody)); err == nil {
			t.Errorf("Verify of the same message %s after its timestamp = nil, want ErrReplay or ErrStale", d)
		}
	}
}

// Rotation: a signer holding the old and the new secret is accepted by
// verifiers holding either; a verifier with neither refuses.
func TestRotationWithSeveralSignatures(t *testing.T) {
	oldS, newS, other := newSecret(t), newSecret(t), newSecret(t)
	s, err := sign.NewSigner(oldS, newS)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h := http.Header{}
	if err := s.Header(h, "msg_rot", now, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h.Get(sign.HeaderSignature))); n != 2 {
		t.Fatalf("signature header %q has %d signatures, want 2", h.Get(sign.HeaderSignature), n)
	}
	for name, secrets := range map[string][]string{"old": {oldS}, "new": {newS}, "other and new": {other, newS}} {
		if err := verifier(t, time.Now, secrets...).Verify(h, []byte("x")); err != nil {
			t.Errorf("Verify with the %s secret = %v, want nil", name, err)
		}
	}
	if err := verifier(t, time.Now, other).Verify(h, []byte("x")); !errors.Is(err, sign.ErrSignature) {
		t.Errorf("Verify with an unrelated secret = %v, want ErrSignature", err)
	}
}

func TestReplayIsRefused(t *testing.T) {
	v := verifier(t, at(specTS), specSecret)
	if err := v.Verify(specHeader(specSig), []byte(specBody)); err != nil {
		t.Fatalf("first Verify = %v", err)
	}
	if err := v.Verify(specHeader(specSig), []byte(specBody)); !errors.Is(err, sign.ErrReplay) {
		t.Fatalf("second Verify of the same message = %v, want ErrReplay", err)
	}
	// A forged message with a seen ID is refused by its signature, and
	// does not touch the cache: the real one is still refused as a replay.
	if err := v.Verify(specHeader(strings.Replace(specSig, "g0h", "g0i", 1)), []byte(specBody)); !errors.Is(err, sign.ErrSignature) {
		t.Errorf("Verify(forged) = %v, want ErrSignature", err)
	}
}

func TestConcurrentReplaysAcceptOnce(t *testing.T) {
	v := verifier(t, at(specTS), specSecret)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for range 16 {
		wg.Go(func() {
			if v.Verify(specHeader(specSig), []byte(specBody)) == nil {
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if accepted != 1 {
		t.Errorf("16 concurrent deliveries of one message: %d accepted, want 1", accepted)
	}
}

func TestVerifyRequest(t *testing.T) {
	v := verifier(t, at(specTS), specSecret)
	req := httptest.NewRequest(http.MethodPost, "/callback", strings.NewReader(specBody))
	req.Header = specHeader(specSig)
	body, err := v.VerifyRequest(req, 1024)
	if err != nil || !bytes.Equal(body, []byte(specBody)) {
		t.Fatalf("VerifyRequest = %q, %v; want the body", body, err)
	}
	req = httptest.NewRequest(http.MethodPost, "/callback", strings.NewReader(specBody))
	req.Header = specHeader(specSig)
	if _, err := v.VerifyRequest(req, 8); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("VerifyRequest(body over 8 bytes) = %v, want sortie.ErrInvalidArgument", err)
	}
}

func TestSecretsAreChecked(t *testing.T) {
	for _, s := range []string{"whsec_!!", "whsec_" + strings.Repeat("A", 8), ""} {
		if _, err := sign.NewSigner(s); !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("NewSigner(%q) = %v, want sortie.ErrInvalidArgument", s, err)
		} else if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("NewSigner error %q shows the secret", err)
		}
	}
	if _, err := sign.NewVerifier(nil, nil); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("NewVerifier(no secrets) = %v, want sortie.ErrInvalidArgument", err)
	}
	s, _ := sign.NewSigner(specSecret)
	if _, err := s.Sign("a b", time.Now(), nil); !errors.Is(err, sign.ErrMissingHeader) {
		t.Errorf(`Sign(id "a b") = %v, want ErrMissingHeader`, err)
	}
	if k, err := sign.ParseSecret(strings.TrimPrefix(specSecret, sign.SecretPrefix)); err != nil || len(k) != 24 {
		t.Errorf("ParseSecret(without prefix) = %d bytes, %v; want 24", len(k), err)
	}
}

// failingStore is a StoreReplayCache whose store is down.
type failingStore struct{ sign.ReplayCache }

func (failingStore) SeenContext(context.Context, string, time.Time) (bool, error) {
	return false, errors.New("store down")
}

// With a store that cannot answer, a valid message is refused with
// ErrReplayCache (the sender may send it again), never accepted unchecked.
func TestReplayStoreFailureRefuses(t *testing.T) {
	v, err := sign.NewVerifier([]string{specSecret}, &sign.VerifierOptions{Now: at(specTS),
		Replay: failingStore{sign.NewMemoryReplayCache(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifyContext(t.Context(), specHeader(specSig), []byte(specBody)); !errors.Is(err, sign.ErrReplayCache) || errors.Is(err, sign.ErrReplay) {
		t.Errorf("VerifyContext with a failing replay store = %v, want ErrReplayCache", err)
	}
}
