package local

import (
	"context"
	"errors"

	"github.com/sortie-run/sortie"
)

// startInProcess runs Options.InProcess for inv in a goroutine. Its context
// keeps the values of ctx (trace context) but not its cancellation: only
// Cancel and Shutdown end it.
func (l *Launcher) startInProcess(ctx context.Context, inv *sortie.Invocation) *attempt {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := newAttempt(l.newRef(inv, inv.LaunchID), "")
	a.cancel = cancel
	c := *inv // the goroutine keeps its own copy
	go func() {
		defer cancel()
		a.finish(l.runInProcess(ctx, &c))
		l.ended(a)
	}()
	return a
}

// runInProcess calls the function; a panic becomes a failed status.
func (l *Launcher) runInProcess(ctx context.Context, inv *sortie.Invocation) (st sortie.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = failedStatus("in-process worker panicked: %v", r)
		}
	}()
	if err := l.opts.InProcess(ctx, inv); err != nil {
		var ended ExitStatuser
		if errors.As(err, &ended) {
			return ended.ExitStatus()
		}
		return failedStatus("in-process worker: %v", err)
	}
	return sortie.Status{Phase: sortie.PhaseSucceeded}
}

// ExitStatuser is an error of an InProcess function that ran the attempt
// in a process of its own which died during it (a warm worker process,
// functions.ComputeEndedError): ExitStatus says how that process ended,
// and the launcher reports it as the attempt's end ([Launcher.WatchExits],
// [Launcher.Describe]) instead of the function's error.
type ExitStatuser interface {
	error
	ExitStatus() sortie.Status
}
