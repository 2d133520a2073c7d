package functions_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/server/callback"
	"github.com/sortie-run/sortie/wire"
)

type answer struct {
	status int
	body   string
}

// scriptedHost is a callback host on loopback that checks every request
// as the real one does (the claims header, a signature by the attempt
// secret, a webhook-id never seen before, no secret on the wire) and
// answers from a script whose last answer repeats.
type scriptedHost struct {
	t       *testing.T
	srv     *httptest.Server
	inv     *sortie.Invocation
	claims  string
	secrets []string // the attempt secret in every encoding it could leak in
	verify  *sign.Verifier
	onFirst func() // optional; runs on the first request
	// redirect, when set, answers every request with a 307 to it.
	redirect string

	mu      sync.Mutex
	answers []answer
	paths   []string
	bodies  []string
	traces  []string // each request's traceparent and tracestate headers
}

func newScriptedHost(t *testing.T, answers ...answer) *scriptedHost {
	return newScriptedHostWith(t, &scriptedHost{answers: answers})
}

// newScriptedHostWith starts h, set up but for its server and token.
func newScriptedHostWith(t *testing.T, h *scriptedHost) *scriptedHost {
	h.t = t
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	key, _ := callback.NewKey("k1")
	ring, _ := callback.NewKeyring(key)
	iss, err := callback.NewIssuer(ring, h.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.inv = &sortie.Invocation{RunID: sortie.NewRunID(time.Now()), Attempt: 1, LaunchID: sortie.NewLaunchID(),
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli()}
	if h.inv.Report, err = iss.IssueReport(h.inv); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndexByte(h.inv.Report.Token, '.')
	h.claims = h.inv.Report.Token[:i]
	secret, _ := base64.RawURLEncoding.DecodeString(h.inv.Report.Token[i+1:])
	h.secrets = []string{h.inv.Report.Token[i+1:], base64.StdEncoding.EncodeToString(secret)}
	if h.verify, err = sign.NewVerifier([]string{sign.SecretPrefix + h.secrets[1]}, nil); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *scriptedHost) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.paths = append(h.paths, strings.TrimPrefix(r.URL.Path, callback.PathPrefix))
	h.bodies = append(h.bodies, string(body))
	h.traces = append(h.traces, r.Header.Get("traceparent")+" "+r.Header.Get("tracestate"))
	first := len(h.paths) == 1
	a := h.answers[0]
	if len(h.answers) > 1 {
		h.answers = h.answers[1:]
	}
	h.mu.Unlock()
	if got := r.Header.Get(callback.HeaderAttempt); got != h.claims {
		h.t.Errorf("request %s carries %s %q, want the token's claims", r.URL.Path, callback.HeaderAttempt, got)
	}
	if err := h.verify.Verify(r.Header, body); err != nil {
		h.t.Errorf("request %s: Verify = %v, want a fresh signature by the attempt secret", r.URL.Path, err)
	}
	for _, s := range h.secrets {
		if strings.Contains(string(body), s) || strings.Contains(r.URL.String(), s) || strings.Contains(strings.Join(flatten(r.Header), " "), s) {
			h.t.Errorf("request %s carries the attempt secret", r.URL.Path)
		}
	}
	if first && h.onFirst != nil {
		h.onFirst()
	}
	if h.redirect != "" {
		http.Redirect(w, r, h.redirect+r.URL.Path, http.StatusTemporaryRedirect)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func flatten(h http.Header) []string {
	var out []string
	for k, vs := range h {
		out = append(out, k+": "+strings.Join(vs, ", "))
	}
	return out
}

func (h *scriptedHost) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...)
}

func (h *scriptedHost) reporter(t *testing.T) functions.Reporter {
	t.Helper()
	rep, err := functions.NewCallbackReporter(h.inv, nil)
	if err != nil {
		t.Fatalf("NewCallbackReporter = %v", err)
	}
	return rep
}

func refusal(status int, code, field string) answer {
	b, _ := json.Marshal(wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: "refused by the test", Field: field}})
	return answer{status, string(b)}
}

