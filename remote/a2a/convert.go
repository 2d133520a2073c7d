package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// The names a Sortie host's A2A binding (server/a2a) reads and writes.
const (
	// SkillKey is the message metadata key that names the skill.
	SkillKey = "skill"
	// ResumeAfterParam is the service parameter (HTTP header) that resumes
	// a subscription after a cursor.
	ResumeAfterParam = "Sortie-Resume-After"
	// MetaCursor is the event metadata key holding an event's cursor.
	MetaCursor = "sortie/cursor"
	// MetaConfigRefs is the message metadata key naming the configuration
	// references of the run a message starts on a Sortie host: set
	// [remote.CallRequest.Metadata][MetaConfigRefs] to a list of IDs of
	// the host's allowlist.
	MetaConfigRefs = sortie.MetaConfigRefs
)

var fromA2A = map[a2a.TaskState]remote.TaskState{
	a2a.TaskStateUnspecified:   remote.StateUnspecified,
	a2a.TaskStateSubmitted:     remote.StateSubmitted,
	a2a.TaskStateWorking:       remote.StateWorking,
	a2a.TaskStateInputRequired: remote.StateInputRequired,
	a2a.TaskStateAuthRequired:  remote.StateAuthRequired,
	a2a.TaskStateCompleted:     remote.StateCompleted,
	a2a.TaskStateFailed:        remote.StateFailed,
	a2a.TaskStateCanceled:      remote.StateCancelled,
	a2a.TaskStateRejected:      remote.StateRejected,
}

func state(s a2a.TaskState) remote.TaskState {
	if st, ok := fromA2A[s]; ok {
		return st
	}
	return remote.StateUnspecified
}

func toA2AState(s remote.TaskState) a2a.TaskState {
	for k, v := range fromA2A {
		if v == s {
			return k
		}
	}
	return a2a.TaskStateUnspecified
}

// message is the A2A user message of a call.
func message(req *remote.CallRequest) (*a2a.Message, error) {
	m := &a2a.Message{ID: req.Message.ID, Role: a2a.MessageRoleUser, ContextID: req.ContextID, TaskID: a2a.TaskID(req.TaskID)}
	if m.ID == "" {
		m.ID = a2a.NewMessageID()
	}
	if req.Message.Text != "" {
		m.Parts = append(m.Parts, a2a.NewTextPart(req.Message.Text))
	}
	if len(req.Message.Data) > 0 {
		var v any
		if err := json.Unmarshal(req.Message.Data, &v); err != nil {
			return nil, sortie.Invalidf("message.data", "not valid JSON")
		}
		m.Parts = append(m.Parts, a2a.NewDataPart(v))
	}
	if len(m.Parts) == 0 {
		m.Parts = a2a.ContentParts{a2a.NewDataPart(map[string]any{})}
	}
	for k, v := range req.Metadata {
		m.SetMeta(k, v)
	}
	if req.Skill != "" {
		m.SetMeta(SkillKey, req.Skill)
	}
	return m, nil
}

// content returns the text parts joined and the first data part as JSON.
func content(ps a2a.ContentParts) (string, json.RawMessage) {
	var texts []string
	var data json.RawMessage
	for _, p := range ps {
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
		case a2a.Data:
			if data == nil {
				data, _ = json.Marshal(c.Value)
			}
		}
	}
	return strings.Join(texts, "\n"), data
}

// value is what parts amount to as a result: the data part, or the text
// as a JSON string.
func value(ps a2a.ContentParts) json.RawMessage {
	text, data := content(ps)
	if data != nil {
		return data
	}
	b, _ := json.Marshal(text)
	return b
}

func artifact(a *a2a.Artifact) remote.Artifact {
	text, data := content(a.Parts)
	return remote.Artifact{ID: string(a.ID), Name: a.Name, Text: text, Data: data}
}

// result is a task's result: its "result" artifact, or its last.
func result(as []*a2a.Artifact) json.RawMessage {
	if len(as) == 0 {
		return nil
	}
	pick := as[len(as)-1]
	for _, a := range as {
		if a.ID == "result" {
			pick = a
		}
	}
	return value(pick.Parts)
}

func status(s a2a.TaskStatus) remote.TaskStatus {
	st := remote.TaskStatus{State: state(s.State)}
	if s.Message != nil {
		st.Message, _ = content(s.Message.Parts)
	}
	if s.Timestamp != nil {
		st.TimeMs = s.Timestamp.UnixMilli()
	}
	st.Raw, _ = json.Marshal(s)
	return st
}

func historyMessage(m *a2a.Message) remote.Message {
	role := remote.RoleUser
	if m.Role == a2a.MessageRoleAgent {
		role = remote.RoleAgent
	}
	text, data := content(m.Parts)
	return remote.Message{ID: m.ID, Role: role, Text: text, Data: data}
}

// snapshot is an A2A task as a remote task.
func snapshot(t *a2a.Task, agentURL string) *remote.TaskSnapshot {
	s := &remote.TaskSnapshot{TaskID: string(t.ID), ContextID: t.ContextID, Status: status(t.Status),
		AgentURL: agentURL, Meta: t.Metadata}
	if s.Status.State == remote.StateCompleted {
		s.Result = result(t.Artifacts)
	}
	for _, a := range t.Artifacts {
		s.Artifacts = append(s.Artifacts, artifact(a))
	}
	for _, m := range t.History {
		s.History = append(s.History, historyMessage(m))
	}
	return s
}

// messageSnapshot is a direct message answer as a completed task.
func messageSnapshot(m *a2a.Message, agentURL string) *remote.TaskSnapshot {
	text, _ := content(m.Parts)
	return &remote.TaskSnapshot{TaskID: string(m.TaskID), ContextID: m.ContextID, AgentURL: agentURL,
		Status: remote.TaskStatus{State: remote.StateCompleted, Message: text}, Result: value(m.Parts),
		History: []remote.Message{historyMessage(m)}, Meta: m.Metadata}
}

// wrap adds the remote sentinel an A2A error stands for.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, a2a.ErrTaskNotFound):
		return fmt.Errorf("a2a: %s: %w: %w", op, remote.ErrTaskNotFound, err)
	case errors.Is(err, a2a.ErrPushNotificationNotSupported), errors.Is(err, a2a.ErrUnsupportedOperation):
		return fmt.Errorf("a2a: %s: %w: %w", op, remote.ErrUnsupported, err)
	}
	return fmt.Errorf("a2a: %s: %w", op, err)
}

func cursorOf(meta map[string]any) string {
	c, _ := meta[MetaCursor].(string)
	return c
}

// errNoTask: a stream ended before the agent named a task.
var errNoTask = errors.New("the stream ended before the agent reported a task")
