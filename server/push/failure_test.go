package push_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// clock is a manual clock in Unix ms.
type clock struct{ ms atomic.Int64 }

func (c *clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// A receiver failing three times and then answering 204 gets the
// delivery: each failure counts, waits a backoff of at most
// min(BackoffMax, BackoffBase·2^(n-1)) and says "status 503"; the success
// clears them. The clock moves only when the test moves it, so each retry
// waits for it.
func TestFailuresBackOffThenTheDeliverySucceeds(t *testing.T) {
	e := newEnv(t)
	clk := &clock{}
	clk.ms.Store(time.Now().UnixMilli())
	rc := newReceiver(t, e.secrets["primary"], clk.Now, func(n int64, _ *http.Request) int {
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	opts := testOptions()
	opts.Now, opts.BackoffBase, opts.BackoffMax = clk.Now, 100*time.Millisecond, 250*time.Millisecond
	h := e.start(nil, opts)
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	h.d.Notify(run.ID)
	for n, capMs := range []int64{100, 200, 250} {
		d := e.waitCfg(run.ID, "hook", fmt.Sprintf("failure %d", n+1), func(d sortie.PushDelivery) bool { return d.Failures == n+1 })
		now := clk.ms.Load()
		if d.NextAttemptMs < now+1 || d.NextAttemptMs > now+capMs || d.LastError != "status 503" || d.Done || d.DeliveredVersion != 0 {
			t.Fatalf("after failure %d at %d: %+v, want next_attempt_ms in [%d, %d], last_error \"status 503\", not done",
				n+1, now, d, now+1, now+capMs)
		}
		if got := len(rc.requests()); got != n+1 {
			t.Fatalf("after failure %d the receiver got %d requests, want %d (no retry before the backoff)", n+1, got, n+1)
		}
		clk.ms.Store(d.NextAttemptMs)
	}
	got := e.waitDelivered(run.ID, "hook", 1)
	if diff := cmp.Diff(sortie.PushDelivery{DeliveredVersion: 1}, got); diff != "" {
		t.Errorf("progress after the success (-want +got):\n%s", diff)
	}
	reqs := rc.requests()
	for i, r := range reqs {
		if r.ID != reqs[0].ID {
			t.Errorf("request %d webhook-id %q, want %q as on the first try", i+1, r.ID, reqs[0].ID)
		}
	}
	if reqs[3].Verify != nil {
		t.Errorf("the successful delivery's Verify = %v, want nil", reqs[3].Verify)
	}
}

// A receiver that always fails ends the configuration after MaxFailures
// with the last error, and gets nothing more.
func TestAlwaysFailingReceiverEndsAfterMaxFailures(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, func(int64, *http.Request) int { return http.StatusInternalServerError })
	opts := testOptions()
	opts.MaxFailures = 3
	h := e.start(nil, opts)
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	h.d.Notify(run.ID)
	got := e.waitCfg(run.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
	want := sortie.PushDelivery{Failures: 3, Done: true, LastError: "status 500 (gave up after 3 failures)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress of an always failing receiver (-want +got):\n%s", diff)
	}
	e.launch(run.ID)
	h.d.Notify(run.ID)
	e.barrier(h, run.ID)
	if n := len(rc.requests()); n != 3 {
		t.Errorf("receiver got %d requests, want 3 (none after giving up)", n)
	}
}

// 410 Gone ends the configuration at once: the receiver unsubscribed.
func TestGoneEndsTheConfiguration(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, func(int64, *http.Request) int { return http.StatusGone })
	h := e.start(nil, testOptions())
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	h.d.Notify(run.ID)
	got := e.waitCfg(run.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
	want := sortie.PushDelivery{Done: true, LastError: "status 410 (the receiver unsubscribed)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress after 410 (-want +got):\n%s", diff)
	}
	e.launch(run.ID)
	h.d.Notify(run.ID)
	e.barrier(h, run.ID)
	if n := len(rc.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1 (none after 410)", n)
	}
}

// Deleting a configuration stops its deliveries.
func TestDeletedConfigurationGetsNothingMore(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	h := e.start(nil, testOptions())
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	h.d.Notify(run.ID)
	e.waitDelivered(run.ID, "hook", 1)
	if err := e.cp.DeletePushConfig(e.ctx, run.ID, "hook"); err != nil {
		t.Fatalf("DeletePushConfig = %v", err)
	}
	e.launch(run.ID)
	h.d.Notify(run.ID)
	e.barrier(h, run.ID)
	if n := len(rc.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1 (none after the delete)", n)
	}
}

// The dispatcher sends with the client it was given and does not follow a
// redirect itself: the client's CheckRedirect (the destination policy's
// job) decides. Here it refuses, so the 307 is a failure and the
// redirect's target gets nothing.
func TestRedirectIsLeftToTheClient(t *testing.T) {
	e := newEnv(t)
	target := newReceiver(t, e.secrets["primary"], nil, nil)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.url("/stolen?token=SECRET-B"), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	for _, tc := range []struct {
		name  string
		check func(*http.Request, []*http.Request) error
		want  string
	}{
		{"last response", func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			"status 307 (gave up after 1 failures)"},
		{"refused", func(*http.Request, []*http.Request) error { return errors.New("redirect refused by policy") },
			fmt.Sprintf("Post %q: redirect refused by policy (gave up after 1 failures)", target.url("/stolen"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			opts := testOptions()
			opts.MaxFailures = 1
			h := e.start(&http.Client{CheckRedirect: tc.check}, opts)
			run := e.submit(nil)
			e.put(run.ID, "hook", redirect.URL+"/hook?token=SECRET-A", "")
			h.d.Notify(run.ID)
			got := e.waitCfg(run.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
			if got.LastError != tc.want || strings.Contains(got.LastError, "SECRET") {
				t.Errorf("last_error = %q, want %q (and no query)", got.LastError, tc.want)
			}
			if n := len(target.requests()); n != 0 {
				t.Errorf("redirect target got %d requests, want 0", n)
			}
		})
	}
}

// A transport error is recorded without the URL's query.
func TestTransportErrorHidesTheQuery(t *testing.T) {
	e := newEnv(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	opts := testOptions()
	opts.MaxFailures = 1
	h := e.start(nil, opts)
	run := e.submit(nil)
	e.put(run.ID, "hook", closed.URL+"/hook?token=SECRET#frag", "")
	h.d.Notify(run.ID)
	got := e.waitCfg(run.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
	prefix := fmt.Sprintf("Post %q: ", closed.URL+"/hook")
	if !strings.HasPrefix(got.LastError, prefix) || strings.Contains(got.LastError, "SECRET") || !strings.HasSuffix(got.LastError, "(gave up after 1 failures)") {
		t.Errorf("last_error = %q, want %q… without the query, ending in the give-up", got.LastError, prefix)
	}
}
