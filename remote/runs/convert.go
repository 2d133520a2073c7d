package runs

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// textVariable is the variable a message's text becomes.
const textVariable = "text"

// variables turns a call's message into run variables (or resume input): a
// JSON object of Data's keys, plus "text" when Text is set.
func variables(m remote.Message) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if d := bytes.TrimSpace(m.Data); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		if d[0] != '{' || json.Unmarshal(d, &obj) != nil {
			return nil, sortie.Invalidf("message.data", "must be a JSON object (its keys are the run's variables)")
		}
	}
	if m.Text != "" {
		if _, ok := obj[textVariable]; ok {
			return nil, sortie.Invalidf("message.text", "message.data already has a %q key", textVariable)
		}
		t, err := json.Marshal(m.Text)
		if err != nil {
			return nil, sortie.Invalidf("message.text", "%v", err)
		}
		obj[textVariable] = t
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("runs: encode variables: %w", err)
	}
	return b, nil
}

// snapshot describes run as a task; historyLength caps the history (0: no cap).
func snapshot(run *sortie.Run, agentURL string, historyLength int) *remote.TaskSnapshot {
	s := &remote.TaskSnapshot{
		TaskID:    run.ID.String(),
		ContextID: run.ContextID,
		Status:    status(run),
		AgentURL:  agentURL,
		History:   history(run, historyLength),
		Meta:      runMeta(run),
	}
	if run.State == sortie.StateCompleted {
		s.Result = run.Result
		s.Artifacts = []remote.Artifact{{ID: "result", Name: "result", Data: run.Result}}
	}
	return s
}

// MetaLabels is the key of [remote.TaskSnapshot.Meta] and
// [remote.CallResult.Meta] that holds the run's labels: the metadata the
// call that started it sent (see [Transport]).
const MetaLabels = "labels"

// runMeta is a run's metadata as a task's: its agent, attempt and labels.
func runMeta(run *sortie.Run) map[string]any {
	m := map[string]any{"agent": run.Agent.Name, "attempt": run.Attempt}
	if len(run.Labels) > 0 {
		m[MetaLabels] = run.Labels
	}
	return m
}

// rawStatus is the status part of a run as JSON: the raw payload of a
// task status.
func rawStatus(run *sortie.Run) json.RawMessage {
	b, _ := json.Marshal(struct {
		State     sortie.State         `json:"state"`
		Reason    string               `json:"reason,omitempty"`
		Attempt   int                  `json:"attempt"`
		Error     *sortie.ErrorMessage `json:"error,omitempty"`
		Interrupt *sortie.Interrupt    `json:"interrupt,omitempty"`
		UpdatedMs int64                `json:"updated_ms"`
	}{run.State, run.Reason, run.Attempt, run.Error, run.Interrupt, run.UpdatedMs})
	return b
}

// status is the run's state with its reason: the interrupt's prompt, the
// error, or the cancel or reject reason.
func status(run *sortie.Run) remote.TaskStatus {
	st := remote.TaskStatus{State: remote.TaskState(run.State), TimeMs: run.UpdatedMs, Raw: rawStatus(run)}
	switch {
	case run.State.Interrupted() && run.Interrupt != nil:
		st.Message = run.Interrupt.Prompt
	case run.State == sortie.StateFailed && run.Error != nil:
		st.Message = run.Error.Error()
	case run.State.Terminal():
		st.Message = run.Reason
	}
	return st
}

// history is what the run keeps of the conversation: the variables it was
// submitted with, the current interrupt's prompt and the resume input.
func history(run *sortie.Run, limit int) []remote.Message {
	h := []remote.Message{{ID: run.IdempotencyKey, Role: remote.RoleUser, Data: run.Variables}}
	if run.Interrupt != nil {
		h = append(h, remote.Message{Role: remote.RoleAgent, Text: run.Interrupt.Prompt})
	}
	if len(run.ResumeInput) > 0 {
		h = append(h, remote.Message{Role: remote.RoleUser, Data: run.ResumeInput})
	}
	if limit > 0 && len(h) > limit {
		h = h[len(h)-limit:]
	}
	return h
}

// eventMeta is the metadata of a run event: its kind, and its data when set.
func eventMeta(ev *sortie.Event) map[string]any {
	m := map[string]any{"kind": ev.Kind}
	if len(ev.Data) > 0 {
		m["data"] = ev.Data
	}
	return m
}

func streamEvent(ev *sortie.Event, run *sortie.Run, agentURL string) remote.StreamEvent {
	return remote.StreamEvent{Text: ev.Text, Meta: eventMeta(ev), ContextID: run.ContextID,
		TaskID: run.ID.String(), AgentURL: agentURL, Cursor: ev.Cursor().String()}
}

// taskEvent is a run event as a task's progress; Raw is the event as the
// host stores it.
func taskEvent(ev *sortie.Event, run *sortie.Run, agentURL string) remote.TaskEvent {
	raw, _ := json.Marshal(ev)
	return remote.TaskEvent{Raw: raw,
		Kind: remote.KindStatus, Status: &remote.TaskStatus{State: remote.StateWorking, Message: ev.Text, TimeMs: ev.TimeMs, Raw: raw},
		Text: ev.Text, ContextID: run.ContextID, TaskID: run.ID.String(), AgentURL: agentURL,
		Cursor: ev.Cursor().String(), Meta: eventMeta(ev),
	}
}
