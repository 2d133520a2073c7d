package callback_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/internal/logbuf"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/server/callback"
	"github.com/sortie-run/sortie/wire"
)

var probeAgent = sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe",
	Policy: sortie.Policy{HeartbeatMs: 100, LeaseMs: 2000, BackoffMs: 1, StartTimeoutMs: 5000, MaxAttempts: 1}}}

// host is a callback host on loopback: the handler mounted on a real
// HTTP server, an issuer sending workers there, and an engine over the
// memory control plane.
type host struct {
	cp      *memory.ControlPlane
	keys    *callback.Keyring
	issuer  *callback.Issuer
	srv     *httptest.Server
	handler *callback.Handler
	engine  *sortie.Engine
	client  *sortie.Client
	logs    *logbuf.Buffer
	started chan *sortie.Invocation
}

// newHost starts a host whose launcher runs start in-process for each
// attempt; with start nil, the launcher only hands each invocation to
// h.started, and the test plays the worker.
func newHost(t testing.TB, start func(ctx context.Context, inv *sortie.Invocation) error) *host {
	t.Helper()
	key, err := callback.NewKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := callback.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{cp: memory.New(), keys: keys, logs: &logbuf.Buffer{}, started: make(chan *sortie.Invocation, 16)}
	h.handler, err = callback.NewHandler(h.cp, keys, &callback.HandlerOptions{
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("NewHandler = %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(callback.PathPrefix+"/", h.handler)
	h.srv = httptest.NewServer(mux)
	if h.issuer, err = callback.NewIssuer(keys, h.srv.URL, nil); err != nil {
		t.Fatalf("NewIssuer(%s) = %v", h.srv.URL, err)
	}
	var l sortie.Launcher = capture(h.started)
	if start != nil {
		ll, err := local.New(&local.Options{InProcess: start})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ll.Close() })
		l = ll
	}
	h.engine = sortie.NewEngine(h.cp, l, probeAgent, &sortie.EngineOptions{ReportIssuer: h.issuer})
	h.client = sortie.NewClient(h.engine, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	t.Cleanup(func() { h.engine.Close(); h.srv.Close(); h.cp.Close() })
	return h
}

// capture is a launcher that hands each invocation to a channel.
type capture chan *sortie.Invocation

func (c capture) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	cp := *inv
	c <- &cp
	return sortie.Ref{Provider: "test", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// callbackWorker runs attempts with the probe handler, reporting through
// callbacks to the invocation's URL.
func callbackWorker(ctx context.Context, inv *sortie.Invocation) error {
	reg := functions.NewRegistry()
	probe.Register(reg)
	rep, err := functions.NewReporter(inv, nil, "", nil)
	if err != nil {
		return err
	}
	_, err = (&functions.Worker{Registry: reg, Logger: slog.New(slog.DiscardHandler)}).Execute(ctx, inv, rep)
	return err
}

// launch submits a probe run and returns the invocation of its first
// attempt (the host must have been made with start nil), once the engine
// has stored the launch's ref: it does so after Start returns, so a test
// comparing the store before and after a request would otherwise see
// that write land in between.
func (h *host) launch(t testing.TB) *sortie.Invocation {
	t.Helper()
	run, err := h.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	select {
	case inv := <-h.started:
		if inv.RunID != run.ID {
			t.Fatalf("launched run %s, want %s", inv.RunID, run.ID)
		}
		testwait.Until(t, "the launch ref of run "+string(run.ID)+" stored", 10*time.Second, func() bool {
			r, err := h.cp.Get(context.Background(), run.ID)
			return err == nil && r.Current() != nil && r.Current().Ref != nil
		})
		return inv
	case <-time.After(10 * time.Second):
		t.Fatalf("run %s was not launched", run.ID)
	}
	return nil
}

// issue mints a token for a copy of inv changed by change.
func (h *host) issue(t testing.TB, issuer *callback.Issuer, inv *sortie.Invocation, change func(*sortie.Invocation)) string {
	t.Helper()
	c := *inv
	change(&c)
	rep, err := issuer.IssueReport(&c)
	if err != nil {
		t.Fatalf("IssueReport = %v", err)
	}
	return rep.Token
}

// split returns a token's claims and attempt secret.
func split(t testing.TB, token string) (string, []byte) {
	t.Helper()
	i := strings.LastIndexByte(token, '.')
	secret, err := base64.RawURLEncoding.DecodeString(token[i+1:])
	if err != nil || i < 0 {
		t.Fatalf("token is not CLAIMS.SECRET: %v", err)
	}
	return token[:i], secret
}

// request describes one callback request made by hand.
type request struct {
	method string // optional; defaults to POST
	path   string
	claims string // the Sortie-Attempt header; "" leaves it out
	secret []byte // signs the body; nil leaves the webhook headers out
	body   string
	signed string              // the body signed, when it differs from body
	id     string              // optional; defaults to a fresh webhook-id
	ts     time.Time           // optional; defaults to now
	edit   func(*http.Request) // optional; changes the request last
}

// newRequest builds a signed request as a worker would.
func (h *host) newRequest(t testing.TB, rq request) *http.Request {
	t.Helper()
	method := rq.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, h.srv.URL+rq.path, strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	if rq.claims != "" {
		req.Header.Set(callback.HeaderAttempt, rq.claims)
	}
	if rq.secret != nil {
		signer, err := sign.NewSigner(sign.SecretPrefix + base64.StdEncoding.EncodeToString(rq.secret))
		if err != nil {
			t.Fatal(err)
		}
		signed, id, ts := rq.body, rq.id, rq.ts
		if rq.signed != "" {
			signed = rq.signed
		}
		if id == "" {
			id = freshID()
		}
		if ts.IsZero() {
			ts = time.Now()
		}
		if err := signer.Header(req.Header, id, ts, []byte(signed)); err != nil {
			t.Fatal(err)
		}
	}
	if rq.edit != nil {
		rq.edit(req)
	}
	return req
}

// freshID returns a new random webhook-id.
func freshID() string {
	return "msg_" + rand.Text()
}

// send sends req and returns the status and the error detail, if any.
func send(t testing.TB, req *http.Request) (int, wire.ErrorDetail) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s = %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb wire.ErrorBody
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &eb); err != nil {
			t.Fatalf("%s %s = %d with body %q, want a JSON error", req.Method, req.URL.Path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, eb.Error
}

// stored is everything the control plane holds for a run.
type stored struct {
	Run    *sortie.Run
	Events []sortie.Event
}

func (h *host) stored(t testing.TB, id sortie.RunID) stored {
	t.Helper()
	run, err := h.cp.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s) = %v", id, err)
	}
	evs, err := h.cp.Events(context.Background(), id, sortie.Cursor{}, 1000)
	if err != nil {
		t.Fatalf("Events(%s) = %v", id, err)
	}
	return stored{Run: run, Events: evs}
}
