package callback

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/internal/jsonbody"
	"github.com/sortie-run/sortie/wire"
)

// Routes, headers and the owner the handler claims as.
const (
	// PathPrefix is where the handler is mounted; an [Issuer] appends it to
	// the host's base URL.
	PathPrefix = "/v1/worker"
	// PathClaim, PathHeartbeat, PathEvents, PathStep, PathSteps and
	// PathComplete are the routes, each POST only.
	PathClaim     = PathPrefix + "/claim"
	PathHeartbeat = PathPrefix + "/heartbeat"
	PathEvents    = PathPrefix + "/events"
	PathStep      = PathPrefix + "/step"
	PathSteps     = PathPrefix + "/steps"
	PathComplete  = PathPrefix + "/complete"
	// HeaderAttempt carries the token's encoded [Claims] (never its secret).
	HeaderAttempt = "Sortie-Attempt"
	// Owner is the owner recorded on attempts claimed through callbacks.
	Owner = "callback"
)

// Body limits, in bytes.
const (
	// MaxEventsBodyBytes bounds a POST to [PathEvents].
	MaxEventsBodyBytes = 1 << 20
	// MaxCompleteBodyBytes bounds a POST to [PathComplete]: the result (or
	// checkpoint) limit and room for the rest of the outcome, escapes
	// included.
	MaxCompleteBodyBytes = sortie.MaxResultBytes + 128<<10
	// MaxStepBodyBytes bounds a POST to [PathStep]: the step result limit
	// and room for the rest, escapes included.
	MaxStepBodyBytes = 2*sortie.MaxStepResultBytes + 8<<10
	// MaxClaimBodyBytes bounds a POST to [PathClaim], in bytes: its
	// compute shape ([ClaimRequest]) is under 200.
	MaxClaimBodyBytes = 1 << 10
	// MaxEmptyBodyBytes bounds a POST to [PathHeartbeat] or [PathSteps],
	// in bytes.
	MaxEmptyBodyBytes = 4 << 10
)

// HandlerOptions configures a [Handler]. A nil *HandlerOptions means the
// defaults.
type HandlerOptions struct {
	// Tolerance is how far a request's webhook-timestamp may be from the
	// handler's clock, either way. Optional; defaults to
	// [sign.DefaultTolerance] (5 minutes).
	Tolerance time.Duration
	// Replay remembers the webhook-id of every accepted request until its
	// timestamp leaves the tolerance. Optional; defaults to a
	// [sign.MemoryReplayCache] of 100,000 IDs. Hosts behind a load
	// balancer share one store (a [sign.StoreReplayCache] such as
	// controlplane/dynamo's ReplayCache; its failure answers 503).
	Replay sign.ReplayCache
	// Logger receives one line per refused request (never a token, secret
	// or body). Optional; defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock. Optional; defaults to time.Now.
	Now func() time.Time
}

