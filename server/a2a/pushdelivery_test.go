package a2a_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
	"github.com/sortie-run/sortie/server/push"
)

// delivery is one POST a receiver got, with its signature check.
type delivery struct {
	path   string
	header http.Header
	body   []byte
	verify error
}

// receiver is a webhook receiver on loopback that checks each delivery's
// Standard Webhooks signature and answers 204, or 401 when it fails.
type receiver struct {
	srv *httptest.Server
	v   *sign.Verifier

	mu  sync.Mutex
	got []delivery
}

func newReceiver(t *testing.T, secret string) *receiver {
	t.Helper()
	v, err := sign.NewVerifier([]string{secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{v: v}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		d := delivery{path: r.URL.Path, header: r.Header.Clone(), body: body, verify: err}
		if d.verify == nil {
			d.verify = rc.v.Verify(r.Header, body)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, d)
		rc.mu.Unlock()
		if d.verify != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// at returns the deliveries made to path, in order.
func (rc *receiver) at(path string) []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []delivery
	for _, d := range rc.got {
		if d.path == path {
			out = append(out, d)
		}
	}
	return out
}

// lastTask decodes the last delivery to path as an A2A StreamResponse
// holding a task; nil when there is none.
func (rc *receiver) lastTask(t *testing.T, path string) *a2a.Task {
	t.Helper()
	ds := rc.at(path)
	if len(ds) == 0 {
		return nil
	}
	return decodeTask(t, ds[len(ds)-1].body)
}

func decodeTask(t *testing.T, body []byte) *a2a.Task {
	t.Helper()
	var sr a2a.StreamResponse
	if err := json.Unmarshal(body, &sr); err != nil {
		t.Fatalf("delivery %s is not an A2A StreamResponse: %v", body, err)
	}
	task, ok := sr.Event.(*a2a.Task)
	if !ok {
		t.Fatalf("delivery %s holds %T, want *a2a.Task", body, sr.Event)
	}
	return task
}

// lockedLog is a log destination safe for concurrent writes.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newSealer is an envelope sealer over a fresh local key.
func newSealer(t *testing.T) a2aserver.TokenSealer {
	t.Helper()
	key := make([]byte, localkey.KeyBytes)
	rand.Read(key)
	kek, err := localkey.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := envelope.NewKeyring("host-key", kek)
	if err != nil {
		t.Fatal(err)
	}
	return a2aserver.EnvelopeSealer(envelope.New(ring, nil))
}

// pushHost is a host over SQLite serving A2A with a token sealer, and its
// push dispatcher wired as `sortie serve` wires it: the A2A formats and
// the sealer's token opener. Both log at Debug level to log.
type pushHost struct {
	*rig
	dir    string
	sealer a2aserver.TokenSealer
	d      *push.Dispatcher
	log    *lockedLog
}

func newPushHost(t *testing.T, secret string) *pushHost {
	t.Helper()
	dir := t.TempDir()
	h := remotetest.New(t, &remotetest.Options{SQLitePath: filepath.Join(dir, "state.db")})
	ph := &pushHost{dir: dir, sealer: newSealer(t), log: &lockedLog{}}
	logger := slog.New(slog.NewTextHandler(ph.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	keys, err := push.SecretKeys("primary", map[string][]string{"primary": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	ph.d, err = push.New(h.CP.(sortie.PushStore), h.CP, &http.Client{}, keys, &push.Options{
		SweepInterval: 20 * time.Millisecond, Formats: a2aserver.PushFormats(),
		OpenToken: a2aserver.TokenOpener(ph.sealer), Logger: logger})
	if err != nil {
		t.Fatalf("push.New = %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() { _ = ph.d.Run(ctx) }()
	t.Cleanup(func() { stop(); _ = ph.d.Shutdown(context.Background()) })
	ph.rig = serve(t, h, h.Engine, &a2aserver.Options{PushChanged: ph.d.Notify, TokenSealer: ph.sealer, Logger: logger})
	return ph
}

// stateFiles returns the bytes of every file of the host's SQLite state
// (the database, its WAL and shared memory).
func (ph *pushHost) stateFiles(t *testing.T) []byte {
	t.Helper()
	entries, err := os.ReadDir(ph.dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(ph.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// waitState waits until the last delivery to path is the task in state.
func waitState(t *testing.T, rc *receiver, path string, state a2a.TaskState) *a2a.Task {
	t.Helper()
	var task *a2a.Task
	testwait.UntilReport(t, fmt.Sprintf("a delivery of the task %s to %s", state, path), 20*time.Second, func() (bool, string) {
		task = rc.lastTask(t, path)
		if task == nil {
			return false, "no delivery"
		}
		return task.Status.State == state, string(task.Status.State)
	})
	return task
}

// waitRunState waits until the last delivery to path is the run payload
// of a run in state.
func waitRunState(t *testing.T, rc *receiver, path string, state sortie.State) {
	t.Helper()
	testwait.UntilReport(t, fmt.Sprintf("a run payload of a %s run to %s", state, path), 20*time.Second, func() (bool, string) {
		ds := rc.at(path)
		if len(ds) == 0 {
			return false, "no delivery"
		}
		var p push.Payload
		if err := json.Unmarshal(ds[len(ds)-1].body, &p); err != nil || p.Data.Run == nil {
			return false, fmt.Sprintf("undecodable %s (%v)", ds[len(ds)-1].body, err)
		}
		return p.Data.Run.State == state, string(p.Data.Run.State)
	})
}
