package sortie

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/sortie-run/sortie/internal/strictjson"
)

// Event is one progress report of an attempt. Seq numbers start at 1 in each
// attempt and have no gaps; the worker runtime assigns them (a foreign worker
// may omit them and the runtime numbers its events).
type Event struct {
	// Attempt is the attempt the event belongs to; the control plane sets it
	// on events it returns. Workers leave it 0.
	Attempt int             `json:"attempt,omitempty"`
	Seq     int64           `json:"seq,omitempty"`
	Kind    string          `json:"kind"`
	Text    string          `json:"text,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	// TimeMs is when the worker produced the event, Unix ms.
	TimeMs int64 `json:"time_ms,omitempty"`
}

// Cursor returns the follow position just after e.
func (e *Event) Cursor() Cursor { return Cursor{Attempt: e.Attempt, Seq: e.Seq} }

// Same reports whether e and o carry the same content (kind, text, data and
// time); the control plane treats a re-sent identical event as a no-op.
func (e *Event) Same(o *Event) bool {
	return e.Kind == o.Kind && e.Text == o.Text && e.TimeMs == o.TimeMs &&
		bytes.Equal(compact(e.Data), compact(o.Data))
}

func compact(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// Validate checks the event's fields and sizes.
func (e *Event) Validate() error {
	if e.Seq < 0 {
		return invalidf("event.seq", "%d is negative", e.Seq)
	}
	if e.Kind == "" || len(e.Kind) > 64 {
		return invalidf("event.kind", "must be 1-64 bytes, got %d", len(e.Kind))
	}
	if len(e.Text) > MaxEventTextBytes || !utf8.ValidString(e.Text) {
		return invalidf("event.text", "must be valid UTF-8 of at most %d bytes, got %d", MaxEventTextBytes, len(e.Text))
	}
	return checkJSON("event.data", e.Data, MaxEventDataBytes)
}

// Result is a worker's successful output.
type Result struct {
	Output json.RawMessage `json:"output,omitempty"`
	// OutputRef is set instead of Output when the output is over
	// [MaxResultBytes] and the worker stored it in its [PayloadStore].
	OutputRef *PayloadRef `json:"output_ref,omitempty"`
}

// ErrorMessage is a worker's or the host's failure report. Retryable errors
// start another attempt while attempts remain; others fail the run at once.
type ErrorMessage struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable,omitempty"`
}

// Error types with a meaning to the control plane or the engine.
const (
	// ErrorTypeRejected makes the run rejected (a policy refusal or an agent
	// unknown at execution time).
	ErrorTypeRejected = "rejected"
	// ErrorTypeCancelled is what a worker reports when it stopped because
	// the run's cancel was requested.
	ErrorTypeCancelled = "cancelled"
	// ErrorTypeDeadline is what a worker reports when the attempt's
	// deadline came first.
	ErrorTypeDeadline = "deadline"
	// ErrorTypeLeaseExpired is what the reconciler records for an attempt
	// whose worker stopped heartbeating.
	ErrorTypeLeaseExpired = "lease_expired"
	// ErrorTypeStartTimeout is what the reconciler records for a launched
	// attempt no worker claimed in time.
	ErrorTypeStartTimeout = "start_timeout"
	// ErrorTypeLaunch is what the engine records when Start failed.
	ErrorTypeLaunch = "launch"
	// ErrorTypeSeal is what the engine records when it cannot seal an
	// attempt's configuration (a key gone from the ring); it is permanent.
	ErrorTypeSeal = "seal"
	// ErrorTypeExited is what the engine records for an attempt whose
	// compute ended (a process exit, a failed, cancelled or vanished
	// execution) before its worker reported an outcome; the provider's
	// words are in the message and on [Attempt.Exit]. It is retryable.
	ErrorTypeExited = "exited"
	// ErrorTypeOutputTooLarge is what the control plane records, instead
	// of the outcome, when an attempt's result or checkpoint cannot be
	// stored (over [MaxResultBytes], or the run over its store's item
	// limit): a permanent error naming the size and the limit.
	ErrorTypeOutputTooLarge = "output_too_large"
	// ErrorTypeBudgetExceeded is a run's error when its max cost
	// ([Policy.MaxCostNanoUSD]) was spent: no attempt is launched past
	// it, and a running one is stopped before its projected cost passes
	// it. The message names the budget and the spend. Not retryable.
	ErrorTypeBudgetExceeded = "budget_exceeded"
)

func (e *ErrorMessage) Error() string { return e.Type + ": " + e.Message }

