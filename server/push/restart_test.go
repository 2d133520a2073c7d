package push_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/server/push"
)

// holdingReceiver holds its first request until released (answering 204)
// or until the sender gives up; later requests get 204 at once.
func holdingReceiver(t *testing.T, e *env) (rc *receiver, arrived, release chan struct{}) {
	arrived, release = make(chan struct{}), make(chan struct{})
	rc = newReceiver(t, e.secrets["primary"], nil, func(n int64, r *http.Request) int {
		if n > 1 {
			return http.StatusNoContent
		}
		close(arrived)
		select {
		case <-release:
			return http.StatusNoContent
		case <-r.Context().Done():
			return http.StatusServiceUnavailable // nobody reads it
		}
	})
	return rc, arrived, release
}

func startUnmanaged(t *testing.T, e *env) (*push.Dispatcher, chan error) {
	t.Helper()
	d, err := push.New(e.cp, e.cp, &http.Client{}, e.keys, testOptions())
	if err != nil {
		t.Fatalf("push.New = %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(context.Background()) }()
	return d, done
}

// A host stopping with a delivery in flight interrupts it and records
// nothing, so the delivery stays pending; a new dispatcher over the same
// store (the next host) makes it, with the same webhook-id.
func TestNextHostDeliversWhatAnInterruptedOneLeftPending(t *testing.T) {
	e := newEnv(t)
	rc, arrived, _ := holdingReceiver(t, e)
	first, done := startUnmanaged(t, e)
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	first.Notify(run.ID)
	<-arrived
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := first.Shutdown(expired); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown(expired context) = %v, want context.Canceled", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run() = %v after Shutdown, want nil", err)
	}
	if diff := cmp.Diff(sortie.PushDelivery{}, e.cfg(run.ID, "hook").Delivery); diff != "" {
		t.Fatalf("progress after an interrupted delivery (-want +got):\n%s", diff)
	}
	if err := first.Run(context.Background()); !errors.Is(err, sortie.ErrClosed) {
		t.Errorf("Run() after Shutdown = %v, want sortie.ErrClosed", err)
	}
	e.start(nil, testOptions()) // no Notify: the sweep finds it
	e.waitDelivered(run.ID, "hook", 1)
	testwait.Until(t, "the receiver's record of the second request", waitFor, func() bool { return len(rc.requests()) == 2 })
	reqs := rc.requests()
	if reqs[0].ID != reqs[1].ID || reqs[1].Verify != nil {
		t.Errorf("webhook-ids %q then %q, Verify = %v; want the same ID, verified", reqs[0].ID, reqs[1].ID, reqs[1].Verify)
	}
}

// Shutdown stops Run and then waits for the delivery in flight, which
// completes and is recorded.
func TestShutdownWaitsForTheDeliveryInFlight(t *testing.T) {
	e := newEnv(t)
	rc, arrived, release := holdingReceiver(t, e)
	d, done := startUnmanaged(t, e)
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	d.Notify(run.ID)
	<-arrived
	shut := make(chan error, 1)
	go func() { shut <- d.Shutdown(context.Background()) }()
	if err := <-done; err != nil { // Run returned: Shutdown has begun
		t.Errorf("Run() = %v after Shutdown, want nil", err)
	}
	close(release)
	if err := <-shut; err != nil {
		t.Errorf("Shutdown() = %v, want nil", err)
	}
	if diff := cmp.Diff(sortie.PushDelivery{DeliveredVersion: 1}, e.cfg(run.ID, "hook").Delivery); diff != "" {
		t.Errorf("progress after a graceful shutdown (-want +got):\n%s", diff)
	}
}
