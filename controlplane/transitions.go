package controlplane

import (
	"fmt"
	"hash/fnv"

	"github.com/sortie-run/sortie"
)

// LaunchGraceMs is how long a fresh reservation may wait for its first
// launch to be recorded before the reconciler launches it, in ms.
const LaunchGraceMs = 10_000

// NewRun prepares r for Reserve of res: state submitted, version 1,
// timestamps, policy defaults and the launch deadline; with res.LaunchID,
// attempt 1 recorded as [RecordLaunch] records it (still version 1: it is
// one write).
func NewRun(r *sortie.Run, res *sortie.Reservation) {
	r.State = sortie.StateSubmitted
	r.Policy = r.Policy.WithDefaults()
	r.CreatedMs, r.UpdatedMs = res.NowMs, res.NowMs
	r.LeaseExpiresMs = res.NowMs + LaunchGraceMs
	if r.Concurrency != nil {
		r.LeaseExpiresMs = 0 // queued: admitted by an engine, never launched by the reconciler
	}
	if res.LaunchID != "" {
		// A new run is neither terminal, cancelled nor interrupted, and its
		// policy allows at least one attempt: RecordLaunch cannot fail.
		_ = RecordLaunch(r, sortie.Launch{RunID: r.ID, Attempt: 1, LaunchID: res.LaunchID,
			StartTimeoutMs: res.StartTimeoutMs, CheckMs: res.CheckMs, NowMs: res.NowMs, Usage: res.Usage})
	}
	r.Version = 1
}

func touch(r *sortie.Run, nowMs int64) {
	r.Version++
	if nowMs > r.UpdatedMs {
		r.UpdatedMs = nowMs
	}
}

// notTerminal refuses the change op of a terminal run r with a
// [*sortie.TerminalError] naming it and its state.
func notTerminal(r *sortie.Run, op string) error {
	if r.State.Terminal() {
		return &sortie.TerminalError{ID: r.ID, State: r.State, Op: op}
	}
	return nil
}

// RecordLaunch applies [sortie.ControlPlane.RecordLaunch] to r.
func RecordLaunch(r *sortie.Run, l sortie.Launch) error {
	if err := notTerminal(r, "record launch"); err != nil {
		return err
	}
	if r.CancelRequested {
		return fmt.Errorf("record launch run %s: %w", r.ID, sortie.ErrCancelRequested)
	}
	if l.Attempt != r.Attempt+1 {
		return fmt.Errorf("record launch run %s attempt %d: current attempt is %d: %w", r.ID, l.Attempt, r.Attempt, sortie.ErrConflict)
	}
	if cur := r.Current(); cur != nil && !cur.Ended() {
		return fmt.Errorf("record launch run %s attempt %d: attempt %d still live: %w", r.ID, l.Attempt, cur.Number, sortie.ErrConflict)
	}
	if r.State.Interrupted() {
		return fmt.Errorf("record launch run %s: state %s waits for resume: %w", r.ID, r.State, sortie.ErrConflict)
	}
	if l.Attempt > r.Policy.MaxAttempts {
		return fmt.Errorf("record launch run %s attempt %d: limit is %d attempts: %w", r.ID, l.Attempt, r.Policy.MaxAttempts, sortie.ErrConflict)
	}
	timeout := r.Policy.StartTimeoutMs
	if l.StartTimeoutMs > 0 {
		timeout = l.StartTimeoutMs
	}
	startBy := l.NowMs + timeout
	if r.Queued() && l.Limit > 0 {
		r.Concurrency.Limit = l.Limit // the driver admits it under this limit
	}
	r.Attempt = l.Attempt
	r.Attempts = append(r.Attempts, sortie.Attempt{Number: l.Attempt, LaunchID: l.LaunchID, LaunchedMs: l.NowMs, StartByMs: startBy, Usage: l.Usage})
	r.LeaseExpiresMs = startBy
	if l.CheckMs > 0 {
		r.LeaseExpiresMs = min(startBy, l.CheckMs)
	}
	r.Error = nil // the previous attempt's error stays on that attempt
	touch(r, l.NowMs)
	return nil
}

