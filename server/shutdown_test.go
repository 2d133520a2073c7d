package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/httpengine"
)

// TestGracefulShutdownLosesNoAcceptedRequest submits while the server shuts
// down: every submission the server answered is stored, every stored run
// was answered, and live event streams end instead of holding the
// shutdown.
func TestGracefulShutdownLosesNoAcceptedRequest(t *testing.T) {
	r := newRig(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- r.srv.Serve(ctx, ln, 10*time.Second) }()
	remote, _ := httpengine.New("http://"+ln.Addr().String(), nil)

	live := r.submit(t, `{"events": 0, "sleep_ms": 60000}`)
	streamEnded := make(chan error, 1)
	go func() {
		follower, _ := httpengine.New("http://"+ln.Addr().String(), &httpengine.Options{ReconnectWindow: 500 * time.Millisecond})
		for _, err := range sortie.NewClient(follower, nil).Follow(context.Background(), live.ID, sortie.Cursor{}) {
			if err != nil {
				streamEnded <- err
				return
			}
		}
		streamEnded <- nil
	}()

	var mu sync.Mutex
	answered := map[sortie.RunID]bool{}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := remote.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: []byte(`{"events": 0}`)})
			if err == nil {
				mu.Lock()
				answered[run.ID] = true
				mu.Unlock()
			} else if !errors.Is(err, sortie.ErrUnavailable) {
				t.Errorf("submit %d during shutdown = %v, want success or a refused connection", i, err)
			}
		}()
		if i == 16 {
			stop()
		}
	}
	wg.Wait()
	if err := <-served; err != nil {
		t.Fatalf("Serve after shutdown = %v, want nil", err)
	}
	page, err := r.cp.List(context.Background(), sortie.ListQuery{Agent: "probe", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range page.Runs {
		if run.ID != live.ID && !answered[run.ID] {
			t.Errorf("run %s is stored but its submission got no answer", run.ID)
		}
		delete(answered, run.ID)
	}
	if len(answered) > 0 {
		t.Errorf("%d answered submissions are not stored", len(answered))
	}
	// The stream ended with the shutdown; the client's reconnects are refused.
	if err := <-streamEnded; err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("follow across the shutdown = %v, want an unavailable error once reconnects fail", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Error("the server still answers after Serve returned")
	}
	r.engine.Cancel(context.Background(), live.ID, "test over")
}
