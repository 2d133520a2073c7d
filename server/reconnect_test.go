package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/logbuf"
	"github.com/sortie-run/sortie/server/httpengine"
)

// cutter ends a response's stream after n SSE events.
type cutter struct {
	http.ResponseWriter
	n      int
	cancel context.CancelFunc
}

func (c *cutter) Write(b []byte) (int, error) {
	if c.n -= strings.Count(string(b), "event: event\n"); c.n <= 0 {
		defer c.cancel()
	}
	return c.ResponseWriter.Write(b)
}

func (c *cutter) Flush() { http.NewResponseController(c.ResponseWriter).Flush() }

// TestClientFollowReconnectsLosingNothing: the Go client's Follow over a
// stream the network cuts after 3 events reconnects with Last-Event-ID;
// the events it yields are the stored ones, once each, and it says on
// its logger that it lost the connection and reconnected.
func TestClientFollowReconnectsLosingNothing(t *testing.T) {
	r := newRig(t, nil)
	var streams atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.Header.Get("Accept"), "text/event-stream") && streams.Add(1) == 1 {
			ctx, cancel := context.WithCancel(req.Context())
			defer cancel()
			r.srv.ServeHTTP(&cutter{ResponseWriter: w, n: 3, cancel: cancel}, req.WithContext(ctx))
			return
		}
		r.srv.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	var logs logbuf.Buffer
	remote, _ := httpengine.New(proxy.URL, &httpengine.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	client := sortie.NewClient(remote, nil)
	run := r.submit(t, `{"events": 12, "interval_ms": 10}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []sortie.Event
	var final *sortie.Run
	for u, err := range client.Follow(ctx, run.ID, sortie.Cursor{}) {
		if err != nil {
			t.Fatalf("Follow across a cut stream = %v", err)
		}
		if u.Event != nil {
			got = append(got, *u.Event)
		} else {
			final = u.Run
		}
	}
	if n := streams.Load(); n < 2 {
		t.Fatalf("%d SSE connections, want a reconnect after the cut", n)
	}
	if diff := cmp.Diff(r.allEvents(t, run.ID), got); diff != "" {
		t.Fatalf("followed events differ from the stored ones (-stored +followed):\n%s", diff)
	}
	if final == nil || final.State != sortie.StateCompleted {
		t.Fatalf("final run %+v, want completed", final)
	}
	out := logs.String()
	if strings.Count(out, "lost the connection to the host") != 1 || strings.Count(out, "reconnected to the host") != 1 || !strings.Contains(out, "run="+run.ID.String()) {
		t.Errorf("the follower logged %q; want one warning that it lost the connection and one that it reconnected, naming the run", out)
	}
}