// Network-level and 5xx/429 failures are retried with a fresh, verified
// signature each time, and the answer after them counts.
func TestCallbackReporterRetriesTransientFailures(t *testing.T) {
	h := newScriptedHost(t, refusal(503, "unavailable", ""), refusal(429, "", ""), answer{200, `{"cancel_requested":true}`})
	cancelRequested, err := h.reporter(t).Heartbeat(context.Background())
	if err != nil || !cancelRequested {
		t.Fatalf("Heartbeat after 503 and 429 = %v, %v; want true, nil", cancelRequested, err)
	}
	if diff := cmp.Diff([]string{"/heartbeat", "/heartbeat", "/heartbeat"}, h.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// With a retry window of 1 s, the tries wait 100, 200 and 400 ms; the
// next wait (800 ms) would end after the window, so there are four.
func TestCallbackReporterGivesUpAfterItsRetryWindow(t *testing.T) {
	prev := *functions.CallbackRetryWindow
	*functions.CallbackRetryWindow = time.Second
	t.Cleanup(func() { *functions.CallbackRetryWindow = prev })
	h := newScriptedHost(t, answer{502, `bad gateway`})
	err := h.reporter(t).Claim(context.Background())
	if !errors.Is(err, sortie.ErrUnavailable) {
		t.Errorf("Claim against a host answering 502 = %v, want ErrUnavailable", err)
	}
	if n := len(h.requests()); n != 4 {
		t.Errorf("Claim against a host answering 502 sent %d requests, want 4", n)
	}
}

// Refusals map to the sentinels the control-plane reporter returns, and
// none is retried.
func TestCallbackReporterMapsRefusals(t *testing.T) {
	for _, tc := range []struct {
		answer answer
		want   error
	}{
		{refusal(409, "conflict", ""), sortie.ErrConflict},
		{refusal(409, "cancel_requested", ""), sortie.ErrCancelRequested},
		{refusal(409, "terminal", ""), sortie.ErrTerminal},
		{refusal(409, "", ""), sortie.ErrConflict},
		{refusal(400, "invalid_argument", "events[0].seq"), sortie.ErrInvalidArgument},
		{refusal(413, "payload_too_large", "body"), sortie.ErrInvalidArgument},
		{refusal(413, "too_large", "body"), sortie.ErrInvalidArgument}, // an older host's code
		{refusal(409, "idempotency_conflict", ""), sortie.ErrIdempotencyConflict},
		{refusal(401, "bad_signature", ""), functions.ErrCallbackAuth},
		{refusal(401, "replayed", ""), functions.ErrCallbackAuth},
		{refusal(403, "forbidden", ""), functions.ErrCallbackAuth},
		{refusal(404, "not_found", ""), sortie.ErrNotFound},
	} {
		h := newScriptedHost(t, tc.answer)
		err := h.reporter(t).Events(context.Background(), []sortie.Event{{Seq: 1, Kind: "progress"}})
		if !errors.Is(err, tc.want) {
			t.Errorf("Events answered %d %s = %v, want %v", tc.answer.status, tc.answer.body, err, tc.want)
		}
		if n := len(h.requests()); n != 1 {
			t.Errorf("Events answered %d sent %d requests, want 1 (no retry)", tc.answer.status, n)
		}
		var ve *sortie.ValidationError
		if tc.answer.status == 400 && (!errors.As(err, &ve) || ve.Field != "events[0].seq") {
			t.Errorf("Events answered 400 = %v, want a *sortie.ValidationError naming events[0].seq", err)
		}
		if strings.Contains(err.Error(), h.inv.Report.Token) {
			t.Errorf("error %q shows the token", err)
		}
	}
}

func TestCallbackReporterStopsRetryingWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newScriptedHostWith(t, &scriptedHost{answers: []answer{refusal(503, "unavailable", "")}, onFirst: cancel})
	err := h.reporter(t).Finish(ctx, sortie.Outcome{Result: json.RawMessage(`1`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Finish whose context ended during the first try = %v, want context.Canceled", err)
	}
	if n := len(h.requests()); n != 1 {
		t.Errorf("Finish sent %d requests after its context ended, want 1", n)
	}
}

func TestCallbackReporterRetriesNetworkErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every dial is refused
	prev := *functions.CallbackRetryWindow
	*functions.CallbackRetryWindow = time.Second
	t.Cleanup(func() { *functions.CallbackRetryWindow = prev })
	h := newScriptedHost(t, answer{200, `{}`})
	h.inv.Report.CallbackURL = "http://" + addr + callback.PathPrefix
	if err := h.reporter(t).Claim(context.Background()); !errors.Is(err, sortie.ErrUnavailable) {
		t.Errorf("Claim against a closed port = %v, want ErrUnavailable", err)
	}
}

// TestCallbackReporterRidesOutAHostRestart: the host refuses connections
// for its first five dials (restarting), then answers; the claim goes
// through within the retry window.
func TestCallbackReporterRidesOutAHostRestart(t *testing.T) {
	h := newScriptedHost(t, answer{200, `{}`})
	var dials atomic.Int32
	d := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) <= 5 {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			return d.DialContext(ctx, network, addr)
		}}}
	rep, err := functions.NewCallbackReporter(h.inv, client)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Claim(context.Background()); err != nil {
		t.Fatalf("Claim across a host restart (5 refused dials) = %v, want success", err)
	}
	if n := dials.Load(); n != 6 {
		t.Fatalf("%d dials, want 6 (5 refused, then the host)", n)
	}
}

