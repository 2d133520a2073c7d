package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
)

// waitLong bounds waits for conditions that take a few heartbeats.
const waitLong = 30 * time.Second

// fast makes leases expire quickly so the reconciler acts within a test.
const fast = `{"heartbeat_ms":200,"lease_ms":800,"backoff_ms":50}`

// store opens the state directory's control plane beside the CLI processes.
func (c *cli) store() *sqlite.ControlPlane {
	c.t.Helper()
	cp, err := sqlite.Open(filepath.Join(c.state, "sortie.db"), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cp.Close() })
	return cp
}

func events(t *testing.T, cp sortie.ControlPlane, id sortie.RunID) []sortie.Event {
	t.Helper()
	evs, err := cp.Events(context.Background(), id, sortie.Cursor{}, 1000)
	if err != nil {
		t.Fatalf("Events(%s) = %v", id, err)
	}
	return evs
}

// workerPID waits for attempt n's worker to have emitted two events and
// returns its process ID from the attempt's launch reference.
func workerPID(t *testing.T, c *cli, cp sortie.ControlPlane, id sortie.RunID, n int) int {
	t.Helper()
	var pid int
	waitFor(t, "the worker's pid and two events", waitLong, func() bool {
		run := c.get(id)
		if run.Attempt != n || run.Current().Ref == nil || len(events(t, cp, id)) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(run.Current().Ref.ID)
		return pid > 0
	})
	return pid
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie has exited; its state field follows the command name.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// Killing the worker mid-run (its launching process long gone): the
// reconciler in a long-lived sortie process reads what became of the
// process (killed, or gone), not merely its lease expiry, starts attempt 2,
// and attempt 1's events stay.
func TestKilledWorkerIsRetried(t *testing.T) {
	c := newCLI(t)
	cp := c.store()
	id := c.submit("probe", "--policy", fast, "--var", "events=20", "--var", "interval_ms=100")
	pid := workerPID(t, c, cp, id, 1)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %d: %v", pid, err)
	}
	waitFor(t, "the killed worker to be gone", waitLong, func() bool { return !alive(pid) })
	before := events(t, cp, id)

	r := c.run("follow", string(id), "--json")
	_, final := jsonLines(t, r.stdout)
	// A retry on a loaded machine may lose its 800 ms lease and be
	// retried in turn: the run completes on a later attempt, attempt 1
	// ended as the killed worker's.
	if r.code != 0 || final == nil || final.State != sortie.StateCompleted || final.Attempt < 2 || final.Attempts[0].Error.Type != sortie.ErrorTypeExited || final.Attempts[0].Exit == nil {
		t.Fatalf("sortie follow after kill: exit %d, final %+v; want completed on a retry after attempt 1's worker was found killed or gone\n%s", r.code, final, r.stderr)
	}
	after := events(t, cp, id)
	checkContiguous(t, after)
	for i, e := range before {
		if !after[i].Same(&e) || after[i].Cursor() != e.Cursor() {
			t.Fatalf("event %s of attempt 1 changed or vanished after the retry: %+v", e.Cursor(), after[i])
		}
	}
	if last := checkContiguous(t, after); last[final.Attempt] != 20 {
		t.Errorf("attempt %d (completed) stored %d events, want 20", final.Attempt, last[final.Attempt])
	}
}

func TestKilledWorkerFailsWhenAttemptsAreExhausted(t *testing.T) {
	c := newCLI(t)
	cp := c.store()
	id := c.submit("probe", "--policy", fast, "--max-attempts", "1", "--var", "events=50", "--var", "interval_ms=100")
	pid := workerPID(t, c, cp, id, 1)
	syscall.Kill(pid, syscall.SIGKILL)
	r := c.run("follow", string(id), "--json")
	_, final := jsonLines(t, r.stdout)
	if r.code != 1 || final == nil || final.State != sortie.StateFailed || !strings.Contains(final.Reason, sortie.ErrorTypeExited) {
		t.Fatalf("sortie follow: exit %d, final %+v; want exit 1, failed, reason saying the worker's process ended", r.code, final)
	}
	if n := len(events(t, cp, id)); n < 2 {
		t.Errorf("attempt 1 kept %d events, want at least the 2 seen before the kill", n)
	}
}

