package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Reserve implements [sortie.ControlPlane.Reserve] in one write
// transaction. It returns a [*sortie.ValidationError] for a malformed
// reservation, sortie.ErrIdempotencyConflict for a live key with another
// request hash, and sortie.ErrConflict when the run ID is taken. Expired
// idempotency records are pruned as new runs are reserved.
func (c *ControlPlane) Reserve(ctx context.Context, res *sortie.Reservation) (*sortie.Run, bool, error) {
	res, err := controlplane.PrepareReservation(res)
	if err != nil {
		return nil, false, err
	}
	if err := c.ready("reserve"); err != nil {
		return nil, false, err
	}
	run := res.Run.Clone()
	controlplane.NewRun(run, res)
	var out *sortie.Run
	err = c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		var err error
		out, err = reserve(ctx, tx, &c.runs, res, run)
		return err
	})
	if err != nil {
		return nil, false, c.wrap("reserve", err)
	}
	if out != run {
		return out, false, nil
	}
	c.hub.Notify(run.ID)
	return run, true, nil
}

// reserve returns the run of a live idempotency record, or inserts run and
// its record and returns run.
func reserve(ctx context.Context, tx *stmtCache, runs *runCache, res *sortie.Reservation, run *sortie.Run) (*sortie.Run, error) {
	key := run.IdempotencyKey
	if key != "" {
		var id, hash string
		err := tx.QueryRowContext(ctx, `SELECT run_id, request_hash FROM idempotency
			WHERE scope = ? AND key = ? AND expires_ms > ?`, res.Scope, key, res.NowMs).Scan(&id, &hash)
		switch {
		case err == nil && hash != run.RequestHash:
			return nil, fmt.Errorf("reserve key %q in scope %q: %w", key, res.Scope, sortie.ErrIdempotencyConflict)
		case err == nil:
			return runs.load(ctx, tx, sortie.RunID(id), false)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, dbErr("read idempotency record", err)
		}
	}
	if err := checkSpend(ctx, tx, res.SpendLimit); err != nil {
		return nil, err
	}
	if err := insertRun(ctx, tx, run); err != nil {
		return nil, err
	}
	if key == "" {
		return run, nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency WHERE rowid IN
		(SELECT rowid FROM idempotency WHERE expires_ms <= ? LIMIT 16)`, res.NowMs); err != nil {
		return nil, dbErr("prune idempotency records", err)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO idempotency (scope, key, run_id, request_hash, expires_ms)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET run_id = excluded.run_id,
		request_hash = excluded.request_hash, expires_ms = excluded.expires_ms`,
		res.Scope, key, string(run.ID), run.RequestHash, res.NowMs+res.TTLMs)
	return run, dbErr("store idempotency record", err)
}

// Get implements [sortie.ControlPlane.Get]: sortie.ErrNotFound for an
// unknown run, a [*sortie.ValidationError] for a malformed ID.
func (c *ControlPlane) Get(ctx context.Context, id sortie.RunID) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := c.ready("get"); err != nil {
		return nil, err
	}
	r, err := c.runs.load(ctx, c.rq, id, true)
	return r, c.wrap("get", err)
}

// List implements [sortie.ControlPlane.List]: newest first (created_ms,
// then ID, descending). A malformed query or page token, or a token of
// another store, gives a [*sortie.ValidationError]; page tokens are signed
// (see [Options.PageTokenKey]).
func (c *ControlPlane) List(ctx context.Context, q sortie.ListQuery) (*sortie.RunPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := c.ready("list"); err != nil {
		return nil, err
	}
	tok, err := c.tokens.ListPosition(q)
	if err != nil {
		return nil, err
	}
	size := controlplane.PageSize(q)
	query, args := listQuery(q, tok, size+1)
	rows, err := c.rq.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, c.wrap("list", dbErr("list runs", err))
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, c.wrap("list", err)
	}
	page := &sortie.RunPage{Runs: runs}
	if len(runs) > size {
		page.Runs = runs[:size]
		page.NextPageToken = c.tokens.ListToken(q, runs[size-1])
	}
	return page, nil
}

// listQuery returns the SELECT of a List page of up to limit runs.
func listQuery(q sortie.ListQuery, tok *controlplane.PageToken, limit int) (string, []any) {
	where, args := []string{"1"}, []any{}
	for _, f := range [][2]string{{"context_id", q.ContextID}, {"state", string(q.State)}, {"agent", q.Agent}} {
		if f[1] != "" {
			where, args = append(where, f[0]+" = ?"), append(args, f[1])
		}
	}
	if tok != nil {
		where, args = append(where, "(created_ms, id) < (?, ?)"), append(args, tok.CreatedMs, string(tok.ID))
	}
	return `SELECT body FROM runs WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY created_ms DESC, id DESC LIMIT ?`, append(args, limit)
}

// expiredQuery selects due leases through the partial index runs_lease.
const expiredQuery = `SELECT body FROM runs WHERE lease_expires_ms <= ?
	ORDER BY lease_expires_ms, id LIMIT ?`

// Expired implements [sortie.ControlPlane.Expired] with the partial index
// on lease_expires_ms; limit ≤ 0 means [controlplane.DefaultExpiredLimit].
func (c *ControlPlane) Expired(ctx context.Context, nowMs int64, limit int) ([]*sortie.Run, error) {
	if err := c.ready("expired"); err != nil {
		return nil, err
	}
	rows, err := c.rq.QueryContext(ctx, expiredQuery, nowMs, controlplane.ExpiredLimit(limit))
	if err != nil {
		return nil, c.wrap("expired", dbErr("list expired leases", err))
	}
	runs, err := scanRuns(rows)
	return runs, c.wrap("expired", err)
}
