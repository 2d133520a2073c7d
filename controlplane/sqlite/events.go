package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// AppendEvents implements [sortie.ControlPlane.AppendEvents] in one write
// transaction: all events of the call are stored, or none.
func (c *ControlPlane) AppendEvents(ctx context.Context, a sortie.Append) ([]sortie.Event, error) {
	if err := controlplane.CheckAttempt(a.RunID, a.Attempt, a.LaunchID); err != nil {
		return nil, err
	}
	if err := c.ready("append events"); err != nil {
		return nil, err
	}
	var out []sortie.Event
	inserted := false
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		r, err := loadRun(ctx, tx, a.RunID)
		if err != nil {
			return err
		}
		if err := controlplane.CheckAppend(r, a); err != nil {
			return err
		}
		var insert []sortie.Event
		if insert, out, err = numberEvents(ctx, tx, a); err != nil {
			return err
		}
		inserted = len(insert) > 0
		return insertEvents(ctx, tx, a.RunID, insert)
	})
	if err != nil {
		return nil, c.wrap("append events", err)
	}
	if inserted {
		c.hub.Notify(a.RunID)
	}
	return out, nil
}

// numberEvents applies [controlplane.NumberEvents] against the stored
// events of the attempt.
func numberEvents(ctx context.Context, tx *stmtCache, a sortie.Append) (insert, out []sortie.Event, err error) {
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ? AND attempt = ?`,
		string(a.RunID), a.Attempt).Scan(&last); err != nil {
		return nil, nil, dbErr(fmt.Sprintf("last event of %s attempt %d", a.RunID, a.Attempt), err)
	}
	var lookupErr error
	stored := func(seq int64) (*sortie.Event, bool) {
		e, err := loadEvent(ctx, tx, a.RunID, a.Attempt, seq)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		return e, e != nil
	}
	insert, out, err = controlplane.NumberEvents(a, last, stored)
	if lookupErr != nil {
		return nil, nil, lookupErr
	}
	return insert, out, err
}

func loadEvent(ctx context.Context, tx *stmtCache, id sortie.RunID, attempt int, seq int64) (*sortie.Event, error) {
	var body []byte
	err := tx.QueryRowContext(ctx, `SELECT body FROM events WHERE run_id = ? AND attempt = ? AND seq = ?`,
		string(id), attempt, seq).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, dbErr(fmt.Sprintf("load event %d.%d of %s", attempt, seq, id), err)
	}
	var e sortie.Event
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("decode stored event %d.%d of %s: %w", attempt, seq, id, err)
	}
	return &e, nil
}

func insertEvents(ctx context.Context, tx *stmtCache, id sortie.RunID, evs []sortie.Event) error {
	for i := range evs {
		body, err := json.Marshal(&evs[i])
		if err != nil {
			return fmt.Errorf("encode event %s: %w", evs[i].Cursor(), err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (run_id, attempt, seq, body) VALUES (?, ?, ?, ?)`,
			string(id), evs[i].Attempt, evs[i].Seq, body); err != nil {
			return dbErr("append event "+evs[i].Cursor().String(), err)
		}
	}
	return nil
}

// Events implements [sortie.ControlPlane.Events]; limit ≤ 0 means
// [controlplane.DefaultEventsLimit], and at most
// [controlplane.MaxEventsLimit] are returned.
func (c *ControlPlane) Events(ctx context.Context, id sortie.RunID, after sortie.Cursor, limit int) ([]sortie.Event, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := controlplane.CheckCursor(after); err != nil {
		return nil, err
	}
	if err := c.ready("events"); err != nil {
		return nil, err
	}
	out, err := readEvents(ctx, c.rq, id, after, controlplane.EventsLimit(limit))
	if err == nil && len(out) == 0 {
		_, err = loadRun(ctx, c.rq, id) // no events: does the run exist?
	}
	if err != nil {
		return nil, c.wrap("events", err)
	}
	return out, nil
}

func readEvents(ctx context.Context, q querier, id sortie.RunID, after sortie.Cursor, limit int) ([]sortie.Event, error) {
	rows, err := q.QueryContext(ctx, `SELECT body FROM events WHERE run_id = ? AND (attempt, seq) > (?, ?)
		ORDER BY attempt, seq LIMIT ?`, string(id), after.Attempt, after.Seq, limit)
	if err != nil {
		return nil, dbErr("read events of "+string(id), err)
	}
	defer rows.Close()
	out := []sortie.Event{}
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, dbErr("read event", err)
		}
		var e sortie.Event
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, fmt.Errorf("decode stored event of %s: %w", id, err)
		}
		out = append(out, e)
	}
	return out, dbErr("read events of "+string(id), rows.Err())
}
