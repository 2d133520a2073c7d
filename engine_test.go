package sortie_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/launchers/local"
)

var probeAgent = sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe",
	Policy: sortie.Policy{HeartbeatMs: 100, LeaseMs: 400, BackoffMs: 1, StartTimeoutMs: 300}}}

// rig is an engine over the memory control plane whose in-process
// launcher calls start for each attempt.
type rig struct {
	cp       *memory.ControlPlane
	launcher *local.Launcher
	engine   *sortie.Engine
	client   *sortie.Client
	worker   *functions.Worker
}

func newRig(t *testing.T, start func(r *rig, ctx context.Context, inv *sortie.Invocation) error) *rig {
	t.Helper()
	reg := functions.NewRegistry()
	probe.Register(reg)
	r := &rig{cp: memory.New(), worker: &functions.Worker{Registry: reg}}
	if start == nil {
		start = (*rig).execute
	}
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		return start(r, ctx, inv)
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.launcher = l
	r.engine = sortie.NewEngine(r.cp, l, probeAgent, nil)
	r.client = sortie.NewClient(r.engine, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	t.Cleanup(func() { r.engine.Close(); l.Close(); r.cp.Close() })
	return r
}

func (r *rig) execute(ctx context.Context, inv *sortie.Invocation) error {
	_, err := r.worker.Execute(ctx, inv, functions.NewControlPlaneReporter(r.cp, inv, "test"))
	return err
}

func (r *rig) submit(t *testing.T, vars string, key string) *sortie.Run {
	t.Helper()
	run, err := r.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(vars), IdempotencyKey: key})
	if err != nil {
		t.Fatalf("Submit(%s) = %v", vars, err)
	}
	return run
}

func (r *rig) wait(t *testing.T, id sortie.RunID) *sortie.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := r.client.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", id, err)
	}
	return run
}

// reconcileUntil calls Reconcile until cond holds for the run.
func (r *rig) reconcileUntil(t *testing.T, id sortie.RunID, what string, cond func(*sortie.Run) bool) *sortie.Run {
	t.Helper()
	return reconcileUntil(t, r.cp, r.engine, id, what, cond)
}

// reconcileUntil reads the run from cp and reconciles with e until cond
// holds for it, for at most 20 s.
func reconcileUntil(t *testing.T, cp sortie.ControlPlane, e *sortie.Engine, id sortie.RunID, what string, cond func(*sortie.Run) bool) *sortie.Run {
	t.Helper()
	var run *sortie.Run
	testwait.Until(t, fmt.Sprintf("run %s to reach %s", id, what), 20*time.Second, func() bool {
		var err error
		if run, err = cp.Get(context.Background(), id); err != nil {
			t.Fatalf("Get(%s) = %v", id, err)
		}
		if cond(run) {
			return true
		}
		if _, err := e.Reconcile(context.Background()); err != nil {
			t.Fatalf("Reconcile() = %v", err)
		}
		return false
	})
	return run
}

func TestSubmitWithOneIdempotencyKeyMakesOneRun(t *testing.T) {
	r := newRig(t, nil)
	a := r.submit(t, `{"events":2}`, "k-1")
	b := r.submit(t, `{ "events": 2 }`, "k-1")
	if a.ID != b.ID {
		t.Fatalf("Submit twice with key k-1 = runs %s and %s, want one", a.ID, b.ID)
	}
	run := r.wait(t, a.ID)
	if run.State != sortie.StateCompleted || len(run.Attempts) != 1 {
		t.Errorf("run = %s with %d attempts, want completed with exactly 1 launch", run.State, len(run.Attempts))
	}
	_, err := r.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":3}`), IdempotencyKey: "k-1"})
	if !errors.Is(err, sortie.ErrIdempotencyConflict) {
		t.Errorf("Submit(k-1, other variables) = %v, want ErrIdempotencyConflict", err)
	}
}

func TestSubmitRefusesBadInputAndStoresNothing(t *testing.T) {
	r := newRig(t, nil)
	for field, req := range map[string]*sortie.SubmitRequest{
		"agent":               {Agent: "nobody"},
		"variables":           {Agent: "probe", Variables: json.RawMessage(`[]`)},
		"policy.heartbeat_ms": {Agent: "probe", Policy: sortie.Policy{HeartbeatMs: 1000, LeaseMs: 2999}},
		"config_refs":         {Agent: "probe", ConfigRefs: []string{"db"}}, // this engine has no allowlist
	} {
		var ve *sortie.ValidationError
		if _, err := r.client.Submit(context.Background(), req); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Submit(bad %s) = %v, want a ValidationError on %q", field, err, field)
		}
	}
	page, err := r.client.List(context.Background(), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Errorf("List after refused submits = %d runs (%v), want none", len(page.Runs), err)
	}
}