// Handler serves the worker callback routes over a control plane. Mount it
// at [PathPrefix] + "/" without stripping the prefix. It is safe for
// concurrent use.
type Handler struct {
	cp        sortie.ControlPlane
	keys      *Keyring
	tolerance time.Duration
	replay    sign.ReplayCache
	log       *slog.Logger
	now       func() time.Time
	schemas   jsonbody.Schemas
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a handler that verifies requests with keys and
// writes to cp. opts may be nil. It returns a [*sortie.ValidationError]
// for a nil cp or keyring.
func NewHandler(cp sortie.ControlPlane, keys *Keyring, opts *HandlerOptions) (*Handler, error) {
	if cp == nil || keys == nil {
		return nil, sortie.Invalidf("control_plane", "a control plane and a keyring are required")
	}
	s, err := schemas()
	if err != nil {
		return nil, err
	}
	h := &Handler{cp: cp, keys: keys, tolerance: sign.DefaultTolerance, log: slog.Default(), now: time.Now, schemas: s}
	if opts != nil {
		h.replay = opts.Replay
		if opts.Tolerance > 0 {
			h.tolerance = opts.Tolerance
		}
		if opts.Logger != nil {
			h.log = opts.Logger
		}
		if opts.Now != nil {
			h.now = opts.Now
		}
	}
	if h.replay == nil {
		h.replay = sign.NewMemoryReplayCache(&sign.MemoryReplayCacheOptions{Now: h.now})
	}
	return h, nil
}

// ServeHTTP checks, in order: the route and method (404, 405), the body
// size (413), the claims in [HeaderAttempt], their key and expiry, the
// Standard Webhooks signature by the attempt secret with the timestamp
// tolerance, and the replay cache (401 for each), then the body's JSON
// Schema and the sortie types' own rules (400 naming the field). Only then
// does it call the control plane, with the run, attempt and launch ID of
// the verified claims. Errors are JSON: {"error":{"code","message","field"}}.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := routes[r.URL.Path]
	if !ok {
		h.refuse(w, r, nil, &apiError{http.StatusNotFound, wire.CodeNotFound, "no callback route at this path", ""})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, r, nil, &apiError{http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, r.Method + " is not allowed; use POST", ""})
		return
	}
	body, aerr := readBody(w, r, rt.limit)
	if aerr != nil {
		h.refuse(w, r, nil, aerr)
		return
	}
	c, aerr := h.authenticate(r, body)
	if aerr != nil {
		h.refuse(w, r, c, aerr)
		return
	}
	if err := h.schemas.Validate(rt.schema, body); err != nil {
		h.refuse(w, r, c, invalid(err))
		return
	}
	// A worker's claim, heartbeat, events and finish keep its attempt
	// alive: the control plane serves them before other calls.
	r = r.WithContext(sortie.LivenessContext(r.Context()))
	resp, err := rt.call(h, r, *c, body)
	if err != nil {
		h.refuse(w, r, c, h.cpError(r, c, err))
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// readBody reads the body up to limit bytes; more is a 413 naming it.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apiError) {
	tooLarge := &apiError{http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge,
		fmt.Sprintf("the body is over %d bytes, the limit of %s", limit, r.URL.Path), "body"}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge
	} else if err != nil {
		return nil, &apiError{http.StatusBadRequest, wire.CodeInvalidArgument, "the body could not be read", "body"}
	}
	return body, nil
}

// authenticate parses and checks the claims, then verifies the request's
// signature by their attempt secret, its timestamp and its webhook-id in
// the replay cache. It returns the claims once parsed, even with an error.
func (h *Handler) authenticate(r *http.Request, body []byte) (*Claims, *apiError) {
	enc := r.Header.Get(HeaderAttempt)
	if enc == "" {
		return nil, unauthorized(CodeMissingCreds, "the "+HeaderAttempt+" header is required")
	}
	c, err := ParseClaims(enc)
	if err != nil {
		return nil, unauthorized(CodeMalformedClaims, "the "+HeaderAttempt+" header is malformed: "+err.Error())
	}
	key, err := h.keys.ring.Key(c.KeyID)
	if err != nil {
		return &c, unauthorized(CodeUnknownKey, fmt.Sprintf("key ID %q is not in this host's callback keyring", c.KeyID))
	}
	if now := h.now().UnixMilli(); now >= c.ExpiresMs {
		return &c, unauthorized(CodeTokenExpired, fmt.Sprintf("token expired %d ms ago", now-c.ExpiresMs))
	}
	secret := sign.SecretPrefix + base64.StdEncoding.EncodeToString(attemptSecret(key, enc))
	v, err := sign.NewVerifier([]string{secret}, &sign.VerifierOptions{Tolerance: h.tolerance, Replay: h.replay, Now: h.now})
	if err != nil {
		return &c, &apiError{http.StatusInternalServerError, wire.CodeInternal, "the attempt secret could not be used", ""}
	}
	if err := v.VerifyContext(r.Context(), r.Header, body); err != nil {
		return &c, verifyError(err)
	}
	return &c, nil
}

// verifyError maps a crypto/sign verification error to a 401.
func verifyError(err error) *apiError {
	switch {
	case errors.Is(err, sign.ErrMissingHeader):
		return unauthorized(CodeMissingHeader, err.Error())
	case errors.Is(err, sign.ErrTimestamp):
		return unauthorized(CodeTimestamp, err.Error())
	case errors.Is(err, sign.ErrReplay):
		return unauthorized(CodeReplayed, err.Error())
	case errors.Is(err, sign.ErrReplayCache):
		return &apiError{http.StatusServiceUnavailable, wire.CodeUnavailable, "the replay cache is unavailable; send the request again", ""}
	}
	return unauthorized(CodeBadSignature, "no valid signature by this attempt's secret")
}
