package callback

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// route is one callback route: its body limit, its schema and what it
// does once the request is verified and its body valid.
type route struct {
	limit  int64
	schema string
	call   func(h *Handler, r *http.Request, c Claims, body []byte) (any, error)
}

var routes = map[string]route{
	PathClaim:     {MaxClaimBodyBytes, "claim", (*Handler).claim},
	PathHeartbeat: {MaxEmptyBodyBytes, "empty", (*Handler).heartbeat},
	PathEvents:    {MaxEventsBodyBytes, "events", (*Handler).events},
	PathStep:      {MaxStepBodyBytes, "step", (*Handler).step},
	PathSteps:     {MaxEmptyBodyBytes, "empty", (*Handler).steps},
	PathComplete:  {MaxCompleteBodyBytes, "complete", (*Handler).complete},
}

// ClaimRequest is the body of a POST to [PathClaim]: {} or the compute
// shape of the worker's execution environment (memory_mb, vcpu, arch,
// billing; see [sortie.Claim.Usage]), stored on the attempt.
type ClaimRequest struct {
	Usage *sortie.Usage `json:"usage,omitempty"`
}

// HeartbeatResponse is the body of a successful claim or heartbeat.
type HeartbeatResponse struct {
	CancelRequested bool `json:"cancel_requested"`
}

// EventsResponse is the body of a successful events call: how many events
// the call carried and the last seq stored.
type EventsResponse struct {
	Stored  int   `json:"stored"`
	LastSeq int64 `json:"last_seq"`
}

// CompleteResponse is the body of a successful complete call: the run's
// state after it (unchanged when an earlier finish won).
type CompleteResponse struct {
	State sortie.State `json:"state"`
}

// EventsRequest is the body of a POST to [PathEvents]: 1-100 events of
// the attempt named by the claims, numbered from 1 (seq 0 or absent: the
// next number).
type EventsRequest struct {
	Events []sortie.Event `json:"events"`
}

// StepRequest is the body of a POST to [PathStep]: a step the attempt
// named by the claims completed, as [sortie.ControlPlane.RecordStep] takes
// it (a secret step sealed; a result kept by reference as result_ref, a
// payload reference as the complete call's, which a Lambda or Cloud Run
// worker names in one of its step slots). The answer is [StepResponse].
type StepRequest struct {
	Step sortie.Step `json:"step"`
}

// StepResponse is the body of a successful step call: the step as stored.
type StepResponse struct {
	Step sortie.Step `json:"step"`
}

// StepsResponse is the body of a successful steps call: the run's
// recorded steps.
type StepsResponse struct {
	Steps []sortie.Step `json:"steps"`
}

// CompleteRequest is the body of a POST to [PathComplete].
type CompleteRequest struct {
	Outcome sortie.Outcome `json:"outcome"`
}

func (h *Handler) claimOf(c Claims) sortie.Claim {
	return sortie.Claim{RunID: c.RunID, Attempt: c.Attempt, LaunchID: c.LaunchID, Owner: Owner, NowMs: h.now().UnixMilli()}
}

func (h *Handler) claim(r *http.Request, c Claims, body []byte) (any, error) {
	var req ClaimRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	if err := req.Usage.ValidateShape(); err != nil {
		return nil, err
	}
	cl := h.claimOf(c)
	cl.Usage = req.Usage
	run, err := h.cp.Claim(r.Context(), cl)
	if err != nil {
		return nil, err
	}
	return HeartbeatResponse{CancelRequested: run.CancelRequested}, nil
}

func (h *Handler) heartbeat(r *http.Request, c Claims, body []byte) (any, error) {
	if err := decodeStrict(body, &struct{}{}); err != nil {
		return nil, err
	}
	run, err := h.cp.Heartbeat(r.Context(), h.claimOf(c))
	if err != nil {
		return nil, err
	}
	return HeartbeatResponse{CancelRequested: run.CancelRequested}, nil
}

