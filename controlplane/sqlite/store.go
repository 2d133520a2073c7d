package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// querier is what *sql.DB and *sql.Tx share for reads.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// change loads run id in a write transaction, applies fn and stores the
// run when fn reports a change. It returns the run as stored afterwards
// and notifies subscribers of a change.
func (c *ControlPlane) change(ctx context.Context, op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error) {
	if err := c.ready(op); err != nil {
		return nil, err
	}
	var run *sortie.Run
	var slot controlplane.SlotChange
	changed := false
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		r, err := c.runs.load(ctx, tx, id, false)
		if err != nil {
			return err
		}
		prev, before, wasTerminal := r.Version, controlplane.SlotStateOf(r), r.State.Terminal()
		run = r
		if changed, err = fn(r); err != nil || !changed {
			return err
		}
		slot = controlplane.SlotChangeOf(before, r)
		if err := applySlot(ctx, tx, slot); err != nil {
			return err
		}
		if err := addSpend(ctx, tx, controlplane.SpendChangeOf(wasTerminal, r, c.Pricer())); err != nil {
			return err
		}
		return updateRun(ctx, tx, r, prev)
	})
	if err != nil {
		return nil, c.wrap(op, err)
	}
	if changed {
		c.hub.Notify(id)
	}
	if slot.Dequeue || slot.Release {
		c.hub.NotifySlots()
	}
	return run, nil
}

func decodeRun(body []byte) (*sortie.Run, error) {
	var r sortie.Run
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decode stored run: %w", err)
	}
	return &r, nil
}

// leaseColumn is the indexed lease: NULL when the reconciler has nothing
// to do with the run.
func leaseColumn(r *sortie.Run) any {
	if r.LeaseExpiresMs == 0 || r.State.Terminal() {
		return nil
	}
	return r.LeaseExpiresMs
}

func insertRun(ctx context.Context, tx *stmtCache, r *sortie.Run) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", r.ID, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO runs
		(id, state, context_id, agent, created_ms, updated_ms, lease_expires_ms, version, body, queue_key)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		string(r.ID), string(r.State), r.ContextID, r.Agent.Name, r.CreatedMs, r.UpdatedMs,
		leaseColumn(r), r.Version, body, queueColumn(r))
	return dbErr("insert run "+string(r.ID), err)
}

// updateRun writes r back, conditional on the version it was loaded at.
func updateRun(ctx context.Context, tx *stmtCache, r *sortie.Run, prev int64) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", r.ID, err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE runs SET state = ?, updated_ms = ?, lease_expires_ms = ?,
		version = ?, body = ?, queue_key = ? WHERE id = ? AND version = ?`,
		string(r.State), r.UpdatedMs, leaseColumn(r), r.Version, body, queueColumn(r), string(r.ID), prev)
	if err != nil {
		return dbErr("update run "+string(r.ID), err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("update run %s at version %d: %w", r.ID, prev, sortie.ErrConflict)
	}
	return nil
}

// scanRuns decodes the body column of each row.
func scanRuns(rows *sql.Rows) ([]*sortie.Run, error) {
	defer rows.Close()
	var out []*sortie.Run
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, dbErr("read run", err)
		}
		r, err := decodeRun(body)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, dbErr("read runs", rows.Err())
}
