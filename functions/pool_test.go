package functions_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/internal/testwait"
)

// warmRig is a host-side worker whose go handlers run in a pool of warm
// session workers (this test binary), reporting to a memory control plane.
type warmRig struct {
	cp   *memory.ControlPlane
	pool *functions.Pool
	w    *functions.Worker
}

func newWarmRig(t *testing.T, opts *functions.PoolOptions) *warmRig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := functions.NewPool(functions.ExecSpec{Command: []string{exe}, Env: []string{sessionWorkerEnv + "=1"}}, opts)
	if err != nil {
		t.Fatalf("NewPool = %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pool.Close(ctx); err != nil {
			t.Errorf("pool.Close = %v", err)
		}
	})
	w := stdioWorker()
	w.Warm = map[string]*functions.Pool{"go": pool}
	cp := memory.New()
	t.Cleanup(func() { cp.Close() })
	return &warmRig{cp: cp, pool: pool, w: w}
}

// execute launches and executes one probe attempt with vars.
func (r *warmRig) execute(t *testing.T, ctx context.Context, vars string) (*sortie.Invocation, sortie.Outcome, error) {
	t.Helper()
	inv := launched(t, r.cp, vars)
	o, err := r.w.Execute(ctx, inv, functions.NewControlPlaneReporter(r.cp, inv, "warm-test"))
	return inv, o, err
}

func (r *warmRig) events(t *testing.T, id sortie.RunID) []sortie.Event {
	t.Helper()
	evs, err := r.cp.Events(context.Background(), id, sortie.Cursor{}, 0)
	if err != nil {
		t.Fatalf("Events(%s) = %v", id, err)
	}
	return evs
}

func TestWarmPoolRunsAttemptsOnOneProcess(t *testing.T) {
	r := newWarmRig(t, nil)
	for i := range 3 {
		inv, o, err := r.execute(t, t.Context(), `{"events": 2, "output": "warm"}`)
		if err != nil || string(o.Result) != `"warm"` {
			t.Fatalf("attempt %d = %+v, %v; want result \"warm\"", i+1, o, err)
		}
		if evs := r.events(t, inv.RunID); len(evs) != 2 || evs[1].Seq != 2 {
			t.Errorf("attempt %d stored events %+v, want seqs 1, 2", i+1, evs)
		}
		run, _ := r.cp.Get(t.Context(), inv.RunID)
		if run.State != sortie.StateCompleted {
			t.Errorf("run after attempt %d: %s, want completed (the host-side worker finished it)", i+1, run.State)
		}
	}
	if st := r.pool.Stats(); st.Started != 1 || st.Idle != 1 {
		t.Errorf("Stats after 3 attempts in turn = %+v, want 1 process started, idle", st)
	}
}

func TestWarmPoolRecyclesAfterN(t *testing.T) {
	r := newWarmRig(t, &functions.PoolOptions{RecycleAfter: 2})
	for i := range 5 {
		if _, o, err := r.execute(t, t.Context(), `{"events": 0}`); err != nil || o.Error != nil {
			t.Fatalf("attempt %d = %+v, %v", i+1, o, err)
		}
	}
	if st := r.pool.Stats(); st.Started != 3 {
		t.Errorf("Stats after 5 attempts with RecycleAfter 2 = %+v, want 3 processes started", st)
	}
}

func TestWarmPoolProcessCrashEndsTheAttemptWithoutAWord(t *testing.T) {
	r := newWarmRig(t, nil)
	inv, _, err := r.execute(t, t.Context(), `{"events": 1, "crash_attempts": 1}`)
	var ce *functions.ComputeEndedError
	if !errors.As(err, &ce) || ce.Status.ExitCode == nil || *ce.Status.ExitCode != 97 {
		t.Fatalf("Execute(crashing probe) = %v, want a ComputeEndedError with exit code 97", err)
	}
	run, _ := r.cp.Get(t.Context(), inv.RunID)
	if cur := run.Current(); cur == nil || cur.Ended() {
		t.Errorf("attempt after the crash = %+v, want it live: its launcher reports the exit", cur)
	}
	if evs := r.events(t, inv.RunID); len(evs) != 1 {
		t.Errorf("events of the crashed attempt = %+v, want the 1 sent before the crash", evs)
	}
	if _, o, err := r.execute(t, t.Context(), `{"events": 0}`); err != nil || o.Error != nil {
		t.Fatalf("next attempt = %+v, %v; want it run on a new process", o, err)
	}
	if st := r.pool.Stats(); st.Started != 2 {
		t.Errorf("Stats = %+v, want 2 processes started (the crashed one replaced)", st)
	}
}

// ticking executes a probe that ticks until cancelled on the warm pool,
// with ctx as the worker's, and returns once its first tick is stored;
// done receives the attempt's outcome.
func (r *warmRig) ticking(t *testing.T, ctx context.Context) (*sortie.Invocation, <-chan sortie.Outcome) {
	t.Helper()
	inv := launched(t, r.cp, `{"until_cancelled": true, "interval_ms": 10}`)
	done := make(chan sortie.Outcome, 1)
	go func() {
		o, _ := r.w.Execute(ctx, inv, functions.NewControlPlaneReporter(r.cp, inv, "warm-test"))
		done <- o
	}()
	testwait.Until(t, "a tick event", 10*time.Second, func() bool { return len(r.events(t, inv.RunID)) > 0 })
	return inv, done
}