func (h *Handler) events(r *http.Request, c Claims, body []byte) (any, error) {
	var req EventsRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	for i := range req.Events {
		if err := req.Events[i].Validate(); err != nil {
			return nil, renameField(err, "event", fmt.Sprintf("events[%d]", i))
		}
	}
	out, err := h.cp.AppendEvents(r.Context(), sortie.Append{RunID: c.RunID, Attempt: c.Attempt,
		LaunchID: c.LaunchID, Events: req.Events, NowMs: h.now().UnixMilli()})
	if err != nil {
		return nil, err
	}
	resp := EventsResponse{Stored: len(out)}
	if len(out) > 0 {
		resp.LastSeq = out[len(out)-1].Seq
	}
	return resp, nil
}

func (h *Handler) step(r *http.Request, c Claims, body []byte) (any, error) {
	var req StepRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	st, err := h.cp.RecordStep(r.Context(), sortie.StepRecord{RunID: c.RunID, Attempt: c.Attempt,
		LaunchID: c.LaunchID, Step: req.Step, NowMs: h.now().UnixMilli()})
	if err != nil {
		return nil, err
	}
	return StepResponse{Step: *st}, nil
}

// steps answers the run's steps to its live attempt only: the claim must
// hold (a heartbeat's check), so a token of an ended attempt reads nothing.
func (h *Handler) steps(r *http.Request, c Claims, body []byte) (any, error) {
	if err := decodeStrict(body, &struct{}{}); err != nil {
		return nil, err
	}
	run, err := h.cp.Get(r.Context(), c.RunID)
	if err != nil {
		return nil, err
	}
	if cur := run.Current(); cur == nil || cur.Number != c.Attempt || cur.LaunchID != c.LaunchID || !cur.Claimed() || cur.Ended() {
		return nil, fmt.Errorf("steps of run %s: attempt %d is not the claimed, live one: %w", c.RunID, c.Attempt, sortie.ErrConflict)
	}
	steps, err := h.cp.Steps(r.Context(), c.RunID)
	if err != nil {
		return nil, err
	}
	return StepsResponse{Steps: steps}, nil
}

func (h *Handler) complete(r *http.Request, c Claims, body []byte) (any, error) {
	var req CompleteRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	req.Outcome = controlplane.StorableOutcome(req.Outcome) // an oversize output ends the attempt
	if err := req.Outcome.Validate(); err != nil {
		return nil, outcomeField(err)
	}
	run, err := h.cp.Finish(r.Context(), sortie.Finish{RunID: c.RunID, Attempt: c.Attempt,
		LaunchID: c.LaunchID, Outcome: req.Outcome, NowMs: h.now().UnixMilli()})
	if err != nil {
		return nil, err
	}
	return CompleteResponse{State: run.State}, nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data, as a [*sortie.ValidationError] on field "body".
func decodeStrict(b []byte, v any) error {
	if err := strictjson.Unmarshal(b, v); err != nil {
		return sortie.Invalidf("body", "does not decode as the route's request")
	}
	return nil
}

// renameField rewrites a validation error's field from prefix to repl
// ("event.seq" → "events[3].seq").
func renameField(err error, prefix, repl string) error {
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	field := ve.Field
	if field == prefix || strings.HasPrefix(field, prefix+".") {
		field = repl + strings.TrimPrefix(field, prefix)
	}
	return &sortie.ValidationError{Field: field, Reason: ve.Reason}
}

// outcomeField names an outcome's validation error after the request's
// fields: "outcome" for the one-of rule, "outcome.result" for the output.
func outcomeField(err error) error {
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	switch {
	case ve.Field == "message":
		return &sortie.ValidationError{Field: "outcome", Reason: "exactly one of result, error, interrupt must be set"}
	case ve.Field == "result.output":
		return &sortie.ValidationError{Field: "outcome.result", Reason: ve.Reason}
	}
	return &sortie.ValidationError{Field: "outcome." + ve.Field, Reason: ve.Reason}
}
