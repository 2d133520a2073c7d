package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/jsonbody"
)

// ErrInvalidResult: a remote task completed, but its result does not
// satisfy the node's [Policy.ResultSchema]. The error wrapping it is a
// [*sortie.ValidationError] too, naming the field of the result
// ("result.items[0].id") and the rule, never the value.
var ErrInvalidResult = errors.New("remote result does not match the result schema")

// Policy is a [Node]'s call policy: how often a call is tried, how long
// each try may take, and what its result must look like. The zero Policy
// sends each call once, with no timeout of its own and no validation.
type Policy struct {
	// MaxAttempts is how many times a call is sent before a transport
	// failure is returned (1..10). Every attempt sends the same message
	// ID, the remote's idempotency key, so a retry after a lost answer
	// finds the task the first attempt started on a remote that dedupes
	// by message ID (a Sortie host, over remote/runs or its A2A binding).
	// A streaming call is retried only before its first event. Optional;
	// defaults to 1.
	MaxAttempts int
	// Backoff is the longest wait before the second attempt; it doubles
	// for each later one up to BackoffMax, and each wait is uniformly
	// random up to it ("full jitter"). Optional; defaults to 200 ms.
	Backoff time.Duration
	// BackoffMax caps the wait between attempts. Optional; defaults to
	// 10 s.
	BackoffMax time.Duration
	// Timeout bounds each attempt; a timed-out attempt is a transport
	// failure (retried while attempts remain). [CallOptions.Timeout]
	// overrides it for one call. Optional; 0 means only ctx bounds it.
	Timeout time.Duration
	// ResultSchema is a JSON Schema (draft 2020-12, a single document
	// whose $refs stay inside it) that a completed task's result must
	// satisfy; a result that does not gives [ErrInvalidResult] and is
	// not retried. Optional.
	ResultSchema json.RawMessage
	// Retryable reports whether an attempt's error is retried. Optional;
	// defaults to [TransportFailure].
	Retryable func(err error) bool
}

// maxPolicyAttempts bounds [Policy.MaxAttempts].
const maxPolicyAttempts = 10

// compiledPolicy is a checked policy with its defaults and its compiled
// result schema.
type compiledPolicy struct {
	Policy
	schema *jsonschema.Schema
}

// compile checks p and applies its defaults. Errors are
// [*sortie.ValidationError]s naming policy fields.
func (p Policy) compile() (*compiledPolicy, error) {
	switch {
	case p.MaxAttempts < 0 || p.MaxAttempts > maxPolicyAttempts:
		return nil, sortie.Invalidf("policy.max_attempts", "%d outside 1..%d", p.MaxAttempts, maxPolicyAttempts)
	case p.Backoff < 0 || p.BackoffMax < 0 || p.Timeout < 0:
		return nil, sortie.Invalidf("policy", "backoff, backoff_max and timeout must not be negative")
	}
	c := &compiledPolicy{Policy: p}
	c.MaxAttempts = max(c.MaxAttempts, 1)
	if c.Backoff == 0 {
		c.Backoff = 200 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 10 * time.Second
	}
	if c.Retryable == nil {
		c.Retryable = TransportFailure
	}
	if len(p.ResultSchema) > 0 {
		sch, err := jsonbody.CompileSchema("policy.result_schema", "mem:///result-schema.json", p.ResultSchema)
		if err != nil {
			return nil, err
		}
		c.schema = sch
	}
	return c, nil
}

// wait sleeps before the attempt after attempt n (1-based); it returns
// ctx's error when ctx ends first.
func (p *compiledPolicy) wait(ctx context.Context, n int) error {
	c := p.Backoff
	for i := 1; i < n && c < p.BackoffMax; i++ {
		c *= 2
	}
	return sleep(ctx, time.Duration(1+rand.Int64N(int64(min(c, p.BackoffMax)))))
}

// check validates a completed call's result against the schema.
func (p *compiledPolicy) check(res *CallResult) error {
	if p.schema == nil {
		return nil
	}
	v := res.Result
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	if err := jsonbody.Check(p.schema, v, "result"); err != nil {
		return fmt.Errorf("remote: task %s: %w: %w", res.TaskID, ErrInvalidResult, err)
	}
	return nil
}

// TransportFailure reports whether err is a failure to reach the remote or
// to hear back from it — worth another attempt — rather than an answer:
// false for nil, a context's cancellation, bad input
// ([sortie.ErrInvalidArgument]), the outcome of a task ([*TaskError],
// [*InputRequiredError], [*AuthRequiredError]), [ErrTaskNotFound],
// [ErrUnsupported], [ErrInvalidResult] and the refusals of a Sortie host
// (not found, conflict, terminal, closed); true for everything else,
// [sortie.ErrUnavailable] and a timed-out attempt included.
func TransportFailure(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var te *TaskError
	var ire *InputRequiredError
	var are *AuthRequiredError
	if errors.As(err, &te) || errors.As(err, &ire) || errors.As(err, &are) {
		return false
	}
	for _, answer := range []error{sortie.ErrInvalidArgument, ErrTaskNotFound, ErrUnsupported, ErrInvalidResult,
		sortie.ErrNotFound, sortie.ErrIdempotencyConflict, sortie.ErrConflict, sortie.ErrTerminal,
		sortie.ErrCancelRequested, sortie.ErrClosed, errEmit, errBindingNotSaved} {
		if errors.Is(err, answer) {
			return false
		}
	}
	return true
}
