package functions

import (
	"context"
	"fmt"
	"sync"

	"github.com/sortie-run/sortie"
)

// authWaiters are a session attempt's authorize messages waiting for
// the host's answer, by ID.
type authWaiters struct {
	mu sync.Mutex
	m  map[string]chan *SessionAuthorize
}

func newAuthWaiters() *authWaiters {
	return &authWaiters{m: map[string]chan *SessionAuthorize{}}
}

func (w *authWaiters) wait(id string) (<-chan *SessionAuthorize, func()) {
	ch := make(chan *SessionAuthorize, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.m, id)
		w.mu.Unlock()
	}
}

// deliver hands an answer to its waiter; an answer nobody waits for is
// dropped.
func (w *authWaiters) deliver(a *SessionAuthorize) {
	w.mu.Lock()
	ch := w.m[a.ID]
	delete(w.m, a.ID)
	w.mu.Unlock()
	if ch != nil {
		ch <- a
	}
}

// Authorize writes the authorize message and returns the host's answer.
func (r *sessionReporter) Authorize(ctx context.Context, req *sortie.AuthorizeRequest) (*SessionAuthorize, error) {
	ch, done := r.auths.wait(req.ID)
	defer done()
	w, ok := r.Reporter.(interface{ write(*sortie.Message) error })
	if !ok {
		return nil, fmt.Errorf("authorize %s: this session's reporter writes no messages", subject(req))
	}
	if err := w.write(&sortie.Message{Authorize: req}); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a, nil
	case <-r.stopped:
		return nil, fmt.Errorf("authorize %s: the attempt was stopped before the host answered", subject(req))
	case <-ctx.Done():
		return nil, fmt.Errorf("authorize %s: no answer from the host: %w", subject(req), context.Cause(ctx))
	}
}

// authorize answers a session process's authorize message with the
// host's hooks; for an exec command the host reports the decision, a Go
// session worker reports it itself.
func (x *sessionAttempt) authorize(ctx context.Context, req *sortie.AuthorizeRequest) {
	ans := x.call.decide(ctx, req)
	if !x.own {
		x.call.reportDecision(req, ans.Allowed)
	}
	if x.killed {
		return
	}
	x.deadline()
	if err := WriteSessionFrame(x.w.stdin, &SessionFrame{Authorize: ans}); err != nil {
		x.call.log.Warn("send the authorization to the worker process", "err", err)
	}
}
