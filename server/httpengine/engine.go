package httpengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// Options configures an [Engine]. A nil *Options means the defaults.
type Options struct {
	// Token is the API bearer token. Optional; hosts without tokens
	// (loopback development) need none.
	Token string
	// HTTPClient sends the requests. Optional; defaults to a client
	// without an overall timeout (follows are long) whose requests other
	// than follows time out after RequestTimeout.
	HTTPClient *http.Client
	// RequestTimeout bounds each request but follows and long polls.
	// Optional; defaults to 30 s.
	RequestTimeout time.Duration
	// ReconnectWindow is how long Follow keeps reconnecting (backing off
	// from 100 ms to 2 s) without receiving anything before it gives up
	// with ErrUnavailable: long enough to ride out a host restart.
	// Optional; defaults to 1 min.
	ReconnectWindow time.Duration
	// Logger gets a warning when Follow loses its connection to the host
	// and another when it has reconnected (how long it took; no event is
	// lost or repeated). Optional; nil logs nothing.
	Logger *slog.Logger
}

// Engine is a host's API as a [sortie.ExecutionEngine] and
// [sortie.Streamer].
type Engine struct {
	base *url.URL
	opts Options
	hc   *http.Client
}

var (
	_ sortie.ExecutionEngine = (*Engine)(nil)
	_ sortie.Streamer        = (*Engine)(nil)
	_ sortie.Waiter          = (*Engine)(nil)
)

// New returns an engine for the host at baseURL ("http(s)://host:port",
// optionally with a path prefix). It fails with a [*sortie.ValidationError]
// for field "host" for a URL that is not absolute http(s), carries user
// info (credentials go in Options.Token), has a port outside 1-65535, or
// has a query or fragment; the error never quotes the URL.
func New(baseURL string, opts *Options) (*Engine, error) {
	if err := sortie.CheckBaseURL("host", baseURL); err != nil {
		var ve *sortie.ValidationError
		if u, perr := url.Parse(baseURL); perr == nil && u.User != nil && errors.As(err, &ve) {
			return nil, sortie.Invalidf("host", "%s: a bearer token (Options.Token; sortie --token-file)", ve.Reason)
		}
		return nil, err
	}
	u, _ := url.Parse(baseURL)
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, sortie.Invalidf("host", "port %.12q: want 1-65535", p)
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	e := &Engine{base: u, hc: http.DefaultClient}
	if opts != nil {
		e.opts = *opts
	}
	if e.opts.HTTPClient != nil {
		e.hc = e.opts.HTTPClient
	}
	if e.opts.RequestTimeout <= 0 {
		e.opts.RequestTimeout = 30 * time.Second
	}
	if e.opts.ReconnectWindow <= 0 {
		e.opts.ReconnectWindow = time.Minute
	}
	return e, nil
}

// request builds a request to path (with query q) carrying the token.
func (e *Engine) request(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	u := *e.base
	u.Path += path
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("httpengine: encode %s body: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("httpengine: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+e.opts.Token)
	}
	return req, nil
}

// do sends a request and decodes a 2xx JSON answer into out (when not
// nil). GETs are tried three times on transport errors, 429 (throttled)
// and 503 (unavailable); a submission carrying an idempotency key is
// tried three times on 429 and 503 only (the host answered: a lost
// answer is left to the caller's retry policy, see package remote). The
// wait before a retry is the answer's Retry-After when it asks for longer
// than the backoff (200 ms, then 400 ms), within the request timeout.
func (e *Engine) do(ctx context.Context, method, path string, q url.Values, body, out any, hdr http.Header) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.RequestTimeout)
	defer cancel()
	get, keyed := method == http.MethodGet, hdr.Get(wire.IdempotencyKeyHeader) != ""
	var err error
	for i := range 3 {
		if i > 0 {
			if werr := wait(ctx, retryDelay(err, time.Duration(100<<i)*time.Millisecond)); werr != nil {
				return 0, err
			}
		}
		var status int
		status, err = e.once(ctx, method, path, q, body, out, hdr)
		if err == nil || !retryable(err) || !(get || keyed && hostAskedRetry(err)) {
			return status, err
		}
	}
	return 0, err
}

// hostAskedRetry reports an answer 429 or 503: the host asked for a retry.
func hostAskedRetry(err error) bool {
	var he *HostError
	return errors.As(err, &he) && (he.Status == http.StatusTooManyRequests || he.Status == http.StatusServiceUnavailable)
}

