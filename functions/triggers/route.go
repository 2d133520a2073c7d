package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sortie-run/sortie"
)

// Submitter starts runs: *sortie.Client and *sortie.Engine are Submitters.
type Submitter interface {
	Submit(ctx context.Context, req *sortie.SubmitRequest) (*sortie.Run, error)
}

// Options configures a [Router]. A nil *Options means the defaults.
type Options struct {
	// Logger receives a line for every run started and every event no rule
	// matched. Optional; defaults to slog.Default().
	Logger *slog.Logger
}

// Router routes events through [Rules] to a [Submitter].
type Router struct {
	rules *Rules
	sub   Submitter
	log   *slog.Logger
}

// NewRouter returns a router of events through rules to sub. opts may be nil.
func NewRouter(rules *Rules, sub Submitter, opts *Options) *Router {
	r := &Router{rules: rules, sub: sub, log: slog.Default()}
	if opts != nil && opts.Logger != nil {
		r.log = opts.Logger
	}
	return r
}

// Outcome is what routing one event did: one per matching rule, or one
// with Unmatched set when no rule matched.
type Outcome struct {
	Kind    Kind   `json:"kind"`
	EventID string `json:"event_id"`
	// Rule is the rule that matched; empty when none did.
	Rule           string       `json:"rule,omitempty"`
	Agent          string       `json:"agent,omitempty"`
	IdempotencyKey string       `json:"idempotency_key,omitempty"`
	RunID          sortie.RunID `json:"run_id,omitempty"`
	// Duplicate is true when the key was used before with a request that
	// differs (the same event redelivered with other delivery metadata):
	// no second run starts.
	Duplicate bool `json:"duplicate,omitempty"`
	// Unmatched says, rule by rule, why none matched.
	Unmatched string `json:"unmatched,omitempty"`
	// Error says why this rule could not start its run.
	Error string `json:"error,omitempty"`
}

// Route submits one run for every rule ev matches, with the idempotency
// key [IdempotencyKey], so a redelivered event starts no second run. An
// event no rule matches starts nothing: one Outcome with Unmatched set, a
// log line at info, and no error. The error is the first failure (a
// template that reads a field the event lacks, a refused submission);
// every matching rule is still tried.
func (r *Router) Route(ctx context.Context, ev *Event) ([]Outcome, error) {
	var out []Outcome
	var first error
	var why []string
	for _, ru := range r.rules.rules {
		if reason := ru.mismatch(ev); reason != "" {
			why = append(why, fmt.Sprintf("rules[%d] %s: %s", ru.index, ru.name, reason))
			continue
		}
		o, err := r.start(ctx, ru, ev)
		if err != nil && first == nil {
			first = err
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		reason := strings.Join(why, "; ")
		r.log.Info("trigger: no rule matched; nothing started", "kind", ev.Kind, "event", ev.ID,
			"source", ev.Source, "type", ev.Type, "tried", reason)
		out = append(out, Outcome{Kind: ev.Kind, EventID: ev.ID, Unmatched: reason})
	}
	return out, first
}

// start submits rule ru's run for ev.
func (r *Router) start(ctx context.Context, ru *rule, ev *Event) (Outcome, error) {
	o := Outcome{Kind: ev.Kind, EventID: ev.ID, Rule: ru.name, Agent: ru.agent, IdempotencyKey: IdempotencyKey(ru.name, ev)}
	req, err := ru.request(ev)
	if err == nil {
		req.IdempotencyKey = o.IdempotencyKey
		var run *sortie.Run
		run, err = r.sub.Submit(ctx, req)
		if run != nil {
			o.RunID = run.ID
		}
	}
	switch {
	case errors.Is(err, sortie.ErrIdempotencyConflict):
		o.Duplicate = true
		r.log.Warn("trigger: event already started a run with other content; not starting another",
			"rule", ru.name, "kind", ev.Kind, "event", ev.ID, "key", o.IdempotencyKey)
		return o, nil
	case err != nil:
		err = fmt.Errorf("trigger rule %s, %s event %s: %w", ru.name, ev.Kind, ev.ID, err)
		o.Error = err.Error()
		r.log.Error("trigger: run not started", "rule", ru.name, "kind", ev.Kind, "event", ev.ID, "err", err)
		return o, err
	}
	r.log.Info("trigger: run started", "rule", ru.name, "kind", ev.Kind, "event", ev.ID, "run", o.RunID, "agent", ru.agent)
	return o, nil
}

// mismatch says why ru does not match ev; "" when it does.
func (ru *rule) mismatch(ev *Event) string {
	if ru.kind != "" && ru.kind != ev.Kind {
		return fmt.Sprintf("kind %s is not %s", ev.Kind, ru.kind)
	}
	if ru.source != nil && !ru.source.match(ev.Source) {
		return fmt.Sprintf("source %q does not match %q", ev.Source, string(ru.source))
	}
	if ru.typ != nil && !ru.typ.match(ev.Type) {
		return fmt.Sprintf("type %q does not match %q", ev.Type, string(ru.typ))
	}
	for _, f := range ru.fields {
		v, err := ev.field(f.path)
		if err != nil {
			return err.Error()
		}
		s, ok := scalarText(v)
		if !ok {
			return fmt.Sprintf("%s is a %s, not a string, number or boolean", f.path, kindOf(v))
		}
		if !f.pat.match(s) {
			return fmt.Sprintf("%s %q does not match %q", f.path, s, string(f.pat))
		}
	}
	return ""
}

// request builds the submission of ru for ev. A template error is a
// [*sortie.ValidationError] naming the rule's field.
func (ru *rule) request(ev *Event) (*sortie.SubmitRequest, error) {
	vars, err := ru.variables.render(ev, "variables")
	if err != nil {
		field, msg := "variables", err.Error()
		var fe fieldErr
		if errors.As(err, &fe) {
			field, msg = fe.field, fe.err.Error()
		}
		return nil, sortie.Invalidf(fmt.Sprintf("rules[%d].%s", ru.index, field), "rule %q: %s", ru.name, msg)
	}
	b, err := json.Marshal(vars)
	if err != nil {
		return nil, sortie.Invalidf(fmt.Sprintf("rules[%d].variables", ru.index), "rule %q: %v", ru.name, err)
	}
	req := &sortie.SubmitRequest{Agent: ru.agent, Variables: b,
		Labels: map[string]string{"trigger.rule": ru.name, "trigger.kind": string(ev.Kind)}}
	if ru.contextID != nil {
		if req.ContextID, err = ru.contextID.text(ev); err != nil {
			return nil, sortie.Invalidf(fmt.Sprintf("rules[%d].context_id", ru.index), "rule %q: %v", ru.name, err)
		}
	}
	return req, nil
}
