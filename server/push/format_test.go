package push_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/server/push"
)

// renderTask is the renderer of a second format in these tests: the run's
// ID, state and version under "task".
func renderTask(run *sortie.Run) (any, error) {
	return map[string]any{"task": map[string]any{"id": run.ID, "state": run.State, "version": run.Version}}, nil
}

// taskBody is what renderTask's JSON decodes to.
type taskBody struct {
	Task struct {
		ID      sortie.RunID `json:"id"`
		State   sortie.State `json:"state"`
		Version int64        `json:"version"`
	} `json:"task"`
}

// tokens seals push tokens with a real envelope keeper over a local key,
// bound to the run and the configuration ID, and opens them as a host's
// Options.OpenToken does.
type tokens struct{ k *envelope.Keeper }

func newTokens(t testing.TB) *tokens {
	t.Helper()
	key := make([]byte, localkey.KeyBytes)
	rand.Read(key)
	kek, err := localkey.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := envelope.NewKeyring("push-test", kek)
	if err != nil {
		t.Fatal(err)
	}
	return &tokens{k: envelope.New(ring, nil)}
}

func tokenBinding(run sortie.RunID, id string) envelope.Binding {
	return envelope.Binding{RunID: string(run), InvocationVersion: "push-test/v1", Purpose: "push-token", Agent: id}
}

func (tk *tokens) seal(t testing.TB, run sortie.RunID, id, token string) json.RawMessage {
	t.Helper()
	sealed, err := tk.k.Seal(context.Background(), []byte(token), tokenBinding(run, id))
	if err != nil {
		t.Fatalf("Seal(token of %s) = %v", id, err)
	}
	return sealed
}

func (tk *tokens) open(ctx context.Context, cfg *sortie.PushConfig) (string, error) {
	pt, err := tk.k.Open(ctx, cfg.SealedToken, tokenBinding(cfg.RunID, cfg.ID))
	return string(pt), err
}

