package a2a

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// SendTask sends the message and returns the task: at once, or once it is
// final when blocking. A direct message answer is a completed snapshot
// without a task ID. See [remote.TaskTransport.SendTask].
func (t *Transport) SendTask(ctx context.Context, req *remote.CallRequest, blocking bool) (*remote.TaskSnapshot, error) {
	ctx, cancel := withTimeout(ctx, req.Timeout)
	defer cancel()
	return t.sendTask(ctx, req, blocking)
}

// GetTask returns the task with at most historyLength history entries (0:
// the agent's default, all of it on a Sortie host). See
// [remote.TaskTransport.GetTask].
func (t *Transport) GetTask(ctx context.Context, agentURL, taskID string, historyLength int) (*remote.TaskSnapshot, error) {
	if err := remote.CheckTaskRef(agentURL, taskID); err != nil {
		return nil, err
	}
	if historyLength < 0 {
		return nil, sortie.Invalidf("history_length", "%d is negative", historyLength)
	}
	c, err := t.client(ctx, agentURL, nil)
	if err != nil {
		return nil, err
	}
	req := &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)}
	if historyLength > 0 {
		req.HistoryLength = &historyLength
	}
	got, err := c.GetTask(ctx, req)
	if err != nil {
		return nil, wrap("get task "+taskID, err)
	}
	return snapshot(got, agentURL), nil
}

// ListTasks returns a page of the agent's tasks; the page size is capped
// at 100, the A2A limit. See [remote.TaskTransport.ListTasks].
func (t *Transport) ListTasks(ctx context.Context, req *remote.ListTasksRequest) (*remote.TaskPage, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, err := t.client(ctx, req.AgentURL, nil)
	if err != nil {
		return nil, err
	}
	size := req.PageSize
	if size == 0 {
		size = remote.DefaultPageSize
	}
	q := &a2a.ListTasksRequest{ContextID: req.ContextID, PageSize: min(size, 100), PageToken: req.PageToken,
		IncludeArtifacts: req.IncludeArtifacts}
	if req.State != "" {
		q.Status = toA2AState(req.State)
	}
	if req.HistoryLength > 0 {
		q.HistoryLength = &req.HistoryLength
	}
	resp, err := c.ListTasks(ctx, q)
	if err != nil {
		return nil, wrap("list tasks", err)
	}
	page := &remote.TaskPage{NextPageToken: resp.NextPageToken, PageSize: q.PageSize, TotalSize: resp.TotalSize,
		Tasks: make([]remote.TaskSnapshot, 0, len(resp.Tasks))}
	for _, task := range resp.Tasks {
		page.Tasks = append(page.Tasks, *snapshot(task, req.AgentURL))
	}
	return page, nil
}

// SubscribeTask yields the task's events until it is final; after
// req.After on a Sortie host. See [remote.TaskTransport.SubscribeTask].
func (t *Transport) SubscribeTask(ctx context.Context, req *remote.SubscribeRequest) iter.Seq2[remote.TaskEvent, error] {
	return func(yield func(remote.TaskEvent, error) bool) {
		if err := remote.CheckTaskRef(req.AgentURL, req.TaskID); err != nil {
			yield(remote.TaskEvent{}, err)
			return
		}
		c, err := t.client(ctx, req.AgentURL, nil)
		if err != nil {
			yield(remote.TaskEvent{}, err)
			return
		}
		if req.After != "" {
			ctx = a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{ResumeAfterParam: {req.After}})
		}
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(req.TaskID)}) {
			if err != nil {
				yield(remote.TaskEvent{}, wrap("subscribe to task "+req.TaskID, err))
				return
			}
			te := taskEvent(ev, req.AgentURL)
			if !yield(te, nil) || te.Done {
				return
			}
		}
	}
}

