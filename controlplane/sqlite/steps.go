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

// RecordStep implements [sortie.ControlPlane.RecordStep] in one write
// transaction: the claim is checked on the run as stored, then the step
// inserted (a row of steps) unless its name is taken.
func (c *ControlPlane) RecordStep(ctx context.Context, s sortie.StepRecord) (*sortie.Step, error) {
	if err := controlplane.CheckStepRecord(s); err != nil {
		return nil, err
	}
	if err := c.ready("record step"); err != nil {
		return nil, err
	}
	var step sortie.Step
	inserted := false
	err := c.write(ctx, func(ctx context.Context, tx *stmtCache) error {
		r, err := c.runs.load(ctx, tx, s.RunID, false)
		if err != nil {
			return err
		}
		if err := controlplane.CheckStep(r, s); err != nil {
			return err
		}
		stored, count, size, err := stepsOf(ctx, tx, s.RunID, s.Step.Name)
		if err != nil {
			return err
		}
		if step, inserted, err = controlplane.PlaceStep(s, stored, count, size); err != nil || !inserted {
			return err
		}
		return insertStep(ctx, tx, s.RunID, &step)
	})
	if err != nil {
		return nil, c.wrap("record step", err)
	}
	if inserted {
		c.hub.Notify(s.RunID)
	}
	return &step, nil
}

// stepsOf returns the run's step named name (nil for none) and its steps'
// count and result bytes.
func stepsOf(ctx context.Context, tx *stmtCache, id sortie.RunID, name string) (*sortie.Step, int, int, error) {
	var count, size int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM steps WHERE run_id = ?`,
		string(id)).Scan(&count, &size); err != nil {
		return nil, 0, 0, dbErr("count the steps of "+string(id), err)
	}
	var body []byte
	err := tx.QueryRowContext(ctx, `SELECT body FROM steps WHERE run_id = ? AND name = ?`, string(id), name).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, count, size, nil
	} else if err != nil {
		return nil, 0, 0, dbErr(fmt.Sprintf("load step %q of %s", name, id), err)
	}
	st, err := decodeStep(id, body)
	return st, count, size, err
}

func decodeStep(id sortie.RunID, body []byte) (*sortie.Step, error) {
	var st sortie.Step
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("decode a stored step of %s: %w", id, err)
	}
	return &st, nil
}

func insertStep(ctx context.Context, tx *stmtCache, id sortie.RunID, st *sortie.Step) error {
	body, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode step %q: %w", st.Name, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO steps (run_id, name, attempt, size, body) VALUES (?, ?, ?, ?, ?)`,
		string(id), st.Name, st.Attempt, st.Size(), body)
	return dbErr(fmt.Sprintf("record step %q of %s", st.Name, id), err)
}

// Steps implements [sortie.ControlPlane.Steps].
func (c *ControlPlane) Steps(ctx context.Context, id sortie.RunID) ([]sortie.Step, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := c.ready("steps"); err != nil {
		return nil, err
	}
	out, err := readSteps(ctx, c.rq, id)
	if err == nil && len(out) == 0 {
		_, err = c.runs.load(ctx, c.rq, id, true) // no steps: does the run exist?
	}
	if err != nil {
		return nil, c.wrap("steps", err)
	}
	sortie.SortSteps(out)
	return out, nil
}

func readSteps(ctx context.Context, q querier, id sortie.RunID) ([]sortie.Step, error) {
	rows, err := q.QueryContext(ctx, `SELECT body FROM steps WHERE run_id = ?`, string(id))
	if err != nil {
		return nil, dbErr("read the steps of "+string(id), err)
	}
	defer rows.Close()
	out := []sortie.Step{}
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, dbErr("read steps", err)
		}
		st, err := decodeStep(id, body)
		if err != nil {
			return nil, err
		}
		out = append(out, *st)
	}
	return out, dbErr("read the steps of "+string(id), rows.Err())
}
