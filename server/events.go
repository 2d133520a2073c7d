package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// eventsQuery is what GET /v1/runs/{id}/events asks.
type eventsQuery struct {
	id    sortie.RunID
	after sortie.Cursor
	field string // where the cursor came from: "after" or "Last-Event-ID"
	ended bool   // the cursor is an end ID ("ATTEMPT.SEQ.end")
	limit int
	wait  time.Duration
}

// parseEventsQuery reads ?after= (or the Last-Event-ID header, which wins),
// ?limit= (1..1000, default 500) and ?wait_ms= (0..MaxWait).
func (s *Server) parseEventsQuery(r *http.Request) (eventsQuery, error) {
	id, err := runID(r)
	if err != nil {
		return eventsQuery{}, err
	}
	q := eventsQuery{id: id, limit: feedPage, field: "after"}
	after := r.URL.Query().Get("after")
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		after, q.field = h, "Last-Event-ID"
	}
	after, q.ended = strings.CutSuffix(after, endSuffix)
	if q.after, err = sortie.ParseCursor(after); err != nil {
		return q, sortie.Invalidf(q.field, "%.40q is not a cursor ATTEMPT.SEQ or an end ID ATTEMPT.SEQ%s", after, endSuffix)
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		if q.limit, err = strconv.Atoi(v); err != nil || q.limit < 1 || q.limit > 1000 {
			return q, sortie.Invalidf("limit", "%.40q must be an integer 1..1000", v)
		}
	}
	q.wait, err = s.parseWait(r)
	return q, err
}

// parseWait reads ?wait_ms= (0..MaxWait, default 0) of a long poll.
func (s *Server) parseWait(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait_ms")
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > s.opts.MaxWait.Milliseconds() {
		return 0, sortie.Invalidf("wait_ms", "%.40q must be an integer number of milliseconds, 0..%d", v, s.opts.MaxWait.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// events: GET /v1/runs/{id}/events, as Server-Sent Events when the client
// accepts text/event-stream, else as one JSON [EventsPage] (a long poll
// with wait_ms).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q, err := s.parseEventsQuery(r)
	var run *sortie.Run
	if err == nil {
		run, err = s.eng.GetStored(r.Context(), q.id) // a payload that cannot be read is GET /v1/runs/ID's error, not the events'
	}
	var ve *sortie.ValidationError
	if err == nil && errors.As(sortie.CheckCursor(q.after, run), &ve) {
		ve.Field, err = q.field, ve // named as the request gave it
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		if s.ended(w, r, q, run) {
			return
		}
		s.stream(w, r, q)
		return
	}
	page, err := s.longPoll(r.Context(), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page.Run = public(page.Run)
	writeJSON(w, http.StatusOK, page)
}

// next returns the events after cur, or the final run once cur has every
// event, or a channel closed at the next change.
func (s *Server) next(ctx context.Context, f *feed, cur sortie.Cursor, limit int) ([]sortie.Event, *sortie.Run, <-chan struct{}, error) {
	st := f.state()
	if st.err != nil {
		return nil, nil, nil, st.err
	}
	if cur.Before(st.base) {
		evs, err := s.eng.Events(ctx, f.id, cur, limit)
		if err != nil || len(evs) > 0 {
			return evs, nil, nil, err
		}
	}
	if evs := st.after(cur, limit); len(evs) > 0 {
		return evs, nil, nil, nil
	}
	if st.final {
		return nil, st.run, nil, nil
	}
	return nil, nil, st.changed, nil
}

// readPage reads one page directly: the run first, then its events, so a
// final run read first has all its events below. The run is as stored,
// payloads kept by reference as references, as the feed's.
func (s *Server) readPage(ctx context.Context, q eventsQuery) (*wire.EventsPage, error) {
	run, err := s.eng.GetStored(ctx, q.id)
	if err != nil {
		return nil, err
	}
	evs, err := s.eng.Events(ctx, q.id, q.after, q.limit)
	if err != nil {
		return nil, err
	}
	page := &wire.EventsPage{Events: evs, NextCursor: q.after.String()}
	if len(evs) > 0 {
		page.NextCursor = evs[len(evs)-1].Cursor().String()
	}
	if page.Events == nil {
		page.Events = []sortie.Event{}
	}
	if len(evs) < q.limit && (run.State.Terminal() || run.State.Interrupted()) {
		page.Run = run
	}
	return page, nil
}

// longPoll answers one page, waiting up to q.wait for something new.
func (s *Server) longPoll(ctx context.Context, q eventsQuery) (*wire.EventsPage, error) {
	page, err := s.readPage(ctx, q)
	if err != nil || len(page.Events) > 0 || page.Run != nil || q.wait == 0 {
		return page, err
	}
	f := s.hub.acquire(q.id, q.after)
	defer s.hub.release(f)
	timer := time.NewTimer(q.wait)
	defer timer.Stop()
	for {
		evs, final, changed, err := s.next(ctx, f, q.after, q.limit)
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 {
			page.Events, page.NextCursor = evs, evs[len(evs)-1].Cursor().String()
			return page, nil
		}
		if final != nil {
			page.Run = final
			return page, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return page, nil
		case <-s.draining:
			return page, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// endSuffix marks the SSE ID of the final "run" event: "ATTEMPT.SEQ.end",
// the cursor of the last event before it.
const endSuffix = ".end"

// ended answers 204 No Content to a stream request resuming after the
// final run event (an end ID) when the run is still where that stream
// ended (terminal, or interrupted with no event since): per the SSE
// specification a 204 makes an EventSource stop reconnecting. A run
// resumed since is streamed on from the cursor. It reports whether it
// answered.
func (s *Server) ended(w http.ResponseWriter, r *http.Request, q eventsQuery, run *sortie.Run) bool {
	if !q.ended || !(run.State.Terminal() || run.State.Interrupted()) {
		return false
	}
	if evs, err := s.eng.Events(r.Context(), q.id, q.after, 1); err != nil || len(evs) > 0 {
		return false
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// stream writes the run's events as SSE ("id: ATTEMPT.SEQ", "event:
// event", "data: <event JSON>"), then "event: run" with the final run and
// the end ID "ATTEMPT.SEQ.end". A client that reconnects with
// Last-Event-ID resumes after that event; after the end ID it gets 204.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, q eventsQuery) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	if rc.Flush() != nil {
		return
	}
	f := s.hub.acquire(q.id, q.after)
	defer s.hub.release(f)
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	ctx, cur := r.Context(), q.after
	for {
		evs, final, changed, err := s.next(ctx, f, cur, q.limit)
		if err != nil {
			_, body := s.errorBody(r, err)
			writeSSE(w, "", "error", body)
			return
		}
		for i := range evs {
			writeSSE(w, evs[i].Cursor().String(), "event", &evs[i])
			cur = evs[i].Cursor()
		}
		if final != nil {
			writeSSE(w, cur.String()+endSuffix, "run", public(final))
		}
		if rc.Flush() != nil || final != nil {
			return
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-keep.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case <-s.draining:
			return
		case <-ctx.Done():
			return
		}
	}
}

// writeSSE writes one event; JSON has no raw newlines, so data is one line.
func writeSSE(w http.ResponseWriter, id, event string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorBody(wire.CodeInternal, "unencodable event", "")) // three strings always marshal
	}
	if id != "" {
		fmt.Fprintf(w, "id: %s\n", id)
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
}
