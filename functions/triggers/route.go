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

// Submitter starts runs and tells whether a submission created its run:
// *sortie.Engine and the HTTP client engine (server/httpengine) are
// Submitters.
type Submitter interface {
	// SubmitCreated submits req; created is false when an earlier
	// submission with the same idempotency key made the run returned.
	SubmitCreated(ctx context.Context, req *sortie.SubmitRequest) (run *sortie.Run, created bool, err error)
}

// Options configures a [Router]. A nil *Options means the defaults.
type Options struct {
	// Logger receives a line for every outcome: started, existed and
	// unmatched at info, rejected and ignored at warn and info, failed at
	// error. Optional; defaults to slog.Default().
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

// Result says what routing did with an event for one rule.
type Result string

// The results of an [Outcome].
const (
	// Started: the rule's run was created.
	Started Result = "started"
	// Existed: an earlier delivery of the event already started the
	// rule's run (RunID names it); nothing new started.
	Existed Result = "existed"
	// Unmatched: no rule matched the event (Reason says why, rule by
	// rule); nothing started.
	Unmatched Result = "unmatched"
	// Rejected: the event, or the rule's run for it, cannot be made from
	// what was delivered (undecodable data, a field a template reads is
	// missing, a submission refused as invalid). Nothing started, and a
	// redelivery cannot help, so the delivery is acknowledged.
	Rejected Result = "rejected"
	// Ignored: a notification with nothing to start (s3:TestEvent).
	Ignored Result = "ignored"
	// Failed: the run could not be started for a reason a redelivery may
	// cure (the control plane unreachable, ...). The delivery is retried.
	Failed Result = "failed"
)

// Outcome is what routing one event did: one per matching rule, or one
// when no rule matched, the event was rejected or ignored.
type Outcome struct {
	Result  Result `json:"result"`
	Kind    Kind   `json:"kind"`
	EventID string `json:"event_id,omitempty"`
	// Rule is the rule that matched; empty when none did.
	Rule           string       `json:"rule,omitempty"`
	Agent          string       `json:"agent,omitempty"`
	IdempotencyKey string       `json:"idempotency_key,omitempty"`
	RunID          sortie.RunID `json:"run_id,omitempty"`
	// Reason says why for unmatched (each rule's reason), rejected,
	// ignored and failed outcomes, and for an existed outcome whose run
	// was started with other content (then RunID is unknown).
	Reason string `json:"reason,omitempty"`
}

// Route submits one run for every rule ev matches, with the idempotency
// key [IdempotencyKey], so a redelivered event starts no second run, then
// routes the records unwrapped from ev (an envelope's S3 records, an SQS
// body's SNS message) the same way. An envelope whose records were
// unwrapped matches only rules that name its kind, and is not reported
// unmatched. The outcomes say what happened for each event and rule; the
// error joins the failures (Failed outcomes), which a redelivery may cure.
// Rejections are outcomes, not errors.
//
// Route traces the event: a "sortie.trigger" span (see [TracerName])
// under the trace context ev carries, parent of its runs' submissions.
func (r *Router) Route(ctx context.Context, ev *Event) (out []Outcome, err error) {
	ctx, span := startTriggerSpan(ctx, ev)
	defer func() { endTriggerSpan(span, err) }()
	var errs []error
	var why []string
	for _, ru := range r.rules.rules {
		if reason := ru.mismatch(ev); reason != "" {
			why = append(why, fmt.Sprintf("rules[%d] %s: %s", ru.index, ru.name, reason))
			continue
		}
		o, err := r.start(ctx, ru, ev)
		errs = append(errs, err)
		out = append(out, o)
	}
	if len(out) == 0 && len(ev.inner) == 0 {
		out = append(out, r.unmatched(ev, strings.Join(why, "; ")))
	}
	for _, rec := range ev.inner {
		o, err := r.RouteRecord(ctx, rec)
		out = append(out, o...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// RouteRecord routes a record's event (see [Router.Route]), or reports
// its rejection or why it was ignored.
func (r *Router) RouteRecord(ctx context.Context, rec Record) ([]Outcome, error) {
	switch {
	case rec.Err != nil:
		return []Outcome{r.rejected(rec.Kind, rec.ID, rec.Err)}, nil
	case rec.Ignored != "":
		r.log.Info("trigger: event ignored; nothing started", "kind", rec.Kind, "event", rec.ID, "reason", rec.Ignored)
		return []Outcome{{Result: Ignored, Kind: rec.Kind, EventID: rec.ID, Reason: rec.Ignored}}, nil
	}
	return r.Route(ctx, rec.Event)
}

func (r *Router) unmatched(ev *Event, reason string) Outcome {
	r.log.Info("trigger: no rule matched; nothing started", "kind", ev.Kind, "event", ev.ID,
		"source", ev.Source, "type", ev.Type, "tried", reason)
	return Outcome{Result: Unmatched, Kind: ev.Kind, EventID: ev.ID, Reason: reason}
}

func (r *Router) rejected(kind Kind, id string, err error) Outcome {
	r.log.Warn("trigger: event rejected; nothing started", "kind", kind, "event", id, "err", err)
	return Outcome{Result: Rejected, Kind: kind, EventID: id, Reason: err.Error()}
}

// start submits rule ru's run for ev. The error is non-nil only for a
// Failed outcome.
func (r *Router) start(ctx context.Context, ru *rule, ev *Event) (Outcome, error) {
	o := Outcome{Kind: ev.Kind, EventID: ev.ID, Rule: ru.name, Agent: ru.agent, IdempotencyKey: IdempotencyKey(ru.name, ev)}
	req, err := ru.request(ev)
	created := false
	if err == nil {
		req.IdempotencyKey = o.IdempotencyKey
		var run *sortie.Run
		run, created, err = r.sub.SubmitCreated(ctx, req)
		if run != nil {
			o.RunID = run.ID
		}
	}
	log := r.log.With("rule", ru.name, "kind", ev.Kind, "event", ev.ID)
	switch {
	case errors.Is(err, sortie.ErrIdempotencyConflict):
		o.Result, o.Reason = Existed, "an earlier delivery started this rule's run with other content (its run ID is not returned on a conflict)"
		log.Warn("trigger: event already started a run with other content; not starting another", "key", o.IdempotencyKey)
	case errors.Is(err, sortie.ErrInvalidArgument) || errors.Is(err, sortie.ErrNotFound):
		o.Result, o.Reason = Rejected, err.Error()
		log.Warn("trigger: run rejected; nothing started", "err", err)
	case err != nil:
		err = fmt.Errorf("trigger rule %s, %s event %s: %w", ru.name, ev.Kind, ev.ID, err)
		o.Result, o.Reason = Failed, err.Error()
		log.Error("trigger: run not started", "err", err)
		return o, err
	case created:
		o.Result = Started
		log.Info("trigger: run started", "run", o.RunID, "agent", ru.agent)
	default:
		o.Result = Existed
		log.Info("trigger: run already started by an earlier delivery", "run", o.RunID, "agent", ru.agent)
	}
	return o, nil
}

// mismatch says why ru does not match ev; "" when it does. An envelope
// whose records were unwrapped matches only rules that name its kind.
func (ru *rule) mismatch(ev *Event) string {
	if ru.kind == "" && len(ev.inner) > 0 {
		return fmt.Sprintf("the %s envelope's records are routed on their own; name kind %s to match the envelope", ev.Kind, ev.Kind)
	}
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
	req := &sortie.SubmitRequest{Agent: ru.agent, Variables: b, ConfigRefs: ru.refs,
		Labels: map[string]string{"trigger.rule": ru.name, "trigger.kind": string(ev.Kind)}}
	if ru.contextID != nil {
		if req.ContextID, err = ru.contextID.text(ev); err != nil {
			return nil, sortie.Invalidf(fmt.Sprintf("rules[%d].context_id", ru.index), "rule %q: %v", ru.name, err)
		}
	}
	return req, nil
}
