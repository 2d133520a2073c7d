package sortie

import (
	"cmp"
	"fmt"
	"time"
)

// DefaultBudgetPeriodMs is [AgentBudget.PeriodMs] when unset: 24 h.
const DefaultBudgetPeriodMs = int64(24 * time.Hour / time.Millisecond)

// AgentBudget caps what an agent's runs may cost per period: once the runs
// that ended in the current period cost MaxCostNanoUSD or more (priced
// with the control plane's price table when each run ended), the control
// plane refuses new runs of the agent until the next period. Periods are
// fixed windows of PeriodMs from the Unix epoch (24 h: UTC days). The
// spend is counted in the write that ends each run (a conditional,
// atomic add), so it holds across hosts; runs still going count when
// they end.
type AgentBudget struct {
	// MaxCostNanoUSD is the budget per period, in nano-dollars; at least 1.
	MaxCostNanoUSD int64 `json:"max_cost_nano_usd"`
	// PeriodMs is the period, in ms, from 1 minute to 366 days. Optional;
	// defaults to [DefaultBudgetPeriodMs].
	PeriodMs int64 `json:"period_ms,omitempty"`
}

// Validate checks the budget and returns a [*ValidationError] naming
// agent.budget.
func (b *AgentBudget) Validate() error {
	if b.MaxCostNanoUSD < 1 {
		return invalidf("agent.budget.max_cost_nano_usd", "%d: a budget is at least 1", b.MaxCostNanoUSD)
	}
	if p := b.PeriodMs; p != 0 && (p < 60_000 || p > 366*DefaultBudgetPeriodMs) {
		return invalidf("agent.budget.period_ms", "%d outside 60000..%d ms", p, 366*DefaultBudgetPeriodMs)
	}
	return nil
}

// Period returns PeriodMs or its default.
func (b *AgentBudget) Period() int64 { return cmp.Or(b.PeriodMs, DefaultBudgetPeriodMs) }

// SpendWindow is one agent's spend counter: the period starting at
// StartMs (Unix ms, a multiple of PeriodMs).
type SpendWindow struct {
	Agent    string
	PeriodMs int64
	StartMs  int64
}

// WindowAt returns the window of the agent's budget that holds atMs.
func (b *AgentBudget) WindowAt(agent string, atMs int64) SpendWindow {
	p := b.Period()
	return SpendWindow{Agent: agent, PeriodMs: p, StartMs: atMs - ((atMs%p)+p)%p}
}

// SpendLimit asks Reserve to refuse a new run when the agent's spend in
// Window has reached MaxNanoUSD ([Reservation.SpendLimit]).
type SpendLimit struct {
	Window     SpendWindow
	MaxNanoUSD int64
}

// AgentBudgetError is the refusal of a run whose agent spent its budget
// for the period. errors.Is(err, ErrBudgetExhausted) holds.
type AgentBudgetError struct {
	Window                      SpendWindow
	BudgetNanoUSD, SpentNanoUSD int64
}

func (e *AgentBudgetError) Error() string {
	end := time.UnixMilli(e.Window.StartMs + e.Window.PeriodMs).UTC().Format(time.RFC3339)
	return fmt.Sprintf("agent %q spent %s of its budget of %s for the period of %s; new runs are refused until %s",
		e.Window.Agent, NanoUSD(e.SpentNanoUSD), NanoUSD(e.BudgetNanoUSD), time.Duration(e.Window.PeriodMs)*time.Millisecond, end)
}

// Unwrap returns ErrBudgetExhausted.
func (e *AgentBudgetError) Unwrap() error { return ErrBudgetExhausted }

// spendLimitOf returns the spend limit of a new run of agent m at nowMs,
// nil without a budget.
func spendLimitOf(m Manifest, nowMs int64) *SpendLimit {
	if m.Budget == nil {
		return nil
	}
	return &SpendLimit{Window: m.Budget.WindowAt(m.Name, nowMs), MaxNanoUSD: m.Budget.MaxCostNanoUSD}
}
