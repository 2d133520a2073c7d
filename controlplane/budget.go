package controlplane

import (
	"fmt"

	"github.com/sortie-run/sortie"
)

// Budgets ([sortie.Policy.MaxCostNanoUSD]) are enforced in the same
// conditional write as the transition that would overspend, with the
// price table of the control plane handle making it:
//
//   - Finish: an attempt that would be retried is not, once the run has
//     spent its budget; the run fails.
//   - Heartbeat: when the live attempt's cost, projected to the end of
//     its next heartbeat interval, would pass the budget, the run's cancel
//     is requested with error type budget_exceeded and its lease made due
//     at once, so the worker stops on this heartbeat's answer and the
//     reconciler stops its compute (see [StopOverBudget]); the run fails
//     when the attempt ends.
//   - Resume: an interrupted run that has spent its budget fails instead
//     of getting another attempt.

// Spent returns what r cost so far at p: its attempts' usage as
// recorded. A nil p prices nothing.
func Spent(r *sortie.Run, p sortie.Pricer) sortie.NanoUSD {
	if p == nil {
		return 0
	}
	return p.Price(r).TotalNanoUSD
}

// projected returns what r will have cost at the end of its live
// attempt's next heartbeat interval: the attempt priced as if it had run
// from its claim until nowMs plus one heartbeat, with the compute shape
// its worker stated at the claim ([sortie.Claim.Usage]; memory, vCPU,
// architecture, billing). An attempt claimed without a shape prices its
// compute at 0 until its finish reports usage.
func projected(r *sortie.Run, p sortie.Pricer, nowMs int64) sortie.NanoUSD {
	cur := r.Current()
	if cur == nil || !cur.Claimed() || cur.Ended() {
		return Spent(r, p)
	}
	c := *r
	c.Attempts = append([]sortie.Attempt(nil), r.Attempts...)
	a := &c.Attempts[len(c.Attempts)-1]
	u := a.Usage.Plus(nil)
	ms := nowMs - a.ClaimedMs + r.Policy.HeartbeatMs
	u.DurationMs, u.BilledDurationMs = max(u.DurationMs, ms), max(u.BilledDurationMs, ms)
	a.Usage = u
	return Spent(&c, p)
}

// budgetError is the run's error once it spent its budget.
func budgetError(r *sortie.Run, spent sortie.NanoUSD, what string) *sortie.ErrorMessage {
	return &sortie.ErrorMessage{Type: sortie.ErrorTypeBudgetExceeded,
		Message: fmt.Sprintf("the run's budget (policy.max_cost_nano_usd %d, %s) is spent: %s %s (%d n$)",
			r.Policy.MaxCostNanoUSD, sortie.NanoUSD(r.Policy.MaxCostNanoUSD), what, spent, int64(spent))}
}

// budgetStopped reports whether r's cancel was requested because it
// spent its budget.
func budgetStopped(r *sortie.Run) bool {
	return r.CancelRequested && r.Error != nil && r.Error.Type == sortie.ErrorTypeBudgetExceeded
}

// StopOverBudget is the Heartbeat half of a budget: when r's live attempt,
// projected to its next heartbeat, would reach r's budget at p, it
// requests r's cancel with a budget_exceeded error naming the budget and
// the spend, and makes its lease due at nowMs (the reconciler then stops
// the compute and gives the worker its cancel timeout). It reports
// whether it stopped r.
func StopOverBudget(r *sortie.Run, p sortie.Pricer, nowMs int64) bool {
	if r.Policy.MaxCostNanoUSD <= 0 || r.CancelRequested || p == nil {
		return false
	}
	spent := projected(r, p, nowMs)
	if spent < sortie.NanoUSD(r.Policy.MaxCostNanoUSD) {
		return false
	}
	r.Error = budgetError(r, spent, "projected to the next heartbeat")
	r.CancelRequested, r.CancelRequestedMs, r.Reason = true, nowMs, r.Error.Message
	r.LeaseExpiresMs = nowMs
	return true
}

// FailOverBudget is the Finish and Resume half of a budget: when r would
// get another attempt (a retry, a resume) but has spent its budget at p,
// r fails with a budget_exceeded error instead. It reports whether r
// failed.
func FailOverBudget(r *sortie.Run, p sortie.Pricer) bool {
	if r.Policy.MaxCostNanoUSD <= 0 || r.State.Terminal() || r.State.Interrupted() || p == nil {
		return false
	}
	if cur := r.Current(); cur != nil && !cur.Ended() {
		return false
	}
	spent := Spent(r, p)
	if spent < sortie.NanoUSD(r.Policy.MaxCostNanoUSD) {
		return false
	}
	r.Error = budgetError(r, spent, "spent")
	r.State, r.Reason, r.LeaseExpiresMs, r.ResumeInput, r.ResumeInputRef = sortie.StateFailed, r.Error.Message, 0, nil, nil
	return true
}
