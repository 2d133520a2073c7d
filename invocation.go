package sortie

import (
	"encoding/json"
	"slices"

	"github.com/sortie-run/sortie/internal/strictjson"
)

// InvocationVersion is the only worker invocation format version this
// release reads and writes.
const InvocationVersion = "sortie.invocation/v1"

// Invocation is what a launcher hands a worker: one attempt of one run. It is
// JSON with "version": "sortie.invocation/v1". It carries references, never
// paths or plaintext credentials.
type Invocation struct {
	Version  string   `json:"version"`
	RunID    RunID    `json:"run_id"`
	Attempt  int      `json:"attempt"`
	LaunchID string   `json:"launch_id"`
	Agent    Manifest `json:"agent"`
	// Variables is the run's input, a JSON object.
	Variables json.RawMessage `json:"variables,omitempty"`
	// VariablesRef is set instead of Variables when the run keeps them in
	// a [PayloadStore]: the worker reads them from its own store
	// (functions.Worker.Payloads), or through the URLs of
	// SealedPayloadURLs.
	VariablesRef *PayloadRef `json:"variables_ref,omitempty"`
	// ConfigRefs are opaque configuration IDs the worker host resolves
	// through its allowlist when the attempt executes
	// ([SubmitRequest.ConfigRefs]).
	ConfigRefs []string `json:"config_refs,omitempty"`
	// SealedConfig is an envelope-encrypted inline configuration, bound to
	// the run ID and attempt; opaque to everything but the worker's opener.
	SealedConfig json.RawMessage `json:"sealed_config,omitempty"`
	// SealedPayloadURLs is set by a host whose workers reach its payload
	// store only through presigned URLs (Lambda, Cloud Run): an envelope
	// bound to the run and attempt, like SealedConfig, holding the URLs
	// that read the run's variables and recorded steps kept by reference
	// and write the attempt's result, checkpoint and step results
	// ([StepSlotPayloadName]) (package payload/sealed). The URLs are bearer credentials: they are
	// in the clear only inside the worker. At most
	// [MaxSealedPayloadURLsBytes].
	SealedPayloadURLs json.RawMessage `json:"sealed_payload_urls,omitempty"`
	// Resume is set on an attempt that continues an interrupted run.
	Resume *Resume `json:"resume,omitempty"`
	// Steps are the run's completed durable steps (see [Step]), recorded
	// by earlier attempts: the worker replays them instead of running
	// them again. Absent on a run's first attempt and when StepsRef
	// stands in for them.
	Steps []Step `json:"steps,omitempty"`
	// StepsRef is set instead of Steps when carrying them would break the
	// launcher's invocation limit: the worker reads them from where it
	// reports.
	StepsRef *StepsRef `json:"steps_ref,omitempty"`
	// DeadlineMs is when the attempt must have ended, Unix ms.
	DeadlineMs int64 `json:"deadline_ms"`
	// HeartbeatMs and LeaseMs are the run's liveness policy, in ms.
	HeartbeatMs int64 `json:"heartbeat_ms"`
	LeaseMs     int64 `json:"lease_ms"`
	// Report says where the worker sends its messages.
	Report Report `json:"report"`
	// TraceParent is the W3C traceparent (Trace Context level 1) of the
	// attempt's launch span, under the run's submission; empty when the
	// submission was not traced.
	TraceParent string `json:"traceparent,omitempty"`
	// TraceState is the W3C tracestate of TraceParent's trace (at most
	// [MaxTraceStateBytes]); empty when there is none.
	TraceState string `json:"tracestate,omitempty"`
}

// Resume is the data a resumed attempt receives: the interrupt's checkpoint
// and the client's input. Either may be kept in a [PayloadStore] instead
// (over its inline limit): then its reference is set and the worker reads
// it back before the handler runs, so a handler always sees Checkpoint
// and Input.
type Resume struct {
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	// CheckpointRef is set instead of Checkpoint ([Interrupt.CheckpointRef]).
	CheckpointRef *PayloadRef     `json:"checkpoint_ref,omitempty"`
	Input         json.RawMessage `json:"input,omitempty"`
	// InputRef is set instead of Input ([Run.ResumeInputRef]).
	InputRef *PayloadRef `json:"input_ref,omitempty"`
}

// PayloadRefs returns the payloads inv hands its attempt by reference:
// its variables, and a resumed attempt's input and checkpoint (those
// set, in that order).
func (inv *Invocation) PayloadRefs() []*PayloadRef {
	refs := []*PayloadRef{inv.VariablesRef}
	if r := inv.Resume; r != nil {
		refs = append(refs, r.InputRef, r.CheckpointRef)
	}
	return slices.DeleteFunc(refs, func(r *PayloadRef) bool { return r == nil })
}

// StepResultRefs returns the references of the recorded steps' results
// inv hands its attempt kept by reference ([Step.ResultRef]), in the
// order of its steps: those of Steps, or, when the engine replaced them
// with a StepsRef, those it kept on it ([StepsRef.ResultRefs]; a
// StepsRef decoded from JSON has none). A host's [Sealer]
// grants reads of them (package payload/sealed).
func (inv *Invocation) StepResultRefs() []*PayloadRef {
	if inv.StepsRef != nil {
		return slices.Clone(inv.StepsRef.ResultRefs)
	}
	var refs []*PayloadRef
	for i := range inv.Steps {
		if r := inv.Steps[i].ResultRef; r != nil {
			refs = append(refs, r)
		}
	}
	return refs
}