// Defer applies [sortie.ControlPlane.Defer] to r. An unclaimed attempt's
// next look never moves past its start deadline.
func Defer(r *sortie.Run, d sortie.Deferral) error {
	if err := notTerminal(r, "defer"); err != nil {
		return err
	}
	if d.IfVersion != 0 && d.IfVersion != r.Version {
		return fmt.Errorf("defer run %s attempt %d: version %d, want %d: %w", r.ID, d.Attempt, r.Version, d.IfVersion, sortie.ErrConflict)
	}
	cancelBy := r.CancelRequestedMs + r.Policy.CancelTimeout().Milliseconds()
	if r.CancelRequested && (r.CancelRequestedMs == 0 || d.NowMs >= cancelBy) {
		return fmt.Errorf("defer run %s attempt %d: %w", r.ID, d.Attempt, sortie.ErrCancelRequested)
	}
	a, err := attemptOf(r, "defer", d.Attempt, d.LaunchID)
	if err != nil {
		return err
	}
	if a.Ended() {
		return fmt.Errorf("defer run %s attempt %d: the attempt ended: %w", r.ID, d.Attempt, sortie.ErrConflict)
	}
	until := d.UntilMs
	if !a.Claimed() {
		until = min(until, a.StartDeadlineMs(r.Policy))
	}
	if r.CancelRequested {
		until = min(until, cancelBy) // the cancel deadline holds
	}
	r.LeaseExpiresMs = until
	touch(r, d.NowMs)
	return nil
}

// attemptOf returns attempt n of r if it is the current one with launchID.
func attemptOf(r *sortie.Run, op string, n int, launchID string) (*sortie.Attempt, error) {
	cur := r.Current()
	if cur == nil || cur.Number != n {
		return nil, fmt.Errorf("%s run %s attempt %d: current attempt is %d: %w", op, r.ID, n, r.Attempt, sortie.ErrConflict)
	}
	if cur.LaunchID != launchID {
		return nil, fmt.Errorf("%s run %s attempt %d: launch ID %q is not the recorded one: %w", op, r.ID, n, launchID, sortie.ErrConflict)
	}
	return cur, nil
}

// SetRef applies [sortie.ControlPlane.SetRef] to r.
func SetRef(r *sortie.Run, attempt int, launchID string, ref sortie.Ref, nowMs int64) error {
	a, err := attemptOf(r, "set ref", attempt, launchID)
	if err != nil {
		return err
	}
	a.Ref = &ref
	touch(r, nowMs)
	return nil
}

// Claim applies [sortie.ControlPlane.Claim] to r, the claim's compute
// shape (checked by [Changes.Claim]) put on the attempt's usage.
func Claim(r *sortie.Run, c sortie.Claim) error {
	if err := notTerminal(r, "claim"); err != nil {
		return err
	}
	if r.CancelRequested {
		return fmt.Errorf("claim run %s attempt %d: %w", r.ID, c.Attempt, sortie.ErrCancelRequested)
	}
	a, err := attemptOf(r, "claim", c.Attempt, c.LaunchID)
	if err != nil {
		return err
	}
	if a.Claimed() || a.Ended() {
		return fmt.Errorf("claim run %s attempt %d: already claimed by %q: %w", r.ID, c.Attempt, a.Owner, sortie.ErrConflict)
	}
	a.ClaimedMs, a.Owner = c.NowMs, c.Owner
	if shape := c.Usage.Shape(); shape != nil {
		a.Usage = a.Usage.Plus(shape) // what the launch recorded, and the shape
	}
	r.State = sortie.StateWorking
	r.LeaseExpiresMs = c.NowMs + r.Policy.LeaseMs
	touch(r, c.NowMs)
	return nil
}

// live returns the claimed, live attempt matching c.
func live(r *sortie.Run, op string, attempt int, launchID string) (*sortie.Attempt, error) {
	if err := notTerminal(r, op); err != nil {
		return nil, err
	}
	a, err := attemptOf(r, op, attempt, launchID)
	if err != nil {
		return nil, err
	}
	if !a.Claimed() || a.Ended() {
		return nil, fmt.Errorf("%s run %s attempt %d: attempt is not claimed and live: %w", op, r.ID, attempt, sortie.ErrConflict)
	}
	return a, nil
}

