package launchertest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// The policy of every run the suite submits, in ms.
const (
	HeartbeatMs = 200
	LeaseMs     = 600
	BackoffMs   = 50
)

// DescribeInterval is how often the suite's engine asks a Describer about
// an unclaimed attempt.
const DescribeInterval = 50 * time.Millisecond

// waitLimit bounds every wait of the suite.
const waitLimit = 60 * time.Second

// Harness makes the launcher under test. The suite calls newHarness and
// MakeLauncher once per property, and Close when the property's test ends;
// it also makes one harness only to read its capabilities, and closes it
// without calling MakeLauncher.
type Harness interface {
	// MakeLauncher returns the launcher under test and the control plane
	// its workers report to, on which the suite builds its engine. The
	// harness owns both and releases them in Close.
	MakeLauncher(ctx context.Context, t *testing.T) (sortie.Launcher, sortie.ControlPlane)
	// CanCancelRunning reports whether the launcher is a [sortie.Canceler]
	// that stops a running attempt on the provider's side, beyond the
	// cooperative cancellation every worker sees on its heartbeat. The
	// suite checks it both ways.
	CanCancelRunning() bool
	// CanDescribe reports whether the launcher is a [sortie.Describer]
	// (checked both ways).
	CanDescribe() bool
	// ReportsExits reports whether the launcher is a [sortie.ExitWatcher]
	// (checked both ways).
	ReportsExits() bool
	// QueuesLaunches reports whether the launcher is a [sortie.Queuer]
	// (checked both ways).
	QueuesLaunches() bool
	// LimitsInvocations reports whether the launcher is a
	// [sortie.InvocationLimiter] (checked both ways); its limit must leave
	// room for a variable under sortie.MaxVariablesBytes to exceed it.
	LimitsInvocations() bool
	// WorkerCanCrash reports whether probe's crash_attempts ends only the
	// worker (its process exits), not the test process.
	WorkerCanCrash() bool
	// CanFreeze reports whether Freeze works: the worker runs in a process
	// the harness can stop.
	CanFreeze() bool
	// Freeze stops the worker process of the attempt ref names as SIGSTOP
	// does, leaving it alive but hung: no heartbeat, no reaction to
	// SIGTERM. Called only when CanFreeze.
	Freeze(t *testing.T, ref sortie.Ref)
	// HoldStarts makes the launcher's Start calls from now on block inside
	// the provider call (the spawn, RunJob, Invoke, the POST) until
	// release is called: a launch in flight.
	HoldStarts(t *testing.T) (release func())
	// CanHoldClaims reports whether HoldClaims works: the provider can
	// hold launched compute before its worker claims (a pending
	// execution, a queued event, a process not yet started).
	CanHoldClaims() bool
	// HoldClaims makes the attempts launched from now on accepted by the
	// provider (Start returns their Ref) while their workers wait, not
	// claiming, until release is called. Called only when CanHoldClaims.
	HoldClaims(t *testing.T) (release func())
	// CanCancelOutside reports whether CancelOutside works: the provider
	// has a cancel of its own that an operator can use behind Sortie's
	// back (the Cloud Run console).
	CanCancelOutside() bool
	// CancelOutside cancels the attempt's compute on the provider's side
	// as an operator would, not through the launcher (not counted in
	// CancelCalls). Called only when CanCancelOutside.
	CancelOutside(t *testing.T, ref sortie.Ref)
	// CancelCalls counts the provider-side cancels the launcher made (the
	// provider's cancel API calls, or the local launcher's stops) since
	// MakeLauncher; always 0 for a launcher that is not a Canceler.
	CancelCalls() int
	// Close stops whatever the harness still runs and releases it.
	Close()
}

