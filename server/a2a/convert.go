package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
)

// textVariable is the run variable a message's text parts become.
const textVariable = "text"

var toA2AState = map[sortie.State]a2a.TaskState{
	sortie.StateUnspecified:   a2a.TaskStateUnspecified,
	sortie.StateSubmitted:     a2a.TaskStateSubmitted,
	sortie.StateWorking:       a2a.TaskStateWorking,
	sortie.StateInputRequired: a2a.TaskStateInputRequired,
	sortie.StateAuthRequired:  a2a.TaskStateAuthRequired,
	sortie.StateCompleted:     a2a.TaskStateCompleted,
	sortie.StateFailed:        a2a.TaskStateFailed,
	sortie.StateCancelled:     a2a.TaskStateCanceled,
	sortie.StateRejected:      a2a.TaskStateRejected,
}

// fromA2AState returns the run state of an A2A task state.
func fromA2AState(s a2a.TaskState) (sortie.State, bool) {
	for k, v := range toA2AState {
		if v == s {
			return k, true
		}
	}
	return "", false
}

// variables turns a message's parts into a JSON object: the keys of its
// data part (at most one, an object) and its text parts, joined by
// newlines, as "text". File parts are refused. field prefixes the
// [*sortie.ValidationError]'s field ("message").
func variables(m *a2a.Message, field string) (json.RawMessage, error) {
	obj := map[string]any{}
	var texts []string
	seenData := false
	for i, p := range m.Parts {
		f := fmt.Sprintf("%s.parts[%d]", field, i)
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
		case a2a.Data:
			o, ok := c.Value.(map[string]any)
			if !ok {
				return nil, sortie.Invalidf(f+".data", "must be a JSON object (its keys are the run's variables)")
			}
			if seenData {
				return nil, sortie.Invalidf(f, "a message takes at most one data part")
			}
			seenData, obj = true, o
		default:
			return nil, sortie.Invalidf(f, "file parts (raw or url) are not taken; send data or text parts")
		}
	}
	if len(texts) > 0 {
		if _, ok := obj[textVariable]; ok {
			return nil, sortie.Invalidf(field+".parts", "the data part has a %q key and the message has text parts", textVariable)
		}
		obj[textVariable] = strings.Join(texts, "\n")
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, sortie.Invalidf(field+".parts", "cannot encode as JSON: %v", err)
	}
	return b, nil
}

// parts turns a run's JSON object (variables, resume input) back into
// message parts: a text part for a string "text" key and a data part for
// the rest.
func parts(b json.RawMessage) a2a.ContentParts {
	var obj map[string]any
	if json.Unmarshal(b, &obj) != nil {
		if len(bytes.TrimSpace(b)) == 0 {
			return a2a.ContentParts{a2a.NewDataPart(map[string]any{})}
		}
		return a2a.ContentParts{a2a.NewDataPart(decode(b))}
	}
	var out a2a.ContentParts
	if t, ok := obj[textVariable].(string); ok {
		out = append(out, a2a.NewTextPart(t))
		delete(obj, textVariable)
	}
	if len(obj) > 0 || len(out) == 0 {
		out = append(out, a2a.NewDataPart(obj))
	}
	return out
}