// Heartbeat applies [sortie.ControlPlane.Heartbeat] to r. Once the run's
// cancel was requested a heartbeat no longer extends the lease: the
// attempt's time ends at its cancel deadline.
func Heartbeat(r *sortie.Run, c sortie.Claim) error {
	if _, err := live(r, "heartbeat", c.Attempt, c.LaunchID); err != nil {
		return err
	}
	if r.CancelRequested {
		touch(r, c.NowMs)
		return nil
	}
	r.LeaseExpiresMs = c.NowMs + r.Policy.LeaseMs
	touch(r, c.NowMs)
	return nil
}

// CheckAppend checks that a may append to r: the attempt is claimed and
// live, and the events are valid. Numbering is [NumberEvents]'s job.
func CheckAppend(r *sortie.Run, a sortie.Append) error {
	if len(a.Events) > sortie.MaxEventsPerAppend {
		return sortie.Invalidf("events", "%d events, limit %d per append", len(a.Events), sortie.MaxEventsPerAppend)
	}
	for i := range a.Events {
		if err := a.Events[i].Validate(); err != nil {
			return err
		}
	}
	_, err := live(r, "append events", a.Attempt, a.LaunchID)
	return err
}

// NumberEvents decides what AppendEvents stores, given the highest stored
// seq of the attempt and a lookup of stored events. It returns the events to
// insert (numbered, with Attempt set) and all events as stored, or
// ErrConflict for a gap or a taken seq with other content.
func NumberEvents(a sortie.Append, last int64, stored func(seq int64) (*sortie.Event, bool)) (insert, out []sortie.Event, err error) {
	next := last + 1
	for _, e := range a.Events {
		e.Attempt = a.Attempt
		if e.Seq == 0 {
			e.Seq = next
		}
		switch {
		case e.Seq < next:
			old, ok := stored(e.Seq)
			if !ok {
				old = findEvent(insert, e.Seq)
			}
			if old == nil || !old.Same(&e) {
				return nil, nil, fmt.Errorf("append event %d.%d: seq taken by other content: %w", a.Attempt, e.Seq, sortie.ErrConflict)
			}
			out = append(out, *old)
			continue
		case e.Seq > next:
			return nil, nil, fmt.Errorf("append event %d.%d: gap after seq %d: %w", a.Attempt, e.Seq, next-1, sortie.ErrConflict)
		}
		insert = append(insert, e)
		out = append(out, e)
		next++
	}
	return insert, out, nil
}

func findEvent(es []sortie.Event, seq int64) *sortie.Event {
	for i := range es {
		if es[i].Seq == seq {
			return &es[i]
		}
	}
	return nil
}

// Finish applies [sortie.ControlPlane.Finish] to r: the outcome's usage is
// added to what the attempt recorded at its launch. It reports changed
// false when the attempt had already ended (the finish is a no-op). A
// result or checkpoint over [sortie.MaxResultBytes] ends the attempt with
// a permanent [sortie.ErrorTypeOutputTooLarge] error instead.
func Finish(r *sortie.Run, f sortie.Finish) (changed bool, err error) {
	f.Outcome = StorableOutcome(f.Outcome)
	if err := f.Outcome.Validate(); err != nil {
		return false, err
	}
	if f.IfVersion != 0 && f.IfVersion != r.Version {
		return false, fmt.Errorf("finish run %s attempt %d: version %d, want %d: %w", r.ID, f.Attempt, r.Version, f.IfVersion, sortie.ErrConflict)
	}
	a, err := attemptOf(r, "finish", f.Attempt, f.LaunchID)
	if err != nil {
		if r.State.Terminal() && f.Attempt <= r.Attempt {
			return false, nil
		}
		return false, err
	}
	if a.Ended() || r.State.Terminal() {
		return false, nil
	}
	a.EndedMs, a.Exit = f.NowMs, f.Exit
	if u := f.Outcome.Usage; u != nil {
		a.Usage = a.Usage.Plus(u) // the engine's share recorded at launch, and the worker's
	}
	applyOutcome(r, a, f.Outcome, f.NowMs)
	touch(r, f.NowMs)
	return true, nil
}