// RunConformanceTests runs one subtest per property of a launcher. The
// properties a harness capability rules out are not run.
func RunConformanceTests(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	type property struct {
		name string
		run  func(t *testing.T, newHarness func(t *testing.T) Harness)
		when func(h Harness) bool
	}
	always := func(Harness) bool { return true }
	props := []property{
		{"Capabilities", testCapabilities, always},
		{"CompletesWithEventsInOrder", testCompletes, always},
		{"DuplicateStartExecutesOnce", testDuplicateStart, always},
		{"CancelWhileRunning", testCancelRunning, always},
		{"CancelDuringStart", testCancelDuringStart, always},
		{"CancelLaunchedUnclaimed", testCancelUnclaimed, Harness.CanHoldClaims},
		{"RetryableFailureRetries", testRetryableFailure, always},
		{"PermanentFailureFailsAtOnce", testPermanentFailure, always},
		{"InterruptThenResume", testInterrupt, always},
		{"CrashedWorkerIsRetried", testCrashRetried, Harness.WorkerCanCrash},
		{"CrashOnEveryAttemptFails", testCrashExhausted, Harness.WorkerCanCrash},
		{"CrashRetriedAfterBackoffNotLease", testCrashRetriedPromptly, func(h Harness) bool { return h.WorkerCanCrash() && h.ReportsExits() && h.CanDescribe() }},
		{"CancelFrozenWorker", testCancelFrozen, Harness.CanFreeze},
		{"CancelledOutsideWhilePending", testCancelledOutsidePending, func(h Harness) bool { return h.CanCancelOutside() && h.CanHoldClaims() }},
		{"CancelledOutsideWhileRunning", testCancelledOutsideRunning, Harness.CanCancelOutside},
		{"OversizeInvocationRefusedAtSubmit", testOversizeAtSubmit, Harness.LimitsInvocations},
		{"QueuedLaunchKeepsItsAttempt", testQueuedLaunch, func(h Harness) bool { return h.QueuesLaunches() && h.CanHoldClaims() }},
		{"DescribePhases", testDescribe, Harness.CanDescribe},
	}
	caps := newHarness(t)
	defer caps.Close()
	for _, p := range props {
		if p.when(caps) {
			t.Run(p.name, func(t *testing.T) { p.run(t, newHarness) })
		}
	}
}

// fixture is one property's engine and client over the harness's launcher.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	h        Harness
	launcher sortie.Launcher
	cp       sortie.ControlPlane
	engine   *sortie.Engine
	client   *sortie.Client
}

