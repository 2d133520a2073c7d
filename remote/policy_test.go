package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/runs"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/httpengine"
)

// serveHost serves h's HTTP API on loopback behind front (nil: none) and
// returns its URL.
func serveHost(t *testing.T, h *remotetest.Host, front func(api http.Handler) http.Handler) string {
	t.Helper()
	api, err := server.New(server.Options{Engine: h.Engine, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("server.New = %v", err)
	}
	var hd http.Handler = api
	if front != nil {
		hd = front(api)
	}
	srv := httptest.NewServer(hd)
	t.Cleanup(srv.Close)
	return srv.URL
}

// httpTransport reaches hosts through their HTTP API.
func httpTransport() *runs.Transport {
	return runs.New(func(_ context.Context, u string) (sortie.ExecutionEngine, error) {
		return httpengine.New(u, nil)
	}, &runs.Options{PollInterval: 10 * time.Millisecond})
}

// loseFirstSubmitAnswer lets the first run submission reach the host but
// drops the connection before the answer: the caller sees a transport
// failure although the run exists. Every answer closes its connection, so
// the submission never travels on a reused one: net/http itself replays a
// request carrying an Idempotency-Key when a reused connection fails, and
// that replay would hide the loss from the policy under test.
func loseFirstSubmitAnswer(lost *atomic.Int32) func(http.Handler) http.Handler {
	return func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/v1/runs" || !lost.CompareAndSwap(0, 1) {
				w.Header().Set("Connection", "close")
				api.ServeHTTP(w, r)
				return
			}
			api.ServeHTTP(httptest.NewRecorder(), r)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})
	}
}

func TestPolicyRetriesALostAnswerIntoTheSameRemoteRun(t *testing.T) {
	h := remotetest.New(t, nil)
	var lost atomic.Int32
	url := serveHost(t, h, loseFirstSubmitAnswer(&lost))
	rec := &recorder{}
	n := &remote.Node{Name: "retrying", Transport: httpTransport(), Skill: "probe", AgentURL: url, Observer: rec,
		Policy: remote.Policy{MaxAttempts: 3, Backoff: time.Millisecond}}
	res, err := n.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0,"output":{"n":1}}`)}, nil)
	if err != nil {
		t.Fatalf("Call through a host that lost the first answer = %v, want the result", err)
	}
	if lost.Load() != 1 {
		t.Fatalf("the front lost %d answers, want 1", lost.Load())
	}
	page, err := h.Engine.List(testCtx(t), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID.String() != res.TaskID {
		t.Errorf("runs on the host = %d (%v), want the one run %s: the retry sent the same message ID", len(page.Runs), err, res.TaskID)
	}
	var retries []remote.Observation
	for _, o := range rec.all() {
		if o.Kind == remote.RemoteCallRetry {
			retries = append(retries, o)
		}
	}
	if len(retries) != 1 || retries[0].Attempt != 1 || !errors.Is(retries[0].Err, sortie.ErrUnavailable) {
		t.Errorf("retry observations %+v, want one after attempt 1 with an unavailable error", retries)
	}
}

func TestPolicyDoesNotRetryAnAnswer(t *testing.T) {
	n, rec, h := newNode(t, false)
	n.Policy = remote.Policy{MaxAttempts: 3, Backoff: time.Millisecond}
	_, err := n.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0,"fail":"no"}`)}, nil)
	var te *remote.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("Call(failing probe) = %v, want *TaskError", err)
	}
	for _, k := range rec.kinds() {
		if k == remote.RemoteCallRetry {
			t.Errorf("observations %v: a failed task was retried", rec.kinds())
		}
	}
	if page, _ := h.Engine.List(testCtx(t), sortie.ListQuery{}); len(page.Runs) != 1 {
		t.Errorf("runs on the host = %d, want 1", len(page.Runs))
	}
}

func TestPolicyTimeoutCancelsTheRemoteTask(t *testing.T) {
	n, rec, h := newNode(t, false)
	n.Policy = remote.Policy{Timeout: 300 * time.Millisecond}
	_, err := n.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0,"until_cancelled":true}`)}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call past the policy's timeout = %v, want context.DeadlineExceeded", err)
	}
	o := rec.last()
	if o.Kind != remote.RemoteCallError || !o.CancelSent || o.CancelErr != nil || o.TaskID == "" {
		t.Fatalf("last observation %+v, want remote_call_error with the cancel sent", o)
	}
	if run := h.Wait(t, sortie.RunID(o.TaskID)); run.State != sortie.StateCancelled {
		t.Errorf("remote run after the timeout is %s, want cancelled", run.State)
	}
}

func TestPolicyValidatesTheResult(t *testing.T) {
	n, rec, _ := newNode(t, false)
	n.Policy = remote.Policy{MaxAttempts: 2, ResultSchema: json.RawMessage(`{"type":"object","required":["answer"],
		"properties":{"answer":{"type":"integer"}}}`)}
	if _, err := n.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0,"output":{"answer":42}}`)}, nil); err != nil {
		t.Fatalf("Call with a valid result = %v", err)
	}
	_, err := n.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0,"output":{"answer":"hidden-value"}}`)}, nil)
	var ve *sortie.ValidationError
	if !errors.Is(err, remote.ErrInvalidResult) || !errors.As(err, &ve) || ve.Field != "result.answer" {
		t.Fatalf("Call with a result off the schema = %v, want ErrInvalidResult naming result.answer", err)
	}
	if bytes.Contains([]byte(err.Error()), []byte("hidden-value")) {
		t.Errorf("the error %q echoes the result's value", err)
	}
	if o := rec.last(); o.Kind != remote.RemoteCallError || o.Attempt != 1 || o.CancelSent {
		t.Errorf("last observation %+v, want remote_call_error on attempt 1 without retry or cancel", o)
	}
}

func TestBadPolicyIsRefusedNamingTheField(t *testing.T) {
	for field, p := range map[string]remote.Policy{
		"policy.max_attempts":  {MaxAttempts: 11},
		"policy":               {Timeout: -time.Second},
		"policy.result_schema": {ResultSchema: json.RawMessage(`{"type": 5}`)},
	} {
		n, _, _ := newNode(t, false)
		n.Policy = p
		_, err := n.Call(testCtx(t), remote.Message{}, nil)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Call with policy %+v = %v, want a ValidationError for %s", p, err, field)
		}
	}
}