// decode returns the JSON value of b (nil when it is not JSON).
func decode(b json.RawMessage) any {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

// contextOf is the A2A context ID of a run: its context ID, or its run ID
// when it has none (A2A requires one).
func contextOf(run *sortie.Run) string {
	if run.ContextID != "" {
		return run.ContextID
	}
	return run.ID.String()
}

func msTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// agentMessage is a message from the agent about run, with a
// deterministic ID.
func agentMessage(run *sortie.Run, id string, ps ...*a2a.Part) *a2a.Message {
	return &a2a.Message{ID: run.ID.String() + "-" + id, Role: a2a.MessageRoleAgent, TaskID: a2a.TaskID(run.ID),
		ContextID: contextOf(run), Parts: ps}
}

// status is the run's A2A status: its state with the reason as an agent
// message (the interrupt's prompt, the error, the cancel or reject reason).
func status(run *sortie.Run) a2a.TaskStatus {
	st := a2a.TaskStatus{State: toA2AState[run.State], Timestamp: msTime(run.UpdatedMs)}
	var text string
	switch {
	case run.State.Interrupted() && run.Interrupt != nil:
		text = run.Interrupt.Prompt
	case run.State == sortie.StateFailed && run.Error != nil:
		text = run.Error.Error()
	case run.State.Terminal():
		text = run.Reason
	}
	if text != "" {
		st.Message = agentMessage(run, fmt.Sprintf("status-%d", run.Version), a2a.NewTextPart(text))
	}
	return st
}

// resultArtifact is a completed run's result: a text part for a JSON
// string, a data part otherwise.
func resultArtifact(run *sortie.Run) *a2a.Artifact {
	v := decode(run.Result)
	p := a2a.NewDataPart(v)
	if s, ok := v.(string); ok {
		p = a2a.NewTextPart(s)
	}
	return &a2a.Artifact{ID: "result", Name: "result", Parts: a2a.ContentParts{p}}
}

// history is what a run keeps of its conversation: the message it was
// submitted with, the current interrupt's prompt and the last resume
// input. historyLength caps it (nil: no cap; 0: none).
func history(run *sortie.Run, historyLength *int) []*a2a.Message {
	first := &a2a.Message{ID: messageIDOf(run), Role: a2a.MessageRoleUser, TaskID: a2a.TaskID(run.ID),
		ContextID: contextOf(run), Parts: parts(run.Variables)}
	h := []*a2a.Message{first}
	if run.Interrupt != nil {
		h = append(h, agentMessage(run, fmt.Sprintf("prompt-%d", run.Attempt), a2a.NewTextPart(run.Interrupt.Prompt)))
	}
	if len(run.ResumeInput) > 0 {
		h = append(h, &a2a.Message{ID: fmt.Sprintf("%s-resume-%d", run.ID, run.Attempt), Role: a2a.MessageRoleUser,
			TaskID: a2a.TaskID(run.ID), ContextID: contextOf(run), Parts: parts(run.ResumeInput)})
	}
	if historyLength != nil && *historyLength >= 0 && *historyLength < len(h) {
		h = h[len(h)-*historyLength:]
	}
	return h
}

// messageIDOf is the ID of the message that started run: its idempotency
// key without the A2A prefix.
func messageIDOf(run *sortie.Run) string {
	if id, ok := strings.CutPrefix(run.IdempotencyKey, keyPrefix); ok {
		return id
	}
	return run.ID.String() + "-input"
}

// task is run as an A2A task.
func task(run *sortie.Run, historyLength *int) *a2a.Task {
	t := &a2a.Task{ID: a2a.TaskID(run.ID), ContextID: contextOf(run), Status: status(run),
		History:  history(run, historyLength),
		Metadata: map[string]any{MetaAgent: run.Agent.Name, MetaAttempt: run.Attempt}}
	if len(run.Labels) > 0 {
		t.Metadata[MetaLabels] = run.Labels
	}
	if len(run.ConfigRefs) > 0 {
		t.Metadata[MetaConfigRefs] = run.ConfigRefs
	}
	addCost(t.Metadata, run)
	if run.State == sortie.StateCompleted {
		t.Artifacts = []*a2a.Artifact{resultArtifact(run)}
	}
	return t
}

// addCost puts run's cost, if it has one, in metadata m under [MetaCost].
func addCost(m map[string]any, run *sortie.Run) {
	if c := run.Cost; c != nil {
		comps := make(map[string]any, len(c.Components))
		for k, v := range c.Components {
			comps[k] = int64(v)
		}
		m[MetaCost] = map[string]any{"total_nano_usd": int64(c.TotalNanoUSD), "price_version": c.PriceVersion, "components": comps}
	}
}

// eventUpdate is one run event as a working status update carrying the
// event's text and data, its kind and its cursor in the metadata.
func eventUpdate(run *sortie.Run, ev *sortie.Event) *a2a.TaskStatusUpdateEvent {
	var ps []*a2a.Part
	if ev.Text != "" {
		ps = append(ps, a2a.NewTextPart(ev.Text))
	}
	if len(ev.Data) > 0 {
		ps = append(ps, a2a.NewDataPart(decode(ev.Data)))
	}
	u := &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(run.ID), ContextID: contextOf(run),
		Status:   a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: msTime(ev.TimeMs)},
		Metadata: map[string]any{MetaCursor: ev.Cursor().String(), MetaEventKind: ev.Kind}}
	if len(ps) > 0 {
		u.Status.Message = agentMessage(run, "event-"+ev.Cursor().String(), ps...)
	}
	return u
}

// finalEvents are the events that end a stream of run: the result artifact
// of a completed run, then the final status.
func finalEvents(run *sortie.Run) []a2a.Event {
	var out []a2a.Event
	if run.State == sortie.StateCompleted {
		out = append(out, &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(run.ID), ContextID: contextOf(run),
			Artifact: resultArtifact(run), LastChunk: true})
	}
	meta := map[string]any{MetaAttempt: run.Attempt}
	addCost(meta, run)
	return append(out, &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(run.ID), ContextID: contextOf(run),
		Status: status(run), Metadata: meta})
}
