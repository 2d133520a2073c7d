package a2a

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/sortie-run/sortie"
)

// requestHandler implements [a2asrv.RequestHandler] over an engine: tasks
// are runs.
type requestHandler struct {
	// live ends when the handler drains: streams and blocking waits stop.
	live   context.Context
	engine sortie.ExecutionEngine
	client *sortie.Client
	push   sortie.PushStore
	agents []sortie.Manifest
	opts   *settings
	log    *slog.Logger
}

var _ a2asrv.RequestHandler = (*requestHandler)(nil)

// bounded returns ctx ended also by the handler's drain.
func (h *requestHandler) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.live, cancel)
	return ctx, func() { stop(); cancel() }
}

func newRequestHandler(engine sortie.ExecutionEngine, o *settings) *requestHandler {
	return &requestHandler{engine: engine, client: sortie.NewClient(engine, &sortie.ClientOptions{PollInterval: o.PollInterval}),
		push: o.PushStore, agents: o.agents, opts: o, log: o.Logger}
}

// get reads the run of a task ID.
func (h *requestHandler) get(ctx context.Context, field string, id a2a.TaskID) (*sortie.Run, error) {
	rid, err := runID(field, id)
	if err != nil {
		return nil, err
	}
	run, err := h.engine.Get(ctx, rid)
	if err != nil {
		return nil, fromSortie(err, h.log)
	}
	return run, nil
}

// GetTask returns the run as a task, with at most HistoryLength history
// entries.
func (h *requestHandler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, invalid("historyLength", "%d is negative", *req.HistoryLength)
	}
	run, err := h.get(ctx, "id", req.ID)
	if err != nil {
		return nil, err
	}
	return task(run, req.HistoryLength), nil
}

// CancelTask requests cancellation of the run and waits up to CancelWait
// for it to stop. Cancelling a cancelled task returns it (a client
// retrying a cancel whose answer it lost gets what it asked for); a task
// that finished otherwise is not cancelable.
func (h *requestHandler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	run, err := h.get(ctx, "id", req.ID)
	if err != nil {
		return nil, err
	}
	if run.State == sortie.StateCancelled {
		return task(run, nil), nil
	}
	if run.State.Terminal() {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, "task "+run.ID.String()+" is "+string(run.State))
	}
	if run, err = h.engine.Cancel(ctx, run.ID, "cancelled by an A2A client"); err != nil {
		return nil, fromSortie(err, h.log)
	}
	wctx, cancel := context.WithTimeout(ctx, h.opts.CancelWait)
	defer cancel()
	if done, err := h.client.Wait(wctx, run.ID); err == nil {
		run = done
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return task(run, nil), nil
}

// GetExtendedAgentCard is not offered: the public card is the whole card.
func (h *requestHandler) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.ErrExtendedCardNotConfigured
}

// maxCount bounds the runs ListTasks counts for TotalSize.
const maxCount = 10000

// ListTasks returns a page of runs (newest first) matching the context and
// state. TotalSize counts the matches up to 10,000.
func (h *requestHandler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	q, err := listQuery(req)
	if err != nil {
		return nil, err
	}
	page, err := h.engine.List(ctx, q)
	if err != nil {
		return nil, fromSortie(err, h.log)
	}
	resp := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, PageSize: q.PageSize, NextPageToken: page.NextPageToken}
	for _, run := range page.Runs {
		if !updatedAfter(run, req.StatusTimestampAfter) {
			continue
		}
		t := task(run, req.HistoryLength)
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		resp.Tasks = append(resp.Tasks, t)
	}
	if resp.TotalSize, err = h.count(ctx, q, req.StatusTimestampAfter); err != nil {
		return nil, fromSortie(err, h.log)
	}
	return resp, nil
}

func listQuery(req *a2a.ListTasksRequest) (sortie.ListQuery, error) {
	q := sortie.ListQuery{ContextID: req.ContextID, PageSize: req.PageSize, PageToken: req.PageToken}
	if req.PageSize < 0 || req.PageSize > 100 {
		return q, invalid("pageSize", "%d outside 1..100", req.PageSize)
	}
	if q.PageSize == 0 {
		q.PageSize = 50
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return q, invalid("historyLength", "%d is negative", *req.HistoryLength)
	}
	if len(req.ContextID) > 256 {
		return q, invalid("contextId", "%d bytes, limit 256", len(req.ContextID))
	}
	if len(req.PageToken) > 1024 {
		return q, invalid("pageToken", "%d bytes, limit 1024", len(req.PageToken))
	}
	if req.Status != a2a.TaskStateUnspecified {
		st, ok := fromA2AState(req.Status)
		if !ok {
			return q, invalid("status", "unknown task state %q", req.Status)
		}
		q.State = st
	}
	return q, nil
}

func updatedAfter(run *sortie.Run, t *time.Time) bool {
	return t == nil || run.UpdatedMs > t.UnixMilli()
}

// count counts the runs matching q (all pages), up to maxCount.
func (h *requestHandler) count(ctx context.Context, q sortie.ListQuery, after *time.Time) (int, error) {
	q.PageSize, q.PageToken = 1000, ""
	n := 0
	for n < maxCount {
		page, err := h.engine.List(ctx, q)
		if err != nil {
			return 0, err
		}
		for _, run := range page.Runs {
			if updatedAfter(run, after) {
				n++
			}
		}
		if page.NextPageToken == "" {
			break
		}
		q.PageToken = page.NextPageToken
	}
	return min(n, maxCount), nil
}

// errTerminalSubscribe answers SubscribeToTask of a finished task without
// a cursor, as the A2A specification asks.
var errTerminalSubscribe = errors.New("the task is in a terminal state; send " + ResumeAfterParam + " to read its remaining events")