// setup builds the fixture. wrap, when not nil, wraps the launcher the
// engine uses (the fixture's launcher stays the harness's own).
func setup(t *testing.T, newHarness func(t *testing.T) Harness, wrap func(sortie.Launcher) sortie.Launcher) *fixture {
	t.Helper()
	h := newHarness(t)
	t.Cleanup(h.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 2*waitLimit)
	t.Cleanup(cancel)
	l, cp := h.MakeLauncher(ctx, t)
	el := l
	if wrap != nil {
		el = wrap(l)
	}
	agents := sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}}
	e := sortie.NewEngine(cp, el, agents, &sortie.EngineOptions{
		DefaultPolicy:    sortie.Policy{HeartbeatMs: HeartbeatMs, LeaseMs: LeaseMs, BackoffMs: BackoffMs},
		DescribeInterval: DescribeInterval,
		Logger:           slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	t.Cleanup(func() { _ = e.Close() })
	c := sortie.NewClient(e, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	return &fixture{t: t, ctx: ctx, h: h, launcher: l, cp: cp, engine: e, client: c}
}

// submit submits a run of probe with vars (a JSON object) and policy.
func (f *fixture) submit(vars map[string]any, policy sortie.Policy) *sortie.Run {
	f.t.Helper()
	b, err := json.Marshal(vars)
	if err != nil {
		f.t.Fatalf("marshal probe variables: %v", err)
	}
	run, err := f.client.Submit(f.ctx, &sortie.SubmitRequest{Agent: "probe", Variables: b, Policy: policy})
	if err != nil {
		f.t.Fatalf("Submit(probe %s) = %v, want nil", b, err)
	}
	return run
}

// waitRun reads the run until cond holds and returns it. With reconcile,
// it calls engine.Reconcile before each read, as a host's reconciler would.
func (f *fixture) waitRun(id sortie.RunID, what string, reconcile bool, cond func(*sortie.Run) bool) *sortie.Run {
	f.t.Helper()
	var run *sortie.Run
	f.waitFor(what, func() (bool, string) {
		if reconcile {
			if _, err := f.engine.Reconcile(f.ctx); err != nil {
				f.t.Fatalf("Reconcile() = %v, want nil", err)
			}
		}
		var err error
		if run, err = f.client.Get(f.ctx, id); err != nil {
			f.t.Fatalf("Get(%s) = %v, want nil", id, err)
		}
		return cond(run), describeRun(run)
	})
	return run
}

// waitFor polls cond every 10 ms until it holds, failing after waitLimit
// with what and cond's last report.
func (f *fixture) waitFor(what string, cond func() (bool, string)) {
	f.t.Helper()
	f.waitUntil(time.Now().Add(waitLimit), what, cond)
}

// waitUntil is waitFor with a deadline of its own.
func (f *fixture) waitUntil(deadline time.Time, what string, cond func() (bool, string)) {
	f.t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("waited until the deadline for %s; last seen: %s", what, last)
		}
		select {
		case <-f.ctx.Done():
			f.t.Fatalf("waiting for %s: %v; last seen: %s", what, f.ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func describeRun(r *sortie.Run) string {
	s := fmt.Sprintf("run %s state %s attempt %d reason %q", r.ID, r.State, r.Attempt, r.Reason)
	if r.Error != nil {
		s += fmt.Sprintf(" error %s", r.Error)
	}
	return s
}

// settled reports whether the run is terminal or waits for input.
func settled(r *sortie.Run) bool { return r.State.Terminal() || r.State.Interrupted() }

// events returns all events of the run, in (attempt, seq) order.
func (f *fixture) events(id sortie.RunID) []sortie.Event {
	f.t.Helper()
	var all []sortie.Event
	var after sortie.Cursor
	for {
		evs, err := f.engine.Events(f.ctx, id, after, 500)
		if err != nil {
			f.t.Fatalf("Events(%s, after %s) = %v, want nil", id, after, err)
		}
		all = append(all, evs...)
		if len(evs) < 500 {
			return all
		}
		after = evs[len(evs)-1].Cursor()
	}
}

// seqs returns the sequence numbers of attempt n's events.
func seqs(evs []sortie.Event, n int) []int64 {
	var out []int64
	for _, e := range evs {
		if e.Attempt == n {
			out = append(out, e.Seq)
		}
	}
	return out
}

// upTo returns 1..n.
func upTo(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// waitRef waits until attempt n of the run has its launcher Ref, checks
// that it names the run, attempt and launch ID, and returns it.
func (f *fixture) waitRef(id sortie.RunID, n int) sortie.Ref {
	f.t.Helper()
	run := f.waitRun(id, fmt.Sprintf("the Ref of attempt %d", n), false, func(r *sortie.Run) bool {
		return len(r.Attempts) >= n && r.Attempts[n-1].Ref != nil
	})
	a := run.Attempts[n-1]
	checkRef(f.t, *a.Ref, id, n, a.LaunchID)
	return *a.Ref
}

func checkRef(t *testing.T, ref sortie.Ref, id sortie.RunID, n int, launchID string) {
	t.Helper()
	if ref.RunID != id || ref.Attempt != n || ref.LaunchID != launchID {
		t.Errorf("Ref of run %s attempt %d = run %s attempt %d launch %q, want launch %q",
			id, n, ref.RunID, ref.Attempt, ref.LaunchID, launchID)
	}
	if ref.Provider == "" || ref.ID == "" {
		t.Errorf("Ref of run %s attempt %d = %+v, want Provider and ID set", id, n, ref)
	}
}

// waitPhase calls Describe until cond holds and returns the status.
func (f *fixture) waitPhase(ref sortie.Ref, what string, cond func(sortie.Status) bool) sortie.Status {
	f.t.Helper()
	d, ok := f.launcher.(sortie.Describer)
	if !ok {
		f.t.Fatalf("launcher %T is not a sortie.Describer, but the harness says CanDescribe", f.launcher)
	}
	var st sortie.Status
	f.waitFor(what, func() (bool, string) {
		var err error
		st, err = d.Describe(f.ctx, ref)
		if err != nil {
			return false, fmt.Sprintf("Describe(%s) = %v", ref.ID, err)
		}
		return cond(st), fmt.Sprintf("Describe(%s) = %+v", ref.ID, st)
	})
	return st
}

func notRunning(st sortie.Status) bool { return st.Phase != sortie.PhaseRunning }

// recorder is a launcher wrapper that hands each invocation the engine
// starts to the test. It hides the inner launcher's optional capabilities.
type recorder struct {
	inner sortie.Launcher
	invs  chan *sortie.Invocation
}

func (r *recorder) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	r.invs <- inv
	return r.inner.Start(ctx, inv)
}
