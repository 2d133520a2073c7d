package a2a

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"iter"
	"math"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
)

// maxMessageIDBytes is the longest message ID: an idempotency key is at
// most 255 bytes with its prefix.
const maxMessageIDBytes = sortie.MaxIdempotencyKeyBytes - len(keyPrefix)

// started is the run a message submitted or resumed, and the cursor its
// new events follow.
type started struct {
	run   *sortie.Run
	after sortie.Cursor
}

// SendMessage starts a run (or resumes the message's task) and, unless the
// request asks to return immediately, waits up to MaxBlock for it to
// finish or pause; it returns the task.
func (h *requestHandler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	s, err := h.start(ctx, req)
	if err != nil {
		return nil, err
	}
	run := s.run
	if req.Config == nil || !req.Config.ReturnImmediately {
		if run, err = h.wait(ctx, run); err != nil {
			return nil, err
		}
	}
	var hl *int
	if req.Config != nil {
		hl = req.Config.HistoryLength
	}
	return task(run, hl), nil
}

// wait waits up to MaxBlock (or the drain) for run to finish or pause and
// returns it as it is then.
func (h *requestHandler) wait(ctx context.Context, run *sortie.Run) (*sortie.Run, error) {
	wctx, cancel := h.bounded(ctx)
	defer cancel()
	wctx, cancelBlock := context.WithTimeout(wctx, h.opts.MaxBlock)
	defer cancelBlock()
	done, err := h.client.Wait(wctx, run.ID)
	switch {
	case err == nil:
		return done, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		got, gerr := h.engine.Get(ctx, run.ID)
		if gerr != nil {
			return run, nil
		}
		return got, nil
	}
	return nil, fromSortie(err, h.log)
}

// SendStreamingMessage starts a run (or resumes the message's task) and
// streams it: the task, then each event as a working status update
// carrying its cursor, then the result artifact and the final status.
func (h *requestHandler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s, err := h.start(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		h.stream(ctx, s.run, s.after, yield)
	}
}

// start checks the request and submits or resumes its run; a push
// configuration in the request is stored with it.
func (h *requestHandler) start(ctx context.Context, req *a2a.SendMessageRequest) (*started, error) {
	m, err := checkMessage(req)
	if err != nil {
		return nil, err
	}
	var push *a2a.PushConfig
	if req.Config != nil && req.Config.PushConfig != nil {
		if push, err = h.checkPush(req.Config.PushConfig, "configuration.taskPushNotificationConfig"); err != nil {
			return nil, err
		}
	}
	vars, err := variables(m, "message")
	if err != nil {
		return nil, fromSortie(err, nil)
	}
	var s *started
	if m.TaskID != "" {
		s, err = h.resume(ctx, m, vars)
	} else {
		s, err = h.submit(ctx, m, vars)
	}
	if err == nil && push != nil {
		push.TaskID = a2a.TaskID(s.run.ID)
		_, err = h.putPush(ctx, push, "configuration.taskPushNotificationConfig")
	}
	return s, err
}

// checkMessage returns the request's message, or an invalid-params error
// naming the missing or bad field.
func checkMessage(req *a2a.SendMessageRequest) (*a2a.Message, error) {
	m := req.Message
	switch {
	case m == nil:
		return nil, invalid("message", "required")
	case m.ID == "":
		return nil, invalid("message.messageId", "required (it is the task's idempotency key)")
	case len(m.ID) > maxMessageIDBytes:
		return nil, invalid("message.messageId", "%d bytes, limit %d", len(m.ID), maxMessageIDBytes)
	case m.Role != a2a.MessageRoleUser:
		return nil, invalid("message.role", "must be %s, got %s", a2a.MessageRoleUser, m.Role)
	case len(m.Parts) == 0:
		return nil, invalid("message.parts", "at least one part is required")
	}
	return m, nil
}

// skillOf returns the skill the message names in its metadata.
func skillOf(m *a2a.Message) (string, error) {
	v, ok := m.Metadata[SkillKey]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", invalid("message.metadata."+SkillKey, "must be the name of a skill (a non-empty string)")
	}
	return s, nil
}

// agentFor returns the agent a new task runs: the message's skill, or the
// default agent.
func (h *requestHandler) agentFor(m *a2a.Message) (string, error) {
	skill, err := skillOf(m)
	if err != nil {
		return "", err
	}
	if skill == "" {
		skill = h.opts.DefaultAgent
	}
	names := make([]string, 0, len(h.agents))
	for _, a := range h.agents {
		if a.Name == skill {
			return skill, nil
		}
		names = append(names, a.Name)
	}
	if skill == "" {
		return "", invalid("message.metadata."+SkillKey, "required: this host has several skills %v and no default", names)
	}
	return "", invalid("message.metadata."+SkillKey, "%.64q is not a skill of this host (one of %v)", skill, names)
}

