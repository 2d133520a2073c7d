package sortie

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// exited is the engine's [ExitWatcher] callback: it ends the attempt whose
// compute ended, in the background, once its Start returned and its Ref
// was stored.
func (e *Engine) exited(ref Ref, st Status) {
	e.life.goBackground(func() {
		e.life.awaitLaunch(ref.LaunchID)
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		if err := e.computeEnded(ctx, ref, st); err != nil {
			e.log.Warn("record the end of an attempt's compute", "run", ref.RunID, "attempt", ref.Attempt, "err", err)
		}
	})
}

// computeEnded ends attempt ref.Attempt of its run with st, the provider's
// word on compute that ended, when the control plane still shows that
// attempt live with ref's launch ID (and, once stored, ref's ID: the end
// of a duplicate delivery's compute is not the attempt's). A write lost to
// a concurrent change is tried again on the run as it then is.
func (e *Engine) computeEnded(ctx context.Context, ref Ref, st Status) error {
	for range 3 {
		run, err := e.cp.Get(ctx, ref.RunID)
		if err != nil {
			return err
		}
		cur := run.Current()
		if cur == nil || cur.Number != ref.Attempt || cur.LaunchID != ref.LaunchID || cur.Ended() ||
			(cur.Ref != nil && cur.Ref.ID != ref.ID) {
			return nil
		}
		if _, err = e.endFromStatus(ctx, run, cur, st); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("end attempt %d of run %s: the run kept changing: %w", ref.Attempt, ref.RunID, ErrConflict)
}

// endFromStatus ends the live attempt cur of run because its compute
// ended (st): with error type [ErrorTypeExited] (retryable) and st on
// [Attempt.Exit], conditional on run's version. Compute that the provider
// cancelled while Sortie did not ask then cancels the run, with the
// provider's words: it was cancelled outside Sortie (a console, the
// provider's CLI), and is not retried.
func (e *Engine) endFromStatus(ctx context.Context, run *Run, cur *Attempt, st Status) (*Run, error) {
	msg := &ErrorMessage{Type: ErrorTypeExited, Retryable: true,
		Message: clip("the attempt's compute ended before its worker reported an outcome: "+statusWords(st), MaxEventTextBytes)}
	e.log.Info("attempt's compute ended", "run", run.ID, "attempt", cur.Number, "phase", st.Phase, "reason", st.Reason)
	out, err := e.cp.Finish(ctx, Finish{RunID: run.ID, Attempt: cur.Number, LaunchID: cur.LaunchID,
		Outcome: Outcome{Error: msg}, Exit: &st, IfVersion: run.Version, NowMs: e.nowMs()})
	if err != nil || st.Phase != PhaseCancelled || out.CancelRequested || out.State.Terminal() {
		return out, err
	}
	e.log.Info("attempt cancelled outside Sortie", "run", run.ID, "attempt", cur.Number, "reason", st.Reason)
	return e.cp.RequestCancel(ctx, run.ID, cancelledOutsideReason(st))
}

// cancelledOutsideReason is a run's reason when the provider cancelled
// its compute behind Sortie's back.
func cancelledOutsideReason(st Status) string {
	return clip("cancelled outside Sortie: "+statusWords(st), MaxEventTextBytes)
}

// statusWords says what a provider status tells: its phase, exit code,
// signal and reason.
func statusWords(st Status) string {
	s := string(st.Phase)
	if st.ExitCode != nil && *st.ExitCode >= 0 {
		s += fmt.Sprintf(", exit code %d", *st.ExitCode)
	}
	if st.Signal != "" {
		s += ", signal " + st.Signal
	}
	if st.Reason != "" {
		s += ": " + st.Reason
	}
	return s
}

// clip shortens s to at most n bytes of valid UTF-8.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