// validate checks the resume data's fields and limits.
func (r *Resume) validate() error {
	for _, p := range []struct {
		field string
		value json.RawMessage
		ref   *PayloadRef
		limit int
	}{{"resume.checkpoint", r.Checkpoint, r.CheckpointRef, MaxResultBytes}, {"resume.input", r.Input, r.InputRef, MaxVariablesBytes}} {
		if err := checkJSON(p.field, p.value, p.limit); err != nil {
			return err
		}
		if p.ref == nil {
			continue
		}
		if len(p.value) > 0 {
			return invalidf(p.field+"_ref", "set %s or %s_ref, not both", p.field, p.field)
		}
		if err := p.ref.Validate(p.field + "_ref"); err != nil {
			return err
		}
	}
	return nil
}

// Report modes.
const (
	// ReportControlPlane: the worker writes to the control plane its host
	// configured (never one named by the invocation).
	ReportControlPlane = "control-plane"
	// ReportCallback: the worker posts messages to CallbackURL with Token.
	ReportCallback = "callback"
)

// Report says where a worker reports. Token is a per-attempt credential
// scoped to the run and attempt.
type Report struct {
	Mode        string `json:"mode"`
	CallbackURL string `json:"callback_url,omitempty"`
	Token       string `json:"token,omitempty"`
}

// Validate checks every field and the limits, returning a [*ValidationError]
// that names the field.
func (inv *Invocation) Validate() error {
	if inv.Version != InvocationVersion {
		return invalidf("version", "%.40q is not supported (want %q)", inv.Version, InvocationVersion)
	}
	if err := inv.RunID.Validate(); err != nil {
		return err
	}
	if inv.Attempt < 1 || inv.Attempt > 100 {
		return invalidf("attempt", "%d outside 1..100", inv.Attempt)
	}
	if err := checkLaunchID(inv.LaunchID); err != nil {
		return err
	}
	if err := inv.Agent.Validate(); err != nil {
		return err
	}
	if err := checkObject("variables", inv.Variables, MaxVariablesBytes); err != nil {
		return err
	}
	if inv.VariablesRef != nil {
		if len(inv.Variables) > 0 {
			return invalidf("variables_ref", "set variables or variables_ref, not both")
		}
		if err := inv.VariablesRef.Validate("variables_ref"); err != nil {
			return err
		}
	}
	if err := inv.validateRefs(); err != nil {
		return err
	}
	if inv.DeadlineMs <= 0 {
		return invalidf("deadline_ms", "must be a positive Unix time in ms")
	}
	if inv.HeartbeatMs <= 0 || inv.LeaseMs < inv.HeartbeatMs {
		return invalidf("heartbeat_ms", "heartbeat %d ms must be positive and at most lease %d ms", inv.HeartbeatMs, inv.LeaseMs)
	}
	if len(inv.TraceParent) > MaxTraceParentBytes {
		return invalidf("traceparent", "%d bytes, limit %d", len(inv.TraceParent), MaxTraceParentBytes)
	}
	if len(inv.TraceState) > MaxTraceStateBytes {
		return invalidf("tracestate", "%d bytes, limit %d", len(inv.TraceState), MaxTraceStateBytes)
	}
	return inv.Report.validate()
}

func (inv *Invocation) validateRefs() error {
	if err := checkConfigRefs(inv.ConfigRefs); err != nil {
		return err
	}
	if err := checkJSON("sealed_config", inv.SealedConfig, 64<<10); err != nil {
		return err
	}
	if err := checkJSON("sealed_payload_urls", inv.SealedPayloadURLs, MaxSealedPayloadURLsBytes); err != nil {
		return err
	}
	if err := inv.validateSteps(); err != nil {
		return err
	}
	if inv.Resume != nil {
		return inv.Resume.validate()
	}
	return nil
}

func (inv *Invocation) validateSteps() error {
	if inv.StepsRef != nil {
		if len(inv.Steps) > 0 {
			return invalidf("steps_ref", "set steps or steps_ref, not both")
		}
		if inv.StepsRef.Count < 1 || inv.StepsRef.Count > MaxSteps || inv.StepsRef.Bytes < 0 || inv.StepsRef.Bytes > MaxStepsBytes {
			return invalidf("steps_ref", "count must be 1..%d and bytes 0..%d", MaxSteps, MaxStepsBytes)
		}
	}
	return CheckSteps("steps", inv.Steps)
}

func (r *Report) validate() error {
	switch r.Mode {
	case ReportControlPlane:
		return nil
	case ReportCallback:
		if err := CheckHTTPURL("report.callback_url", r.CallbackURL); err != nil {
			return err
		}
		if r.Token == "" || len(r.Token) > 4096 {
			return invalidf("report.token", "must be 1-4096 bytes")
		}
		return nil
	}
	return invalidf("report.mode", "%.40q must be %q or %q", r.Mode, ReportControlPlane, ReportCallback)
}

// DecodeInvocation decodes and validates an invocation. Input over
// [MaxInvocationBytes], unknown fields, trailing data or any invalid field is
// refused with a [*ValidationError].
func DecodeInvocation(b []byte) (*Invocation, error) {
	if len(b) > MaxInvocationBytes {
		return nil, invalidf("invocation", "%d bytes, limit %d", len(b), MaxInvocationBytes)
	}
	var inv Invocation
	if err := strictjson.Unmarshal(b, &inv); err != nil {
		return nil, invalidf("invocation", "%v", err)
	}
	if err := inv.Validate(); err != nil {
		return nil, err
	}
	return &inv, nil
}
