package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
)

// recorder is an in-test Reporter that records every call. It fails the
// test when two calls overlap (the worker must serialise them).
type recorder struct {
	t        *testing.T
	claimErr error
	hbErr    atomic.Pointer[error]
	cancel   atomic.Bool // what Heartbeat reports
	inFlight atomic.Int32

	mu         sync.Mutex
	claims     int
	heartbeats int
	events     []sortie.Event
	finishes   []sortie.Outcome
	ops        []string // "events N", "heartbeat", "step NAME", "finish", in call order
	eventsErr  error    // what Events returns, when set
	steps      []sortie.Step
	stepErr    error         // what Step returns, when set
	recorded   []sortie.Step // what Steps returns
}

func newRecorder(t *testing.T) *recorder { return &recorder{t: t} }

func (r *recorder) enter(op string) func() {
	if n := r.inFlight.Add(1); n != 1 {
		r.t.Errorf("reporter %s called while %d other call(s) were in flight, want calls serialised", op, n-1)
	}
	return func() { r.inFlight.Add(-1) }
}

func (r *recorder) Claim(context.Context) error {
	defer r.enter("Claim")()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims++
	return r.claimErr
}

func (r *recorder) Heartbeat(context.Context) (bool, error) {
	defer r.enter("Heartbeat")()
	r.mu.Lock()
	r.heartbeats++
	r.ops = append(r.ops, "heartbeat")
	r.mu.Unlock()
	if p := r.hbErr.Load(); p != nil {
		return false, *p
	}
	return r.cancel.Load(), nil
}

func (r *recorder) Events(_ context.Context, events []sortie.Event) error {
	defer r.enter("Events")()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.eventsErr != nil {
		return r.eventsErr
	}
	r.events = append(r.events, events...)
	r.ops = append(r.ops, fmt.Sprintf("events %d", len(events)))
	return nil
}

func (r *recorder) Step(_ context.Context, st sortie.Step) error {
	defer r.enter("Step")()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, "step "+st.Name)
	if r.stepErr != nil {
		return r.stepErr
	}
	r.steps = append(r.steps, st)
	return nil
}

func (r *recorder) Steps(context.Context) ([]sortie.Step, error) {
	defer r.enter("Steps")()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recorded), nil
}

func (r *recorder) Finish(_ context.Context, o sortie.Outcome) error {
	defer r.enter("Finish")()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finishes = append(r.finishes, o)
	r.ops = append(r.ops, "finish")
	return nil
}

// calls returns the reporter calls so far, in order.
func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

func (r *recorder) snapshot() (events []sortie.Event, finishes []sortie.Outcome, heartbeats int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sortie.Event(nil), r.events...), append([]sortie.Outcome(nil), r.finishes...), r.heartbeats
}

// finished returns the single Finish outcome, failing the test otherwise.
func (r *recorder) finished() sortie.Outcome {
	r.t.Helper()
	_, fs, _ := r.snapshot()
	if len(fs) != 1 {
		r.t.Fatalf("reporter got %d Finish calls, want 1: %+v", len(fs), fs)
	}
	return fs[0]
}

// waitFor polls cond every few ms until it holds or 10 s passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, 10*time.Second, cond)
}

// testInvocation returns a valid invocation of runtime with variables.
func testInvocation(runtime string, vars string) *sortie.Invocation {
	inv := &sortie.Invocation{
		Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: 1,
		LaunchID: sortie.NewLaunchID(), Agent: sortie.Manifest{Name: "test", Runtime: runtime},
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli(), HeartbeatMs: 20, LeaseMs: 1000,
		Report: sortie.Report{Mode: sortie.ReportControlPlane},
	}
	if vars != "" {
		inv.Variables = json.RawMessage(vars)
	}
	return inv
}

// logBuffer is a concurrency-safe buffer for a test logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newWorker returns a worker with r's handlers that logs into a buffer.
func newWorker(reg *Registry) (*Worker, *logBuffer) {
	logs := &logBuffer{}
	return &Worker{Registry: reg, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, logs
}

// register returns a registry holding h as "h".
func register(h Handler) *Registry {
	reg := NewRegistry()
	reg.Register("h", h)
	return reg
}
