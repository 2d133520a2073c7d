package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sortie-run/sortie"
)

// journal is an attempt's view of its run's durable steps: those earlier
// attempts recorded (results in the clear) and the names this attempt
// used. Its methods are safe for concurrent use.
type journal struct {
	mu   sync.Mutex
	done map[string]sortie.Step
	used map[string]bool
	// rec records a completed step and returns its result as recorded
	// (masked), for the handler to get what a later attempt gets.
	rec func(ctx context.Context, st sortie.Step) (json.RawMessage, error)
}

// reported records a step a worker process reported (an exec command, or
// a session worker running a Go handler) as this attempt's step: its name
// must be new in the attempt and, unless the worker replays steps itself
// (replays false: an exec command, which gets them in its invocation), not
// recorded by an earlier one. Refusals are [*sortie.ValidationError]s.
func (j *journal) reported(ctx context.Context, m *sortie.StepMessage, attempt int, replays bool) (json.RawMessage, error) {
	if err := j.begin(m.Name); err != nil {
		return nil, err
	}
	if st, ok := j.recorded(m.Name); ok && !replays {
		return nil, sortie.Invalidf("step.name", "step %q was recorded by attempt %d: the worker must replay it from its invocation's steps", m.Name, st.Attempt)
	}
	if m.ResultRef != nil && !replays {
		return nil, sortie.Invalidf("step.result_ref", "step %q: only a Go session worker reports a result by reference (it keeps it in its payload store)", m.Name)
	}
	st := sortie.Step{Name: m.Name, Attempt: attempt, Status: sortie.StepCompleted, Secret: m.Secret, Result: m.Result, ResultRef: m.ResultRef,
		StartedMs: m.StartedMs, DurationMs: m.DurationMs, Tries: max(m.Tries, 1)}
	if st.StartedMs == 0 {
		st.StartedMs = nowMs() - st.DurationMs
	}
	return j.record(ctx, st)
}

func newJournal(done []sortie.Step, rec func(ctx context.Context, st sortie.Step) (json.RawMessage, error)) *journal {
	j := &journal{done: make(map[string]sortie.Step, len(done)), used: map[string]bool{}, rec: rec}
	for _, st := range done {
		j.done[st.Name] = st
	}
	return j
}

// begin claims name for this attempt: a [*sortie.ValidationError] for an
// invalid name or one this attempt used already.
func (j *journal) begin(name string) error {
	if err := sortie.CheckStepName(name); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.used[name] {
		return sortie.Invalidf("step.name", "step %q ran in this attempt already: a run's step names must be unique", name)
	}
	j.used[name] = true
	return nil
}

// recorded returns the step an earlier attempt recorded under name.
func (j *journal) recorded(name string) (sortie.Step, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	st, ok := j.done[name]
	return st, ok
}

// list returns the steps earlier attempts recorded, results in the clear,
// in [sortie.SortSteps] order: what an exec or session worker gets in its
// invocation.
func (j *journal) list() []sortie.Step {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]sortie.Step, 0, len(j.done))
	for _, st := range j.done {
		out = append(out, st.Clone())
	}
	sortie.SortSteps(out)
	return out
}

// record records st and returns its result as recorded.
func (j *journal) record(ctx context.Context, st sortie.Step) (json.RawMessage, error) {
	if j.rec == nil {
		return nil, fmt.Errorf("record step %q: this worker cannot record steps", st.Name)
	}
	return j.rec(ctx, st)
}