func TestCallbackReporterFollowsNoRedirect(t *testing.T) {
	var followed sync.Mutex
	hits := 0
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		followed.Lock()
		hits++
		followed.Unlock()
	}))
	defer other.Close()
	h := newScriptedHostWith(t, &scriptedHost{answers: []answer{{200, `{}`}}, redirect: other.URL})
	if err := h.reporter(t).Claim(context.Background()); err == nil {
		t.Error("Claim answered by a redirect = nil, want an error")
	}
	followed.Lock()
	defer followed.Unlock()
	if hits != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", hits)
	}
}

func TestCallbackReporterBodies(t *testing.T) {
	h := newScriptedHost(t, answer{200, `{}`})
	rep := h.reporter(t)
	ctx := context.Background()
	if err := rep.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rep.Events(ctx, []sortie.Event{{Seq: 1, Kind: "progress", Text: "one", Data: json.RawMessage(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := rep.Finish(ctx, sortie.Outcome{Result: json.RawMessage(`{"ok":true}`), Usage: &sortie.Usage{DurationMs: 7}}); err != nil {
		t.Fatal(err)
	}
	want := []string{`{}`, `{"events":[{"seq":1,"kind":"progress","text":"one","data":{"n":1}}]}`,
		`{"outcome":{"result":{"ok":true},"usage":{"duration_ms":7}}}`}
	h.mu.Lock()
	defer h.mu.Unlock()
	if diff := cmp.Diff(want, h.bodies); diff != "" {
		t.Errorf("request bodies (-want +got):\n%s", diff)
	}
}

// Every callback request carries the traceparent and tracestate of its
// context's span, and none when the context has no span.
func TestCallbackReporterCarriesTraceContext(t *testing.T) {
	h := newScriptedHost(t, answer{200, `{}`})
	rep := h.reporter(t)
	const tp, ts = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7"
	ctx := sortie.ContextWithTrace(context.Background(), tp, ts)
	if err := rep.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rep.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rep.Claim(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := cmp.Diff([]string{tp + " " + ts, tp + " " + ts, " "}, h.traces); d != "" {
		t.Errorf("traceparent and tracestate of the requests (-want +got):\n%s", d)
	}
}

func TestNewCallbackReporterRefusesBadReports(t *testing.T) {
	h := newScriptedHost(t, answer{200, `{}`})
	good := h.inv.Report
	claims, secret, _ := strings.Cut(good.Token, ".")
	for name, rep := range map[string]sortie.Report{
		"control-plane mode": {Mode: sortie.ReportControlPlane, CallbackURL: good.CallbackURL, Token: good.Token},
		"relative URL":       {Mode: good.Mode, CallbackURL: "/v1/worker", Token: good.Token},
		"URL with a user":    {Mode: good.Mode, CallbackURL: "https://u:p@h/v1/worker", Token: good.Token},
		"no dot":             {Mode: good.Mode, CallbackURL: good.CallbackURL, Token: claims + secret},
		"short secret":       {Mode: good.Mode, CallbackURL: good.CallbackURL, Token: claims + "." + secret[:20]},
		"padded secret":      {Mode: good.Mode, CallbackURL: good.CallbackURL, Token: good.Token + "="},
		"claims with space":  {Mode: good.Mode, CallbackURL: good.CallbackURL, Token: "a b." + secret},
	} {
		inv := *h.inv
		inv.Report = rep
		_, err := functions.NewCallbackReporter(&inv, nil)
		if !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("NewCallbackReporter(%s) = %v, want ErrInvalidArgument", name, err)
		} else if strings.Contains(err.Error(), secret[:20]) {
			t.Errorf("NewCallbackReporter(%s) error %q shows the secret", name, err)
		}
	}
}

// NewReporter picks the reporter by the invocation's report mode.
func TestNewReporterPicksByMode(t *testing.T) {
	h := newScriptedHost(t, answer{200, `{}`})
	rep, err := functions.NewReporter(h.inv, nil, "", nil)
	if err != nil {
		t.Fatalf("NewReporter(callback) = %v", err)
	}
	if err := rep.Claim(context.Background()); err != nil || len(h.requests()) != 1 {
		t.Errorf("callback reporter Claim = %v with %d requests, want nil and 1 request to the callback host", err, len(h.requests()))
	}
	cpInv := *h.inv
	cpInv.Report = sortie.Report{Mode: sortie.ReportControlPlane}
	if _, err := functions.NewReporter(&cpInv, nil, "", nil); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("NewReporter(control-plane, no control plane) = %v, want ErrInvalidArgument", err)
	}
	cp := memory.New()
	defer cp.Close()
	rep, err = functions.NewReporter(&cpInv, cp, "test", nil)
	if err != nil {
		t.Fatalf("NewReporter(control-plane) = %v", err)
	}
	if err := rep.Claim(context.Background()); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("control-plane reporter Claim of a run the control plane lacks = %v, want ErrNotFound", err)
	}
	cpInv.Report.Mode = "carrier-pigeon"
	if _, err := functions.NewReporter(&cpInv, cp, "", nil); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("NewReporter(mode carrier-pigeon) = %v, want ErrInvalidArgument", err)
	}
}
