package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/httpengine"
	"github.com/sortie-run/sortie/wire"
)

// getRun GETs /v1/runs/{id} with query q and decodes the run.
func getRun(t *testing.T, r *rig, id sortie.RunID, q string) *sortie.Run {
	t.Helper()
	resp, err := http.Get(r.http.URL + "/v1/runs/" + id.String() + q)
	if err != nil {
		t.Fatalf("GET run%s = %v", q, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET run%s = %s, want 200", q, resp.Status)
	}
	var run sortie.Run
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil {
		t.Fatalf("decode run: %v", err)
	}
	return &run
}

func TestGetWithWaitAnswersWhenTheRunSettles(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 0, "sleep_ms": 300}`)
	if got := getRun(t, r, run.ID, "?wait_ms=20000"); got.State != sortie.StateCompleted {
		t.Errorf("GET run?wait_ms=20000 = state %s, want completed: the long poll answers once the run settles", got.State)
	}
}

func TestGetWithWaitAnswersTheLiveRunAfterTheWait(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 0, "sleep_ms": 60000}`)
	defer r.engine.Cancel(context.Background(), run.ID, "test over")
	if got := getRun(t, r, run.ID, "?wait_ms=50"); got.State.Terminal() || got.ID != run.ID {
		t.Errorf("GET run?wait_ms=50 of a sleeping run = %s state %s, want it live", got.ID, got.State)
	}
}

func TestGetRefusesABadWait(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 0}`)
	for _, q := range []string{"?wait_ms=-1", "?wait_ms=soon", "?wait_ms=3600000"} {
		resp, err := http.Get(r.http.URL + "/v1/runs/" + run.ID.String() + q)
		if err != nil {
			t.Fatal(err)
		}
		var body wire.ErrorBody
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.Error.Field, "wait_ms") {
			t.Errorf("GET run%s = %s %+v, want 400 naming wait_ms", q, resp.Status, body.Error)
		}
	}
}

// countingTransport counts the requests to run paths without a suffix.
type countingTransport struct{ gets atomic.Int32 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.Count(req.URL.Path, "/") == 3 {
		c.gets.Add(1)
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestClientWaitOverHTTPIsOneLongPoll(t *testing.T) {
	r := newRig(t, nil)
	ct := &countingTransport{}
	remote, err := httpengine.New(r.http.URL, &httpengine.Options{HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	client := sortie.NewClient(remote, nil)
	run, err := client.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events": 0, "sleep_ms": 500}`)})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	got, err := client.Wait(t.Context(), run.ID)
	if err != nil || got.State != sortie.StateCompleted {
		t.Fatalf("Wait = %v, %v; want the completed run", got, err)
	}
	if n := ct.gets.Load(); n != 1 {
		t.Errorf("Wait made %d GET /v1/runs/{id} requests for a run of 500 ms, want 1 long poll (not a read every poll interval)", n)
	}
}

func TestClientWaitReadsAHostThatRefusesWait(t *testing.T) {
	r := newRig(t, nil)
	// A host of an earlier release: GET /v1/runs/{id} takes no wait_ms.
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Has("wait_ms") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(wire.ErrorBody{Error: wire.ErrorDetail{Code: wire.CodeInvalidArgument,
				Message: "unknown query parameter; this route takes none", Field: "wait_ms"}})
			return
		}
		r.srv.ServeHTTP(w, req)
	}))
	defer old.Close()
	remote, err := httpengine.New(old.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := sortie.NewClient(remote, nil)
	run, err := client.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events": 0, "sleep_ms": 200}`)})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if got, err := client.Wait(t.Context(), run.ID); err != nil || got.State != sortie.StateCompleted {
		t.Fatalf("Wait against a host refusing wait_ms = %v, %v; want the completed run, read without it", got, err)
	}
}
