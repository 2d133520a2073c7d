package a2a

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/sortie-run/sortie/remote"
)

// streamer turns the events of one streaming call into stream events.
type streamer struct {
	t         *Transport
	c         *a2aclient.Client
	req       *remote.CallRequest
	yield     func(remote.StreamEvent, error) bool
	taskID    a2a.TaskID
	contextID string
	artifacts []*a2a.Artifact
}

// handle handles one event; false ends the stream.
func (s *streamer) handle(ctx context.Context, ev a2a.Event) bool {
	if info := ev.TaskInfo(); info.TaskID != "" && s.taskID == "" {
		s.taskID, s.contextID = info.TaskID, info.ContextID
		bind(s.req, info.TaskID, info.ContextID)
	}
	switch e := ev.(type) {
	case *a2a.Message:
		s.done(messageSnapshot(e, s.req.AgentURL))
		return false
	case *a2a.Task:
		s.artifacts = e.Artifacts
		if snap := snapshot(e, s.req.AgentURL); snap.Status.State.Final() {
			s.done(snap)
			return false
		}
	case *a2a.TaskArtifactUpdateEvent:
		s.addArtifact(e)
		if text, _ := content(e.Artifact.Parts); text != "" {
			return s.emit(text, e.Metadata, map[string]any{"artifact_id": string(e.Artifact.ID)})
		}
	case *a2a.TaskStatusUpdateEvent:
		st := status(e.Status)
		if st.State.Final() {
			s.finish(ctx, &st)
			return false
		}
		var data any
		if e.Status.Message != nil {
			_, d := content(e.Status.Message.Parts)
			if d != nil {
				data = d
			}
		}
		return s.emit(st.Message, e.Metadata, map[string]any{"state": string(st.State), "data": data})
	}
	return true
}

// emit yields a progress event.
func (s *streamer) emit(text string, meta map[string]any, extra map[string]any) bool {
	m := map[string]any{}
	for k, v := range meta {
		m[k] = v
	}
	for k, v := range extra {
		if v != nil {
			m[k] = v
		}
	}
	return s.yield(remote.StreamEvent{Text: text, Meta: m, ContextID: s.contextID, TaskID: string(s.taskID),
		AgentURL: s.req.AgentURL, Cursor: cursorOf(meta)}, nil)
}

func (s *streamer) addArtifact(e *a2a.TaskArtifactUpdateEvent) {
	for _, a := range s.artifacts {
		if a.ID == e.Artifact.ID {
			if e.Append {
				a.Parts = append(a.Parts, e.Artifact.Parts...)
			} else {
				*a = *e.Artifact
			}
			return
		}
	}
	cp := *e.Artifact
	s.artifacts = append(s.artifacts, &cp)
}

// finish ends the stream: with the final status st, or (nil) after the
// stream closed early, with the task read from the agent.
func (s *streamer) finish(ctx context.Context, st *remote.TaskStatus) {
	if st != nil && (st.State != remote.StateCompleted || len(s.artifacts) > 0) {
		snap := &remote.TaskSnapshot{TaskID: string(s.taskID), ContextID: s.contextID, Status: *st, AgentURL: s.req.AgentURL}
		if st.State == remote.StateCompleted {
			snap.Result = result(s.artifacts)
		}
		s.done(snap)
		return
	}
	if s.taskID == "" {
		s.yield(remote.StreamEvent{}, wrap("stream message", errNoTask))
		return
	}
	snap, err := s.t.await(ctx, s.c, s.taskID, s.req.AgentURL)
	if err != nil {
		s.yield(remote.StreamEvent{}, err)
		return
	}
	s.done(snap)
}

// done yields the last event: the result, or the outcome's error.
func (s *streamer) done(snap *remote.TaskSnapshot) bool {
	if err := remote.OutcomeError(snap); err != nil {
		return s.yield(remote.StreamEvent{}, err)
	}
	return s.yield(remote.StreamEvent{Done: true, Result: snap.Result, ContextID: snap.ContextID, TaskID: snap.TaskID,
		AgentURL: s.req.AgentURL, Meta: snap.Meta}, nil)
}
