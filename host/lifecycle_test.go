package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/launchers/local"
)

// lifecycleRig is a state directory whose hosts report over worker
// callbacks through a proxy the test partitions or points at a restarted
// host, with `sortie worker` subprocesses running the probe and the
// marks agent (testdata/marks.sh: it records every moment it runs).
type lifecycleRig struct {
	dir, runtimes, marks string
	agents               sortie.Agents
	proxy                *proxy
}

func newLifecycleRig(t *testing.T, policy sortie.Policy) *lifecycleRig {
	t.Helper()
	r := &lifecycleRig{dir: t.TempDir(), marks: t.TempDir(), proxy: newProxy(t)}
	script, err := filepath.Abs("testdata/marks.sh")
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := json.Marshal(map[string]any{"version": "sortie.runtimes/v1", "runtimes": map[string]any{
		"marks": map[string]any{"command": []string{"/bin/sh", script}, "grace_ms": 20,
			"env": map[string]string{"MARKS": r.marks, "PATH": os.Getenv("PATH")}}}})
	r.runtimes = filepath.Join(t.TempDir(), "runtimes.json")
	if err := os.WriteFile(r.runtimes, rt, 0o600); err != nil {
		t.Fatal(err)
	}
	r.agents = sortie.Agents{
		"probe": {Name: "probe", Version: "1", Runtime: "go:probe", Policy: policy},
		"marks": {Name: "marks", Version: "1", Runtime: "exec:marks", Policy: policy},
	}
	return r
}

