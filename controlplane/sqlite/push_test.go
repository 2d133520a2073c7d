package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
)

// schemaVersions returns the versions recorded in the file's schema_version
// table, in order.
func schemaVersions(t *testing.T, path string) []int {
	t.Helper()
	rows, err := rawDB(t, path).Query(`SELECT version FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatalf("read schema_version: %v", err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("scan schema_version: %v", err)
		}
		versions = append(versions, v)
	}
	return versions
}

// TestOpenMigratesFirstReleaseFile opens a file as the first release left
// it (schema version 1, no push_configs table): Open adds the table, the
// stored run is untouched and push configurations work and survive a
// reopen.
func TestOpenMigratesFirstReleaseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cp := mustOpen(t, path, nil)
	run := finished(t, cp)
	cp.Close()
	raw := rawDB(t, path)
	for _, stmt := range []string{`DROP TABLE push_configs`, `DELETE FROM schema_version WHERE version > 1`} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("%s = %v, want success (making a release-1 file)", stmt, err)
		}
	}
	raw.Close()
	if diff := cmp.Diff([]int{1}, schemaVersions(t, path)); diff != "" {
		t.Fatalf("schema_version of the release-1 file (-want +got):\n%s", diff)
	}

	again := mustOpen(t, path, nil)
	if got, err := again.Get(t.Context(), run.ID); err != nil || !cmp.Equal(run, got) {
		t.Errorf("Get(%s) after migrating = %v, diff (-want +got):\n%s", run.ID, err, cmp.Diff(run, got))
	}
	cfg := &sortie.PushConfig{RunID: run.ID, ID: "hook", URL: "https://hooks.example.com/in"}
	stored, err := again.PutPushConfig(t.Context(), cfg, controlplanetest.T0+10)
	if err != nil {
		t.Fatalf("PutPushConfig on the migrated file = %v, want success", err)
	}
	if diff := cmp.Diff([]int{1, 2}, schemaVersions(t, path)); diff != "" {
		t.Errorf("schema_version after migrating (-want +got):\n%s", diff)
	}
	again.Close()

	third := mustOpen(t, path, nil)
	got, err := third.GetPushConfig(t.Context(), run.ID, "hook")
	if err != nil {
		t.Fatalf("GetPushConfig after reopening = %v, want success", err)
	}
	if diff := cmp.Diff(stored, got); diff != "" {
		t.Errorf("GetPushConfig after reopening (-stored +got):\n%s", diff)
	}
}
