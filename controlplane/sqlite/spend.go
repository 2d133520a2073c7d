package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// addSpend adds a run write's spend to its agent's window, in the write's
// transaction.
func addSpend(ctx context.Context, tx *stmtCache, s controlplane.SpendChange) error {
	if s.NanoUSD == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO spend (agent, period_ms, start_ms, nano_usd) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent, period_ms, start_ms) DO UPDATE SET nano_usd = nano_usd + excluded.nano_usd`,
		s.Window.Agent, s.Window.PeriodMs, s.Window.StartMs, s.NanoUSD)
	return dbErr("add agent spend", err)
}

// checkSpend refuses a new run whose agent spent l's limit in its window
// ([controlplane.CheckSpend]), reading the spend in the reservation's
// transaction.
func checkSpend(ctx context.Context, tx *stmtCache, l *sortie.SpendLimit) error {
	if l == nil {
		return nil
	}
	var spent int64
	err := tx.QueryRowContext(ctx, `SELECT nano_usd FROM spend WHERE agent = ? AND period_ms = ? AND start_ms = ?`,
		l.Window.Agent, l.Window.PeriodMs, l.Window.StartMs).Scan(&spent)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return dbErr("read agent spend", err)
	}
	return controlplane.CheckSpend(l, spent)
}
