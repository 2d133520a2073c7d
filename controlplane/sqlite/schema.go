package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migration moves the schema one version up: SQL run as it is, or, for a
// step that must look at the file first (SQLite has no ADD COLUMN IF NOT
// EXISTS), a function.
type migration struct {
	sql   string
	apply func(ctx context.Context, conn *sql.Conn) error
}

// migrations[i] moves the schema from version i to version i+1. Append new
// migrations; never edit a released one.
var migrations = []migration{
	{sql: `CREATE TABLE runs (
		id               TEXT PRIMARY KEY,
		state            TEXT NOT NULL,
		context_id       TEXT NOT NULL,
		agent            TEXT NOT NULL,
		created_ms       INTEGER NOT NULL,
		updated_ms       INTEGER NOT NULL,
		lease_expires_ms INTEGER, -- NULL when nothing is due (terminal, interrupted)
		version          INTEGER NOT NULL,
		body             TEXT NOT NULL -- the run as JSON
	);
	CREATE INDEX runs_created ON runs (created_ms, id);
	CREATE INDEX runs_context ON runs (context_id, created_ms, id);
	CREATE INDEX runs_state ON runs (state, created_ms, id);
	CREATE INDEX runs_agent ON runs (agent, created_ms, id);
	CREATE INDEX runs_lease ON runs (lease_expires_ms, id) WHERE lease_expires_ms IS NOT NULL;
	CREATE TABLE events (
		run_id  TEXT NOT NULL REFERENCES runs (id),
		attempt INTEGER NOT NULL,
		seq     INTEGER NOT NULL,
		body    TEXT NOT NULL, -- the event as JSON
		PRIMARY KEY (run_id, attempt, seq)
	) WITHOUT ROWID;
	CREATE TABLE idempotency (
		scope        TEXT NOT NULL,
		key          TEXT NOT NULL,
		run_id       TEXT NOT NULL REFERENCES runs (id),
		request_hash TEXT NOT NULL,
		expires_ms   INTEGER NOT NULL,
		PRIMARY KEY (scope, key)
	);
	CREATE INDEX idempotency_expires ON idempotency (expires_ms);`},
	// Version 2: push configurations, one row per run and configuration
	// ID, with its delivery progress; push_pending indexes the ones not
	// done. IF NOT EXISTS keeps the step harmless on any file.
	{sql: `CREATE TABLE IF NOT EXISTS push_configs (
		run_id            TEXT NOT NULL REFERENCES runs (id),
		id                TEXT NOT NULL,
		url               TEXT NOT NULL,
		key_id            TEXT NOT NULL,
		created_ms        INTEGER NOT NULL,
		delivered_version INTEGER NOT NULL,
		failures          INTEGER NOT NULL,
		next_attempt_ms   INTEGER NOT NULL,
		last_error        TEXT NOT NULL,
		done              INTEGER NOT NULL, -- 0 or 1
		PRIMARY KEY (run_id, id)
	) WITHOUT ROWID;
	CREATE INDEX IF NOT EXISTS push_pending ON push_configs (next_attempt_ms) WHERE done = 0;`},
	// Version 3: a push configuration's message format and sealed token.
	{apply: addPushColumns},
	// Version 4: events stored in batches, one row per append.
	{apply: batchEvents},
	// Version 5: values of the store itself: the key that signs its page
	// tokens when the host configures none, made once, so every process
	// opening the file takes the others' tokens and no other store does.
	{sql: `CREATE TABLE IF NOT EXISTS store (
		name  TEXT PRIMARY KEY,
		value BLOB NOT NULL
	) WITHOUT ROWID;
	INSERT OR IGNORE INTO store (name, value) VALUES ('page_token_key', randomblob(32));`},
	// Version 6: a push configuration's delivery lease (hosts sharing the
	// file deliver each version once).
	{apply: addPushLeaseColumns},
	// Version 7: durable steps, one row per run and step name.
	{sql: `CREATE TABLE IF NOT EXISTS steps (
		run_id  TEXT NOT NULL REFERENCES runs (id),
		name    TEXT NOT NULL,
		attempt INTEGER NOT NULL, -- the attempt that recorded it
		size    INTEGER NOT NULL, -- its result bytes (sortie.Step.Size)
		body    TEXT NOT NULL,    -- the step as JSON
		PRIMARY KEY (run_id, name)
	) WITHOUT ROWID;`},
	// Version 8: concurrency limits: a queued run's key (NULL unless
	// queued, indexed in run ID order) and the count of runs holding
	// slots by key.
	{apply: addQueue},
	// Version 9: agents' spend by budget window (see sortie.AgentBudget).
	{sql: `CREATE TABLE IF NOT EXISTS spend (
		agent     TEXT NOT NULL,
		period_ms INTEGER NOT NULL,
		start_ms  INTEGER NOT NULL, -- the window's start, Unix ms
		nano_usd  INTEGER NOT NULL, -- the cost of the runs that ended in it
		PRIMARY KEY (agent, period_ms, start_ms)
	) WITHOUT ROWID;`},
	// Version 10: retention: terminal runs by update time (Ended) and
	// idempotency records by run (Delete).
	{sql: `CREATE INDEX IF NOT EXISTS runs_ended ON runs (updated_ms, id) WHERE ` + terminalStates + `;
	CREATE INDEX IF NOT EXISTS idempotency_run ON idempotency (run_id);`},
}

