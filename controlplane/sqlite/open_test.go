package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	msqlite "modernc.org/sqlite"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/sqlite"
)

func mustOpen(t *testing.T, path string, opts *sqlite.Options) *sqlite.ControlPlane {
	t.Helper()
	cp, err := sqlite.Open(path, opts)
	if err != nil {
		t.Fatalf("sqlite.Open(%s) = %v, want success", path, err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp
}

// rawDB opens the file with the driver alone, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatalf("sql.Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// finished runs one run through its life on cp: launch, claim, two
// events and a result. It returns the final run.
func finished(t *testing.T, cp sortie.ControlPlane) *sortie.Run {
	t.Helper()
	ctx, now := t.Context(), controlplanetest.T0
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(now), NowMs: now})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	lid := sortie.NewLaunchID()
	steps := []func() error{
		func() error {
			_, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now + 1})
			return err
		},
		func() error {
			_, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "t", NowMs: now + 2})
			return err
		},
		func() error {
			_, err := cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now + 3,
				Events: []sortie.Event{{Kind: "progress", Text: "one"}, {Kind: "progress", Text: "two"}}})
			return err
		},
		func() error {
			run, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now + 4,
				Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`)}})
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("lifecycle step %d of run %s = %v, want success", i+1, run.ID, err)
		}
	}
	return run
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cp := mustOpen(t, path, nil)
	want := finished(t, cp)
	wantEvents, err := cp.Events(t.Context(), want.ID, sortie.Cursor{}, 0)
	if err != nil || len(wantEvents) != 2 {
		t.Fatalf("Events = %v, %v, want 2 events", wantEvents, err)
	}
	if err := cp.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	again := mustOpen(t, path, nil)
	got, err := again.Get(t.Context(), want.ID)
	if err != nil {
		t.Fatalf("Get(%s) after reopening = %v", want.ID, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after reopening (-before +after):\n%s", diff)
	}
	evs, err := again.Events(t.Context(), want.ID, sortie.Cursor{}, 0)
	if diff := cmp.Diff(wantEvents, evs); err != nil || diff != "" {
		t.Errorf("Events after reopening = err %v (-before +after):\n%s", err, diff)
	}
	if diff := cmp.Diff(allVersions(), schemaVersions(t, path)); diff != "" {
		t.Errorf("schema_version after two opens (-want +got):\n%s", diff)
	}
}

func TestOpenSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	mustOpen(t, path, nil)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("Stat(%s) = %v", path, err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("Stat(%s) = mode %v, want 0600 (runs are private to the host)", path, perm)
	}
	var mode string
	if err := rawDB(t, path).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("PRAGMA journal_mode = %q, %v, want wal", mode, err)
	}
}

func TestOpenRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		path  string
		opts  *sqlite.Options
		field string
	}{
		{"", nil, "path"},
		{filepath.Join(dir, "a.db"), &sqlite.Options{Synchronous: "OFF"}, "synchronous"},
		{filepath.Join(dir, "b.db"), &sqlite.Options{BusyTimeout: -time.Second}, "busy_timeout"},
		{filepath.Join(dir, "c.db"), &sqlite.Options{MaxReaders: 1000}, "max_readers"},
	} {
		_, err := sqlite.Open(tc.path, tc.opts)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("Open(%q, %+v) = %v, want a ValidationError naming %s", tc.path, tc.opts, err, tc.field)
		}
	}
	_, err := sqlite.Open(filepath.Join(dir, "missing", "x.db"), nil)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Open(in a missing directory) = %v, want an error naming the path", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cp := mustOpen(t, path, nil)
	run := finished(t, cp)
	cp.Close()
	if _, err := rawDB(t, path).Exec(`INSERT INTO schema_version (version) VALUES (99)`); err != nil {
		t.Fatalf("insert schema version 99: %v", err)
	}
	_, err := sqlite.Open(path, nil)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open(file at schema 99) = %v, want an error saying the schema is newer", err)
	}
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT COUNT(*) FROM runs WHERE id = ?`, string(run.ID)).Scan(&n); err != nil || n != 1 {
		t.Errorf("runs with id %s after the refused Open = %d, %v, want 1 (nothing lost)", run.ID, n, err)
	}
}

func TestBusyFileIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cp := mustOpen(t, path, &sqlite.Options{BusyTimeout: 50 * time.Millisecond})
	run := finished(t, cp)
	conn, err := rawDB(t, path).Conn(t.Context())
	if err != nil {
		t.Fatalf("Conn = %v", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatalf("BEGIN IMMEDIATE on another connection = %v", err)
	}
	_, err = cp.RequestCancel(t.Context(), run.ID, "")
	var se *msqlite.Error
	if !errors.Is(err, sortie.ErrUnavailable) || !errors.As(err, &se) {
		t.Errorf("RequestCancel while another process holds the write lock = %v, want ErrUnavailable wrapping *sqlite.Error", err)
	}
	if _, err := cp.Get(t.Context(), run.ID); err != nil {
		t.Errorf("Get while another process holds the write lock = %v, want success (WAL readers are not blocked)", err)
	}
	conn.ExecContext(context.Background(), `ROLLBACK`)
}

func TestCanceledContext(t *testing.T) {
	cp := mustOpen(t, filepath.Join(t.TempDir(), "state.db"), nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	run := controlplanetest.NewRun(controlplanetest.T0)
	_, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: controlplanetest.T0})
	if err != context.Canceled {
		t.Errorf("Reserve(canceled context) = %v, want context.Canceled itself", err)
	}
	if _, err := cp.Get(t.Context(), run.ID); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(%s) after a canceled Reserve = %v, want ErrNotFound", run.ID, err)
	}
}
