package sqlite

import (
	"context"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// terminalStates is the condition of the partial index runs_ended; a
// query reads through the index only when it repeats the condition.
const terminalStates = `state IN ('completed', 'failed', 'cancelled', 'rejected')`

// endedQuery selects terminal runs by update time through runs_ended
// (named: without statistics the planner takes runs_state and sorts).
const endedQuery = `SELECT id FROM runs INDEXED BY runs_ended WHERE ` + terminalStates + ` AND updated_ms < ?
	ORDER BY updated_ms, id LIMIT ?`

// runTables are the tables holding rows of a run besides runs itself,
// each with a run_id column leading its key or an index.
var runTables = []string{"event_batches", "steps", "push_configs", "idempotency"}

// Delete implements [sortie.ControlPlane.Delete] in one write
// transaction: sortie.ErrNotFound for an unknown run, sortie.ErrConflict
// for a run that is not terminal, a [*sortie.ValidationError] for a
// malformed ID.
func (c *ControlPlane) Delete(ctx context.Context, id sortie.RunID) error {
	if err := id.Validate(); err != nil {
		return err
	}
	if err := c.ready("delete"); err != nil {
		return err
	}
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		r, err := c.runs.load(ctx, tx, id, false)
		if err != nil {
			return err
		}
		if err := controlplane.Deletable(r); err != nil {
			return err
		}
		for _, table := range runTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE run_id = ?`, string(id)); err != nil {
				return dbErr("delete the "+table+" of run "+string(id), err)
			}
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, string(id))
		return dbErr("delete run "+string(id), err)
	})
	if err != nil {
		return c.wrap("delete", err)
	}
	c.runs.forget(id)
	c.hub.Notify(id)
	return nil
}

// Ended implements [sortie.ControlPlane.Ended] with the partial index
// runs_ended.
func (c *ControlPlane) Ended(ctx context.Context, beforeMs int64, limit int) ([]sortie.RunID, error) {
	if err := c.ready("ended"); err != nil {
		return nil, err
	}
	rows, err := c.rq.QueryContext(ctx, endedQuery, beforeMs, controlplane.ExpiredLimit(limit))
	if err != nil {
		return nil, c.wrap("ended", dbErr("list ended runs", err))
	}
	defer rows.Close()
	var ids []sortie.RunID
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, c.wrap("ended", dbErr("read ended run", err))
		}
		ids = append(ids, sortie.RunID(id))
	}
	return ids, c.wrap("ended", dbErr("list ended runs", rows.Err()))
}
