package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// pushColumns are the columns scanPush reads, in its order.
const pushColumns = `run_id, id, url, key_id, created_ms, delivered_version, failures,
	next_attempt_ms, last_error, done, format, sealed_token`

// PutPushConfig implements [sortie.PushStore.PutPushConfig] in one write
// transaction, so the per-run limit holds across processes. A new
// configuration starts with CreatedMs = nowMs and no delivery progress; a
// replaced one keeps both.
func (c *ControlPlane) PutPushConfig(ctx context.Context, cfg *sortie.PushConfig, nowMs int64) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushConfig(cfg, nowMs); err != nil {
		return nil, err
	}
	if err := c.ready("put push config"); err != nil {
		return nil, err
	}
	var out *sortie.PushConfig
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		var err error
		out, err = putPush(ctx, tx, cfg, nowMs)
		return err
	})
	return out, c.wrap("put push config", err)
}

// putPush checks the run and the limit, then inserts or replaces cfg and
// returns the stored row.
func putPush(ctx context.Context, tx *stmtCache, cfg *sortie.PushConfig, nowMs int64) (*sortie.PushConfig, error) {
	var runs, others int
	err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM runs WHERE id = ?1),
		(SELECT COUNT(*) FROM push_configs WHERE run_id = ?1 AND id <> ?2)`,
		string(cfg.RunID), cfg.ID).Scan(&runs, &others)
	if err != nil {
		return nil, dbErr("count push configs of run "+string(cfg.RunID), err)
	}
	if runs == 0 {
		return nil, fmt.Errorf("put push config %s of run %s: %w", cfg.ID, cfg.RunID, sortie.ErrNotFound)
	}
	if err := controlplane.CheckPushCount(others + 1); err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO push_configs (`+pushColumns+`)
		VALUES (?, ?, ?, ?, ?, 0, 0, 0, '', 0, ?, ?)
		ON CONFLICT (run_id, id) DO UPDATE SET url = excluded.url, key_id = excluded.key_id,
			format = excluded.format, sealed_token = excluded.sealed_token`,
		string(cfg.RunID), cfg.ID, cfg.URL, cfg.KeyID, nowMs, cfg.Format, sealedToken(cfg.SealedToken))
	if err != nil {
		return nil, dbErr(fmt.Sprintf("store push config %s of run %s", cfg.ID, cfg.RunID), err)
	}
	return loadPush(ctx, tx, cfg.RunID, cfg.ID)
}

func loadPush(ctx context.Context, q querier, run sortie.RunID, id string) (*sortie.PushConfig, error) {
	row := q.QueryRowContext(ctx, `SELECT `+pushColumns+` FROM push_configs WHERE run_id = ? AND id = ?`, string(run), id)
	cfg, err := scanPush(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("push config %s of run %s: %w", id, run, sortie.ErrNotFound)
	} else if err != nil {
		return nil, dbErr(fmt.Sprintf("load push config %s of run %s", id, run), err)
	}
	return cfg, nil
}

// sealedToken is the sealed_token column's value of tok: NULL when empty.
func sealedToken(tok []byte) any {
	if len(tok) == 0 {
		return nil
	}
	return tok
}

// rowScanner is a *sql.Row or *sql.Rows positioned on a row.
type rowScanner interface {
	Scan(dest ...any) error
}

// scanPush reads one row of pushColumns.
func scanPush(row rowScanner) (*sortie.PushConfig, error) {
	var cfg sortie.PushConfig
	var tok []byte
	d := &cfg.Delivery
	err := row.Scan(&cfg.RunID, &cfg.ID, &cfg.URL, &cfg.KeyID, &cfg.CreatedMs,
		&d.DeliveredVersion, &d.Failures, &d.NextAttemptMs, &d.LastError, &d.Done, &cfg.Format, &tok)
	if len(tok) > 0 {
		cfg.SealedToken = tok
	}
	return &cfg, err
}

func scanPushRows(rows *sql.Rows) ([]sortie.PushConfig, error) {
	defer rows.Close()
	out := []sortie.PushConfig{}
	for rows.Next() {
		cfg, err := scanPush(rows)
		if err != nil {
			return nil, dbErr("read push config", err)
		}
		out = append(out, *cfg)
	}
	return out, dbErr("read push configs", rows.Err())
}

// GetPushConfig implements [sortie.PushStore.GetPushConfig].
func (c *ControlPlane) GetPushConfig(ctx context.Context, run sortie.RunID, id string) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return nil, err
	}
	if err := c.ready("get push config"); err != nil {
		return nil, err
	}
	cfg, err := loadPush(ctx, c.rq, run, id)
	return cfg, c.wrap("get push config", err)
}

// ListPushConfigs implements [sortie.PushStore.ListPushConfigs].
func (c *ControlPlane) ListPushConfigs(ctx context.Context, run sortie.RunID) ([]sortie.PushConfig, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if err := c.ready("list push configs"); err != nil {
		return nil, err
	}
	out, err := listPush(ctx, c.rq, run)
	return out, c.wrap("list push configs", err)
}

