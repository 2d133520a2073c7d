package functions

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/wire"
)

// The callback wire format; package server/callback serves it.
const (
	// callbackAttemptHeader carries the token's claims, never its secret.
	callbackAttemptHeader = "Sortie-Attempt"
	// callbackSecretBytes is the size of an attempt secret.
	callbackSecretBytes = 32
	// callbackBackoff is the wait before the second try; it doubles up to
	// callbackMaxBackoff.
	callbackBackoff    = 100 * time.Millisecond
	callbackMaxBackoff = 5 * time.Second
	// maxCallbackResponseBytes bounds the response body read: the run's
	// steps (sortie.MaxStepsBytes of results, escapes) and room.
	maxCallbackResponseBytes = 2*sortie.MaxStepsBytes + 64<<10
	// maxCallbackMessageBytes bounds the host's error message kept.
	maxCallbackMessageBytes = 1 << 10
)

// ErrCallbackAuth means the callback host refused the attempt's
// credentials (401 or 403): a forged, expired or replayed request, or a
// key the host no longer holds. It is not retried.
var ErrCallbackAuth = errors.New("callback host refused the attempt's credentials")

// NewCallbackReporter returns a [Reporter] that posts to inv.Report's
// callback URL (routes /claim, /heartbeat, /events, /step, /steps and
// /complete under it) with client (optional; defaults to http.DefaultClient's settings).
// Redirects are never followed. Every request carries the token's claims
// in the Sortie-Attempt header and a Standard Webhooks signature of its
// JSON body by the attempt secret (crypto/sign), with a fresh webhook-id
// per request and per retry; the secret itself is never sent.
//
// Network errors, 5xx and 429 are retried, 4 tries in all with backoff
// from 100 ms doubling up to 2 s, while ctx lasts; they then wrap
// sortie.ErrUnavailable. Refusals map back to the sentinels the
// control-plane reporter returns, by the table of package wire: code
// "conflict" (or another 409) wraps sortie.ErrConflict, "cancel_requested"
// ErrCancelRequested, "terminal" ErrTerminal; "invalid_argument",
// "payload_too_large" (or another 400 or 413) are a
// [*sortie.ValidationError] naming the host's field; "not_found" (or
// another 404) wraps ErrNotFound; other 401 and 403 wrap [ErrCallbackAuth].
//
// It returns a [*sortie.ValidationError] when inv.Report is not a callback
// report with an absolute http(s) URL and a token CLAIMS.SECRET; no error
// shows the token.
func NewCallbackReporter(inv *sortie.Invocation, client *http.Client) (Reporter, error) {
	if inv == nil {
		return nil, sortie.Invalidf("invocation", "is required")
	}
	rep := inv.Report
	if rep.Mode != sortie.ReportCallback {
		return nil, sortie.Invalidf("report.mode", "%.64q, want %q", rep.Mode, sortie.ReportCallback)
	}
	if err := sortie.CheckBaseURL("report.callback_url", rep.CallbackURL); err != nil {
		return nil, err
	}
	claims, secret, err := splitCallbackToken(rep.Token)
	if err != nil {
		return nil, err
	}
	signer, err := sign.NewSigner(sign.SecretPrefix + base64.StdEncoding.EncodeToString(secret))
	if err != nil {
		return nil, fmt.Errorf("callback reporter: %w", err)
	}
	c := http.Client{}
	if client != nil {
		c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &callbackReporter{client: &c, base: strings.TrimRight(rep.CallbackURL, "/"), claims: claims, signer: signer}, nil
}

// splitCallbackToken splits CLAIMS "." base64url(SECRET): the claims are
// unpadded base64url, the secret 32 bytes.
func splitCallbackToken(tok string) (string, []byte, error) {
	bad := sortie.Invalidf("report.token", "must be CLAIMS.SECRET: base64url claims and a base64url secret of %d bytes", callbackSecretBytes)
	i := strings.LastIndexByte(tok, '.')
	if i <= 0 || len(tok) > 4096 {
		return "", nil, bad
	}
	claims := tok[:i]
	for j := 0; j < len(claims); j++ {
		if c := claims[j]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", nil, bad
		}
	}
	secret, err := base64.RawURLEncoding.Strict().DecodeString(tok[i+1:])
	if err != nil || len(secret) != callbackSecretBytes {
		return "", nil, bad
	}
	return claims, secret, nil
}

type callbackReporter struct {
	client *http.Client
	base   string
	claims string
	signer *sign.Signer
	shape  *sortie.Usage // stated at the claim; see WithClaimShape
}

type cancelAnswer struct {
	CancelRequested bool `json:"cancel_requested"`
}

