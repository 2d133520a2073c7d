package functions

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sortie-run/sortie"
)

// goRunner returns the runner of a registered handler. A handler that does
// not return within handlerStopGrace of its context ending (less near the
// deadline) is abandoned: the attempt is reported without it, and its later
// Emit calls fail.
func goRunner(h Handler) runner {
	return func(ctx context.Context, c *Call, margin time.Duration) sortie.Outcome {
		ch := make(chan sortie.Outcome, 1)
		go func() { ch <- callHandler(ctx, h, c) }()
		select {
		case o := <-ch:
			return o
		case <-ctx.Done():
		}
		grace := handlerStopGrace
		if errors.Is(context.Cause(ctx), errDeadline) {
			grace = min(grace, max(margin/2, 10*time.Millisecond))
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case o := <-ch:
			return o
		case <-t.C:
			c.log.Warn("handler did not return after its context ended; reporting without it", "grace", grace)
			c.abandoned.Store(true)
			return errorOutcome(errTypeError, fmt.Sprintf("the handler did not return within %s of its context ending", grace), true)
		}
	}
}

// callHandler calls h and turns what it returns, or its panic, into an
// outcome.
func callHandler(ctx context.Context, h Handler, c *Call) (o sortie.Outcome) {
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("handler panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			o = errorOutcome(errTypePanic, fmt.Sprintf("handler panicked: %v", v), false)
		}
	}()
	return outcomeOf(h(ctx, c))
}
