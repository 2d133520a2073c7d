package sqlite_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/sqlite"
)

// schemaVersions returns the versions recorded in the file's schema_version
// table, in order.
// allVersions is every schema version this build applies, 1..sqlite.SchemaVersion.
func allVersions() []int {
	out := make([]int, sqlite.SchemaVersion)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

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
	if diff := cmp.Diff(allVersions(), schemaVersions(t, path)); diff != "" {
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

// pushColumnNames returns the columns of the file's push_configs table.
func pushColumnNames(t *testing.T, path string) []string {
	t.Helper()
	rows, err := rawDB(t, path).Query(`SELECT name FROM pragma_table_info('push_configs') ORDER BY cid`)
	if err != nil {
		t.Fatalf("read push_configs columns: %v", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatalf("scan column name: %v", err)
		}
		names = append(names, n)
	}
	return names
}

// TestOpenMigratesSecondReleaseFile opens files as the second release
// left them (schema version 2) with a stored push configuration: without
// the format and sealed_token columns, with one of them, and with both (a
// step that must be harmless on any file). Open adds what is missing in
// place; the stored configuration and its delivery progress are kept, and
// a format and sealed token stored afterwards survive a reopen.
func TestOpenMigratesSecondReleaseFile(t *testing.T) {
	for name, drop := range map[string][]string{
		"without the columns": {"sealed_token", "format"},
		"with format only":    {"sealed_token"},
		"with both columns":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			cp := mustOpen(t, path, nil)
			run := finished(t, cp)
			ctx := t.Context()
			if _, err := cp.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "hook", URL: "https://hooks.example.com/in", KeyID: "k1"}, controlplanetest.T0+10); err != nil {
				t.Fatalf("PutPushConfig = %v", err)
			}
			d := sortie.PushDelivery{DeliveredVersion: 3, Failures: 1, NextAttemptMs: controlplanetest.T0 + 99, LastError: "status 503"}
			if err := cp.UpdatePushDelivery(ctx, run.ID, "hook", d); err != nil {
				t.Fatalf("UpdatePushDelivery = %v", err)
			}
			stored, err := cp.GetPushConfig(ctx, run.ID, "hook")
			if err != nil {
				t.Fatalf("GetPushConfig = %v", err)
			}
			cp.Close()
			makeRelease2(t, path, drop)

			again := mustOpen(t, path, nil)
			got, err := again.GetPushConfig(ctx, run.ID, "hook")
			if err != nil || cmp.Diff(stored, got) != "" {
				t.Errorf("GetPushConfig after migrating = %v, diff (-stored +got):\n%s", err, cmp.Diff(stored, got))
			}
			if diff := cmp.Diff(allVersions(), schemaVersions(t, path)); diff != "" {
				t.Errorf("schema_version after migrating (-want +got):\n%s", diff)
			}
			cfg := *stored
			cfg.Format, cfg.SealedToken = sortie.PushFormatA2A, []byte(`{"v": 1, "ct": "c2VhbGVk"}`)
			if _, err := again.PutPushConfig(ctx, &cfg, controlplanetest.T0+20); err != nil {
				t.Fatalf("PutPushConfig(format and sealed token) on the migrated file = %v", err)
			}
			again.Close()
			third := mustOpen(t, path, nil)
			got, err = third.GetPushConfig(ctx, run.ID, "hook")
			if err != nil || cmp.Diff(&cfg, got) != "" {
				t.Errorf("GetPushConfig after reopening = %v, diff (-put +got):\n%s", err, cmp.Diff(&cfg, got))
			}
		})
	}
}

// makeRelease2 turns the file at path back into a schema-version-2 file
// without the push_configs columns drop.
func makeRelease2(t *testing.T, path string, drop []string) {
	t.Helper()
	raw := rawDB(t, path)
	stmts := []string{`DELETE FROM schema_version WHERE version > 2`}
	for _, c := range drop {
		stmts = append(stmts, `ALTER TABLE push_configs DROP COLUMN `+c)
	}
	for _, stmt := range stmts {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("%s = %v, want success (making a release-2 file)", stmt, err)
		}
	}
	raw.Close()
	cols := pushColumnNames(t, path)
	for _, c := range drop {
		if slices.Contains(cols, c) {
			t.Fatalf("push_configs columns of the release-2 file = %v, still with %s", cols, c)
		}
	}
}
