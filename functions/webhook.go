package functions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/destination"
)

// Defaults of a [WebhookExecutor].
const (
	DefaultWebhookTimeout          = 30 * time.Second
	DefaultWebhookMaxResponseBytes = 32 << 10
)

// WebhookExecutor runs webhook steps ([Call.Webhook]) on a worker host
// that enables them ([Worker.Webhooks]). Every field is optional.
type WebhookExecutor struct {
	// Destinations is where webhook steps may go. Optional; defaults to
	// the worker's [Worker.Destinations] (by default: nowhere).
	Destinations *destination.Policy
	// Signer signs each request with the Standard Webhooks headers
	// (package crypto/sign): webhook-id is the run's ID and a digest of
	// the step's name, the same
	// for every try and attempt of the step, so a receiver's replay cache
	// drops a step sent again after a crash. Optional; unsigned without.
	Signer *sign.Signer
	// Authorize decides each webhook step of a run, after the destination
	// policy passed: nil allows it, an error refuses it. Optional.
	Authorize func(ctx context.Context, hook WebhookCall) error
	// Timeout bounds each try, in the step's context. Optional; defaults
	// to [DefaultWebhookTimeout].
	Timeout time.Duration
	// MaxResponseBytes bounds the response body kept in the result.
	// Optional; defaults to [DefaultWebhookMaxResponseBytes].
	MaxResponseBytes int64
}

// WebhookCall is a webhook step an executor's Authorize hook decides.
type WebhookCall struct {
	Run     sortie.RunID
	Attempt int
	Name    string // the step's name
	Method  string
	URL     string
}

// WebhookRequest is a webhook step's request: Method (POST when empty)
// to URL with Body (JSON, sent as application/json; none when empty) and
// Header. Values from the attempt's configuration may be put in Header:
// the result never holds them.
type WebhookRequest struct {
	Method string
	URL    string
	Header http.Header
	Body   json.RawMessage
}

// WebhookResponse is a webhook step's result, recorded as the step's:
// the status code and the body (at most the executor's
// MaxResponseBytes).
type WebhookResponse struct {
	Status int    `json:"status"`
	Body   string `json:"body,omitempty"`
}

// Webhook sends req as the durable step name ([Call.Step]): the first
// attempt that gets a 2xx answer records the response, and later
// attempts replay it without sending anything. The request goes through
// the executor's destination policy (a refused URL fails the step before
// any connection, with an error matching destination.ErrRefused, not
// retried) and its Authorize hook (a refusal is a [*RefusedError]), and is
// signed when the executor has a Signer. A 5xx or 429 answer, or a
// transport error, is tried again per opts; another non-2xx answer fails
// the step. Without [Worker.Webhooks] (worker mode's default) every
// webhook step is a [*RefusedError].
func (c *Call) Webhook(ctx context.Context, name string, req WebhookRequest, opts ...*StepOptions) (*WebhookResponse, error) {
	if c.webhooks == nil {
		return nil, &RefusedError{What: fmt.Sprintf("webhook step %q", name), Reason: "this worker host runs no webhook steps (no Webhooks executor)"}
	}
	return Step(ctx, c, name, func(ctx context.Context) (*WebhookResponse, error) {
		return c.webhooks.send(ctx, c, name, req)
	}, opts...)
}

// webhookRunner is a worker's enabled executor with its client.
type webhookRunner struct {
	x      WebhookExecutor
	policy *destination.Policy
	client *http.Client
}

func newWebhookRunner(x *WebhookExecutor, fallback *destination.Policy) (*webhookRunner, error) {
	if x == nil {
		return nil, nil
	}
	r := &webhookRunner{x: *x, policy: x.Destinations}
	if r.policy == nil {
		r.policy = fallback
	}
	client, err := httpClientFor(r.policy)
	if err != nil {
		return nil, err
	}
	r.client = client
	if r.policy == nil {
		r.policy = defaultDestinations
	}
	r.x.Timeout = cmpOrDuration(r.x.Timeout, DefaultWebhookTimeout)
	if r.x.MaxResponseBytes <= 0 {
		r.x.MaxResponseBytes = DefaultWebhookMaxResponseBytes
	}
	return r, nil
}

func cmpOrDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// send checks, signs and sends one try of a webhook step.
func (r *webhookRunner) send(ctx context.Context, c *Call, name string, req WebhookRequest) (*WebhookResponse, error) {
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = http.MethodPost
	}
	if err := r.policy.Check(req.URL); err != nil {
		return nil, Permanent(fmt.Errorf("webhook step %q: %w", name, err))
	}
	if r.x.Authorize != nil {
		hook := WebhookCall{Run: c.inv.RunID, Attempt: c.inv.Attempt, Name: name, Method: method, URL: req.URL}
		if err := r.x.Authorize(ctx, hook); err != nil {
			return nil, Permanent(&RefusedError{What: fmt.Sprintf("webhook step %q", name), Reason: err.Error()})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, r.x.Timeout)
	defer cancel()
	hr, err := r.request(ctx, c, name, method, req)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(hr)
	if err != nil {
		err = sortie.RedactURLError(err)
		if errors.Is(err, destination.ErrRefused) {
			return nil, Permanent(fmt.Errorf("webhook step %q: %w", name, err))
		}
		return nil, fmt.Errorf("webhook step %q: %w", name, err)
	}
	defer resp.Body.Close()
	return r.response(name, resp)
}

// request builds the signed HTTP request of a try.
func (r *webhookRunner) request(ctx context.Context, c *Call, name, method string, req WebhookRequest) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return nil, Permanent(sortie.Invalidf("webhook.url", "step %q: %v", name, sortie.RedactURLError(err)))
	}
	for k, vs := range req.Header {
		hr.Header[k] = append([]string(nil), vs...)
	}
	if len(req.Body) > 0 {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.x.Signer != nil {
		if err := r.x.Signer.Header(hr.Header, webhookID(c.inv.RunID, name), time.Now(), req.Body); err != nil {
			return nil, Permanent(fmt.Errorf("webhook step %q: sign: %w", name, err))
		}
	}
	return hr, nil
}

// webhookID is a webhook step's message ID: "RUN_ID-" and the first 16
// bytes of the step name's SHA-256, in hex (names may hold '.', which
// IDs may not).
func webhookID(run sortie.RunID, name string) string {
	sum := sha256.Sum256([]byte(name))
	return string(run) + "-" + hex.EncodeToString(sum[:16])
}

// response turns an answer into the step's result or error.
func (r *webhookRunner) response(name string, resp *http.Response) (*WebhookResponse, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.x.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("webhook step %q: read the answer: %w", name, err)
	}
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("webhook step %q: answered %d", name, resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, Permanent(fmt.Errorf("webhook step %q: answered %d", name, resp.StatusCode))
	case int64(len(body)) > r.x.MaxResponseBytes:
		return nil, Permanent(fmt.Errorf("webhook step %q: the answer is over %d bytes", name, r.x.MaxResponseBytes))
	}
	return &WebhookResponse{Status: resp.StatusCode, Body: string(body)}, nil
}
