package sign

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
)

// VerifierOptions configures a [Verifier]. A nil *VerifierOptions means
// the defaults.
type VerifierOptions struct {
	// Tolerance is how far a timestamp may be from now, either way,
	// exclusive.
	// Optional; defaults to [DefaultTolerance] (5 minutes).
	Tolerance time.Duration
	// Replay remembers accepted message IDs until their timestamp leaves
	// the tolerance. Optional; defaults to a [MemoryReplayCache] of
	// 100,000 IDs on the verifier's clock.
	Replay ReplayCache
	// Now is the clock. Optional; defaults to time.Now.
	Now func() time.Time
}

// Verifier checks Standard Webhooks signatures with one or more secrets
// (all of them during a rotation), the timestamp tolerance and a replay
// cache. It is safe for concurrent use.
type Verifier struct {
	keys      [][]byte
	tolerance time.Duration
	replay    ReplayCache
	now       func() time.Time
}

// NewVerifier returns a verifier accepting a signature by any of secrets
// (at least one; see [ParseSecret]). opts may be nil.
func NewVerifier(secrets []string, opts *VerifierOptions) (*Verifier, error) {
	keys, err := parseSecrets(secrets)
	if err != nil {
		return nil, err
	}
	v := &Verifier{keys: keys, tolerance: DefaultTolerance, now: time.Now}
	if opts != nil {
		if opts.Tolerance > 0 {
			v.tolerance = opts.Tolerance
		}
		v.replay = opts.Replay
		if opts.Now != nil {
			v.now = opts.Now
		}
	}
	if v.replay == nil {
		v.replay = NewMemoryReplayCache(&MemoryReplayCacheOptions{Now: v.now})
	}
	return v, nil
}

// Verify checks the message body with the headers h: the ID, a timestamp
// within the tolerance, a "v1" signature (in constant time) by one of the
// secrets, and then that the ID was not accepted before. Signatures of
// other versions are ignored. Errors wrap [ErrMissingHeader],
// [ErrTimestamp] (with [ErrStale] or [ErrFuture]), [ErrSignature],
// [ErrReplay] (already accepted: answer 2xx) or [ErrReplayCache].
func (v *Verifier) Verify(h http.Header, body []byte) error {
	return v.VerifyContext(context.Background(), h, body)
}

// VerifyContext is [Verifier.Verify] with a context for a
// [StoreReplayCache]'s call.
func (v *Verifier) VerifyContext(ctx context.Context, h http.Header, body []byte) error {
	id := h.Get(HeaderID)
	if err := checkID(id); err != nil {
		return fmt.Errorf("verify webhook: %w", err)
	}
	ts, err := v.timestamp(h.Get(HeaderTimestamp))
	if err != nil {
		return fmt.Errorf("verify webhook %s: %w", id, err)
	}
	sigs := h.Get(HeaderSignature)
	if sigs == "" || len(sigs) > maxSignatureList {
		return fmt.Errorf("verify webhook %s: %s must hold 1-%d bytes: %w", id, HeaderSignature, maxSignatureList, ErrMissingHeader)
	}
	if !v.signed(strings.Fields(sigs), id, ts, body) {
		return fmt.Errorf("verify webhook %s: %w", id, ErrSignature)
	}
	seen, err := v.seen(ctx, id, time.Unix(ts, 0).Add(v.tolerance))
	switch {
	case err != nil:
		return fmt.Errorf("verify webhook %s: %w: %w", id, ErrReplayCache, err)
	case seen:
		return fmt.Errorf("verify webhook %s: %w", id, ErrReplay)
	}
	return nil
}

// seen asks the replay cache, through SeenContext when it has one.
func (v *Verifier) seen(ctx context.Context, id string, expiry time.Time) (bool, error) {
	if s, ok := v.replay.(StoreReplayCache); ok {
		return s.SeenContext(ctx, id, expiry)
	}
	return v.replay.Seen(id, expiry), nil
}

// timestamp parses the header (Unix seconds) and checks the tolerance.
func (v *Verifier) timestamp(s string) (int64, error) {
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ts < 0 || len(s) > 12 || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("%s %.20q is not Unix seconds: %w", HeaderTimestamp, s, ErrMissingHeader)
	}
	// The window is exclusive, like the replay cache's expiry at
	// ts+tolerance: a message accepted once can never be accepted again.
	switch d := v.now().Sub(time.Unix(ts, 0)); {
	case d >= v.tolerance:
		return 0, fmt.Errorf("%s %d is %s old, tolerance %s: %w", HeaderTimestamp, ts, d.Round(time.Second), v.tolerance, ErrStale)
	case d <= -v.tolerance:
		return 0, fmt.Errorf("%s %d is %s ahead, tolerance %s: %w", HeaderTimestamp, ts, (-d).Round(time.Second), v.tolerance, ErrFuture)
	}
	return ts, nil
}

// signed reports whether a "v1" signature matches one of the secrets.
func (v *Verifier) signed(sigs []string, id string, ts int64, body []byte) bool {
	if len(sigs) > maxSignatures {
		sigs = sigs[:maxSignatures]
	}
	want := make([][]byte, len(v.keys))
	for i, k := range v.keys {
		want[i] = mac(k, id, ts, body)
	}
	ok := false
	for _, s := range sigs {
		version, b64, found := strings.Cut(s, ",")
		if !found || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		for _, w := range want {
			ok = hmac.Equal(got, w) || ok
		}
	}
	return ok
}

// VerifyRequest reads r's body (at most maxBytes) and verifies it with
// r's headers; it returns the body. A larger body is a
// [*sortie.ValidationError].
func (v *Verifier) VerifyRequest(r *http.Request, maxBytes int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("verify webhook: read body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return nil, sortie.Invalidf("body", "over %d bytes", maxBytes)
	}
	if err := v.VerifyContext(r.Context(), r.Header, body); err != nil {
		return nil, err
	}
	return body, nil
}