func (r *callbackReporter) Claim(ctx context.Context) error {
	return r.post(ctx, "/claim", struct {
		Usage *sortie.Usage `json:"usage,omitempty"`
	}{r.shape}, &cancelAnswer{})
}

func (r *callbackReporter) Heartbeat(ctx context.Context) (bool, error) {
	var a cancelAnswer
	if err := r.post(ctx, "/heartbeat", struct{}{}, &a); err != nil {
		return false, err
	}
	return a.CancelRequested, nil
}

func (r *callbackReporter) Events(ctx context.Context, events []sortie.Event) error {
	return r.post(ctx, "/events", struct {
		Events []sortie.Event `json:"events"`
	}{events}, nil)
}

func (r *callbackReporter) Step(ctx context.Context, st sortie.Step) error {
	return r.post(ctx, "/step", struct {
		Step sortie.Step `json:"step"`
	}{st}, nil)
}

func (r *callbackReporter) Steps(ctx context.Context) ([]sortie.Step, error) {
	var out struct {
		Steps []sortie.Step `json:"steps"`
	}
	if err := r.post(ctx, "/steps", struct{}{}, &out); err != nil {
		return nil, err
	}
	return out.Steps, nil
}

func (r *callbackReporter) Finish(ctx context.Context, o sortie.Outcome) error {
	return r.post(ctx, "/complete", struct {
		Outcome sortie.Outcome `json:"outcome"`
	}{o}, nil)
}

// callbackRetryWindow is how long a request failing transiently (the
// host unreachable, 5xx, 429) is retried: long enough to ride out a host
// restart or deploy (sortie serve's default shutdown grace is 30 s). A
// claim lost meanwhile (the lease expired and the run moved on) is then
// refused with ErrConflict, and the worker stops.
var callbackRetryWindow = time.Minute

// post sends in as JSON to route, retrying transient failures with
// backoff for [callbackRetryWindow] while ctx lasts, and decodes a success
// into out (when non-nil).
func (r *callbackReporter) post(ctx context.Context, route string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("callback %s: encode body: %w", route, err)
	}
	backoff, start := callbackBackoff, time.Now()
	for {
		err := r.send(ctx, route, body, out)
		if err == nil || !errors.Is(err, sortie.ErrUnavailable) || time.Since(start)+backoff > callbackRetryWindow {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retries stopped: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
		backoff = min(2*backoff, callbackMaxBackoff)
	}
}

// send makes one signed request with a fresh webhook-id.
func (r *callbackReporter) send(ctx context.Context, route string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+route, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("callback %s: %w", route, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(callbackAttemptHeader, r.claims)
	injectTrace(ctx, req.Header)
	if err := r.signer.Header(req.Header, newMessageID(), time.Now(), body); err != nil {
		return fmt.Errorf("callback %s: sign: %w", route, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("callback %s: %w", route, context.Cause(ctx))
		}
		return fmt.Errorf("callback %s: %v: %w", route, err, sortie.ErrUnavailable)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCallbackResponseBytes))
	if err != nil {
		return fmt.Errorf("callback %s: read response: %v: %w", route, err, sortie.ErrUnavailable)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return callbackError(route, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("callback %s: decode %d response: %w", route, resp.StatusCode, err)
		}
	}
	return nil
}

// newMessageID returns a fresh webhook-id: "msg_" and 16 random bytes.
func newMessageID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return "msg_" + base64.RawURLEncoding.EncodeToString(b)
}

// callbackError maps a refusal to the error the worker loop expects: the
// sentinel of its code ([wire.Err]), else [ErrCallbackAuth] for 401 and
// 403, else sortie.ErrUnavailable for any 5xx (retried).
func callbackError(route string, status int, body []byte) error {
	e, _ := wire.DecodeError(body) // a body that is not ours leaves the fields empty
	e.Code, e.Message, e.Field = clipTo(e.Code, 64), clipTo(e.Message, maxCallbackMessageBytes), clipTo(e.Field, 128)
	err := wire.Err(status, e)
	var ve *sortie.ValidationError
	switch {
	case errors.As(err, &ve):
		return fmt.Errorf("callback %s: %d: %w", route, status, err)
	case err == nil && (status == http.StatusUnauthorized || status == http.StatusForbidden):
		err = ErrCallbackAuth
	case err == nil && status >= 500:
		err = sortie.ErrUnavailable
	case err == nil:
		return fmt.Errorf("callback %s: unexpected status %d %s: %s", route, status, e.Code, e.Message)
	}
	return fmt.Errorf("callback %s: %d %s: %s: %w", route, status, e.Code, e.Message, err)
}

// clipTo returns s as valid UTF-8 of at most about n bytes.
func clipTo(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