// logBuffer is a log destination safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// debugLogger logs everything, at Debug level and up, to a buffer.
func debugLogger() (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func (e *env) putCfg(cfg *sortie.PushConfig) {
	e.t.Helper()
	if _, err := e.cp.PutPushConfig(e.ctx, cfg, time.Now().UnixMilli()); err != nil {
		e.t.Fatalf("PutPushConfig(%s) = %v", cfg.ID, err)
	}
}

// A run with two configurations, one of another format with a sealed
// token and one of the run payload, goes through submitted, working and
// completed, each delivered before the next: the first gets the
// renderer's body with the opened token in both token headers, the second
// the run payload without them, all signed. Neither the stored
// configuration nor the log holds the plaintext token.
func TestFormatRendersAndTheTokenIsSent(t *testing.T) {
	const secret = "tok-s3cret-format"
	e, tk := newEnv(t), newTokens(t)
	log, logs := debugLogger()
	opts := testOptions()
	opts.Formats = map[string]func(*sortie.Run) (any, error){sortie.PushFormatA2A: renderTask}
	opts.OpenToken, opts.Logger = tk.open, log
	h := e.start(nil, opts)
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	run := e.submit(nil)
	e.putCfg(&sortie.PushConfig{RunID: run.ID, ID: "a2a-hook", URL: rc.url("/a2a"), Format: sortie.PushFormatA2A,
		SealedToken: tk.seal(t, run.ID, "a2a-hook", secret)})
	e.put(run.ID, "run-hook", rc.url("/run"), "")
	deliverBoth := func(v int64) {
		h.d.Notify(run.ID)
		e.waitDelivered(run.ID, "a2a-hook", v)
		e.waitDelivered(run.ID, "run-hook", v)
	}
	deliverBoth(run.Version)
	c := e.launch(run.ID)
	deliverBoth(e.get(run.ID).Version)
	done := e.finish(c, sortie.Outcome{Result: json.RawMessage(`{"ok":true}`)})
	deliverBoth(done.Version)

	var a2aStates, runStates []sortie.State
	for i, r := range rc.requests() {
		if r.Verify != nil {
			t.Errorf("request %d to %s: Verify = %v, want a valid signature", i+1, r.Path, r.Verify)
		}
		tok, prefixed := r.Header.Get(push.TokenHeader), r.Header.Get(push.TokenHeaderPrefixed)
		switch r.Path {
		case "/a2a":
			var b taskBody
			if err := json.Unmarshal(r.Body, &b); err != nil || b.Task.ID != run.ID {
				t.Errorf("request %d to /a2a: body %s (%v), want the rendered task of %s", i+1, r.Body, err, run.ID)
			}
			if tok != secret || prefixed != secret {
				t.Errorf("request %d to /a2a: %s %q, %s %q; want the opened token in both", i+1, push.TokenHeader, tok, push.TokenHeaderPrefixed, prefixed)
			}
			a2aStates = append(a2aStates, b.Task.State)
		case "/run":
			if r.Payload.Type != push.EventRunUpdated || r.Payload.Data.Run == nil {
				t.Errorf("request %d to /run: body %s, want the run payload", i+1, r.Body)
				continue
			}
			if tok != "" || prefixed != "" {
				t.Errorf("request %d to /run (no token): token headers %q, %q; want none", i+1, tok, prefixed)
			}
			runStates = append(runStates, r.Payload.Data.Run.State)
		}
	}
	want := []sortie.State{sortie.StateSubmitted, sortie.StateWorking, sortie.StateCompleted}
	if diff := cmp.Diff(want, a2aStates); diff != "" {
		t.Errorf("states delivered in the second format (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, runStates); diff != "" {
		t.Errorf("states delivered as the run payload (-want +got):\n%s", diff)
	}
	stored, err := json.Marshal(e.cfg(run.ID, "a2a-hook"))
	if err != nil || strings.Contains(string(stored), secret) || !strings.Contains(string(stored), `"sealed_token"`) {
		t.Errorf("stored configuration %s (%v): want a sealed token and no plaintext %q", stored, err, secret)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the dispatcher's log shows the token:\n%s", logs)
	}
}

// A configuration of a format without a renderer, and one with a sealed
// token on a host without a token opener, end at their first delivery
// with LastError saying why, and the receiver gets nothing.
func TestConfigurationsTheHostCannotServeEndAtOnce(t *testing.T) {
	e, tk := newEnv(t), newTokens(t)
	h := e.start(nil, testOptions())
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	run := e.submit(nil)
	e.putCfg(&sortie.PushConfig{RunID: run.ID, ID: "a2a", URL: rc.url("/a2a"), Format: sortie.PushFormatA2A})
	e.putCfg(&sortie.PushConfig{RunID: run.ID, ID: "token", URL: rc.url("/token"), SealedToken: tk.seal(t, run.ID, "token", "tok-s3cret")})
	h.d.Notify(run.ID)
	for id, want := range map[string]string{
		"a2a":   `unknown push format "a2a": this host renders "sortie"`,
		"token": "the configuration has a sealed token and this host has no token opener",
	} {
		got := e.waitCfg(run.ID, id, "done", func(d sortie.PushDelivery) bool { return d.Done })
		if diff := cmp.Diff(sortie.PushDelivery{Done: true, LastError: want}, got); diff != "" {
			t.Errorf("config %s: progress (-want +got):\n%s", id, diff)
		}
	}
	if reqs := rc.requests(); len(reqs) != 0 {
		t.Errorf("the receiver got %d requests, want none", len(reqs))
	}
}

// Failures to open a token: one wrapping sortie.ErrUnavailable is retried
// and then delivered; a token sealed for another configuration (copied)
// and a token that is no header value end the configuration. No request
// is sent without its token, and neither LastError nor the log shows a
// plaintext token.
func TestTokenOpenFailures(t *testing.T) {
	e, tk := newEnv(t), newTokens(t)
	log, logs := debugLogger()
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	run := e.submit(nil)
	var mu sync.Mutex
	flaky := 0
	opts := testOptions()
	opts.Logger = log
	opts.OpenToken = func(ctx context.Context, cfg *sortie.PushConfig) (string, error) {
		switch cfg.ID {
		case "flaky":
			mu.Lock()
			flaky++
			n := flaky
			mu.Unlock()
			if n == 1 {
				return "", fmt.Errorf("kms: throttled: %w", sortie.ErrUnavailable)
			}
		case "newline":
			return "tok-s3cret\nX-Injected: 1", nil
		}
		return tk.open(ctx, cfg)
	}
	h := e.start(nil, opts)
	e.putCfg(&sortie.PushConfig{RunID: run.ID, ID: "flaky", URL: rc.url("/flaky"), SealedToken: tk.seal(t, run.ID, "flaky", "tok-s3cret-flaky")})
	e.putCfg(&sortie.PushConfig{RunID: run.ID, ID: "copied", URL: rc.url("/copied"), SealedToken: tk.seal(t, run.ID, "flaky", "tok-s3cret-copied")})
	e.putCfg(&sortie.PushConfig{RunID: run.ID, ID: "newline", URL: rc.url("/newline"), SealedToken: tk.seal(t, run.ID, "newline", "unused")})
	h.d.Notify(run.ID)

	got := e.waitCfg(run.ID, "flaky", "a failure, then the delivery", func(d sortie.PushDelivery) bool { return d.DeliveredVersion >= run.Version })
	if diff := cmp.Diff(sortie.PushDelivery{DeliveredVersion: run.Version}, got); diff != "" {
		t.Errorf("config flaky after the retry (-want +got):\n%s", diff)
	}
	if want := "open the push token: kms: throttled"; !strings.Contains(logs.String(), want) {
		t.Errorf("the dispatcher's log does not show the retried failure %q:\n%s", want, logs)
	}
	mu.Lock()
	if flaky < 2 {
		t.Errorf("OpenToken(flaky) called %d times, want a retry after the unavailable error", flaky)
	}
	mu.Unlock()
	for id, want := range map[string]string{
		"copied":  "open the push token: open envelope of key ",
		"newline": "the opened push token is not 1-1024 bytes of visible ASCII and spaces",
	} {
		d := e.waitCfg(run.ID, id, "done", func(d sortie.PushDelivery) bool { return d.Done })
		if !strings.HasPrefix(d.LastError, want) || d.DeliveredVersion != 0 || d.Failures != 0 {
			t.Errorf("config %s: progress %+v, want done at once, LastError starting %q", id, d, want)
		}
		if strings.Contains(d.LastError, "s3cret") {
			t.Errorf("config %s: LastError %q shows a token", id, d.LastError)
		}
	}
	for _, r := range rc.requests() {
		if r.Path != "/flaky" || r.Header.Get(push.TokenHeader) != "tok-s3cret-flaky" {
			t.Errorf("receiver got a request to %s with token %q; want only /flaky with its token", r.Path, r.Header.Get(push.TokenHeader))
		}
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the dispatcher's log shows a token:\n%s", logs)
	}
}