func listPush(ctx context.Context, q querier, run sortie.RunID) ([]sortie.PushConfig, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE id = ?`, string(run)).Scan(&n); err != nil {
		return nil, dbErr("find run "+string(run), err)
	}
	if n == 0 {
		return nil, fmt.Errorf("push configs of run %s: %w", run, sortie.ErrNotFound)
	}
	rows, err := q.QueryContext(ctx, `SELECT `+pushColumns+` FROM push_configs WHERE run_id = ? ORDER BY id`, string(run))
	if err != nil {
		return nil, dbErr("list push configs of run "+string(run), err)
	}
	return scanPushRows(rows)
}

// DeletePushConfig implements [sortie.PushStore.DeletePushConfig].
func (c *ControlPlane) DeletePushConfig(ctx context.Context, run sortie.RunID, id string) error {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return err
	}
	if err := c.ready("delete push config"); err != nil {
		return err
	}
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM push_configs WHERE run_id = ? AND id = ?`, string(run), id)
		return oneRow(res, err, "delete", run, id)
	})
	return c.wrap("delete push config", err)
}

// oneRow turns the result of a change of one push configuration into
// ErrNotFound when no row matched.
func oneRow(res sql.Result, err error, op string, run sortie.RunID, id string) error {
	what := fmt.Sprintf("%s push config %s of run %s", op, id, run)
	if err != nil {
		return dbErr(what, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return dbErr(what, err)
	} else if n == 0 {
		return fmt.Errorf("%s: %w", what, sortie.ErrNotFound)
	}
	return nil
}

// UpdatePushDelivery implements [sortie.PushStore.UpdatePushDelivery] with
// one UPDATE that keeps delivered_version at the maximum: d replaces the
// stored progress except that DeliveredVersion never decreases.
func (c *ControlPlane) UpdatePushDelivery(ctx context.Context, run sortie.RunID, id string, d sortie.PushDelivery) error {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return err
	}
	if err := controlplane.CheckPushDelivery(d); err != nil {
		return err
	}
	if err := c.ready("update push delivery"); err != nil {
		return err
	}
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		res, err := tx.ExecContext(ctx, `UPDATE push_configs SET
			delivered_version = max(delivered_version, ?), failures = ?, next_attempt_ms = ?,
			last_error = ?, done = ? WHERE run_id = ? AND id = ?`,
			d.DeliveredVersion, d.Failures, d.NextAttemptMs, d.LastError, d.Done, string(run), id)
		return oneRow(res, err, "update delivery of", run, id)
	})
	return c.wrap("update push delivery", err)
}

// pendingQuery selects due configurations after a position
// (next_attempt_ms, run_id, id) through the partial index push_pending,
// whose entries carry the primary key, in index order: ?1 is nowMs, ?2..?4
// the position (-1 and empty strings for the first page), ?5 the limit.
const pendingQuery = `SELECT ` + pushColumns + ` FROM push_configs
	WHERE done = 0 AND next_attempt_ms <= ?1 AND (next_attempt_ms, run_id, id) > (?2, ?3, ?4)
	ORDER BY next_attempt_ms, run_id, id LIMIT ?5`

// PendingPushConfigs implements [sortie.PushStore.PendingPushConfigs]:
// pages ordered by NextAttemptMs, then run and ID, read through a partial
// index of the configurations not done; a page token is the position of
// the previous page's last configuration ([controlplane.PushPosition]).
// One row more than limit is read to know whether a next page exists.
func (c *ControlPlane) PendingPushConfigs(ctx context.Context, nowMs int64, limit int, pageToken string) ([]sortie.PushConfig, string, error) {
	if err := controlplane.CheckPendingLimit(limit); err != nil {
		return nil, "", err
	}
	after, err := controlplane.DecodePushPosition(pageToken)
	if err != nil {
		return nil, "", err
	}
	if err := c.ready("pending push configs"); err != nil {
		return nil, "", err
	}
	if after == nil {
		after = &controlplane.PushPosition{NextAttemptMs: -1}
	}
	rows, err := c.rq.QueryContext(ctx, pendingQuery, nowMs, after.NextAttemptMs, string(after.RunID), after.ID, limit+1)
	if err != nil {
		return nil, "", c.wrap("pending push configs", dbErr("list pending push configs", err))
	}
	out, err := scanPushRows(rows)
	if err != nil || len(out) <= limit {
		return out, "", c.wrap("pending push configs", err)
	}
	return out[:limit], controlplane.PushPositionOf(&out[limit-1]).Encode(), nil
}

// LeasePushDelivery implements [sortie.PushStore.LeasePushDelivery] with
// one conditional UPDATE in a write transaction.
func (c *ControlPlane) LeasePushDelivery(ctx context.Context, run sortie.RunID, id, owner string, nowMs, untilMs int64) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushLease(run, id, owner, nowMs, untilMs); err != nil {
		return nil, err
	}
	if err := c.ready("lease push delivery"); err != nil {
		return nil, err
	}
	var got *sortie.PushConfig
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		res, err := tx.ExecContext(ctx, `UPDATE push_configs SET lease_owner = ?, lease_until_ms = ?
			WHERE run_id = ? AND id = ? AND done = 0 AND (lease_owner = '' OR lease_until_ms <= ? OR lease_owner = ?)`,
			owner, untilMs, string(run), id, nowMs, owner)
		if err = oneRow(res, err, "lease", run, id); err == nil {
			got, err = loadPush(ctx, tx, run, id)
			return err
		}
		if !errors.Is(err, sortie.ErrNotFound) {
			return err
		}
		var holder string
		var until int64
		var done bool
		row := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_until_ms, done FROM push_configs WHERE run_id = ? AND id = ?`, string(run), id)
		if serr := row.Scan(&holder, &until, &done); serr != nil {
			return err // no such configuration
		}
		return controlplane.PushLeaseConflict(run, id, done, holder, until)
	})
	return got, c.wrap("lease push delivery", err)
}
