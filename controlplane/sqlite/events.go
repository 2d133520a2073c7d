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
		r, err := c.runs.load(ctx, tx, a.RunID, false)
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
	err = tx.QueryRowContext(ctx, `SELECT last_seq FROM event_batches WHERE run_id = ? AND attempt = ?
		ORDER BY first_seq DESC LIMIT 1`, string(a.RunID), a.Attempt).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, dbErr(fmt.Sprintf("last event of %s attempt %d", a.RunID, a.Attempt), err)
	}
	var lookupErr error
	var batch []sortie.Event // the stored batch last looked in
	stored := func(seq int64) (*sortie.Event, bool) {
		if e := findEvent(batch, seq); e != nil {
			return e, true
		}
		batch, err = loadBatch(ctx, tx, a.RunID, a.Attempt, seq)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		e := findEvent(batch, seq)
		return e, e != nil
	}
	insert, out, err = controlplane.NumberEvents(a, last, stored)
	if lookupErr != nil {
		return nil, nil, lookupErr
	}
	return insert, out, err
}

// findEvent returns the event of evs with seq, or nil.
func findEvent(evs []sortie.Event, seq int64) *sortie.Event {
	for i := range evs {
		if evs[i].Seq == seq {
			return &evs[i]
		}
	}
	return nil
}

// loadBatch returns the stored batch of the attempt that may hold seq
// (the last one starting at or before it), or nil.
func loadBatch(ctx context.Context, tx *stmtCache, id sortie.RunID, attempt int, seq int64) ([]sortie.Event, error) {
	var body []byte
	err := tx.QueryRowContext(ctx, `SELECT body FROM event_batches WHERE run_id = ? AND attempt = ? AND first_seq <= ?
		ORDER BY first_seq DESC LIMIT 1`, string(id), attempt, seq).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, dbErr(fmt.Sprintf("load event %d.%d of %s", attempt, seq, id), err)
	}
	return decodeBatch(id, body)
}

func decodeBatch(id sortie.RunID, body []byte) ([]sortie.Event, error) {
	var evs []sortie.Event
	if err := json.Unmarshal(body, &evs); err != nil {
		return nil, fmt.Errorf("decode stored events of %s: %w", id, err)
	}
	return evs, nil
}

// insertEvents stores evs (numbered, consecutive) as one row of
// event_batches: a JSON array of the events.
func insertEvents(ctx context.Context, tx *stmtCache, id sortie.RunID, evs []sortie.Event) error {
	if len(evs) == 0 {
		return nil
	}
	first, last := evs[0].Cursor(), evs[len(evs)-1].Cursor()
	body, err := json.Marshal(evs)
	if err != nil {
		return fmt.Errorf("encode events %s-%s: %w", first, last, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO event_batches (run_id, attempt, first_seq, last_seq, body) VALUES (?, ?, ?, ?, ?)`,
		string(id), first.Attempt, first.Seq, last.Seq, body); err != nil {
		return dbErr(fmt.Sprintf("append events %s-%s", first, last), err)
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
		_, err = c.runs.load(ctx, c.rq, id, true) // no events: does the run exist?
	}
	if err != nil {
		return nil, c.wrap("events", err)
	}
	return out, nil
}

// eventsQuery reads the batches with events after a cursor, in order.
const eventsQuery = `SELECT body FROM event_batches WHERE run_id = ? AND (attempt, first_seq) > (?, ?)
	AND (attempt, last_seq) > (?, ?) ORDER BY attempt, first_seq LIMIT ?`

// readEvents reads the batches holding events after the cursor: a batch
// holds at most sortie.MaxEventsPerAppend events, so the one holding
// after.Seq+1 starts after after.Seq-MaxEventsPerAppend, and the index
// serves the scan from there. limit rows hold at least limit events.
func readEvents(ctx context.Context, q querier, id sortie.RunID, after sortie.Cursor, limit int) ([]sortie.Event, error) {
	rows, err := q.QueryContext(ctx, eventsQuery, string(id), after.Attempt, after.Seq-sortie.MaxEventsPerAppend, after.Attempt, after.Seq, limit)
	if err != nil {
		return nil, dbErr("read events of "+string(id), err)
	}
	defer rows.Close()
	out := []sortie.Event{}
	for rows.Next() && len(out) < limit {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, dbErr("read events", err)
		}
		evs, err := decodeBatch(id, body)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if after.Before(e.Cursor()) && len(out) < limit {
				out = append(out, e)
			}
		}
	}
	return out, dbErr("read events of "+string(id), rows.Err())
}
