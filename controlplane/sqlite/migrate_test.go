package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
)

// TestOpenMigratesEventsToBatches opens a file as the third release left
// it (schema version 3: one row a event in the events table). Open moves
// the events to event_batches in place; they read back unchanged, and the
// attempt's numbering goes on after them.
func TestOpenMigratesEventsToBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cp := mustOpen(t, path, nil)
	ctx := t.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(controlplanetest.T0), NowMs: controlplanetest.T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	lid := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: controlplanetest.T0}); err != nil {
		t.Fatalf("RecordLaunch = %v", err)
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "t", NowMs: controlplanetest.T0}); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	appendTexts := func(texts ...string) {
		t.Helper()
		a := sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: controlplanetest.T0}
		for _, s := range texts {
			a.Events = append(a.Events, sortie.Event{Kind: "progress", Text: s})
		}
		if _, err := cp.AppendEvents(ctx, a); err != nil {
			t.Fatalf("AppendEvents(%q) = %v", texts, err)
		}
	}
	appendTexts("one", "two")
	appendTexts("three")
	want, err := cp.Events(ctx, run.ID, sortie.Cursor{}, 0)
	if err != nil || len(want) != 3 {
		t.Fatalf("Events = %v, %v, want 3 events", want, err)
	}
	cp.Close()
	makeRelease3(t, path)

	cp = mustOpen(t, path, nil)
	got, err := cp.Events(ctx, run.ID, sortie.Cursor{}, 0)
	if err != nil || cmp.Diff(want, got) != "" {
		t.Errorf("Events after migrating = %v, diff (-before +after):\n%s", err, cmp.Diff(want, got))
	}
	if got, _ := cp.Events(ctx, run.ID, sortie.Cursor{Attempt: 1, Seq: 1}, 1); len(got) != 1 || got[0].Text != "two" {
		t.Errorf("Events(after 1.1, limit 1) after migrating = %+v, want event two", got)
	}
	appendTexts("four")
	if got, _ := cp.Events(ctx, run.ID, sortie.Cursor{Attempt: 1, Seq: 3}, 0); len(got) != 1 || got[0].Seq != 4 {
		t.Errorf("Events(after 1.3) after an append to the migrated file = %+v, want seq 4", got)
	}
	if diff := cmp.Diff(allVersions(), schemaVersions(t, path)); diff != "" {
		t.Errorf("schema_version after migrating (-want +got):\n%s", diff)
	}
}

// makeRelease3 turns the file at path back into a schema-version-3 file:
// its events one a row in the events table, no event_batches.
func makeRelease3(t *testing.T, path string) {
	t.Helper()
	raw := rawDB(t, path)
	for _, stmt := range []string{
		`CREATE TABLE events (
			run_id  TEXT NOT NULL REFERENCES runs (id),
			attempt INTEGER NOT NULL,
			seq     INTEGER NOT NULL,
			body    TEXT NOT NULL,
			PRIMARY KEY (run_id, attempt, seq)
		) WITHOUT ROWID`,
		`INSERT INTO events (run_id, attempt, seq, body)
			SELECT b.run_id, b.attempt, e.value ->> '$.seq', e.value FROM event_batches b, json_each(b.body) e`,
		`DROP TABLE event_batches`,
		`DELETE FROM schema_version WHERE version > 3`,
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("%s = %v, want success (making a release-3 file)", stmt, err)
		}
	}
	var n int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("events rows of the release-3 file = %d, %v, want 3", n, err)
	}
	raw.Close()
}