func applyOutcome(r *sortie.Run, a *sortie.Attempt, o sortie.Outcome, nowMs int64) {
	r.LeaseExpiresMs = 0
	switch {
	case (o.Result != nil || o.ResultRef != nil) && !r.CancelRequested: // cancel wins whatever the outcome
		r.State, r.Result, r.ResultRef, r.Error, r.Interrupt = sortie.StateCompleted, o.Result, o.ResultRef, nil, nil
	case o.Interrupt != nil && !r.CancelRequested:
		r.State, r.Interrupt, r.ResumeInput, r.ResumeInputRef = o.Interrupt.State, o.Interrupt, nil, nil
	default:
		failAttempt(r, a, o.Error, nowMs)
		return
	}
	a.Outcome = r.State
}

func failAttempt(r *sortie.Run, a *sortie.Attempt, e *sortie.ErrorMessage, nowMs int64) {
	if e == nil { // a result or an interrupt after a cancel request
		e = &sortie.ErrorMessage{Type: sortie.ErrorTypeCancelled, Message: "cancel requested"}
	}
	a.Error = e
	switch {
	case budgetStopped(r): // r.Error and r.Reason say which budget and the spend
		r.State = sortie.StateFailed
	case r.CancelRequested:
		r.State, r.Reason = sortie.StateCancelled, firstNonEmpty(r.Reason, "cancel requested")
	case e.Type == sortie.ErrorTypeRejected:
		r.State, r.Reason, r.Error = sortie.StateRejected, e.Message, e
	case e.Retryable && a.Number < r.Policy.MaxAttempts:
		r.State, r.Error = sortie.StateWorking, e
		r.LeaseExpiresMs = nowMs + Backoff(r, a.Number)
		a.Outcome = sortie.StateFailed
		return
	default:
		r.State, r.Error = sortie.StateFailed, e
		r.Reason = fmt.Sprintf("attempt %d of %d: %s", a.Number, r.Policy.MaxAttempts, e.Error())
	}
	a.Outcome = r.State
}

// Backoff returns the delay in ms before the attempt after attempt n:
// BackoffMs doubled per attempt, capped at BackoffMaxMs, with a deterministic
// jitter of up to 50% derived from the run ID and attempt.
func Backoff(r *sortie.Run, n int) int64 {
	d := r.Policy.BackoffMs
	for i := 1; i < n && d < r.Policy.BackoffMaxMs; i++ {
		d *= 2
	}
	d = min(d, r.Policy.BackoffMaxMs)
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", r.ID, n)
	return d/2 + int64(h.Sum32())%(d/2+1)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// RequestCancel applies [sortie.ControlPlane.RequestCancel] to r. It
// reports changed false for a terminal run. A run with a claimed, live
// attempt stays as it is until the worker stops, but at most until its
// cancel deadline: the lease is brought forward to nowMs plus the policy's
// cancel timeout (the first request's deadline holds).
func RequestCancel(r *sortie.Run, reason string, nowMs int64) (changed bool) {
	if r.State.Terminal() {
		return false
	}
	first := !r.CancelRequested
	if first {
		r.CancelRequested, r.CancelRequestedMs = true, nowMs
		r.Reason = firstNonEmpty(reason, "cancel requested")
	}
	cur := r.Current()
	switch {
	case cur == nil || !cur.Claimed() || cur.Ended():
		if cur != nil && !cur.Ended() {
			cur.EndedMs, cur.Outcome = nowMs, sortie.StateCancelled
		}
		r.State, r.LeaseExpiresMs = sortie.StateCancelled, 0
	case first:
		r.LeaseExpiresMs = min(r.LeaseExpiresMs, nowMs+r.Policy.CancelTimeout().Milliseconds())
	}
	touch(r, nowMs)
	return true
}

// Expired reports whether the reconciler should look at r at nowMs.
func Expired(r *sortie.Run, nowMs int64) bool {
	return !r.State.Terminal() && r.LeaseExpiresMs != 0 && r.LeaseExpiresMs <= nowMs
}