// Validate checks the error's fields and sizes.
func (e *ErrorMessage) Validate() error {
	if e.Type == "" || len(e.Type) > 64 {
		return invalidf("error.type", "must be 1-64 bytes, got %d", len(e.Type))
	}
	if len(e.Message) > MaxEventTextBytes || !utf8.ValidString(e.Message) {
		return invalidf("error.message", "must be valid UTF-8 of at most %d bytes, got %d", MaxEventTextBytes, len(e.Message))
	}
	return nil
}

// Interrupt pauses a run until the client resumes it: State is
// input-required or auth-required, Prompt says what is needed, and
// Checkpoint is handed back to the next attempt. A checkpoint must hold no
// plaintext credential.
type Interrupt struct {
	State      State           `json:"state"`
	Prompt     string          `json:"prompt,omitempty"`
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	// CheckpointRef is set instead of Checkpoint for a checkpoint the
	// worker kept in a [PayloadStore] (over [MaxResultBytes]), object
	// [CheckpointPayloadName]. A run read through [Engine.Get] has
	// Checkpoint filled in as well.
	CheckpointRef *PayloadRef `json:"checkpoint_ref,omitempty"`
}

// Validate checks the interrupt's fields and sizes.
func (i *Interrupt) Validate() error {
	if !i.State.Interrupted() {
		return invalidf("interrupt.state", "%.40q must be input-required or auth-required", i.State)
	}
	if len(i.Prompt) > MaxEventTextBytes || !utf8.ValidString(i.Prompt) {
		return invalidf("interrupt.prompt", "must be valid UTF-8 of at most %d bytes", MaxEventTextBytes)
	}
	if i.CheckpointRef != nil {
		if len(i.Checkpoint) > 0 {
			return invalidf("interrupt", "set checkpoint or checkpoint_ref, not both")
		}
		return i.CheckpointRef.Validate("interrupt.checkpoint_ref")
	}
	return checkJSON("interrupt.checkpoint", i.Checkpoint, MaxResultBytes)
}

// StepVersion names the format of a worker's step message
// ([StepMessage]), version 1.
const StepVersion = "sortie.step/v1"

// StepMessage is a worker's report that a durable step completed (the
// NDJSON "step" message, format [StepVersion]). The worker runtime records
// it in the control plane before it takes the worker's next message, and
// a later attempt of the run finds it in its invocation
// ([Invocation.Steps]) instead of running the step again.
type StepMessage struct {
	// Version is [StepVersion].
	Version string `json:"version"`
	// Name is the step's name, unique in the run (see [CheckStepName]).
	Name string `json:"name"`
	// Result is the step's result: JSON of at most [MaxStepResultBytes].
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is set instead of Result by a Go session worker that kept
	// a larger result in its payload store itself ([Step.ResultRef]).
	ResultRef *PayloadRef `json:"result_ref,omitempty"`
	// Secret asks the worker runtime to store the result sealed (see
	// [Step.Sealed]); a later attempt still gets it in the clear.
	Secret bool `json:"secret,omitempty"`
	// StartedMs is when the step's first try started, Unix ms. Optional.
	StartedMs int64 `json:"started_ms,omitempty"`
	// DurationMs is how long its tries took, in ms. Optional.
	DurationMs int64 `json:"duration_ms,omitempty"`
	// Tries is how many times it ran, from 1. Optional; defaults to 1.
	Tries int `json:"tries,omitempty"`
}

// Validate checks the message's version, name, result and numbers.
func (s *StepMessage) Validate() error {
	if s.Version != StepVersion {
		return invalidf("step.version", "%.40q is not supported (want %q)", s.Version, StepVersion)
	}
	if err := CheckStepName(s.Name); err != nil {
		return err
	}
	if (len(s.Result) == 0) == (s.ResultRef == nil) {
		return invalidf("step.result", "step %.64q: set exactly one of result (JSON; null for none) and result_ref", s.Name)
	}
	if s.ResultRef != nil {
		if err := s.ResultRef.Validate("step.result_ref"); err != nil {
			return err
		}
	}
	if err := checkJSON("step.result", s.Result, MaxStepResultBytes); err != nil {
		return err
	}
	if s.StartedMs < 0 || s.DurationMs < 0 || s.Tries < 0 {
		return invalidf("step", "step %.64q: started_ms, duration_ms and tries must not be negative", s.Name)
	}
	return nil
}

// Message is one line a worker writes (NDJSON): exactly one field is set.
type Message struct {
	Event *Event       `json:"event,omitempty"`
	Step  *StepMessage `json:"step,omitempty"`
	// Authorize asks the host for a tool call or a connection
	// ([AuthorizeRequest]); only session workers get an answer.
	Authorize *AuthorizeRequest `json:"authorize,omitempty"`
	Result    *Result           `json:"result,omitempty"`
	Error     *ErrorMessage     `json:"error,omitempty"`
	Interrupt *Interrupt        `json:"interrupt,omitempty"`
}