// launcher returns a new local launcher of `sortie worker` subprocesses
// for the rig's state directory (a host's own, as a fresh process would
// make); its workers are killed when the test ends.
func (r *lifecycleRig) launcher(t *testing.T) *local.Launcher {
	t.Helper()
	env := append(local.DefaultEnv(), host.EnvStateDir+"="+r.dir, host.EnvRuntimes+"="+r.runtimes, host.EnvLogLevel+"=info")
	l, err := local.New(&local.Options{Command: []string{sortieBin, "worker"}, Env: env, LogDir: filepath.Join(r.dir, host.LogDir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		l.Shutdown(ctx)
	})
	return l
}

// serve serves a host of the rig launching on l, and points the proxy at it.
func (r *lifecycleRig) serve(t *testing.T, l sortie.Launcher) *served {
	t.Helper()
	s := serve(t, host.Config{StateDir: r.dir, Runtimes: r.runtimes, Agents: r.agents, Launcher: l,
		ReconcileInterval: 100 * time.Millisecond,
		API:               &host.API{Tokens: []string{testToken}, WorkerCallbacks: true, CallbackURL: r.proxy.url()}}, nil)
	r.proxy.to(strings.TrimPrefix(s.url, "http://"))
	return s
}

// marksOf returns the moments (ns since the epoch) attempt n of the run
// marked, in order.
func (r *lifecycleRig) marksOf(t *testing.T, id sortie.RunID, n int) []int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.marks, fmt.Sprintf("%s-%d", id, n)))
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for line := range strings.Lines(string(b)) {
		if v, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// workerLog returns the log of attempt n of the run.
func (r *lifecycleRig) workerLog(id sortie.RunID, n int) string {
	b, _ := os.ReadFile(filepath.Join(r.dir, host.LogDir, fmt.Sprintf("%s-%d.log", id, n)))
	return string(b)
}

// waitRun reads the run through c until cond holds.
func waitRun(t *testing.T, c *sortie.Client, id sortie.RunID, what string, cond func(*sortie.Run) bool) *sortie.Run {
	t.Helper()
	var run *sortie.Run
	testwait.UntilReport(t, what, waitLong, func() (bool, string) {
		var err error
		if run, err = c.Get(t.Context(), id); err != nil {
			t.Fatalf("Get(%s) = %v", id, err)
		}
		return cond(run), fmt.Sprintf("state %s attempt %d reason %q", run.State, run.Attempt, run.Reason)
	})
	return run
}

func submit(t *testing.T, c *sortie.Client, agent, vars string) sortie.RunID {
	t.Helper()
	run, err := c.Submit(t.Context(), &sortie.SubmitRequest{Agent: agent, Variables: json.RawMessage(vars)})
	if err != nil {
		t.Fatalf("Submit(%s, %s) = %v", agent, vars, err)
	}
	return run.ID
}

// checkNoOverlap checks that attempt 1 of the run marked nothing after
// attempt 2 was claimed or started marking: the two never ran at once.
func (r *lifecycleRig) checkNoOverlap(t *testing.T, run *sortie.Run) {
	t.Helper()
	first, second := r.marksOf(t, run.ID, 1), r.marksOf(t, run.ID, 2)
	if len(first) == 0 || len(second) == 0 {
		t.Fatalf("marks of run %s: %d of attempt 1, %d of attempt 2; want both", run.ID, len(first), len(second))
	}
	last, claimed := slices.Max(first), run.Attempts[1].ClaimedMs*int64(time.Millisecond)
	overlap := max(0, last-min(claimed, second[0]))
	t.Logf("attempt 1 last ran %v before attempt 2 was claimed (overlap %v)", time.Duration(claimed-last), time.Duration(overlap))
	if overlap > 0 {
		t.Errorf("attempt 1 still ran %v after attempt 2 was claimed or started: attempts overlapped", time.Duration(overlap))
	}
}

// startOnly is a launcher that can neither stop, describe nor watch its
// attempts, as Lambda or a Cloud Run service: the host cannot kill a
// worker it lost touch with, so only the worker's own fencing keeps two
// attempts from running at once.
type startOnly struct{ sortie.Launcher }

// A worker cut off from its host (its callbacks dropped, the host and the
// next attempt's worker fine) for longer than its lease stops its handler
// before the lease ends; the host retries the run, and attempt 2 is
// claimed only after attempt 1 stopped: overlap 0, measured from the
// moments each attempt's handler ran.
func TestCutOffWorkerStopsBeforeItsSuccessor(t *testing.T) {
	r := newLifecycleRig(t, sortie.Policy{HeartbeatMs: 200, LeaseMs: 1500, BackoffMs: 100, MaxAttempts: 2})
	c := r.serve(t, startOnly{r.launcher(t)}).h.Client()
	id := submit(t, c, "marks", `{}`)
	waitRun(t, c, id, "attempt 1 to run", func(*sortie.Run) bool { return len(r.marksOf(t, id, 1)) >= 3 })
	r.proxy.cut(1)
	run := waitRun(t, c, id, "attempt 2 to run", func(run *sortie.Run) bool {
		return len(run.Attempts) == 2 && run.Attempts[1].Claimed() && len(r.marksOf(t, id, 2)) >= 3
	})
	if e := run.Attempts[0].Error; e == nil || e.Type != sortie.ErrorTypeLeaseExpired {
		t.Errorf("attempt 1 error = %+v, want %s (the host lost touch with it)", e, sortie.ErrorTypeLeaseExpired)
	}
	r.checkNoOverlap(t, run)
	if log := r.workerLog(id, 1); !strings.Contains(log, "could not renew the lease") {
		t.Errorf("attempt 1's worker log does not say it fenced itself:\n%s", log)
	}
	if _, err := c.Cancel(t.Context(), id, "test over"); err != nil {
		t.Fatal(err)
	}
}

// A host killed and restarted after more than a lease, while its callback
// workers ran on: the restarted host's reconciler gives their attempts a
// lease of grace, so a worker that finished its work meanwhile delivers
// its result and the run completes on attempt 1 (no second attempt beside
// a live worker); a worker whose handler outlived its lease stopped it
// before the lease ended, and its retry never overlaps it.
func TestRestartedHostHearsFromLiveWorkers(t *testing.T) {
	const lease = 1500 * time.Millisecond
	r := newLifecycleRig(t, sortie.Policy{HeartbeatMs: 200, LeaseMs: lease.Milliseconds(), BackoffMs: 100, MaxAttempts: 2})
	first := r.serve(t, r.launcher(t))
	c := first.h.Client()
	done := submit(t, c, "probe", `{"events": 8, "interval_ms": 100, "output": "finished while the host was down"}`)
	long := submit(t, c, "marks", `{}`)
	waitRun(t, c, done, "the short run to be working", func(run *sortie.Run) bool { return run.Attempt == 1 && run.Current().Claimed() })
	waitRun(t, c, long, "the long run to be working", func(*sortie.Run) bool { return len(r.marksOf(t, long, 1)) >= 3 })
	if err := first.stop(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	first.h.Close()
	r.proxy.to("")
	down := time.Now()
	testwait.Until(t, "more than a lease of downtime", waitLong, func() bool { return time.Since(down) > lease+500*time.Millisecond })

	c = r.serve(t, r.launcher(t)).h.Client()
	run := waitRun(t, c, done, "the short run to settle", func(run *sortie.Run) bool { return run.State.Terminal() })
	if run.State != sortie.StateCompleted || len(run.Attempts) != 1 || string(run.Result) != `"finished while the host was down"` {
		t.Errorf("short run after the restart = %s with %d attempts (reason %q), want completed on attempt 1 with its result",
			run.State, len(run.Attempts), run.Reason)
	}
	run = waitRun(t, c, long, "the long run's attempt 2 to run", func(run *sortie.Run) bool {
		return len(run.Attempts) == 2 && run.Attempts[1].Claimed() && len(r.marksOf(t, long, 2)) >= 3
	})
	r.checkNoOverlap(t, run)
	if _, err := c.Cancel(t.Context(), long, "test over"); err != nil {
		t.Fatal(err)
	}
}
