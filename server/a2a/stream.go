package a2a

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/sortie-run/sortie"
)

// SubscribeToTask streams a task: its snapshot, its events and the final
// status. Without the [ResumeAfterParam] service parameter it is the
// standard subscription (events from now on; a finished task is an
// error); with it, every event after that cursor is delivered, also of a
// task that has finished meanwhile.
func (h *requestHandler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		run, err := h.get(ctx, "id", req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		after, resumed, err := resumeCursor(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		if !resumed {
			if run.State.Terminal() {
				yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, errTerminalSubscribe.Error()))
				return
			}
			if after, err = tail(ctx, h.engine, run.ID); err != nil {
				yield(nil, fromSortie(err, h.log))
				return
			}
		}
		h.stream(ctx, run, after, yield)
	}
}

// resumeCursor reads the [ResumeAfterParam] service parameter.
func resumeCursor(ctx context.Context) (sortie.Cursor, bool, error) {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok {
		return sortie.Cursor{}, false, nil
	}
	vals, ok := cc.ServiceParams().Get(ResumeAfterParam)
	if !ok || len(vals) == 0 || vals[0] == "" {
		return sortie.Cursor{}, false, nil
	}
	c, err := sortie.ParseCursor(vals[0])
	if err != nil {
		return c, false, invalid(ResumeAfterParam, "%.40q is not a cursor ATTEMPT.SEQ (the %s metadata of an event)", vals[0], MetaCursor)
	}
	return c, true, nil
}

// tail returns the cursor of the run's last stored event.
func tail(ctx context.Context, e sortie.ExecutionEngine, id sortie.RunID) (sortie.Cursor, error) {
	const page = 1000
	var after sortie.Cursor
	for {
		evs, err := e.Events(ctx, id, after, page)
		if err != nil {
			return after, err
		}
		if len(evs) > 0 {
			after = evs[len(evs)-1].Cursor()
		}
		if len(evs) < page {
			return after, nil
		}
	}
}

// stream yields run as a task, then its events after the cursor, then the
// final events once it is terminal or paused.
// A drain ends the stream without a final event.
func (h *requestHandler) stream(ctx context.Context, run *sortie.Run, after sortie.Cursor, yield func(a2a.Event, error) bool) {
	if !yield(task(run, nil), nil) {
		return
	}
	fctx, cancel := h.bounded(ctx)
	defer cancel()
	for u, err := range h.client.Follow(fctx, run.ID, after) {
		if err != nil {
			if h.live.Err() == nil || ctx.Err() != nil {
				yield(nil, fromSortie(err, h.log))
			}
			return
		}
		if u.Event != nil {
			if !yield(eventUpdate(run, u.Event), nil) {
				return
			}
			continue
		}
		for _, ev := range finalEvents(u.Run) {
			if !yield(ev, nil) {
				return
			}
		}
		return
	}
}