// Terminal reports whether m ends the attempt (result, error or interrupt).
func (m *Message) Terminal() bool { return m.Result != nil || m.Error != nil || m.Interrupt != nil }

// Validate checks that exactly one field is set and that it is valid.
func (m *Message) Validate() error {
	n := 0
	for _, set := range []bool{m.Event != nil, m.Step != nil, m.Authorize != nil, m.Result != nil, m.Error != nil, m.Interrupt != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return invalidf("message", "exactly one of event, step, authorize, result, error, interrupt must be set, got %d", n)
	}
	switch {
	case m.Event != nil:
		return m.Event.Validate()
	case m.Step != nil:
		return m.Step.Validate()
	case m.Authorize != nil:
		return m.Authorize.Validate()
	case m.Result != nil && m.Result.OutputRef != nil:
		if len(m.Result.Output) > 0 {
			return invalidf("result", "set output or output_ref, not both")
		}
		return m.Result.OutputRef.Validate("result.output_ref")
	case m.Result != nil:
		return checkJSON("result.output", m.Result.Output, MaxResultBytes)
	case m.Error != nil:
		return m.Error.Validate()
	}
	return m.Interrupt.Validate()
}

// DecodeMessage decodes and validates one worker message (one NDJSON line
// without its newline). Unknown fields, trailing data, more than
// [MaxMessageBytes] and anything but exactly one set field are refused with a
// [*ValidationError].
func DecodeMessage(line []byte) (*Message, error) {
	if len(line) > MaxMessageBytes {
		return nil, invalidf("message", "%d bytes, limit %d", len(line), MaxMessageBytes)
	}
	var m Message
	if err := strictjson.Unmarshal(line, &m); err != nil {
		return nil, invalidf("message", "%v", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

func checkJSON(field string, b json.RawMessage, limit int) error {
	if len(b) > limit {
		return invalidf(field, "%d bytes, limit %d", len(b), limit)
	}
	if len(b) == 0 {
		return nil
	}
	if !json.Valid(b) {
		return invalidf(field, "not valid JSON")
	}
	if !utf8.Valid(b) {
		return invalidf(field, "not valid UTF-8 (JSON text is UTF-8, RFC 8259)")
	}
	d, err := strictjson.Scan(b)
	if d > MaxJSONDepth {
		return invalidf(field, "nested %d levels deep, limit %d (sortie.MaxJSONDepth)", d, MaxJSONDepth)
	}
	if de := (*strictjson.DuplicateKeyError)(nil); errors.As(err, &de) {
		return invalidf(de.Field(field), "%v", err)
	}
	return nil
}

func checkObject(field string, b json.RawMessage, limit int) error {
	if err := checkJSON(field, b, limit); err != nil {
		return err
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '{' {
		return invalidf(field, "must be a JSON object")
	}
	return nil
}

// Outcome is how an attempt ended, as the worker (or the engine or
// reconciler on its behalf) reports it: exactly one of Result, Error or
// Interrupt is set. Usage is optional.
type Outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is set instead of Result for a result kept in a
	// [PayloadStore] (over [MaxResultBytes]).
	ResultRef *PayloadRef   `json:"result_ref,omitempty"`
	Error     *ErrorMessage `json:"error,omitempty"`
	Interrupt *Interrupt    `json:"interrupt,omitempty"`
	Usage     *Usage        `json:"usage,omitempty"`
}

// OutcomeOf converts a terminal message into an Outcome.
func OutcomeOf(m *Message) Outcome {
	switch {
	case m.Result != nil && m.Result.OutputRef != nil:
		return Outcome{ResultRef: m.Result.OutputRef}
	case m.Result != nil:
		out := m.Result.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		return Outcome{Result: out}
	case m.Error != nil:
		return Outcome{Error: m.Error}
	}
	return Outcome{Interrupt: m.Interrupt}
}

// Validate checks that exactly one field is set and that it is valid.
func (o *Outcome) Validate() error {
	if err := o.Usage.Validate(); err != nil {
		return err
	}
	return MessageOf(*o).Validate()
}

// MessageOf converts an outcome into its terminal message (the inverse of
// [OutcomeOf]).
func MessageOf(o Outcome) *Message {
	m := &Message{Error: o.Error, Interrupt: o.Interrupt}
	if o.Result != nil || o.ResultRef != nil {
		m.Result = &Result{Output: o.Result, OutputRef: o.ResultRef}
	}
	return m
}
