package sqlitebindings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// Options configures [Open]. A nil *Options means the defaults.
type Options struct {
	// BusyTimeout is how long a write waits for another process's lock.
	// Optional; defaults to 10 s.
	BusyTimeout time.Duration
}

// Store is a [remote.BindingStore] in a SQLite file. It is safe for
// concurrent use; Close it when done.
type Store struct {
	db *sql.DB
}

var _ remote.BindingStore = (*Store)(nil)

const schema = `CREATE TABLE IF NOT EXISTS remote_bindings (
	node TEXT NOT NULL,
	key TEXT NOT NULL,
	agent_url TEXT NOT NULL,
	task_id TEXT NOT NULL,
	context_id TEXT NOT NULL,
	skill TEXT NOT NULL,
	message_id TEXT NOT NULL,
	created_ms INTEGER NOT NULL,
	updated_ms INTEGER NOT NULL,
	PRIMARY KEY (node, key)
) WITHOUT ROWID`

// Open opens (creating when missing) the store in the SQLite file at
// path. It returns a [*sortie.ValidationError] for field "busy_timeout"
// when it is negative, and the driver's error when the file cannot be
// opened or its table created.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout < 0 {
		return nil, sortie.Invalidf("busy_timeout", "%v is negative", o.BusyTimeout)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 10 * time.Second
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitebindings: %w", err)
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)",
		(&url.URL{Path: abs}).EscapedPath(), o.BusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitebindings: open %s: %w", abs, err)
	}
	if _, err := db.Exec(schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlitebindings: create the table in %s: %w", abs, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// PutBinding implements [remote.BindingStore].
func (s *Store) PutBinding(ctx context.Context, r *remote.BindingRecord) error {
	if err := r.Validate(); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO remote_bindings
		(node, key, agent_url, task_id, context_id, skill, message_id, created_ms, updated_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (node, key) DO UPDATE SET agent_url = excluded.agent_url, task_id = excluded.task_id,
		context_id = excluded.context_id, skill = excluded.skill, message_id = excluded.message_id,
		updated_ms = excluded.updated_ms`,
		r.Node, r.Key, r.AgentURL, r.TaskID, r.ContextID, r.Skill, r.MessageID, r.CreatedMs, r.UpdatedMs)
	if err != nil {
		return fmt.Errorf("sqlitebindings: put %s/%s: %w", r.Node, r.Key, err)
	}
	return nil
}

const columns = `node, key, agent_url, task_id, context_id, skill, message_id, created_ms, updated_ms`

func scan(row interface{ Scan(...any) error }) (*remote.BindingRecord, error) {
	var r remote.BindingRecord
	err := row.Scan(&r.Node, &r.Key, &r.AgentURL, &r.TaskID, &r.ContextID, &r.Skill, &r.MessageID, &r.CreatedMs, &r.UpdatedMs)
	return &r, err
}

// GetBinding implements [remote.BindingStore].
func (s *Store) GetBinding(ctx context.Context, node, key string) (*remote.BindingRecord, error) {
	if err := remote.CheckBindingKey(node, key); err != nil {
		return nil, err
	}
	r, err := scan(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM remote_bindings WHERE node = ? AND key = ?`, node, key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, remote.NotBound(node, key)
	case err != nil:
		return nil, fmt.Errorf("sqlitebindings: get %s/%s: %w", node, key, err)
	}
	return r, nil
}

// DeleteBinding implements [remote.BindingStore].
func (s *Store) DeleteBinding(ctx context.Context, node, key, taskID string) error {
	if err := remote.CheckBindingKey(node, key); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM remote_bindings WHERE node = ? AND key = ? AND (? = '' OR task_id = ?)`,
		node, key, taskID, taskID)
	if err != nil {
		return fmt.Errorf("sqlitebindings: delete %s/%s: %w", node, key, err)
	}
	return nil
}

// ListBindings implements [remote.BindingStore].
func (s *Store) ListBindings(ctx context.Context, node string) ([]remote.BindingRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+columns+` FROM remote_bindings WHERE ? = '' OR node = ? ORDER BY node, key`, node, node)
	if err != nil {
		return nil, fmt.Errorf("sqlitebindings: list: %w", err)
	}
	defer rows.Close()
	var out []remote.BindingRecord
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlitebindings: list: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}
