package server

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// GraceExceededError is what [Server.Serve] returns when its shutdown's
// grace ran out: Requests connections still had a request in flight and
// were closed, and Launches reports launches those requests began that
// were not yet handed to the launcher (the reconciler retries them).
// Nothing else failed: a caller that asked for the stop may treat it as
// one that completed, after saying what was cut off.
type GraceExceededError struct {
	Grace    time.Duration
	Requests int
	Launches bool
}

func (e *GraceExceededError) Error() string {
	s := fmt.Sprintf("server: shutdown: the grace of %v ran out: %d connection(s) with a request in flight closed", e.Grace, e.Requests)
	if e.Launches {
		s += ", launches not yet handed to the launcher left to the reconciler"
	}
	return s
}

// activeConns tracks the connections serving a request (http.ConnState
// StateActive), to say how many a shutdown cut off.
type activeConns struct {
	mu     sync.Mutex
	active map[net.Conn]struct{}
}

// track is an [http.Server.ConnState] hook.
func (a *activeConns) track(c net.Conn, st http.ConnState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.active == nil {
		a.active = map[net.Conn]struct{}{}
	}
	if st == http.StateActive {
		a.active[c] = struct{}{}
	} else {
		delete(a.active, c)
	}
}

func (a *activeConns) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.active)
}
