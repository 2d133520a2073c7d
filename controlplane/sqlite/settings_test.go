package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWriterSettings reads the pragmas back from the writer connection:
// WAL, synchronous FULL (2) by default or NORMAL (1), foreign keys on, and
// the busy timeout from the options.
func TestWriterSettings(t *testing.T) {
	for _, tc := range []struct {
		opts *Options
		want map[string]string
	}{
		{nil, map[string]string{"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "10000"}},
		{&Options{Synchronous: "normal", BusyTimeout: 1500 * time.Millisecond},
			map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1", "busy_timeout": "1500"}},
	} {
		c, err := Open(filepath.Join(t.TempDir(), "settings.db"), tc.opts)
		if err != nil {
			t.Fatalf("Open(%+v) = %v", tc.opts, err)
		}
		got := map[string]string{}
		for name := range tc.want {
			var v string
			if err := c.wconn.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&v); err != nil {
				t.Fatalf("PRAGMA %s = %v", name, err)
			}
			got[name] = v
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("writer pragmas with options %+v (-want +got):\n%s", tc.opts, diff)
		}
		c.Close()
	}
}
