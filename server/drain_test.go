package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// signalListener sends on read once each accepted connection has read
// its first bytes: the server has the request.
type signalListener struct {
	net.Listener
	read chan struct{}
}

func (l signalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &signalConn{Conn: c, read: l.read}, nil
}

type signalConn struct {
	net.Conn
	once sync.Once
	read chan struct{}
}

func (c *signalConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.once.Do(func() { c.read <- struct{}{} })
	}
	return n, err
}

// Long polls in flight when the server shuts down are answered at once,
// 200 with the run as it is (and the events page so far), as when their
// wait ends: the client polls again, elsewhere. Without that they would
// hold the shutdown for their 30 s, past its 20 s grace, and Serve would
// fail.
func TestLongPollsInFlightEndWithTheRunAtShutdown(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 0, "sleep_ms": 60000}`)
	defer r.engine.Cancel(context.Background(), run.ID, "test over")
	after := "0.0"
	if evs := r.allEvents(t, run.ID); len(evs) > 0 {
		after = evs[len(evs)-1].Cursor().String()
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := signalListener{Listener: inner, read: make(chan struct{}, 2)}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- r.srv.Serve(ctx, ln, 20*time.Second) }()

	base := "http://" + inner.Addr().String() + "/v1/runs/" + run.ID.String()
	type answer struct {
		status int
		body   []byte
		err    error
	}
	polls := map[string]chan answer{base + "?wait_ms=30000": make(chan answer, 1), base + "/events?wait_ms=30000&after=" + after: make(chan answer, 1)}
	for url, ch := range polls {
		go func() {
			resp, err := http.Get(url)
			if err != nil {
				ch <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			var raw json.RawMessage
			err = json.NewDecoder(resp.Body).Decode(&raw)
			ch <- answer{resp.StatusCode, raw, err}
		}()
	}
	<-ln.read
	<-ln.read
	t0 := time.Now()
	stop()
	for url, ch := range polls {
		a := <-ch
		var page wire.EventsPage
		var got sortie.Run
		switch {
		case a.err != nil || a.status != http.StatusOK:
			t.Errorf("GET %s across the shutdown = %d %s %v, want 200", url, a.status, a.body, a.err)
		case json.Unmarshal(a.body, &page) == nil && page.NextCursor != "":
			if len(page.Events) != 0 || page.Run != nil {
				t.Errorf("GET %s across the shutdown = %s, want no events and no final run", url, a.body)
			}
		case json.Unmarshal(a.body, &got) != nil || got.ID != run.ID || got.State.Terminal():
			t.Errorf("GET %s across the shutdown = %s, want the live run", url, a.body)
		}
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v after %v, want a clean shutdown: the long polls must not hold it", err, time.Since(t0))
	}
}