// Cancel from another process stops the worker: the run is cancelled
// although its lease and cancel timeout (1 min each) are longer than the
// wait, so the worker stopped on the cancel itself, not on a backstop.
func TestCancelStopsWorker(t *testing.T) {
	c := newCLI(t)
	cp := c.store()
	id := c.submit("probe", "--policy", `{"heartbeat_ms":500,"lease_ms":60000,"cancel_timeout_ms":60000}`, "--var", "until_cancelled=true", "--var", "interval_ms=50")
	pid := workerPID(t, c, cp, id, 1)
	if r := c.run("cancel", string(id), "--reason", "test"); r.code != 0 {
		t.Fatalf("sortie cancel: exit %d: %s", r.code, r.stderr)
	}
	waitFor(t, "state cancelled", waitLong, func() bool { return c.get(id).State == sortie.StateCancelled })
	waitFor(t, "the worker process to exit", waitLong, func() bool { return !alive(pid) })
	if run := c.get(id); !run.CancelRequested || run.Reason != "test" {
		t.Errorf("cancelled run = cancel requested %v, reason %q; want true, %q", run.CancelRequested, run.Reason, "test")
	}
}

// freezeBetweenWrites stops the worker's process group (SIGSTOP) at a
// moment it holds no write lock on the state: a worker frozen inside one
// of its writes would hold every other writer back until it is killed. A
// write of the test's own (a cancel of a run that does not exist) that
// gets past the lock proves it; otherwise the worker is let go until its
// next write and frozen again.
func freezeBetweenWrites(t *testing.T, c *cli, pid int) {
	t.Helper()
	probe, err := sqlite.Open(filepath.Join(c.state, "sortie.db"), &sqlite.Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	waitFor(t, "the worker frozen between writes", waitLong, func() bool {
		if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stop worker %d: %v", pid, err)
		}
		_, err := probe.RequestCancel(context.Background(), sortie.NewRunID(time.Now()), "")
		if errors.Is(err, sortie.ErrNotFound) {
			return true
		}
		syscall.Kill(-pid, syscall.SIGCONT)
		return false
	})
}

// A frozen worker (alive, not heartbeating) loses its lease; one `sortie
// reconcile --once` ends attempt 1 (lease_expired), stops the frozen
// process, waits for the backoff and launches attempt 2; get no longer
// shows attempt 1's error on the run meanwhile.
func TestReconcileOnceStartsTheNextAttempt(t *testing.T) {
	c := newCLI(t)
	cp := c.store()
	id := c.submit("probe", "--policy", `{"heartbeat_ms":1000,"lease_ms":3000,"backoff_ms":300,"cancel_timeout_ms":1000}`,
		"--var", "until_cancelled=true", "--var", "interval_ms=100")
	pid := workerPID(t, c, cp, id, 1)
	freezeBetweenWrites(t, c, pid)
	waitFor(t, "attempt 1's lease to expire", waitLong, func() bool {
		run, err := cp.Get(context.Background(), id)
		return err == nil && run.LeaseExpiresMs != 0 && run.LeaseExpiresMs < time.Now().UnixMilli()
	})
	if r := c.run("reconcile", "--once"); r.code != 0 {
		t.Fatalf("sortie reconcile --once: exit %d: %s", r.code, r.stderr)
	}
	run := c.get(id)
	if run.Attempt != 2 || run.Attempts[0].Error == nil || run.Attempts[0].Error.Type != sortie.ErrorTypeLeaseExpired || run.Error != nil {
		t.Fatalf("after one reconcile --once: run attempt %d, attempt 1 error %+v, run error %+v; want attempt 2 launched after attempt 1's lease expired, no run error",
			run.Attempt, run.Attempts[0].Error, run.Error)
	}
	waitFor(t, "the frozen worker to be killed", waitLong, func() bool { return !alive(pid) })
	waitFor(t, "attempt 2 to run", waitLong, func() bool { return c.get(id).Attempts[1].Claimed() })
	if r := c.run("cancel", string(id)); r.code != 0 {
		t.Fatalf("sortie cancel: exit %d: %s", r.code, r.stderr)
	}
}