func (e *Engine) once(ctx context.Context, method, path string, q url.Values, body, out any, hdr http.Header) (int, error) {
	req, err := e.request(ctx, method, path, q, body)
	if err != nil {
		return 0, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("httpengine: %s %s: %w: %w", method, path, sortie.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return resp.StatusCode, decodeError(resp)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("httpengine: %s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// retryDelay is backoff, or the Retry-After of err's answer when longer.
func retryDelay(err error, backoff time.Duration) time.Duration {
	var he *HostError
	if errors.As(err, &he) && he.RetryAfter > backoff {
		return he.RetryAfter
	}
	return backoff
}

func retryable(err error) bool {
	return errors.Is(err, sortie.ErrUnavailable) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func runPath(id sortie.RunID, rest string) string {
	return "/v1/runs/" + url.PathEscape(id.String()) + rest
}

// Submit sends the request; its idempotency key goes in the
// Idempotency-Key header.
func (e *Engine) Submit(ctx context.Context, req *sortie.SubmitRequest) (*sortie.Run, error) {
	run, _, err := e.SubmitCreated(ctx, req)
	return run, err
}

// SubmitCreated is Submit that also reports whether the host created the
// run (HTTP 201) or returned an earlier submission's (200). Text fields
// [sortie.SubmitRequest.ValidateText] refuses are refused before anything
// is sent.
func (e *Engine) SubmitCreated(ctx context.Context, req *sortie.SubmitRequest) (*sortie.Run, bool, error) {
	if err := req.ValidateText(); err != nil { // before encoding/json alters invalid UTF-8
		return nil, false, err
	}
	var hdr http.Header
	if req.IdempotencyKey != "" {
		hdr = http.Header{wire.IdempotencyKeyHeader: {req.IdempotencyKey}}
	}
	var run sortie.Run
	status, err := e.do(ctx, http.MethodPost, "/v1/runs", nil, req, &run, hdr)
	if err != nil {
		return nil, false, err
	}
	return &run, status == http.StatusCreated, nil
}

// Get returns the run.
func (e *Engine) Get(ctx context.Context, id sortie.RunID) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	var run sortie.Run
	if _, err := e.do(ctx, http.MethodGet, runPath(id, ""), nil, nil, &run, nil); err != nil {
		return nil, err
	}
	return &run, nil
}

// longPollFloor is the least time between two long polls of Wait: a host
// of an earlier release, which refuses wait_ms, is read this often.
const longPollFloor = 100 * time.Millisecond

// Wait blocks until the run is terminal or interrupted and returns it. It
// long-polls GET /v1/runs/{id}?wait_ms= (up to 20 s, and half of
// RequestTimeout): the host answers as soon as the run settles, so no
// poll interval adds to the wait.
func (e *Engine) Wait(ctx context.Context, id sortie.RunID) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	hold := min(20*time.Second, e.opts.RequestTimeout/2)
	q := url.Values{"wait_ms": {strconv.FormatInt(hold.Milliseconds(), 10)}}
	for {
		t0 := time.Now()
		var run sortie.Run
		_, err := e.do(ctx, http.MethodGet, runPath(id, ""), q, nil, &run, nil)
		var ve *sortie.ValidationError
		if q != nil && errors.As(err, &ve) && ve.Field == "wait_ms" {
			q = nil // a host of an earlier release: read the run every longPollFloor
			continue
		} else if err != nil {
			return nil, err
		}
		if run.State.Terminal() || run.State.Interrupted() {
			return &run, nil
		}
		if d := longPollFloor - time.Since(t0); d > 0 {
			if err := wait(ctx, d); err != nil {
				return nil, err
			}
		}
	}
}

// List returns a page of runs.
func (e *Engine) List(ctx context.Context, lq sortie.ListQuery) (*sortie.RunPage, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("agent", lq.Agent)
	set("state", string(lq.State))
	set("context_id", lq.ContextID)
	set("page_token", lq.PageToken)
	if lq.PageSize != 0 {
		q.Set("page_size", strconv.Itoa(lq.PageSize))
	}
	var page sortie.RunPage
	if _, err := e.do(ctx, http.MethodGet, "/v1/runs", q, nil, &page, nil); err != nil {
		return nil, err
	}
	return &page, nil
}

// Events returns up to limit events after the cursor without waiting.
func (e *Engine) Events(ctx context.Context, id sortie.RunID, after sortie.Cursor, limit int) ([]sortie.Event, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	q := url.Values{"after": {after.String()}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(min(limit, 1000)))
	}
	var page wire.EventsPage
	if _, err := e.do(ctx, http.MethodGet, runPath(id, "/events"), q, nil, &page, nil); err != nil {
		return nil, err
	}
	return page.Events, nil
}

// Cancel requests cancellation of the run; a reason
// [sortie.CheckCancelReason] refuses is refused before it is sent.
func (e *Engine) Cancel(ctx context.Context, id sortie.RunID, reason string) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := sortie.CheckCancelReason(reason); err != nil {
		return nil, err
	}
	var run sortie.Run
	if _, err := e.do(ctx, http.MethodPost, runPath(id, "/cancel"), nil, wire.CancelRequest{Reason: reason}, &run, nil); err != nil {
		return nil, err
	}
	return &run, nil
}

// Delete deletes the terminal run (DELETE /v1/runs/{id}): ErrNotFound
// for an unknown run, ErrConflict naming the state for a run that is not
// terminal.
func (e *Engine) Delete(ctx context.Context, id sortie.RunID) error {
	if err := id.Validate(); err != nil {
		return err
	}
	_, err := e.do(ctx, http.MethodDelete, runPath(id, ""), nil, nil, nil, nil)
	return err
}

// Resume answers the run's interrupt with input.
func (e *Engine) Resume(ctx context.Context, id sortie.RunID, input json.RawMessage) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	var run sortie.Run
	if _, err := e.do(ctx, http.MethodPost, runPath(id, "/resume"), nil, wire.ResumeRequest{Input: input}, &run, nil); err != nil {
		return nil, err
	}
	return &run, nil
}