// addQueue adds runs.queue_key, its partial index and the slots table;
// harmless on a file that has them.
func addQueue(ctx context.Context, conn *sql.Conn) error {
	if err := addColumns(ctx, conn, "runs", []struct{ name, decl string }{{"queue_key", "queue_key TEXT"}}); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS runs_queue ON runs (queue_key, id) WHERE queue_key IS NOT NULL;
	CREATE TABLE IF NOT EXISTS slots (
		key    TEXT PRIMARY KEY,
		active INTEGER NOT NULL -- runs of the key holding slots
	) WITHOUT ROWID;`)
	return err
}

// batchEvents creates event_batches, one row per AppendEvents call (a
// JSON array of its events), and moves the events of an earlier file
// there, each its own batch; harmless on a file that has it already.
func batchEvents(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS event_batches (
		run_id    TEXT NOT NULL REFERENCES runs (id),
		attempt   INTEGER NOT NULL,
		first_seq INTEGER NOT NULL,
		last_seq  INTEGER NOT NULL,
		body      TEXT NOT NULL, -- a JSON array of the events first_seq..last_seq
		PRIMARY KEY (run_id, attempt, first_seq)
	) WITHOUT ROWID`); err != nil {
		return err
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'events'`).Scan(&n); err != nil || n == 0 {
		return err
	}
	_, err := conn.ExecContext(ctx, `INSERT INTO event_batches (run_id, attempt, first_seq, last_seq, body)
		SELECT run_id, attempt, seq, seq, '[' || body || ']' FROM events;
		DROP TABLE events`)
	return err
}

// pushColumnsV3 are the columns version 3 adds to push_configs: format
// (empty for the run payload) and sealed_token (NULL when none).
var pushColumnsV3 = []struct{ name, decl string }{
	{"format", "format TEXT NOT NULL DEFAULT ''"},
	{"sealed_token", "sealed_token BLOB"},
}

// pushColumnsV6 are the columns version 6 adds to push_configs: the
// delivery lease's owner (” for none) and end, Unix ms.
var pushColumnsV6 = []struct{ name, decl string }{
	{"lease_owner", "lease_owner TEXT NOT NULL DEFAULT ''"},
	{"lease_until_ms", "lease_until_ms INTEGER NOT NULL DEFAULT 0"},
}

func addPushLeaseColumns(ctx context.Context, conn *sql.Conn) error {
	return addColumns(ctx, conn, "push_configs", pushColumnsV6)
}

// addPushColumns adds the columns of pushColumnsV3 that push_configs
// lacks, so the step is harmless on a file that has some or all of them.
func addPushColumns(ctx context.Context, conn *sql.Conn) error {
	return addColumns(ctx, conn, "push_configs", pushColumnsV3)
}

// addColumns adds the columns of cols that table lacks.
func addColumns(ctx context.Context, conn *sql.Conn, table string, cols []struct{ name, decl string }) error {
	have := map[string]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		have[name] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, c := range cols {
		if have[c.name] {
			continue
		}
		if _, err := conn.ExecContext(ctx, `ALTER TABLE `+table+` ADD COLUMN `+c.decl); err != nil {
			return err
		}
	}
	return nil
}

func (m migration) run(ctx context.Context, conn *sql.Conn) error {
	if m.apply != nil {
		return m.apply(ctx, conn)
	}
	_, err := conn.ExecContext(ctx, m.sql)
	return err
}

// schemaVersion is the schema version this build creates and reads.
var schemaVersion = len(migrations)

// migrate brings the schema to schemaVersion in one BEGIN IMMEDIATE transaction,
// so processes opening a new file at once create it exactly once.
func migrate(ctx context.Context, conn *sql.Conn) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return dbErr("begin migration", err)
	}
	defer func() {
		if err != nil {
			conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		applied_ms INTEGER NOT NULL DEFAULT (unixepoch('subsec') * 1000)
	)`); err != nil {
		return dbErr("create schema_version", err)
	}
	var v int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return dbErr("read schema version", err)
	}
	if v > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this build's %d", v, schemaVersion)
	}
	for ; v < schemaVersion; v++ {
		if err := migrations[v].run(ctx, conn); err != nil {
			return dbErr(fmt.Sprintf("migrate schema to version %d", v+1), err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, v+1); err != nil {
			return dbErr("record schema version", err)
		}
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return dbErr("commit migration", err)
}