// submit starts a new run for the message; its message ID is the
// idempotency key, so a retried message returns the same task.
func (h *requestHandler) submit(ctx context.Context, m *a2a.Message, vars json.RawMessage) (*started, error) {
	agent, err := h.agentFor(m)
	if err != nil {
		return nil, err
	}
	ctxID := m.ContextID
	if ctxID == "" {
		ctxID = contextFor(m.ID)
	}
	labels, err := sortie.MetadataLabels("message.metadata", m.Metadata, SkillKey)
	if err != nil {
		return nil, fromSortie(err, nil)
	}
	refs, err := sortie.ConfigRefsFromMetadata("message.metadata", m.Metadata)
	if err != nil {
		return nil, fromSortie(err, nil)
	}
	run, err := h.engine.Submit(ctx, &sortie.SubmitRequest{Agent: agent, Variables: vars, ContextID: ctxID,
		Labels: labels, ConfigRefs: refs, IdempotencyKey: keyPrefix + m.ID})
	if err != nil {
		return nil, fromSortie(err, h.log)
	}
	return &started{run: run}, nil
}

// contextFor derives a context ID from a message ID, so a retried message
// that named no context asks for the same run.
func contextFor(messageID string) string {
	sum := sha256.Sum256([]byte("sortie a2a context\x00" + messageID))
	return "ctx-" + hex.EncodeToString(sum[:16])
}

// resume continues the message's input-required or auth-required task
// with the message as resume input: a new attempt with the checkpoint. A
// follow-up repeated after the task resumed (same input) returns the task
// without resuming it again.
func (h *requestHandler) resume(ctx context.Context, m *a2a.Message, input json.RawMessage) (*started, error) {
	prev, err := h.get(ctx, "message.taskId", m.TaskID)
	if err != nil {
		return nil, err
	}
	if skill, err := skillOf(m); err != nil {
		return nil, err
	} else if skill != "" && skill != prev.Agent.Name {
		return nil, invalid("message.metadata."+SkillKey, "task %s runs skill %q, not %.64q", prev.ID, prev.Agent.Name, skill)
	}
	if err := sortie.SameMetadata("message.metadata", prev, m.Metadata, SkillKey); err != nil {
		return nil, fromSortie(err, nil)
	}
	if err := sameConfigRefs(prev, m.Metadata); err != nil {
		return nil, fromSortie(err, nil)
	}
	if m.ContextID != "" && m.ContextID != contextOf(prev) {
		return nil, invalid("message.contextId", "task %s is in context %q, not %.64q", prev.ID, contextOf(prev), m.ContextID)
	}
	run, err := h.engine.Resume(ctx, prev.ID, input)
	if errors.Is(err, sortie.ErrConflict) || errors.Is(err, sortie.ErrTerminal) {
		return h.repeated(ctx, prev.ID, input)
	} else if err != nil {
		return nil, fromSortie(err, h.log)
	}
	return &started{run: run, after: sortie.Cursor{Attempt: prev.Attempt, Seq: math.MaxInt64}}, nil
}

// repeated answers a follow-up to a task that is not paused: the task when
// it was resumed with the same input, else an invalid-params error.
func (h *requestHandler) repeated(ctx context.Context, id sortie.RunID, input json.RawMessage) (*started, error) {
	run, err := h.engine.Get(ctx, id)
	if err != nil {
		return nil, fromSortie(err, h.log)
	}
	if len(run.ResumeInput) > 0 && bytes.Equal(canonical(run.ResumeInput), canonical(input)) {
		return &started{run: run, after: sortie.Cursor{Attempt: run.Attempt - 1, Seq: math.MaxInt64}}, nil
	}
	return nil, invalid("message.taskId", "task %s is %s; only an input-required or auth-required task takes a follow-up message (start a new task without taskId)", run.ID, run.State)
}

func canonical(b json.RawMessage) []byte {
	out, err := json.Marshal(decode(b))
	if err != nil {
		return b
	}
	return out
}

// sameConfigRefs checks that a follow-up names no configuration
// references but the task's own: a resumed run keeps those it started
// with.
func sameConfigRefs(run *sortie.Run, md map[string]any) error {
	refs, err := sortie.ConfigRefsFromMetadata("message.metadata", md)
	if err != nil || refs == nil || slices.Equal(refs, run.ConfigRefs) {
		return err
	}
	return sortie.Invalidf("message.metadata."+sortie.MetaConfigRefs, "task %s keeps the configuration references it started with", run.ID)
}
