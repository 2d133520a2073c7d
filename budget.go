package sortie

import (
	"context"
	"encoding/json"
)

// Bytes an invocation may gain between the submit-time estimate and its
// launch: the report's callback URL and token (a token is at most 4096
// bytes), and an attempt's re-sealed configuration and trace context
// against the run's copy.
const (
	reportReserveBytes = 4096 + 1024
	launchSlackBytes   = 1024
)

// invocationLimit is the largest encoded invocation the engine's launcher
// carries, and what the limit is: the launcher's own ([InvocationLimiter])
// when it is smaller than [MaxInvocationBytes], which every worker decodes.
func (e *Engine) invocationLimit() (int, string) {
	limit, what := MaxInvocationBytes, "sortie.MaxInvocationBytes, the largest invocation a worker takes"
	if l, ok := e.launcher.(InvocationLimiter); ok {
		if n, w := l.MaxInvocationBytes(); n < limit {
			limit, what = n, w
		}
	}
	return limit, what
}

// SealReserver is an optional capability of a [Sealer] whose Seal adds
// more to an invocation than the attempt's sealed configuration (package
// payload's Granter adds [Invocation.SealedPayloadURLs]): the most bytes
// it adds, which the engine keeps free when it checks a submission
// against the launcher's limit.
type SealReserver interface {
	SealReserveBytes() int
}

// sealReserve is what the engine's Sealer may add to an invocation.
func (e *Engine) sealReserve() int {
	if r, ok := e.opts.Sealer.(SealReserver); ok {
		return r.SealReserveBytes()
	}
	return 0
}

// checkBudget refuses run when the invocation of its next attempt would
// not fit the launcher's limit, before anything is stored: a
// [*ValidationError] naming the largest part (a variable "variables.NAME",
// "config", "input" or "checkpoint"), the size and the limit.
func (e *Engine) checkBudget(run *Run) error {
	limit, what := e.invocationLimit()
	b, err := json.Marshal(e.invocation(run, run.Attempt+1, NewLaunchID()))
	if err != nil {
		return err
	}
	size := len(b) + launchSlackBytes + e.sealReserve()
	if e.opts.ReportIssuer != nil {
		size += reportReserveBytes
	}
	if size <= limit {
		return nil
	}
	field, part := largestPart(run)
	return invalidf(field, "%d bytes make the run's invocation about %d bytes, over the %d-byte limit of %s; pass it by reference instead",
		part, size, limit, what)
}

// largestPart names the largest part of a run's invocation and its size.
func largestPart(run *Run) (string, int) {
	field, n := "variables", 0
	var vars map[string]json.RawMessage
	if json.Unmarshal(run.Variables, &vars) == nil {
		for k, v := range vars {
			if len(v) > n || (len(v) == n && "variables."+k < field) {
				field, n = "variables."+k, len(v)
			}
		}
	}
	for _, p := range []struct {
		field string
		size  int
	}{{"config", len(run.SealedConfig)}, {"input", len(run.ResumeInput)}, {"checkpoint", checkpointLen(run)}} {
		if p.size > n {
			field, n = p.field, p.size
		}
	}
	return field, n
}

func checkpointLen(run *Run) int {
	if run.Interrupt == nil {
		return 0
	}
	return len(run.Interrupt.Checkpoint)
}

// checkResumeBudget refuses input when the resumed attempt's invocation
// would not fit the launcher's limit, before the input is stored. It reads
// the run only when input could matter: with the largest variables,
// configuration and checkpoint a run may carry, an invocation under the
// limit needs no read.
func (e *Engine) checkResumeBudget(ctx context.Context, id RunID, input json.RawMessage) error {
	limit, _ := e.invocationLimit()
	worst := MaxVariablesBytes + MaxResultBytes + 64<<10 + len(input) + reportReserveBytes + 8<<10 + e.sealReserve()
	if worst <= limit {
		return nil
	}
	run, err := e.cp.Get(ctx, id)
	if err != nil || !run.State.Interrupted() {
		return err // the control plane's Resume says what is wrong
	}
	next := *run
	next.State, next.ResumeInput = StateWorking, input
	return e.checkBudget(&next)
}