func TestWarmPoolCancelStopsTheHandlerAndKeepsTheProcess(t *testing.T) {
	r := newWarmRig(t, nil)
	inv, done := r.ticking(t, t.Context())
	if _, err := r.cp.RequestCancel(t.Context(), inv.RunID, "test"); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.Error == nil || o.Error.Type != sortie.ErrorTypeCancelled {
		t.Fatalf("outcome after the cancel = %+v, want error type cancelled", o)
	}
	if _, o, err := r.execute(t, t.Context(), `{"events": 0}`); err != nil || o.Error != nil {
		t.Fatalf("next attempt = %+v, %v", o, err)
	}
	if st := r.pool.Stats(); st.Started != 1 {
		t.Errorf("Stats = %+v, want the process that stopped its cancelled attempt reused", st)
	}
}

// A host stopping its workers stops a warm attempt the way a cancel does,
// but the outcome is a retryable termination that says so, never a cancel.
func TestWarmPoolHostStopIsNotACancel(t *testing.T) {
	r := newWarmRig(t, nil)
	ctx, stop := context.WithCancel(t.Context())
	_, done := r.ticking(t, ctx)
	stop()
	o := <-done
	if o.Error == nil || o.Error.Type != "terminated" || !o.Error.Retryable || strings.Contains(o.Error.Message, "cancel was requested") {
		t.Errorf("outcome of an attempt whose host stopped = %+v, want a retryable termination that names no cancel request", o.Error)
	}
}

func TestWarmPoolKillsAProcessThatDoesNotStop(t *testing.T) {
	dir, _ := filepath.Abs("testdata")
	pool, err := functions.NewPool(functions.ExecSpec{Command: []string{"/bin/sh", filepath.Join(dir, "session-deaf.sh")}},
		&functions.PoolOptions{Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close(context.Background())
	w := stdioWorker()
	w.Warm = map[string]*functions.Pool{"go": pool}
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{}`)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan sortie.Outcome, 1)
	go func() {
		o, _ := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "warm-test"))
		done <- o
	}()
	testwait.Until(t, "the process to run the attempt", 10*time.Second, func() bool { return pool.Stats().Live == 1 })
	cancel()
	o := <-done
	if o.Error == nil || o.Error.Type != "terminated" {
		t.Errorf("outcome of a process that ignores the cancel = %+v, want error type terminated", o)
	}
	testwait.Until(t, "the deaf process to be killed and retired", 10*time.Second, func() bool { return pool.Stats().Live == 0 })
}

func TestWarmPoolStopsAProcessThatWritesOutsideAnAttempt(t *testing.T) {
	dir, _ := filepath.Abs("testdata")
	pool, err := functions.NewPool(functions.ExecSpec{Command: []string{"/bin/sh", filepath.Join(dir, "session-chatty.sh")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close(context.Background())
	w := stdioWorker()
	w.Warm = map[string]*functions.Pool{"go": pool}
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{}`)
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "warm-test"))
	if err != nil || string(o.Result) != `"done"` {
		t.Fatalf("Execute = %+v, %v; want the result", o, err)
	}
	testwait.Until(t, "the process that wrote a stray message to be stopped", 10*time.Second, func() bool { return pool.Stats().Live == 0 })
	if evs, _ := cp.Events(t.Context(), inv.RunID, sortie.Cursor{}, 0); len(evs) != 0 {
		t.Errorf("events stored = %+v, want none: the stray message belongs to no attempt", evs)
	}
}

func TestWarmPoolWithoutItsCommandFailsTheAttemptRetryably(t *testing.T) {
	pool, err := functions.NewPool(functions.ExecSpec{Command: []string{filepath.Join(t.TempDir(), "absent")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := stdioWorker()
	w.Warm = map[string]*functions.Pool{"go": pool}
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{}`)
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "warm-test"))
	if err != nil || o.Error == nil || !o.Error.Retryable || !strings.Contains(o.Error.Message, "no worker process") {
		t.Errorf("Execute with a command that does not exist = %+v, %v; want a retryable error saying there is no worker process", o, err)
	}
	if st := pool.Stats(); st.Live != 0 {
		t.Errorf("Stats = %+v, want no process counted alive", st)
	}
}

// A pool's size is 0 (the default) to MaxPoolSize; more is refused naming it.
func TestPoolSizeLimit(t *testing.T) {
	spec := functions.ExecSpec{Command: []string{"/bin/true"}}
	if _, err := functions.NewPool(spec, &functions.PoolOptions{Size: functions.MaxPoolSize + 1}); err == nil || !strings.Contains(err.Error(), "1024") {
		t.Errorf("NewPool(size %d) = %v, want an error naming the limit 1024", functions.MaxPoolSize+1, err)
	}
	pool, err := functions.NewPool(spec, &functions.PoolOptions{Size: functions.MaxPoolSize})
	if err != nil {
		t.Fatalf("NewPool(size %d) = %v, want it taken", functions.MaxPoolSize, err)
	}
	pool.Close(t.Context())
}
