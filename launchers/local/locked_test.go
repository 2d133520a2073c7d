package local_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/launchers/local"
)

// holdLockEnv makes the test binary a worker frozen inside a write: once
// the test opens the gate (writes the FIFO $LOCAL_TEST_HOLD_LOCK_GO) it begins a write transaction
// on the SQLite file $LOCAL_TEST_HOLD_LOCK, says so on stderr and hangs,
// holding the file's write lock and ignoring SIGTERM, so only the
// launcher's SIGKILL after the grace ends it. (It does not SIGSTOP
// itself: on this kernel a stopped child was sometimes continued behind
// the test's back and exited 0.)
const holdLockEnv = "LOCAL_TEST_HOLD_LOCK"

func holdLock() int {
	// Opening a FIFO for reading blocks until the test opens it to write.
	if _, err := os.ReadFile(os.Getenv(holdLockEnv + "_GO")); err != nil {
		fmt.Fprintln(os.Stderr, "gate:", err)
		return 1
	}
	// The host may be writing when the gate opens: wait for the lock as a
	// worker does (busy timeout) rather than fail on SQLITE_BUSY.
	db, err := sql.Open("sqlite", "file:"+os.Getenv(holdLockEnv)+"?_pragma=busy_timeout(20000)")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	conn, err := db.Conn(context.Background())
	if err == nil {
		_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hold lock:", err)
		return 1
	}
	signal.Ignore(syscall.SIGTERM)
	fmt.Fprintln(os.Stderr, "locked")
	never := make(chan os.Signal, 1)
	signal.Notify(never, syscall.SIGUSR1) // nobody sends it: hang until killed
	<-never
	return 0
}

// A worker frozen inside one of its writes holds the SQLite state's write
// lock, so the cancel request cannot be recorded; Cancel stops the run's
// compute first (reads go on), which releases the lock, and then records
// the request, and the run ends cancelled.
func TestCancelWhileAWorkerHoldsTheStateLocked(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sortie.db")
	cp, err := sqlite.Open(db, &sqlite.Options{BusyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	self, _ := os.Executable()
	gate := filepath.Join(dir, "go")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := local.New(&local.Options{Command: []string{self}, LogDir: filepath.Join(dir, "logs"), Grace: 100 * time.Millisecond,
		Env: []string{holdLockEnv + "=" + db, holdLockEnv + "_GO=" + gate}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown(context.Background())
	e := sortie.NewEngine(cp, startOnlyExits{l}, sortie.Agents{}, nil)
	defer e.Close()
	id, ref := claimedAttempt(t, cp, l)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(ref.ID)
	var log, state string
	t.Cleanup(func() {
		if t.Failed() {
			st, err := l.Describe(context.Background(), ref)
			t.Logf("worker %d: state %q, described %+v %v, log:\n%s", pid, state, st, err, log)
		}
	})
	waitFor(t, "the worker to hold the lock", func() bool {
		b, _ := os.ReadFile(ref.Detail[local.DetailLog])
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_, state, _ = strings.Cut(string(st), ") ")
		log = string(b)
		return strings.Contains(log, "locked")
	})
	if state == "" {
		t.Fatalf("the worker %d exited while it should hold the lock", pid)
	}
	run, err := e.Cancel(t.Context(), id, "stuck")
	if err != nil || !run.CancelRequested {
		t.Fatalf("Cancel(run whose worker holds the state locked) = %v, %v; want the request recorded", run, err)
	}
	if local.Cancels(l) == 0 {
		t.Errorf("Cancel recorded the request without stopping the compute that held the lock")
	}
}

// startOnlyExits is the local launcher without its exit reports: the test
// checks what Cancel itself does.
type startOnlyExits struct{ *local.Launcher }

func (startOnlyExits) WatchExits(func(sortie.Ref, sortie.Status)) func() { return func() {} }

// claimedAttempt stores a run whose attempt 1 l launched and a worker
// claimed, and returns the run and the attempt's Ref.
func claimedAttempt(t *testing.T, cp sortie.ControlPlane, l *local.Launcher) (sortie.RunID, sortie.Ref) {
	t.Helper()
	ctx := t.Context()
	m := sortie.Manifest{Name: "probe", Version: "1", Runtime: "go:probe"}
	run := &sortie.Run{ID: sortie.NewRunID(time.Now()), Agent: m, Policy: sortie.Policy{CancelTimeoutMs: 2000}}
	now := time.Now().UnixMilli()
	lid := sortie.NewLaunchID()
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, LaunchID: lid, NowMs: now}); err != nil {
		t.Fatal(err)
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: 1, LaunchID: lid, Agent: m,
		DeadlineMs: now + 60_000, HeartbeatMs: 1000, LeaseMs: 30_000, Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	ref, err := l.Start(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.SetRef(ctx, run.ID, 1, lid, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "frozen", NowMs: now}); err != nil {
		t.Fatal(err)
	}
	return run.ID, ref
}