func TestHeartbeatUnderTheMinimumIsRefused(t *testing.T) {
	r := newRig(t, nil)
	var ve *sortie.ValidationError
	_, err := r.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Policy: sortie.Policy{HeartbeatMs: sortie.MinHeartbeatMs - 1, LeaseMs: 3000}})
	if !errors.As(err, &ve) || ve.Field != "policy.heartbeat_ms" || !strings.Contains(ve.Reason, "minimum of 100 ms") {
		t.Errorf("Submit(heartbeat_ms %d) = %v, want a ValidationError on policy.heartbeat_ms naming the minimum", sortie.MinHeartbeatMs-1, err)
	}
	if page, err := r.client.List(context.Background(), sortie.ListQuery{}); err != nil || len(page.Runs) != 0 {
		t.Errorf("List after the refused submit = %d runs (%v), want none", len(page.Runs), err)
	}
	m := sortie.Manifest{Name: "fast", Runtime: "go:probe", Policy: sortie.Policy{HeartbeatMs: 1, LeaseMs: 3}}
	if err := m.Validate(); !errors.As(err, &ve) || ve.Field != "policy.heartbeat_ms" {
		t.Errorf("Manifest{heartbeat_ms 1}.Validate() = %v, want a ValidationError on policy.heartbeat_ms", err)
	}
	m.Policy = sortie.Policy{HeartbeatMs: sortie.MinHeartbeatMs, LeaseMs: 3 * sortie.MinHeartbeatMs}
	if err := m.Validate(); err != nil {
		t.Errorf("Manifest{heartbeat_ms %d}.Validate() = %v, want nil", sortie.MinHeartbeatMs, err)
	}
}

