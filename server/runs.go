package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// submit: POST /v1/runs. 201 with the new run, 200 with the run an earlier
// submission with the same idempotency key made; 429 throttled when
// Options.MaxSubmits are in flight already (load shed at once, rather
// than queued where the workers' heartbeats would wait behind them).
func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	var req sortie.SubmitRequest
	if err := decode(s.schemas, w, r, "submit", s.maxSubmitBytes(), &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if key := r.Header.Get(wire.IdempotencyKeyHeader); key != "" {
		if req.IdempotencyKey != "" && req.IdempotencyKey != key {
			s.writeError(w, r, sortie.Invalidf("idempotency_key", "the body's key differs from the %s header", wire.IdempotencyKeyHeader))
			return
		}
		req.IdempotencyKey = key
	}
	select {
	case s.submits <- struct{}{}:
		defer func() { <-s.submits }()
	default:
		s.writeError(w, r, fmt.Errorf("%d submissions in flight: %w", cap(s.submits), sortie.ErrThrottled))
		return
	}
	run, created, err := s.eng.SubmitCreated(r.Context(), &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+run.ID.String())
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		s.notify(run.ID)
	}
	writeJSON(w, status, public(run))
}

func (s *Server) notify(id sortie.RunID) {
	if s.opts.Pushes != nil {
		s.opts.Pushes.Notify(id)
	}
}

// runID parses the {id} path value; run IDs are ULIDs, whose letters are
// case-insensitive (Crockford base32), so lower case is accepted.
func runID(r *http.Request) (sortie.RunID, error) {
	raw := sortie.RunID(r.PathValue("id"))
	if err := raw.Validate(); err != nil {
		return raw, err
	}
	return raw.Canonical(), nil
}

// checkQuery refuses query parameters the route does not take, so a typo
// (?stat=completed) is not silently ignored, and a parameter given more
// than once (?page_size=1&page_size=2), whose handler would read only the
// first. Every client route passes through it, so the routes read their
// parameters with r.URL.Query().Get.
func checkQuery(r *http.Request, allowed ...string) error {
	for k, vs := range r.URL.Query() {
		switch {
		case !slices.Contains(allowed, k) && len(allowed) == 0:
			return sortie.Invalidf(k, "unknown query parameter; this route takes none")
		case !slices.Contains(allowed, k):
			return sortie.Invalidf(k, "unknown query parameter; this route takes %s", strings.Join(allowed, ", "))
		case len(vs) > 1:
			return sortie.Invalidf(k, "query parameter given %d times; give it at most once", len(vs))
		}
	}
	return nil
}

// get: GET /v1/runs/{id}[?wait_ms=N]. With wait_ms it is a long poll:
// it answers once the run is terminal or interrupted, or with the run as
// it is after wait_ms (or when the server drains). Without it the run
// carries its durable steps (one more read; a long poll's answer has
// none).
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	var wait time.Duration
	if err == nil {
		wait, err = s.parseWait(r)
	}
	var run *sortie.Run
	if err == nil {
		run, err = s.eng.Get(r.Context(), id)
	}
	if err == nil && wait > 0 && !settled(run) {
		run, err = s.waitSettled(r.Context(), run, wait)
	}
	if err == nil && wait == 0 {
		run.Steps, err = s.eng.Steps(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, public(run))
}

// settled reports whether the run is terminal or waits for input.
func settled(r *sortie.Run) bool { return r.State.Terminal() || r.State.Interrupted() }

// waitSettled waits up to wait for run to settle and returns it as last
// read: it reads the run at each change the engine notifies (every write
// of this host; on DynamoDB also those its stream watcher sees), and every
// FollowPoll for changes made by other processes.
func (s *Server) waitSettled(ctx context.Context, run *sortie.Run, wait time.Duration) (*sortie.Run, error) {
	wake, stop := s.eng.Watch(run.ID)
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	poll := time.NewTicker(s.opts.FollowPoll)
	defer poll.Stop()
	for {
		// Read after subscribing: a change between the caller's read and
		// the subscription is not missed.
		next, err := s.eng.Get(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		if run = next; settled(run) {
			return run, nil
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-timer.C:
			return run, nil
		case <-s.draining:
			return run, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// list: GET /v1/runs?agent=&state=&context_id=&page_size=&page_token=.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lq := sortie.ListQuery{Agent: q.Get("agent"), State: sortie.State(q.Get("state")),
		ContextID: q.Get("context_id"), PageToken: q.Get("page_token")}
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.writeError(w, r, sortie.Invalidf("page_size", "%.40q is not an integer", v))
			return
		}
		lq.PageSize = n
	}
	page, err := s.eng.List(r.Context(), lq)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page = publicPage(page)
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	var req wire.CancelRequest
	if err == nil {
		err = decode(s.schemas, w, r, "cancel", smallLimit, &req)
	}
	var run *sortie.Run
	if err == nil {
		run, err = s.eng.Cancel(r.Context(), id, req.Reason)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.notify(id)
	writeJSON(w, http.StatusOK, public(run))
}

// deleteRun deletes a terminal run: 204; 409 for a live one, 404.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	if err == nil {
		err = s.eng.Delete(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	var req wire.ResumeRequest
	if err == nil {
		err = decode(s.schemas, w, r, "resume", s.maxResumeBytes(), &req)
	}
	var run *sortie.Run
	if err == nil {
		run, err = s.eng.Resume(r.Context(), id, req.Input)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.notify(id)
	writeJSON(w, http.StatusOK, public(run))
}
