package runs

import (
	"context"
	"fmt"
	"iter"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// SendTask submits (or resumes) a run and returns its snapshot, once it is
// terminal or interrupted when blocking; see [remote.TaskTransport.SendTask].
func (t *Transport) SendTask(ctx context.Context, req *remote.CallRequest, blocking bool) (*remote.TaskSnapshot, error) {
	ctx, cancel := withTimeout(ctx, req.Timeout)
	defer cancel()
	s, err := t.start(ctx, req)
	if err != nil {
		return nil, err
	}
	run := s.run
	if blocking {
		if run, err = s.client.Wait(ctx, run.ID); err != nil {
			return nil, fmt.Errorf("runs: wait for task %s: %w", s.run.ID, err)
		}
	}
	return snapshot(run, req.AgentURL, 0), nil
}

// GetTask returns the run taskID as a task; see [remote.TaskTransport.GetTask].
func (t *Transport) GetTask(ctx context.Context, agentURL, taskID string, historyLength int) (*remote.TaskSnapshot, error) {
	if err := remote.CheckTaskRef(agentURL, taskID); err != nil {
		return nil, err
	}
	if historyLength < 0 {
		return nil, sortie.Invalidf("history_length", "%d is negative", historyLength)
	}
	e, _, err := t.engine(ctx, agentURL)
	if err != nil {
		return nil, err
	}
	run, err := get(ctx, e, taskID)
	if err != nil {
		return nil, err
	}
	return snapshot(run, agentURL, historyLength), nil
}

// ListTasks returns a page of runs, newest first; see
// [remote.TaskTransport.ListTasks]. TotalSize is 0: a Sortie host does not
// count its runs.
func (t *Transport) ListTasks(ctx context.Context, req *remote.ListTasksRequest) (*remote.TaskPage, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	e, _, err := t.engine(ctx, req.AgentURL)
	if err != nil {
		return nil, err
	}
	size := req.PageSize
	if size == 0 {
		size = remote.DefaultPageSize
	}
	page, err := e.List(ctx, sortie.ListQuery{ContextID: req.ContextID, State: sortie.State(req.State),
		PageSize: size, PageToken: req.PageToken})
	if err != nil {
		return nil, fmt.Errorf("runs: list tasks: %w", err)
	}
	out := &remote.TaskPage{NextPageToken: page.NextPageToken, PageSize: size, Tasks: make([]remote.TaskSnapshot, 0, len(page.Runs))}
	for _, run := range page.Runs {
		s := snapshot(run, req.AgentURL, req.HistoryLength)
		if !req.IncludeArtifacts {
			s.Artifacts = nil
		}
		out.Tasks = append(out.Tasks, *s)
	}
	return out, nil
}

// SubscribeTask yields the run's snapshot, then its events (after
// req.After, or from now on), then a Done event with the run once it is
// terminal or interrupted; see [remote.TaskTransport.SubscribeTask].
func (t *Transport) SubscribeTask(ctx context.Context, req *remote.SubscribeRequest) iter.Seq2[remote.TaskEvent, error] {
	return func(yield func(remote.TaskEvent, error) bool) {
		run, c, after, err := t.subscribeStart(ctx, req)
		if err != nil {
			yield(remote.TaskEvent{}, err)
			return
		}
		snap := snapshot(run, req.AgentURL, 0)
		if !yield(remote.TaskEvent{Kind: remote.KindTask, Task: snap, ContextID: snap.ContextID, TaskID: snap.TaskID,
			AgentURL: req.AgentURL, Raw: snap.Status.Raw}, nil) {
			return
		}
		for u, err := range c.Follow(ctx, run.ID, after) {
			switch {
			case err != nil:
				yield(remote.TaskEvent{}, fmt.Errorf("runs: follow task %s: %w", run.ID, err))
				return
			case u.Event != nil:
				if !yield(taskEvent(u.Event, run, req.AgentURL), nil) {
					return
				}
				continue
			}
			yield(finalEvent(snapshot(u.Run, req.AgentURL, 0)), nil)
			return
		}
	}
}

func finalEvent(s *remote.TaskSnapshot) remote.TaskEvent {
	return remote.TaskEvent{Kind: remote.KindStatus, Task: s, Status: &s.Status, Result: s.Result, Done: true,
		ContextID: s.ContextID, TaskID: s.TaskID, AgentURL: s.AgentURL, Raw: s.Status.Raw}
}

// subscribeStart reads the run and the cursor its subscription follows:
// req.After, or the run's last event.
func (t *Transport) subscribeStart(ctx context.Context, req *remote.SubscribeRequest) (*sortie.Run, *sortie.Client, sortie.Cursor, error) {
	if err := remote.CheckTaskRef(req.AgentURL, req.TaskID); err != nil {
		return nil, nil, sortie.Cursor{}, err
	}
	after, err := sortie.ParseCursor(req.After)
	if err != nil {
		return nil, nil, after, sortie.Invalidf("after", "%.40q is not a cursor ATTEMPT.SEQ", req.After)
	}
	e, c, err := t.engine(ctx, req.AgentURL)
	if err != nil {
		return nil, nil, after, err
	}
	run, err := get(ctx, e, req.TaskID)
	if err != nil {
		return nil, nil, after, err
	}
	if req.After == "" {
		after, err = Tail(ctx, e, run.ID)
	}
	return run, c, after, err
}

// Tail returns the cursor of the run's last stored event (the zero cursor
// when it has none): following after it yields only what happens next.
func Tail(ctx context.Context, e sortie.ExecutionEngine, id sortie.RunID) (sortie.Cursor, error) {
	const page = 1000
	var after sortie.Cursor
	for {
		evs, err := e.Events(ctx, id, after, page)
		if err != nil {
			return after, taskErr("read events of", id.String(), err)
		}
		if len(evs) > 0 {
			after = evs[len(evs)-1].Cursor()
		}
		if len(evs) < page {
			return after, nil
		}
	}
}