func TestFollowCrossesAttemptsInOrder(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events":3,"fail":"flaky","retryable":true,"fail_attempts":1}`, "")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go r.engine.RunReconciler(ctx, 5*time.Millisecond)
	var got []sortie.Cursor
	var final *sortie.Run
	for u, err := range r.client.Follow(context.Background(), run.ID, sortie.Cursor{}) {
		if err != nil {
			t.Fatalf("Follow = %v", err)
		}
		if u.Event != nil {
			got = append(got, u.Event.Cursor())
		}
		final = u.Run
	}
	want := []sortie.Cursor{{1, 1}, {1, 2}, {1, 3}, {2, 1}, {2, 2}, {2, 3}}
	if len(got) != len(want) || final == nil || final.State != sortie.StateCompleted {
		t.Fatalf("Follow = events %v, final %v; want %v then completed", got, final, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Follow event %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// A reservation whose submitter died before recording the launch is
// launched by the reconciler once its launch grace passes.
func TestReconcileLaunchesAnOrphanedReservation(t *testing.T) {
	r := newRig(t, nil)
	orphan := &sortie.Run{ID: sortie.NewRunID(time.Now()), Agent: probeAgent["probe"], Variables: json.RawMessage(`{"events":1}`)}
	past := time.Now().Add(-time.Minute).UnixMilli()
	if _, _, err := r.cp.Reserve(context.Background(), &sortie.Reservation{Run: orphan, NowMs: past}); err != nil {
		t.Fatal(err)
	}
	run := r.reconcileUntil(t, orphan.ID, "completed", func(r *sortie.Run) bool { return r.State == sortie.StateCompleted })
	if run.Attempt != 1 {
		t.Errorf("orphaned reservation completed on attempt %d, want 1", run.Attempt)
	}
}

// startOnly hides a launcher's optional capabilities: the engine sees a
// launcher that neither cancels, describes nor reports exits.
type startOnly struct{ sortie.Launcher }

// A launch no worker claims ends with start_timeout and is retried (a
// launcher that does not report exits leaves only the timeout).
func TestStartTimeoutRetries(t *testing.T) {
	var starts atomic.Int32
	r := newRig(t, func(r *rig, ctx context.Context, inv *sortie.Invocation) error {
		if starts.Add(1) == 1 {
			return nil // the first delivery is lost: nobody claims it
		}
		return r.execute(ctx, inv)
	})
	r.engine.Close()
	r.engine = sortie.NewEngine(r.cp, startOnly{r.launcher}, probeAgent, nil)
	t.Cleanup(func() { r.engine.Close() })
	r.client = sortie.NewClient(r.engine, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	run := r.submit(t, `{"events":1}`, "")
	run = r.reconcileUntil(t, run.ID, "completed", func(r *sortie.Run) bool { return r.State == sortie.StateCompleted })
	if run.Attempt != 2 || run.Attempts[0].Error == nil || run.Attempts[0].Error.Type != sortie.ErrorTypeStartTimeout {
		t.Errorf("run = attempt %d, attempt 1 error %v; want completed on attempt 2 after start_timeout", run.Attempt, run.Attempts[0].Error)
	}
}

// Cancel before the worker claims: the run is cancelled at once and the
// late worker executes nothing.
func TestCancelBeforeClaim(t *testing.T) {
	release := make(chan struct{})
	executed := make(chan error, 1)
	r := newRig(t, func(r *rig, ctx context.Context, inv *sortie.Invocation) error {
		<-release
		err := r.execute(ctx, inv)
		executed <- err
		return err
	})
	run := r.submit(t, `{"events":2}`, "")
	run, err := r.client.Cancel(context.Background(), run.ID, "changed my mind")
	if err != nil || run.State != sortie.StateCancelled {
		t.Fatalf("Cancel before claim = %v, %v; want cancelled at once", run, err)
	}
	close(release)
	if err := <-executed; !errors.Is(err, sortie.ErrCancelRequested) && !errors.Is(err, sortie.ErrTerminal) {
		t.Errorf("late worker Execute = %v, want its claim refused", err)
	}
	evs, _ := r.cp.Events(context.Background(), run.ID, sortie.Cursor{}, 10)
	if len(evs) != 0 {
		t.Errorf("late worker stored %d events, want none", len(evs))
	}
}

// A Start that fails ends the attempt with a launch error; the run is
// retried and fails when the attempts are used up. The worker binary is
// removed after the launcher was configured, so every spawn fails.
func TestLaunchFailureRetriesThenFails(t *testing.T) {
	r := newRig(t, nil)
	bin := filepath.Join(t.TempDir(), "worker")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := local.New(&local.Options{Command: []string{bin}})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(bin)
	r.engine = sortie.NewEngine(r.cp, l, probeAgent, nil)
	run, err := r.engine.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	run = r.reconcileUntil(t, run.ID, "failed", func(r *sortie.Run) bool { return r.State.Terminal() })
	if run.State != sortie.StateFailed || run.Attempt != 3 || run.Error.Type != sortie.ErrorTypeLaunch {
		t.Errorf("run = %s after %d attempts, error %v; want failed after 3 launch errors", run.State, run.Attempt, run.Error)
	}
}

// goneLauncher's compute target does not exist.
type goneLauncher struct{}

func (goneLauncher) Start(context.Context, *sortie.Invocation) (sortie.Ref, error) {
	return sortie.Ref{}, fmt.Errorf("invoke function worker: %w", sortie.ErrNotFound)
}

// A launcher whose target does not exist fails the run at its first
// attempt: retrying cannot help.
func TestLaunchOnAMissingTargetFailsAtOnce(t *testing.T) {
	r := newRig(t, nil)
	r.engine = sortie.NewEngine(r.cp, goneLauncher{}, probeAgent, nil)
	run, err := r.engine.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	run = r.reconcileUntil(t, run.ID, "failed", func(r *sortie.Run) bool { return r.State.Terminal() })
	if run.State != sortie.StateFailed || run.Attempt != 1 || run.Error.Retryable {
		t.Errorf("run = %s after %d attempts, error %+v; want failed after 1 attempt, not retryable", run.State, run.Attempt, run.Error)
	}
}

// refusingSealer stands for a keyring whose primary key is gone (err
// permanent) or a KMS that is down (err wraps ErrUnavailable).
type refusingSealer struct{ err error }

func (s *refusingSealer) Seal(context.Context, *sortie.Invocation) error { return s.err }

// A launch whose configuration cannot be sealed fails the run with the
// reason when the cause is permanent, and waits for the reconciler when it
// is transient; it is never relaunched forever.
func TestSealFailure(t *testing.T) {
	r := newRig(t, nil)
	sealer := &refusingSealer{err: errors.New(`key "k1" is not in the ring`)}
	r.engine = sortie.NewEngine(r.cp, r.launcherOf(t), probeAgent, &sortie.EngineOptions{Sealer: sealer})
	run, err := r.engine.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"})
	if err != nil || run.State != sortie.StateFailed || run.Error == nil || run.Error.Type != sortie.ErrorTypeSeal {
		t.Fatalf("Submit with a permanently failing sealer = %+v, %v; want the run failed with error type seal", run, err)
	}

	sealer.err = fmt.Errorf("kms: %w", sortie.ErrUnavailable)
	waiting, err := r.engine.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe"})
	if err != nil || waiting.State != sortie.StateSubmitted || waiting.Attempt != 0 {
		t.Fatalf("Submit with KMS down = %+v, %v; want the run reserved, not launched, and no error", waiting, err)
	}
	sealer.err = nil // KMS is back: the reconciler launches the run once its launch grace passed
	r.engine = sortie.NewEngine(r.cp, r.launcherOf(t), probeAgent, &sortie.EngineOptions{Sealer: sealer,
		Now: func() time.Time { return time.Now().Add(time.Minute) }})
	done := r.reconcileUntil(t, waiting.ID, "completed", func(r *sortie.Run) bool { return r.State == sortie.StateCompleted })
	if done.Attempt != 1 {
		t.Errorf("deferred run completed on attempt %d, want 1", done.Attempt)
	}
}

func (r *rig) launcherOf(t *testing.T) sortie.Launcher {
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error { return r.execute(ctx, inv) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
