package push_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/server/push"
)

const waitFor = 10 * time.Second

// request is one POST a receiver got.
type request struct {
	Path    string
	ID      string
	Status  int // what the receiver answered
	Body    []byte
	Payload push.Payload
	Verify  error // the signature check, made on 2xx answers only
	Header  http.Header
}

// receiver is a webhook receiver on loopback. respond picks the status of
// request n (1-based); it may block on the request's context.
type receiver struct {
	srv     *httptest.Server
	v       *sign.Verifier
	respond func(n int64, r *http.Request) int
	count   atomic.Int64

	mu   sync.Mutex
	reqs []request
}

func newReceiver(t testing.TB, secrets []string, now func() time.Time, respond func(n int64, r *http.Request) int) *receiver {
	t.Helper()
	v, err := sign.NewVerifier(secrets, &sign.VerifierOptions{Now: now})
	if err != nil {
		t.Fatalf("NewVerifier = %v", err)
	}
	rc := &receiver{v: v, respond: respond}
	if rc.respond == nil {
		rc.respond = func(int64, *http.Request) int { return http.StatusNoContent }
	}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	status := rc.respond(rc.count.Add(1), r)
	req := request{Path: r.URL.Path, ID: r.Header.Get(sign.HeaderID), Status: status, Body: body, Header: r.Header.Clone()}
	if status >= 200 && status <= 299 {
		req.Verify = rc.v.Verify(r.Header, body)
	}
	req.Verify = errors.Join(req.Verify, json.Unmarshal(body, &req.Payload))
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, req)
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) url(path string) string { return rc.srv.URL + path }

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// versions returns the run versions of the 2xx-answered requests.
func (rc *receiver) versions() []int64 {
	var vs []int64
	for _, r := range rc.requests() {
		if r.Status >= 200 && r.Status <= 299 && r.Payload.Data.Run != nil {
			vs = append(vs, r.Payload.Data.Run.Version)
		}
	}
	return vs
}

// env is a memory control plane, the host's webhook keys and helpers that
// move runs through their states.
type env struct {
	t       testing.TB
	ctx     context.Context
	cp      *memory.ControlPlane
	secrets map[string][]string
	keys    push.Keys
}

func newEnv(t testing.TB) *env {
	t.Helper()
	secrets := map[string][]string{"primary": {newSecret(t)}, "second": {newSecret(t)}}
	keys, err := push.SecretKeys("primary", secrets)
	if err != nil {
		t.Fatalf("SecretKeys = %v", err)
	}
	cp := memory.New()
	t.Cleanup(func() { cp.Close() })
	return &env{t: t, ctx: context.Background(), cp: cp, secrets: secrets, keys: keys}
}

func newSecret(t testing.TB) string {
	t.Helper()
	s, err := sign.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testOptions are fast options for tests: sweeps every 5 ms, backoff of
// 1-4 ms, no logs.
func testOptions() *push.Options {
	return &push.Options{SweepInterval: 5 * time.Millisecond, BackoffBase: time.Millisecond,
		BackoffMax: 4 * time.Millisecond, RequestTimeout: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler)}
}

// host is a running dispatcher; done receives Run's result.
type host struct {
	d    *push.Dispatcher
	done chan error
}

// start runs a dispatcher over the env's store with client (a plain
// client: the receivers are on loopback, which the destination policy
// refuses unless allowed; its CheckRedirect is the policy's job).
func (e *env) start(client *http.Client, opts *push.Options) *host {
	e.t.Helper()
	if client == nil {
		client = &http.Client{}
	}
	d, err := push.New(e.cp, e.cp, client, e.keys, opts)
	if err != nil {
		e.t.Fatalf("push.New = %v", err)
	}
	h := &host{d: d, done: make(chan error, 1)}
	go func() { h.done <- d.Run(context.Background()) }()
	e.t.Cleanup(func() {
		if err := d.Close(); err != nil {
			e.t.Errorf("Close() = %v", err)
		}
		if err := <-h.done; err != nil {
			e.t.Errorf("Run() = %v after Close, want nil", err)
		}
	})
	return h
}

