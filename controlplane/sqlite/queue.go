package sqlite

import (
	"context"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// queueColumn is the indexed queue key: NULL unless the run is queued.
func queueColumn(r *sortie.Run) any {
	if !r.Queued() {
		return nil
	}
	return r.Concurrency.Key
}

// applySlot applies a run write's change of its key's slot count in the
// write's transaction: a slot is taken only while fewer than the limit's
// runs hold one (sortie.ErrConcurrencyLimit otherwise).
func applySlot(ctx context.Context, tx *stmtCache, s controlplane.SlotChange) error {
	switch {
	case s.Acquire:
		if _, err := tx.ExecContext(ctx, `INSERT INTO slots (key, active) VALUES (?, 0) ON CONFLICT (key) DO NOTHING`, s.Key); err != nil {
			return dbErr("add slot count", err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE slots SET active = active + 1 WHERE key = ? AND active < ?`, s.Key, s.Limit)
		if err != nil {
			return dbErr("take slot", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("key %q has %d slots taken: %w", s.Key, s.Limit, sortie.ErrConcurrencyLimit)
		}
	case s.Release:
		_, err := tx.ExecContext(ctx, `UPDATE slots SET active = active - 1 WHERE key = ?`, s.Key)
		return dbErr("give slot back", err)
	}
	return nil
}

// Queued implements [sortie.ControlPlane.Queued] with the partial index
// runs_queue.
func (c *ControlPlane) Queued(ctx context.Context, key string, limit int) ([]*sortie.Run, error) {
	if err := c.ready("queued"); err != nil {
		return nil, err
	}
	rows, err := c.rq.QueryContext(ctx, `SELECT body FROM runs WHERE queue_key = ? ORDER BY id LIMIT ?`, key, max(limit, 0))
	if err != nil {
		return nil, c.wrap("queued", dbErr("list queued runs", err))
	}
	runs, err := scanRuns(rows)
	return runs, c.wrap("queued", err)
}

// QueuePosition implements [sortie.ControlPlane.QueuePosition].
func (c *ControlPlane) QueuePosition(ctx context.Context, key string, id sortie.RunID) (int, error) {
	if err := c.ready("queue position"); err != nil {
		return 0, err
	}
	var n int
	err := c.rq.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE queue_key = ? AND id < ?`, key, string(id)).Scan(&n)
	return n + 1, c.wrap("queue position", dbErr("count queued runs", err))
}

// Queues implements [sortie.ControlPlane.Queues].
func (c *ControlPlane) Queues(ctx context.Context) ([]sortie.QueueState, error) {
	if err := c.ready("queues"); err != nil {
		return nil, err
	}
	rows, err := c.rq.QueryContext(ctx, `SELECT q.queue_key, q.n, COALESCE(s.active, 0) FROM
		(SELECT queue_key, COUNT(*) AS n FROM runs WHERE queue_key IS NOT NULL GROUP BY queue_key) AS q
		LEFT JOIN slots AS s ON s.key = q.queue_key ORDER BY q.queue_key`)
	if err != nil {
		return nil, c.wrap("queues", dbErr("list queues", err))
	}
	defer rows.Close()
	var out []sortie.QueueState
	for rows.Next() {
		var q sortie.QueueState
		if err := rows.Scan(&q.Key, &q.Waiting, &q.Active); err != nil {
			return nil, c.wrap("queues", dbErr("read queue", err))
		}
		out = append(out, q)
	}
	return out, c.wrap("queues", dbErr("read queues", rows.Err()))
}

// SubscribeSlots implements [sortie.SlotNotifier] for changes made through
// this handle.
func (c *ControlPlane) SubscribeSlots() (<-chan struct{}, func()) { return c.hub.SubscribeSlots() }
