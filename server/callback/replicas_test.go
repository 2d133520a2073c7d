package callback_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/callback"
	"github.com/sortie-run/sortie/wire"
)

// sharedReplay is a replay store several handlers share, as replicas
// share the DynamoDB table's (controlplane/dynamo's ReplayCache), with a
// switch that makes it fail.
type sharedReplay struct {
	mu   sync.Mutex
	ids  map[string]time.Time
	down bool
}

func (s *sharedReplay) Seen(id string, expiry time.Time) bool {
	seen, err := s.SeenContext(context.Background(), id, expiry)
	return seen || err != nil
}

func (s *sharedReplay) SeenContext(_ context.Context, id string, expiry time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return false, fmt.Errorf("replay store: %w", sortie.ErrUnavailable)
	}
	if at, ok := s.ids[id]; ok && at.After(time.Now()) {
		return true, nil
	}
	s.ids[id] = expiry
	return false, nil
}

// A request one replica accepted is refused as a replay by another that
// shares the replay store, and nothing is stored twice; when the store
// fails the request is refused with 503 (the worker sends it again with a
// new ID) and stores nothing.
func TestReplicasShareTheReplayCache(t *testing.T) {
	r := newRejectionRig(t)
	store := &sharedReplay{ids: map[string]time.Time{}}
	var replicas []string
	for range 2 {
		h, err := callback.NewHandler(r.cp, r.keys, &callback.HandlerOptions{Replay: store})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		replicas = append(replicas, srv.URL)
	}
	to := func(req *http.Request, base string) *http.Request {
		u, _ := url.Parse(base)
		req.URL.Host = u.Host
		return req
	}
	rq := signedBy(callback.PathEvents, r.aClaims, r.aSecret, eventsBody)
	rq.id, rq.ts = freshID(), time.Now()
	if status, e := send(t, to(r.newRequest(t, rq), replicas[0])); status != http.StatusOK {
		t.Fatalf("POST %s to replica 1 = %d %+v, want 200", rq.path, status, e)
	}
	before := r.stored(t, r.a.RunID)
	status, e := send(t, to(r.newRequest(t, rq), replicas[1]))
	if status != http.StatusUnauthorized || e.Code != callback.CodeReplayed {
		t.Errorf("the same request to replica 2 = %d %+v, want 401 %q", status, e, callback.CodeReplayed)
	}
	store.down = true
	rq.id = freshID()
	status, e = send(t, to(r.newRequest(t, rq), replicas[1]))
	if status != http.StatusServiceUnavailable || e.Code != wire.CodeUnavailable {
		t.Errorf("a request while the replay store fails = %d %+v, want 503 %q", status, e, wire.CodeUnavailable)
	}
	if diff := cmp.Diff(before, r.stored(t, r.a.RunID)); diff != "" {
		t.Errorf("the replay and the request refused for the store changed the run (-before +after):\n%s", diff)
	}
}