func (e *env) submit(mut func(*sortie.Run)) *sortie.Run {
	e.t.Helper()
	now := time.Now()
	r := &sortie.Run{ID: sortie.NewRunID(now), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		Variables: json.RawMessage(`{}`), Policy: sortie.Policy{MaxAttempts: 5}.WithDefaults()}
	if mut != nil {
		mut(r)
	}
	got, _, err := e.cp.Reserve(e.ctx, &sortie.Reservation{Run: r, NowMs: now.UnixMilli()})
	if err != nil {
		e.t.Fatalf("Reserve = %v", err)
	}
	return got
}

func (e *env) put(run sortie.RunID, id, url, keyID string) {
	e.t.Helper()
	cfg := &sortie.PushConfig{RunID: run, ID: id, URL: url, KeyID: keyID}
	if _, err := e.cp.PutPushConfig(e.ctx, cfg, time.Now().UnixMilli()); err != nil {
		e.t.Fatalf("PutPushConfig(%s) = %v", id, err)
	}
}

func (e *env) cfg(run sortie.RunID, id string) sortie.PushConfig {
	e.t.Helper()
	c, err := e.cp.GetPushConfig(e.ctx, run, id)
	if err != nil {
		e.t.Fatalf("GetPushConfig(%s) = %v", id, err)
	}
	return *c
}

func (e *env) get(run sortie.RunID) *sortie.Run {
	e.t.Helper()
	r, err := e.cp.Get(e.ctx, run)
	if err != nil {
		e.t.Fatalf("Get(%s) = %v", run, err)
	}
	return r
}

// launch records and claims the next attempt; it returns the claim.
func (e *env) launch(run sortie.RunID) sortie.Claim {
	e.t.Helper()
	r := e.get(run)
	c := sortie.Claim{RunID: run, Attempt: r.Attempt + 1, LaunchID: sortie.NewLaunchID(), Owner: "test", NowMs: time.Now().UnixMilli()}
	if _, err := e.cp.RecordLaunch(e.ctx, sortie.Launch{RunID: run, Attempt: c.Attempt, LaunchID: c.LaunchID, NowMs: c.NowMs}); err != nil {
		e.t.Fatalf("RecordLaunch(%s, %d) = %v", run, c.Attempt, err)
	}
	if _, err := e.cp.Claim(e.ctx, c); err != nil {
		e.t.Fatalf("Claim(%s, %d) = %v", run, c.Attempt, err)
	}
	return c
}

func (e *env) finish(c sortie.Claim, o sortie.Outcome) *sortie.Run {
	e.t.Helper()
	r, err := e.cp.Finish(e.ctx, sortie.Finish{RunID: c.RunID, Attempt: c.Attempt, LaunchID: c.LaunchID, Outcome: o, NowMs: time.Now().UnixMilli()})
	if err != nil {
		e.t.Fatalf("Finish(%s, %d) = %v", c.RunID, c.Attempt, err)
	}
	return r
}

// waitCfg waits until configuration id's delivery progress satisfies ok.
func (e *env) waitCfg(run sortie.RunID, id, what string, ok func(sortie.PushDelivery) bool) sortie.PushDelivery {
	e.t.Helper()
	var d sortie.PushDelivery
	testwait.UntilReport(e.t, fmt.Sprintf("config %s: %s", id, what), waitFor, func() (bool, string) {
		d = e.cfg(run, id).Delivery
		return ok(d), fmt.Sprintf("%+v", d)
	})
	return d
}

// waitDelivered waits until configuration id delivered version v.
func (e *env) waitDelivered(run sortie.RunID, id string, v int64) sortie.PushDelivery {
	e.t.Helper()
	return e.waitCfg(run, id, fmt.Sprintf("delivered version %d", v), func(d sortie.PushDelivery) bool { return d.DeliveredVersion >= v })
}

// barrier puts a new configuration on run pointing at a fresh receiver,
// notifies, and waits for its delivery of the run's current version. The
// dispatcher looks at a run's configurations in ID order, so by then it
// has looked at every other configuration of the run for that change.
func (e *env) barrier(h *host, run sortie.RunID) {
	e.t.Helper()
	rc := newReceiver(e.t, e.secrets["primary"], nil, nil)
	id := fmt.Sprintf("zz-barrier-%d", time.Now().UnixNano())
	e.put(run, id, rc.url("/barrier"), "")
	h.d.Notify(run)
	e.waitDelivered(run, id, e.get(run).Version)
}