// taskEvent is an A2A event as a task event; Done marks a final status or
// a message answer.
func taskEvent(ev a2a.Event, agentURL string) remote.TaskEvent {
	info := ev.TaskInfo()
	te := remote.TaskEvent{TaskID: string(info.TaskID), ContextID: info.ContextID, AgentURL: agentURL,
		Meta: ev.Meta(), Cursor: cursorOf(ev.Meta())}
	te.Raw, _ = json.Marshal(a2a.StreamResponse{Event: ev})
	switch e := ev.(type) {
	case *a2a.Task:
		// Not Done even when final: a resumed subscription delivers the
		// events after its cursor after the snapshot.
		te.Kind, te.Task = remote.KindTask, snapshot(e, agentURL)
	case *a2a.TaskStatusUpdateEvent:
		st := status(e.Status)
		te.Kind, te.Status, te.Text, te.Done = remote.KindStatus, &st, st.Message, st.State.Final()
	case *a2a.TaskArtifactUpdateEvent:
		a := artifact(e.Artifact)
		te.Kind, te.Artifact, te.Text = remote.KindArtifact, &a, a.Text
	case *a2a.Message:
		te.Kind, te.Done = remote.KindMessage, true
		te.Text, _ = content(e.Parts)
		te.Result = value(e.Parts)
	}
	return te
}

func pushConfig(taskID, configID string, cfg remote.PushConfig) *a2a.PushConfig {
	p := &a2a.PushConfig{TaskID: a2a.TaskID(taskID), ID: configID, URL: cfg.URL, Token: cfg.Token}
	if cfg.Auth != nil {
		p.Auth = &a2a.PushAuthInfo{Scheme: cfg.Auth.Scheme, Credentials: cfg.Auth.Credentials}
	}
	return p
}

func binding(p *a2a.PushConfig) *remote.PushBinding {
	b := &remote.PushBinding{ID: p.ID, TaskID: string(p.TaskID), Config: remote.PushConfig{URL: p.URL, Token: p.Token}}
	if p.Auth != nil {
		b.Config.Auth = &remote.PushAuth{Scheme: p.Auth.Scheme, Credentials: p.Auth.Credentials}
	}
	return b
}

// pushClient checks a push call's target and returns its client.
func (t *Transport) pushClient(ctx context.Context, agentURL, taskID string) (*a2aclient.Client, error) {
	if err := remote.CheckTaskRef(agentURL, taskID); err != nil {
		return nil, err
	}
	return t.client(ctx, agentURL, nil)
}

// SetPushConfig creates or replaces a push configuration of the task; see
// [remote.TaskTransport.SetPushConfig].
func (t *Transport) SetPushConfig(ctx context.Context, agentURL, taskID, configID string, cfg remote.PushConfig) (*remote.PushBinding, error) {
	c, err := t.pushClient(ctx, agentURL, taskID)
	if err != nil {
		return nil, err
	}
	got, err := c.CreateTaskPushConfig(ctx, pushConfig(taskID, configID, cfg))
	if err != nil {
		return nil, wrap("set a push configuration of task "+taskID, err)
	}
	return binding(got), nil
}

// GetPushConfig returns a push configuration of the task; see
// [remote.TaskTransport.GetPushConfig].
func (t *Transport) GetPushConfig(ctx context.Context, agentURL, taskID, configID string) (*remote.PushBinding, error) {
	c, err := t.pushClient(ctx, agentURL, taskID)
	if err != nil {
		return nil, err
	}
	got, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: a2a.TaskID(taskID), ID: configID})
	if err != nil {
		return nil, wrap("get push configuration "+configID+" of task "+taskID, err)
	}
	return binding(got), nil
}

// ListPushConfigs returns the task's push configurations; see
// [remote.TaskTransport.ListPushConfigs].
func (t *Transport) ListPushConfigs(ctx context.Context, agentURL, taskID string, pageSize int, pageToken string) ([]remote.PushBinding, error) {
	c, err := t.pushClient(ctx, agentURL, taskID)
	if err != nil {
		return nil, err
	}
	got, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(taskID), PageSize: pageSize, PageToken: pageToken})
	if err != nil {
		return nil, wrap("list push configurations of task "+taskID, err)
	}
	out := make([]remote.PushBinding, 0, len(got))
	for _, p := range got {
		out = append(out, *binding(p))
	}
	return out, nil
}

// DeletePushConfig removes a push configuration of the task; see
// [remote.TaskTransport.DeletePushConfig].
func (t *Transport) DeletePushConfig(ctx context.Context, agentURL, taskID, configID string) error {
	c, err := t.pushClient(ctx, agentURL, taskID)
	if err != nil {
		return err
	}
	err = c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: a2a.TaskID(taskID), ID: configID})
	return wrap("delete push configuration "+configID+" of task "+taskID, err)
}
