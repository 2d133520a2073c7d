package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/sortie-run/sortie"
)

// maxBatch is the most changes that share one transaction (group commit).
const maxBatch = 64

// writeReq is one change waiting for the writer.
type writeReq struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *stmtCache) error
	done chan error
}

// write runs fn as one atomic change inside a BEGIN IMMEDIATE transaction
// on the writer connection and returns once that transaction committed.
// Changes pending at the same time share the transaction and its fsync
// (group commit); each runs inside its own savepoint, so a change that
// fails is rolled back alone. fn gets a context that is not canceled: once
// it started, a change runs to its end, so the caller's ctx only decides
// whether it starts.
func (c *ControlPlane) write(ctx context.Context, fn func(ctx context.Context, tx *stmtCache) error) error {
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case c.reqs <- req:
	case <-c.stop:
		return errWriterStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.done // always answered, also when ctx ends meanwhile
}

// errWriterStopped is what a write gets once Close stopped the writer.
var errWriterStopped = fmt.Errorf("writer stopped: %w", sortie.ErrClosed)

// writeLoop is the writer goroutine: it takes the changes pending at once
// and runs them in one transaction, until Close.
func (c *ControlPlane) writeLoop() {
	defer close(c.stopped)
	batch := make([]*writeReq, 0, maxBatch)
	for {
		select {
		case req := <-c.reqs:
			batch = append(batch[:0], req)
		case <-c.stop:
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case req := <-c.reqs:
				batch = append(batch, req)
			default:
				break more
			}
		}
		c.runBatch(batch)
	}
}

// runBatch runs the batch in one transaction and answers every request
// after the commit (or the failure) is known.
func (c *ControlPlane) runBatch(batch []*writeReq) {
	ctx := context.Background()
	errs := make([]error, len(batch))
	err := c.runTx(ctx, batch, errs)
	for i, req := range batch {
		if err != nil && errs[i] == nil {
			errs[i] = err // the transaction is lost: no change of it stands
		}
		req.done <- errs[i]
	}
}

// runTx begins the transaction, applies each change in a savepoint (when
// there is more than one) and commits. An error it returns applies to every
// request whose own change succeeded.
func (c *ControlPlane) runTx(ctx context.Context, batch []*writeReq, errs []error) error {
	tx := c.wtx
	if _, err := tx.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return dbErr("begin", err)
	}
	savepoints := len(batch) > 1
	for i, req := range batch {
		if errs[i] = req.ctx.Err(); errs[i] != nil {
			continue
		}
		if !savepoints {
			errs[i] = apply(ctx, tx, req.fn)
			if errs[i] != nil {
				return c.rollback(ctx, nil)
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT change"); err != nil {
			return c.rollback(ctx, dbErr("savepoint", err))
		}
		if errs[i] = apply(ctx, tx, req.fn); errs[i] != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO change"); err != nil {
				return c.rollback(ctx, dbErr("roll back a failed change", err))
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE change"); err != nil {
			return c.rollback(ctx, dbErr("release savepoint", err))
		}
	}
	if _, err := tx.ExecContext(ctx, "COMMIT"); err != nil {
		return c.rollback(ctx, dbErr("commit", err))
	}
	return nil
}

// apply runs one change; a panic becomes its error, so the writer goroutine
// survives it.
func apply(ctx context.Context, tx *stmtCache, fn func(context.Context, *stmtCache) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("change panicked: %v", p)
		}
	}()
	return fn(ctx, tx)
}

// rollback ends a failed transaction and returns cause.
func (c *ControlPlane) rollback(ctx context.Context, cause error) error {
	c.wtx.ExecContext(ctx, "ROLLBACK") // fails harmlessly when SQLite already rolled back
	return cause
}

// stmtCache prepares each statement once (on the writer connection, or on
// the read pool) and reuses it.
type stmtCache struct {
	mu    sync.Mutex
	raw   querierExecer
	stmts map[string]*sql.Stmt
}

type querierExecer interface {
	querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func newStmtCache(raw querierExecer) *stmtCache {
	return &stmtCache{raw: raw, stmts: make(map[string]*sql.Stmt)}
}

func (s *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.raw.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.stmts[query] = st
	return st, nil
}

// ExecContext runs a prepared statement.
func (s *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// QueryRowContext runs a prepared query for one row.
func (s *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return s.raw.QueryRowContext(ctx, query, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// QueryContext runs a prepared query.
func (s *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// close closes every prepared statement.
func (s *stmtCache) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stmts {
		st.Close()
	}
	clear(s.stmts)
}
