package controlplane

import (
	"cmp"

	"github.com/sortie-run/sortie"
)

// SpendChange is what one write of a run adds to its agent's spend
// ([sortie.AgentBudget]): the run's cost when the write ends it, added to
// the window of its end in the same atomic write as the run.
type SpendChange struct {
	Window  sortie.SpendWindow
	NanoUSD int64
}

// SpendChangeOf returns what the write of after, whose stored version
// was terminal when wasTerminal, adds to its agent's spend at price table
// p: its cost when the write ends a run of an agent with a budget, else
// nothing (NanoUSD 0). The window is the one of the last attempt's end.
func SpendChangeOf(wasTerminal bool, after *sortie.Run, p sortie.Pricer) SpendChange {
	b := after.Agent.Budget
	if wasTerminal || !after.State.Terminal() || b == nil {
		return SpendChange{}
	}
	cur := after.Current()
	n := int64(Spent(after, p))
	if n <= 0 || cur == nil {
		return SpendChange{} // a run without attempts cost nothing
	}
	end := cmp.Or(cur.EndedMs, after.UpdatedMs)
	return SpendChange{Window: b.WindowAt(after.Agent.Name, end), NanoUSD: n}
}

// CheckSpend returns an [*sortie.AgentBudgetError] when spent, the
// agent's spend in l's window, reached l's limit; nil for a nil l.
func CheckSpend(l *sortie.SpendLimit, spent int64) error {
	if l == nil || spent < l.MaxNanoUSD {
		return nil
	}
	return &sortie.AgentBudgetError{Window: l.Window, BudgetNanoUSD: l.MaxNanoUSD, SpentNanoUSD: spent}
}

// Pricer returns the price table the control plane prices runs with (see
// [Changes.SetPricer]).
func (c *Changes) Pricer() sortie.Pricer { return c.pricer }
